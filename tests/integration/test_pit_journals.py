"""A table whose journal starts again, end to end (real daemons, the real pit, mosquitto): the old
PC stops dead mid-session, a new PC with a new journal takes the table, and the broker publishes
the old connection's Last Will only after the new one's birth (the old PC is found gone by its
keep-alive). The pit shows the table online on its new journal throughout, stores the new births
and keeps both journals' first hands, the same id, as two hands with links of their own."""

from __future__ import annotations

import asyncio
import signal
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.authority import Role
from controller.shell.journal import Journal
from tests.integration.broker import Broker
from tests.integration.conftest import DaemonProcess
from tests.integration.pit import PitProcess, wait_stored
from tests.integration.test_pit import journal_seqs, play

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]


@pytest.fixture
def pit_factory(tmp_path: Path, broker: Broker) -> Iterator[Any]:
    """Make pit processes in this test's directory; all are killed at the end."""
    made: list[PitProcess] = []

    def make(name: str = "pit", **kwargs: Any) -> PitProcess:
        pit = PitProcess(tmp_path / name, broker, **kwargs)
        made.append(pit)
        return pit

    yield make
    for pit in made:
        pit.close()


def origin(daemon: DaemonProcess) -> str:
    """The journal's name: its first epoch."""
    journal = Journal.open_existing(daemon.journal)
    try:
        return journal.origin
    finally:
        journal.close()


async def until_true(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(check):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.1)


async def test_a_table_on_a_new_journal_is_online_through_the_old_one_s_late_will(
    daemon_factory: Any, pit_factory: Any, broker: Broker
) -> None:
    old: DaemonProcess = daemon_factory("old", table="T1")
    pit: PitProcess = pit_factory(key=old.keys.key_file(Role.PIT))
    pit.add_user()
    pit.start()
    old.start()
    await play(old, broker.port, hands=1)
    old_epoch, old_seqs = journal_seqs(old)
    await wait_stored(pit.store_url, "T1", old_epoch, old_seqs, timeout=30)
    old_journal = origin(old)
    (table,) = pit.json("/api/tables")
    assert (table["online"], table["journal"], table["bdseq"]) == (True, old_journal, 1)

    # the old PC stops dead, its connection open; a new PC (its own journal and client id)
    # takes the table and counts its connections from 1 again
    assert old.proc is not None
    old.proc.send_signal(signal.SIGSTOP)
    new: DaemonProcess = daemon_factory(
        "new", table="T1", seed=11, broker_extra='client_id = "tablectl-T1-new-pc"\n'
    )
    new.start()
    new_journal = origin(new)
    assert new_journal != old_journal

    def births() -> list[tuple[str, int, str]]:
        return [
            (b["journal"], b["bdseq"], b["state"]) for b in pit.json("/api/tables/T1")["births"]
        ]

    await until_true(lambda: (new_journal, 1, "online") in births(), 30, "the new PC's birth")
    # the broker gives the old PC up after its keep-alive (5 s), after the new PC's birth
    await until_true(lambda: (old_journal, 1, "offline") in births(), 30, "the old PC's Will")
    assert births().index((new_journal, 1, "online")) < births().index((old_journal, 1, "offline"))
    (table,) = pit.json("/api/tables")
    assert (table["online"], table["journal"], table["bdseq"]) == (True, new_journal, 1)
    detail = pit.json("/api/tables/T1")
    new_birth = next(b for b in detail["births"] if b["journal"] == new_journal)
    assert new_birth["epoch"] == new_journal  # a new journal's first epoch is its name
    floor = pit.get("/")[1].decode()
    assert "● Online" in floor
    assert "✕ Offline" not in floor, floor

    await play(new, broker.port, hands=1)
    new_epoch, new_seqs = journal_seqs(new)
    assert new_epoch != old_epoch
    await wait_stored(pit.store_url, "T1", new_epoch, new_seqs, timeout=30)
    assert pit.json("/api/tables")[0]["online"] is True

    # each journal's first hand is T1-00001: two hands, each with its own working links
    hands = pit.json("/api/hands?table=T1")
    assert sorted((h["hand_id"], h["epoch"]) for h in hands) == sorted(
        [("T1-00001", old_epoch), ("T1-00001", new_epoch)]
    )
    listed = pit.get("/hands?table=T1")[1].decode()
    texts = []
    for epoch in (old_epoch, new_epoch):
        which = urllib.parse.urlencode({"table": "T1", "epoch": epoch})
        assert f"/hands/T1-00001?{which}".replace("&", "&amp;") in listed
        status, page = pit.get(f"/hands/T1-00001?{which}")
        assert status == 200
        assert epoch in page.decode()
        status, phh = pit.get(f"/api/hands/T1-00001/phh?{which}")
        assert status == 200
        texts.append(phh)
    assert texts[0] != texts[1]
    assert pit.get("/api/hands/T1-00001")[0] == 409
    assert pit.stop(signal.SIGTERM) == 0
