"""Fixtures of the rig's tests: one mosquitto for the session, when it is installed."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker import Broker, mosquitto_available


@pytest.fixture(scope="session")
def session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker | None]:
    """A mosquitto shared by the session's rigs (None when the binary is not installed: the
    rigs then run on the daemon's journal alone)."""
    if not mosquitto_available():
        yield None
        return
    directory = tmp_path_factory.mktemp("broker")
    # TCP_NODELAY: the consoles wait for each small response (docs/operations.md).
    broker = Broker(directory, extra="persistence false\nset_tcp_nodelay true")
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def broker_url(session_broker: Broker | None) -> str:
    """The session broker's URL, or ``none``."""
    return session_broker.url if session_broker is not None else "none"


def alive(pid: int) -> bool:
    """Whether a process with this id still exists (and is not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return ") Z " not in Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:  # it was reaped meanwhile
        return False


def stop_leftovers(pids: list[int]) -> list[int]:
    """Kill any of ``pids`` still running; return those that were."""
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left
