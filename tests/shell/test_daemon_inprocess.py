"""The daemon in-process with a virtual table and a real journal, no broker reachable.

The broker link keeps retrying in the background; requests go straight to the command handler.
These tests prove the shell's own promises: a replay gives the exact state, a request runs once
per transaction, a redelivered device event is dropped, an invalid request changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import termios
import tty
from pathlib import Path

import pytest

from controller.config import parse_config
from controller.shell.snapshot import snapshot
from controller.table.codec import input_to_json
from controller.table.inputs import (
    ControllerRestarted,
    DeviceFault,
    GroupDispensed,
    Health,
    Purpose,
)
from controller.table.state import Phase
from tests.integration.broker import free_port
from tests.shell.inprocess import Running, config_for, now, phase, request
from tests.waiting import until


async def test_restart_replays_to_the_exact_state_and_keeps_the_inbox(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    async with Running(config) as daemon:
        first = await daemon.commands.handle("start_hand", request(transaction="a"), now())
        assert first["status"] == "ok"
        await until(lambda: phase(daemon) is Phase.BETTING)
        hand = daemon.runner.state.hand
        assert hand is not None
        assert hand.chips.round is not None
        seat = hand.chips.round.to_act
        call = await daemon.commands.handle(
            "action", request(transaction="b", seat=seat, action="call"), now()
        )
        assert call["status"] == "ok"
        before = snapshot(daemon.runner.state, seq=daemon.runner.last_seq, epoch="e")
        dealt = daemon.runner.state.hand.deal.dealt if daemon.runner.state.hand else None
        inputs = daemon.writer.journal.counts()["inputs"]

    async with Running(config) as again:
        after = snapshot(again.runner.state, seq=before["seq"], epoch="e")
        assert after == before  # the replayed state; only the restart's own events follow
        assert again.runner.state.hand is not None
        assert again.runner.state.hand.deal.dealt == dealt
        # the same transaction again: the stored answer, nothing runs twice
        repeat = await again.commands.handle(
            "action", request(transaction="b", seat=seat, action="call"), now()
        )
        assert repeat == call
        restarted = ControllerRestarted(now(), "controller")
        expected = inputs + int(again.runner.accepts(restarted))  # once the core handles it
        assert again.writer.journal.counts()["inputs"] == expected
        assert again.runner.planner.outstanding == {}
        assert (await again.writer.call(again.writer.journal.verify)).ok


async def test_an_invalid_request_is_journaled_as_rejected_and_changes_nothing(
    tmp_path: Path,
) -> None:
    async with Running(config_for(tmp_path)) as daemon:
        await until(lambda: daemon.health["shuffler"]["health"] == "online")
        state = daemon.runner.state
        inputs = daemon.writer.journal.counts()["inputs"]
        body = await daemon.commands.handle("action", request(transaction="x", seat="one"), now())
        assert body["status"] == "error"
        assert "seat" in body["error"]
        assert daemon.runner.state is state
        assert daemon.writer.journal.counts()["inputs"] == inputs
        events = list(daemon.writer.journal.events())
        assert json.loads(events[-1].body)["type"] == "command.rejected"
        assert json.loads(events[-1].body)["data"]["command"] == "action"
        again = await daemon.commands.handle("action", request(transaction="x", seat=2), now())
        assert again == body  # same transaction, stored refusal


async def test_a_redelivered_device_event_is_dropped(tmp_path: Path) -> None:
    async with Running(config_for(tmp_path, shuffler={"deliver": False})) as daemon:
        await daemon.commands.handle("start_hand", request(transaction="a"), now())
        await until(
            lambda: (
                daemon.runner.state.hand is not None
                and daemon.runner.state.hand.deal.hole_groups == 1
            )
        )
        group = next(
            json.loads(r.body)
            for r in daemon.writer.journal.inputs()
            if json.loads(r.body)["type"] == "GroupDispensed"
        )["fields"]
        inputs = daemon.writer.journal.counts()["inputs"]
        redelivered = GroupDispensed(
            now(),
            "shuffler",
            group["shuffle_id"],
            group["group"],
            Purpose.HOLE,
            group["seat"],
            (None, None),
            group["remaining"],
        )
        assert await daemon.runner.submit(redelivered) is None
        assert daemon.writer.journal.counts()["inputs"] == inputs


async def test_a_failed_device_is_restarted_and_reported_back_online(tmp_path: Path) -> None:
    """The jsonl source on a pty behind a link: unplug (close the pty), then a new pty."""
    link = tmp_path / "device"

    def plug() -> tuple[int, int]:
        master, slave = os.openpty()
        tty.setraw(slave, termios.TCSANOW)
        staged = tmp_path / "device.new"
        staged.symlink_to(os.ttyname(slave))
        staged.replace(link)
        return master, slave

    config = parse_config(
        {
            "table": {"id": "T1", "stacks": {"1": 50, "2": 50}, "button": 1, "blinds": [1, 2]},
            "devices": {"feed": {"driver": "jsonl", "port": str(link)}},
            "security": {"require_signed": False},
            "broker": {"host": "127.0.0.1", "port": free_port()},
            "journal": {"path": str(tmp_path / "journal.sqlite")},
            "daemon": {"device_restart_min": 0.01, "device_restart_max": 0.05},
        }
    )

    def healths() -> list[str]:
        out = []
        for row in list(daemon.writer.journal.events()):
            data = json.loads(row.body)["data"]
            if data.get("device") == "feed" and "health" in data:
                out.append(data["health"])
        return out

    def faults() -> list[int]:
        return [
            json.loads(row.body)["data"]["fault_id"]
            for row in list(daemon.writer.journal.events())
            if "fault" in json.loads(row.body)["data"]
        ]

    def line(fault_id: int) -> bytes:
        return input_to_json(DeviceFault(now(), "feed", "TEST", fault_id, "info")).encode() + b"\n"

    master, slave = plug()
    async with Running(config) as daemon:
        os.write(master, line(1))
        await until(lambda: faults() == [1])
        os.close(master)  # unplugged: the daemon's read gets EIO
        os.close(slave)
        await until(lambda: healths() == ["reconnecting"])
        master, slave = plug()  # plugged back, as a new tty behind the same link
        await until(lambda: daemon.health["feed"]["health"] == "reconnecting")
        for attempt in range(100):  # the source may reopen after the first line was written
            os.write(master, line(2 + attempt))
            with contextlib.suppress(TimeoutError):
                await until(lambda: len(faults()) > 1, timeout=0.5)
                break
        assert healths() == ["reconnecting", "online"]
        assert faults()[0] == 1
        assert daemon.health["feed"]["health"] == "online"
    os.close(master)
    os.close(slave)


async def test_a_device_health_change_updates_the_systemd_status_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The health is recorded after its input was committed: the STATUS line must follow it."""
    directory = tempfile.mkdtemp(prefix="tl-")  # a socket path must stay under 108 bytes
    path = os.path.join(directory, "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(path)
        listener.setblocking(False)
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        heard: list[str] = []

        def statuses() -> list[str]:
            with contextlib.suppress(BlockingIOError):
                while True:
                    heard.append(listener.recv(4096).decode())
            return [line for m in heard for line in m.split("\n") if line.startswith("STATUS=")]

        async with Running(config_for(tmp_path)) as daemon:
            await daemon.devices.report("shuffler", Health.STALE, "no answer to a ping")
            await until(lambda: any(s.endswith("; shuffler stale") for s in statuses()))
            await daemon.devices.report("shuffler", Health.ONLINE, "answering again")
            await until(lambda: statuses()[-1].endswith("; shuffler online"))
    os.unlink(path)
    os.rmdir(directory)
