"""The daemon in-process: a replay that differs from the journal holds the table until
maintenance accepts it, and an accepted difference does not hold it again."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from controller.shell.daemon import Daemon
from controller.table.state import Phase
from tests.shell.inprocess import Running, config_for, now, phase, request
from tests.shell.test_integrity import rewrite_chain
from tests.waiting import until


async def test_a_replay_that_differs_holds_the_table_until_maintenance_accepts(
    tmp_path: Path,
) -> None:
    config = config_for(tmp_path)
    async with Running(config) as daemon:
        assert (await daemon.commands.handle("start_hand", request(transaction="a"), now()))[
            "status"
        ] == "ok"
        await until(lambda: phase(daemon) is Phase.BETTING)
    path = tmp_path / "journal.sqlite"
    with sqlite3.connect(path) as conn:  # an input changed, and the chain made to fit it
        conn.execute(
            'UPDATE inputs SET body = replace(body, \'"health":"online"\', '
            "'\"health\":\"stale\"') WHERE type = 'DeviceHealthChanged'"
        )
    rewrite_chain(path)

    held = Daemon(config)
    task = asyncio.create_task(held.run())
    try:
        await until(lambda: held.integrity.held and held.link.accept_requests)
        assert not held.ready.is_set()
        assert [a.kind for a in held.integrity.alarms] == ["replay"]
        assert "integrity alarm (replay)" in held.status_line()
        birth = held.link.status_body("online")
        assert birth["degraded"] is True  # held: it takes no input
        [alarm] = birth["alarms"]
        assert alarm["alarm"] == "journal.integrity"
        assert alarm["kind"] == "replay"
        assert alarm["held"] is True
        assert alarm["detail"].startswith("integrity alarm (replay)")
        refused = await held.commands.handle("start_hand", request(transaction="b"), now())
        assert refused["status"] == "error"
        assert "waits for maintenance (journal_accept)" in refused["error"]
        no_reason = await held.commands.handle("journal_accept", request(transaction="c"), now())
        assert no_reason["status"] == "error"
        assert "reason" in no_reason["error"]
        accepted = await held.commands.handle(
            "journal_accept", request(transaction="d", reason="the health edit is ours"), now()
        )
        assert accepted["status"] == "ok", accepted
        assert [e["type"] for e in accepted["data"]["events"]] == [
            "journal.accepted",
            "journal.epoch.started",
        ]
        async with asyncio.timeout(10):
            await held.ready.wait()
        assert held.integrity.alarms == []
        assert held.link.status_body("online")["alarms"] == []
        assert held.link.status_body("online")["degraded"] is False
        again = await held.commands.handle(
            "journal_accept", request(transaction="e", reason="x"), now()
        )
        assert again["status"] == "error"
        assert "nothing to accept" in again["error"]
    finally:
        held.stop_requested.set()
        assert await asyncio.wait_for(task, 20) == 0

    async with Running(config) as later:  # accepted: the same difference holds nothing again
        assert not later.integrity.held
        assert (await later.writer.call(later.writer.journal.verify)).ok
        types = [json.loads(r.body)["type"] for r in later.writer.journal.events()]
        assert types.count("integrity.alarm") == 1
        assert len(later.writer.journal.epochs) == 2
