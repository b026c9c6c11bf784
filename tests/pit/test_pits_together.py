"""Several pit processes on one PostgreSQL store: what one does never stalls or fails another.

* A pit that goes away in the middle of a transaction (its host's link cut, its power lost)
  leaves its session idle in that transaction on the server, holding its row locks, and nothing
  tells the server it is gone for hours (TCP keep-alive). Every session of the pit therefore asks
  the server to end itself once idle in a transaction for ``IDLE_IN_TRANSACTION`` seconds
  (docs/pit.md, "Presence and failover"): the other pits' commits wait that long at most.
  A report's snapshot, which locks no row and may work between its statements, may idle as long
  as one of its statements may run.
* Every pit scans every stream for holes: two tracking one stream's gaps at once take turns,
  rather than deadlocking or moving a gap onto one the other just made.

tests/integration/test_floor_netns.py found both on a floor of network namespaces, cutting a pit
host's link for real.
"""

from __future__ import annotations

import itertools
import random
import threading
import time

import psycopg
import pytest

from controller.pit.db import IDLE_IN_TRANSACTION, SERVER_TCP, Db, unavailable
from controller.pit.reports.sql import STATEMENT_TIMEOUT, snapshot
from controller.pit.store import Store
from tests.postgres import PostgresServer

STREAM = "INSERT INTO streams (table_id, epoch, stream, max_seq) VALUES ('T1', 'e1', 'public', ?)"


def test_the_server_finds_a_vanished_pit_in_any_state_by_its_own_keepalives(
    postgres: PostgresServer,
) -> None:
    """A session waiting in the middle of a pipeline is not idle in a transaction: only the
    server's TCP settings end it once its pit is gone. Every pit session sets them."""
    db = Db(postgres.new_database())
    try:
        shown = {name: db.one(f"SHOW {name}") for name in SERVER_TCP}
        assert shown == {
            "tcp_keepalives_idle": ("5",),
            "tcp_keepalives_interval": ("2",),
            "tcp_keepalives_count": ("3",),
            "tcp_user_timeout": ("10000",),
        }
    finally:
        db.close()


def test_a_pit_gone_in_a_transaction_holds_its_locks_only_until_the_server_ends_its_session(
    postgres: PostgresServer,
) -> None:
    url = postgres.new_database()
    store = Store(url)
    store.migrate()
    gone = Db(url)  # a pit whose host went away mid-transaction: it never sends another byte
    other = Db(url)  # a pit still on the floor
    try:
        assert gone.one("SHOW idle_in_transaction_session_timeout") == (
            f"{int(IDLE_IN_TRANSACTION)}s",
        )
        gone.execute("BEGIN")
        gone.execute(STREAM, (7,))  # a row of the same key the other pit now stores

        committed = threading.Event()

        def store_the_same_row() -> None:
            other.execute(STREAM + " ON CONFLICT (table_id, epoch, stream) DO NOTHING", (9,))
            committed.set()

        writer = threading.Thread(target=store_the_same_row, daemon=True)
        writer.start()
        # it waits for the gone pit's transaction; for ever, were its session never ended
        assert committed.wait(IDLE_IN_TRANSACTION * 6), "the other pit's commit still waits"
        assert other.one("SELECT max_seq FROM streams WHERE table_id = 'T1'") == (9,)
        with pytest.raises(psycopg.Error) as ended:  # the gone pit finds its session ended
            gone.execute("COMMIT")
        assert gone.broken
        assert unavailable(ended.value)  # a lost store: connected again, nothing acknowledged
    finally:
        other.close()
        gone.close()
        store.close()


def test_a_report_s_snapshot_may_idle_as_long_as_its_statements_may_run(
    postgres: PostgresServer,
) -> None:
    db = Db(postgres.new_database())
    try:
        idle = "SHOW idle_in_transaction_session_timeout"
        with snapshot(db):
            assert db.one(idle) == (f"{STATEMENT_TIMEOUT // 60}min",)
        assert db.one(idle) == (f"{int(IDLE_IN_TRANSACTION)}s",)  # the session's again
    finally:
        db.close()


def holes_seen(rng: random.Random) -> list[tuple[int, int]]:
    """What one scan may find missing of a stream while its backlog comes in: a few ranges."""
    ranges: list[tuple[int, int]] = []
    for first in sorted(rng.sample(range(1, 200), rng.randint(1, 8))):
        last = min(first + rng.randint(0, 10), 199)
        if ranges and first <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(last, ranges[-1][1]))
        else:
            ranges.append((first, last))
    return ranges


def test_two_pits_tracking_one_stream_s_gaps_at_once_take_turns(postgres: PostgresServer) -> None:
    url = postgres.new_database()
    made = Store(url)
    made.migrate()
    made.close()
    failures: list[BaseException] = []

    def scans(seed: int) -> None:
        store, rng = Store(url), random.Random(seed)
        try:
            for _ in range(150):
                store.track_holes("T1", "e1", "public", holes_seen(rng), time.time())
        except Exception as exc:  # a deadlock, a unique violation: the scan failed
            failures.append(exc)
        finally:
            store.close()

    pits = [threading.Thread(target=scans, args=(seed,)) for seed in (1, 2)]
    for pit in pits:
        pit.start()
    for pit in pits:
        pit.join(120)
    assert failures == []
    store = Store(url)
    try:
        gaps = sorted((g.from_seq, g.to_seq) for g in store.open_gaps("T1", "e1", "public"))
    finally:
        store.close()
    assert gaps
    assert all(a[1] < b[0] for a, b in itertools.pairwise(gaps))  # none overlap


def test_a_range_over_two_gaps_keeps_the_one_already_starting_where_it_starts(
    store: Store,
) -> None:
    """Two gaps, the older further on: a hole that now spans both is the younger one, which
    already starts where it starts; moving the older there met the younger in the open gaps'
    unique index, and the scan failed (once in a few hundred passes of two pits)."""
    store.track_holes("T1", "e1", "public", [(125, 128)], 1.0)
    store.track_holes("T1", "e1", "public", [(120, 122), (125, 128)], 2.0)
    (gap,) = store.track_holes("T1", "e1", "public", [(120, 130)], 3.0)
    assert (gap.from_seq, gap.to_seq, gap.first_seen) == (120, 130, 2.0)
    assert len(store.gaps(open_only=True)) == 1
