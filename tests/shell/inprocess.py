"""The daemon in-process on a virtual table: its config, running it, and what its tests send it.

The broker is never reachable (a free port nobody listens on): requests go straight to the
command handler, and the events stay in the journal.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.config import TableConfig, parse_config
from controller.shell.daemon import Daemon
from controller.table.state import Phase
from tests.integration.broker import free_port


def config_for(
    tmp_path: Path, *, shuffler: Mapping[str, Any] | None = None, **journal: Any
) -> TableConfig:
    """A three-seat virtual table in ``tmp_path``; ``shuffler``: options of its virtual
    shuffler, ``journal``: its journal's (the path included) over the defaults. Unsigned
    requests are let in with every role a test gives them (dealer, floor and maintenance)."""
    return parse_config(
        {
            "table": {
                "id": "T1",
                "stacks": {"1": 50, "2": 50, "3": 50},
                "button": 3,
                "blinds": [1, 2],
            },
            "devices": {
                "shuffler": {
                    "driver": "virtual",
                    "seed": 3,
                    "state_file": str(tmp_path / "shuffler.json"),
                    **(shuffler or {}),
                }
            },
            "security": {
                "require_signed": False,
                "unsigned_roles": ["dealer", "floor", "maintenance"],
            },
            "broker": {"host": "127.0.0.1", "port": free_port(), "reconnect_min": 0.05},
            "journal": {"path": str(tmp_path / "journal.sqlite"), **journal},
        }
    )


def disk_config(tmp_path: Path, **journal: Any) -> TableConfig:
    """:func:`config_for`, the journal's disk looked at every 20 ms (for the full-disk tests)."""
    return config_for(tmp_path, disk_poll=0.02, **journal)


class Running:
    """``async with Running(config) as daemon``: the daemon runs, ready, for the block; then it
    is stopped and must end with status 0."""

    def __init__(self, config: TableConfig) -> None:
        self.daemon = Daemon(config)
        self.task: asyncio.Task[int] | None = None

    async def __aenter__(self) -> Daemon:
        self.task = asyncio.create_task(self.daemon.run())
        async with asyncio.timeout(10):
            await self.daemon.ready.wait()
        return self.daemon

    async def __aexit__(self, *exc: object) -> None:
        assert self.task is not None
        self.daemon.stop_requested.set()
        assert await asyncio.wait_for(self.task, 20) == 0


def request(**body: Any) -> bytes:
    """A request's body."""
    return json.dumps(body).encode()


def now() -> datetime:
    """The host's time, as a request's arrival."""
    return datetime.now(UTC)


def phase(daemon: Daemon) -> Phase | None:
    """The phase of the hand in play, if one is."""
    hand = daemon.runner.state.hand
    return hand.phase if hand is not None else None
