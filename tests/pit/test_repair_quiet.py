"""An idle pit process does no scan's work (controller/pit/repair.py): a scan reads the store
only after this process committed, while holes or gaps are open, while a member is away, and
at least every ``QUIET_SCANS`` scans. Whatever the order of commits, holes and quiet turns, a
hole in the store is never left unread for more than ``QUIET_SCANS`` scans after a commit."""

from __future__ import annotations

import time

from controller.pit.batches import Applied
from controller.pit.repair import QUIET_SCANS
from controller.pit.store import Store
from tests.pit.test_presence import scanner
from tests.pit.test_store import envelope, event_in


async def test_an_idle_process_scans_after_a_commit_and_every_tenth_turn(store_url: str) -> None:
    store = Store(store_url)
    store.migrate()
    store.ingest([event_in(envelope(s)) for s in (1, 2, 3)])
    repairer, worker, _ = await scanner(store_url)
    try:
        assert repairer.due()  # the first scan reads the store
        await repairer.scan_once()
        # nothing committed, nothing open: skipped, but for every tenth turn
        turns = [repairer.due() for _ in range(2 * QUIET_SCANS)]
        assert turns == ([False] * (QUIET_SCANS - 1) + [True]) * 2
        await repairer.scan_once()
        assert not repairer.due()
        repairer.on_commit(Applied())
        assert repairer.due()
        await repairer.scan_once()
        assert not repairer.due()
        # a member away: every scan reads, to ask for its holes at once
        repairer.away = lambda: ["pit-2"]
        assert repairer.due()
    finally:
        await worker.close()
        store.close()


async def test_an_open_hole_keeps_the_scans_going_until_it_is_filled(store_url: str) -> None:
    """A hole is young for ``after`` seconds: each scan ages it, so none is skipped while it
    is there, committed by this process or another."""
    store = Store(store_url)
    store.migrate()
    store.ingest([event_in(envelope(s)) for s in (1, 2, 5)])  # 3-4 missing
    repairer, worker, asked = await scanner(store_url)
    try:
        await repairer.scan_once()
        assert all(repairer.due() for _ in range(3 * QUIET_SCANS))
        store.ingest([event_in(envelope(s)) for s in (3, 4)])  # another process's commit
        await repairer.scan_once()
        assert not repairer.due()
        assert asked == []  # young: never asked for
    finally:
        await worker.close()
        store.close()


async def test_a_hole_made_by_a_commit_is_seen_by_the_next_scan(store_url: str) -> None:
    store = Store(store_url)
    store.migrate()
    store.ingest([event_in(envelope(s)) for s in (1, 2)])
    repairer, worker, _ = await scanner(store_url)
    try:
        await repairer.scan_once()
        assert not repairer.due()
        store.ingest([event_in(envelope(9))])
        repairer.on_commit(Applied(committed_at=time.time()))
        assert repairer.due()
        await repairer.scan_once()
        assert repairer.due()  # 3-8 is open: aged by every scan
    finally:
        await worker.close()
        store.close()
