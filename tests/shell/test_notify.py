"""The sd_notify protocol against a real datagram socket."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.shell.notify import feed_watchdog, notify, watchdog_interval


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, str]]:
    directory = tempfile.mkdtemp(prefix="sdn")
    path = os.path.join(directory, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    yield sock, path
    sock.close()
    os.unlink(path)
    os.rmdir(directory)


def test_no_socket_means_no_systemd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False


def test_lines_arrive_as_one_datagram(
    listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    assert notify("READY=1", "STATUS=between hands; broker up") is True
    assert sock.recv(4096) == b"READY=1\nSTATUS=between hands; broker up"


def test_abstract_namespace_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"tablectl-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert notify("STOPPING=1") is True
        assert sock.recv(4096) == b"STOPPING=1"


def test_a_full_socket_drops_the_line_instead_of_blocking(
    listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    results = [notify(f"STATUS={n}") for n in range(2000)]  # nobody reads
    assert results[0] is True
    assert results[-1] is False


def test_a_socket_that_is_gone_is_not_fatal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "nobody"))
    assert notify("READY=1") is False
    monkeypatch.setenv("NOTIFY_SOCKET", "relative/path")
    assert notify("READY=1") is False


def test_watchdog_interval_is_half_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    monkeypatch.setenv("WATCHDOG_USEC", "20000000")
    assert watchdog_interval() == 10.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert watchdog_interval() == 10.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))
    assert watchdog_interval() is None  # meant for another process
    monkeypatch.delenv("WATCHDOG_USEC")
    assert watchdog_interval() is None


async def test_the_watchdog_is_fed_only_while_healthy(
    listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    sock, path = listener
    sock.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    health = {"ok": True}
    task = asyncio.create_task(feed_watchdog(lambda: health["ok"], 0.01))
    loop = asyncio.get_running_loop()
    assert await asyncio.wait_for(loop.sock_recv(sock, 100), 2) == b"WATCHDOG=1"
    health["ok"] = False
    while True:  # drain what was sent while healthy
        try:
            sock.recv(100)
        except BlockingIOError:
            break
    await asyncio.sleep(0.1)  # ten intervals in which an unhealthy daemon must stay silent
    with pytest.raises(BlockingIOError):
        sock.recv(100)
    health["ok"] = True
    assert await asyncio.wait_for(loop.sock_recv(sock, 100), 2) == b"WATCHDOG=1"
    task.cancel()
