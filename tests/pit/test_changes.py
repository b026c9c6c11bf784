"""Live across processes: a commit by one pit wakes the live pages of every pit of the store.

Two pits here are two apps on a real uvicorn, each with its own store connections, its own
board and its own change feed, on one PostgreSQL database or one SQLite file: what one commits
the other's live stream shows, a LISTEN connection cut is made again and wakes every page once,
a burst of commits wakes the pages a bounded number of times, and no payload breaks a listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.aio import Backoff
from controller.pit.batches import Batch, Refusal
from controller.pit.changes import (
    APPLICATION,
    CHANNEL,
    MAX_PAYLOAD,
    Announcer,
    Change,
    ChangeFeed,
    decode,
    encode,
)
from controller.pit.db import Db
from controller.pit.devices import DeviceIn
from controller.pit.health import PitHealth
from controller.pit.ingest import apply_batch
from controller.pit.store import Store
from controller.pit.users import add_user
from controller.pit.worker import StoreWorker
from tests.pit.test_live import Stream
from tests.pit.test_store import envelope, event_in
from tests.pit.web import PASSWORD, Served, basic, serve
from tests.postgres import PostgresServer
from tests.waiting import until, until_async


def test_a_payload_names_its_origin_and_tables_and_is_bounded() -> None:
    assert decode(encode("a1", frozenset({"T2", "T1"}))) == Change("a1", frozenset({"T1", "T2"}))
    assert decode(encode("a1", None)) == Change("a1", None)
    many = frozenset(f"T{i:04d}" for i in range(1000))
    text = encode("a1", many)
    assert len(text) <= MAX_PAYLOAD
    assert decode(text) == Change("a1", None)  # too many to name: everything
    assert encode("a1", frozenset({"T\u00e9\U0001f0a1"})).isascii()


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[" * 5000,
        '{"o": 1, "t": "T1"}',
        '{"t": [1, 2]}',
        "[]",
        "null",
        '"T1"',
        json.dumps({"o": "x", "t": ["T1"] * 2000}),
        "x" * 7999,
        b"T1",
        None,
    ],
)
def test_a_malformed_or_oversized_payload_announces_everything(payload: object) -> None:
    change = decode(payload)
    assert change.tables is None
    assert change.malformed


@given(st.one_of(st.text(max_size=3000), st.binary(max_size=100), st.none()))
def test_decoding_never_raises(payload: object) -> None:
    change = decode(payload)
    assert change.tables is None or all(isinstance(t, str) for t in change.tables)


def test_a_transaction_announces_what_it_changed_when_it_commits_and_never_when_it_rolls_back(
    tmp_path: Path,
) -> None:
    db = Db(f"sqlite:///{tmp_path / 'db.sqlite'}")
    heard: list[frozenset[str] | None] = []
    db.changed(("T1",))  # no announcer: nothing
    db.announcer = lambda _db, tables: heard.append(tables)
    db.execute("CREATE TABLE t (x INTEGER)")
    with db.transaction():
        db.execute("INSERT INTO t VALUES (1)")
        db.changed(("T1",))
        db.changed(("T2", "T1"))
        assert heard == []  # not before the commit
    assert heard == [frozenset({"T1", "T2"})]
    with contextlib.suppress(RuntimeError), db.transaction():
        db.changed(("T3",))
        raise RuntimeError
    with db.transaction():
        pass  # nothing changed: nothing announced (the rolled-back T3 is not)
    db.changed(None)  # outside a transaction: at once
    db.changed(())
    assert heard == [frozenset({"T1", "T2"}), None]
    db.close()


def test_a_batch_announces_its_statuses_states_devices_and_refusals_each_as_it_commits(
    tmp_path: Path,
) -> None:
    """Each kind of a batch's messages is written in a transaction of its own: each names its
    tables in that transaction, announced with its commit, rather than in one announcement of its
    own after them all (a statement more a batch)."""
    store = Store(f"sqlite:///{tmp_path / 'pit.sqlite'}")
    store.migrate()
    heard: list[frozenset[str] | None] = []
    store.db.announcer = lambda _db, tables: heard.append(tables)
    batch = Batch(
        statuses=[("T1", {"state": "online", "bdseq": 1})],
        states=[("T2", {"epoch": "e1", "seq": 3, "hand": None})],
        devices=[DeviceIn("T3", "shuffler", "2026-12-05T10:00:00Z", '{"health":"ok"}')],
        rejects=[Refusal("T4", "tables/T4/nonsense", b"junk", "not a topic the pit reads")],
    )
    applied = apply_batch(store, batch, False)
    assert heard == [frozenset({"T1"}), frozenset({"T2"}), frozenset({"T3"}), frozenset({"T4"})]
    assert applied.touched == {"T1", "T2", "T3", "T4"}
    assert [t["table_id"] for t in store.tables()] == ["T1", "T2"]
    store.close()


# ---------------------------------------------------------------------- two pits on one store


@dataclass
class Pit:
    """One pit process: its app, its writer (announcing as the process does), its feed."""

    served: Served
    writer: StoreWorker
    feed: ChangeFeed
    woken: list[frozenset[str] | None] = field(default_factory=list)

    async def commit(self, *bodies: dict[str, object]) -> None:
        """Commit events as the process's ingest does (a batch), and wake its own pages."""
        batch = Batch(events=[event_in(b) for b in bodies])
        applied = await self.writer.call(apply_batch, batch, False)
        self.served.board.touch(applied)


@contextlib.asynccontextmanager
async def pit(url: str, *, reread: float = 3600.0, idle: float = 1.0) -> AsyncIterator[Pit]:
    announcer = Announcer()
    writer = StoreWorker(url, "ingest", announcer=announcer)
    await writer.open()
    async with serve(url) as served:
        feed = ChangeFeed(
            url,
            served.board,
            origin=announcer.origin,
            reread=reread,
            idle=idle,
            backoff=Backoff(0.01, 0.05),
        )
        one = Pit(served, writer, feed)
        feed.on_wake = one.woken.append
        task = asyncio.create_task(feed.run())
        try:
            await until(lambda: feed.listening, what="the feed to listen")
            await until(lambda: one.woken == [None], what="the first wake")
            yield one
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await writer.close()


def prepared(url: str) -> str:
    store = Store(url)
    store.migrate()
    add_user(store, "ann", ["floor"], PASSWORD)
    store.close()
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One store for two pits: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        yield prepared(f"sqlite:///{tmp_path / 'pit.sqlite'}")
        return
    server: PostgresServer = request.getfixturevalue("postgres")
    yield prepared(server.new_database())


STARTED = {"button": 1, "seats": [1, 2], "blinds": [1, 2], "ante": 0, "stacks": {"1": 100}}


def hold(seq: int, table: str = "T1") -> dict[str, object]:
    return envelope(
        seq,
        "hand.hold",
        table=table,
        hand=f"{table}-00001",
        data={"hold": f"{table}-h{seq}", "rule": "SEAT-COUNT", "reason": "r", "ruling": "misdeal"},
        severity="hold",
    )


async def test_a_commit_by_one_pit_wakes_the_live_pages_of_the_other(shared_url: str) -> None:
    async with pit(shared_url) as a, pit(shared_url) as b:
        await a.commit(envelope(1, "hand.started", data=STARTED))
        await until(lambda: frozenset({"T1"}) in b.woken, what="B to hear of T1")
        holds = await Stream.open(b.served.port, "/api/live/holds", basic("ann"))
        table = await Stream.open(b.served.port, "/api/live/tables/T1", basic("ann"))
        try:
            await holds.read_until(b"holds-open")
            await table.read_until(b"table-events")
            other = b.served.board.table_version("T2")
            heard = len(b.woken)
            await a.commit(hold(2))
            # B ingested nothing: its streams show A's commit, woken by A's announcement
            await holds.read_until(b"hold <code>T1-h2</code>", timeout=10)
            await table.read_until(b"hand.hold", timeout=10)
            assert b.woken[heard:] == [frozenset({"T1"})]
            assert b.served.board.table_version("T2") == other  # another table's page slept
            # A's commits woke A's pages directly: its feed skipped its own announcements
            await until(lambda: a.feed.own >= 2, what="A to hear its own announcements")
            assert a.woken == [None]
        finally:
            for stream in (holds, table):
                stream.close()


async def test_with_no_live_stream_announcements_wait_and_a_page_reads_them_first(
    shared_url: str,
) -> None:
    async with pit(shared_url) as a, pit(shared_url, idle=3600.0) as b:
        await a.commit(envelope(1, "hand.started", data=STARTED))
        if b.feed.dialect == "postgresql":  # it read that, and waits an hour to read again
            await until(lambda: b.feed.reads == 1, what="B's read")
        headers = {"Authorization": basic("ann")}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{b.served.port}") as client:
            before = await client.get("/holds", headers=headers)
            assert before.status_code == 200
            assert "T1-h21" not in before.text  # the page is computed, and kept, here
            reads = b.feed.reads
            for n in range(2, 21):
                await a.commit(envelope(n, table=f"T{n % 4}", hand=None))
            await a.commit(hold(21))
            # B follows nothing: what A announced waits for its next read, an hour away…
            assert b.feed.reads == reads
            # … and a page about to be computed reads it first: not the page kept from before
            # (looked at again while PostgreSQL's last notification may still be on its way)
            gets = 0

            async def shows_the_hold() -> bool:
                nonlocal gets
                gets += 1
                page = await client.get("/holds", headers=headers)
                return "hold <code>T1-h21</code>" in page.text

            await until_async(shows_the_hold, 10, "B's holds page to show T1-h21")
            assert b.feed.reads - reads == gets


async def test_the_first_live_stream_makes_the_feed_read_at_once(shared_url: str) -> None:
    async with pit(shared_url) as a, pit(shared_url, idle=3600.0) as b:
        await a.commit(envelope(1, "hand.started", data=STARTED))
        if b.feed.dialect == "postgresql":  # it read that, and waits an hour to read again
            await until(lambda: b.feed.reads == 1, what="B's read")
        holds = await Stream.open(b.served.port, "/api/live/holds", basic("ann"))
        try:
            await holds.read_until(b"holds-open")
            assert b.served.board.followers == 1
            await a.commit(hold(2))
            await holds.read_until(b"hold <code>T1-h2</code>", timeout=10)
        finally:
            holds.close()
        await until(lambda: b.served.board.followers == 0, what="the stream to be let go")


async def test_a_burst_of_commits_wakes_the_other_pit_a_bounded_number_of_times(
    shared_url: str,
) -> None:
    async with pit(shared_url) as a, pit(shared_url) as b:
        loop = asyncio.get_running_loop()
        started = loop.time()
        commits = 200
        for n in range(1, commits + 1):
            await a.commit(envelope(n, table=f"T{n % 5}", hand=None))
        await until(lambda: b.feed.heard >= commits, timeout=20, what="every announcement")

        def woken() -> set[str]:
            return set().union(*(t for t in b.woken[1:] if t is not None))

        # the wake of the last read comes after its coalescing delay (one SQLite poll may read
        # the whole burst)
        await until(lambda: woken() == {f"T{i}" for i in range(5)}, what="every table woken")
        elapsed = loop.time() - started
        # at most one wake every ``coalesce`` seconds, with what arrived meanwhile
        assert b.feed.wakes <= elapsed / b.feed.coalesce + 3, (b.feed.wakes, elapsed)
        assert b.feed.wakes < commits


async def test_the_safety_net_wakes_every_page_without_an_announcement(shared_url: str) -> None:
    async with pit(shared_url, reread=0.5) as b:
        await until(lambda: len(b.woken) >= 3, what="two re-reads")
        assert b.woken[:3] == [None, None, None]


async def test_malformed_and_oversized_announcements_never_break_the_listener(
    shared_url: str,
) -> None:
    garbage = ["not json", "[" * 5000, "x" * 7000, '{"o": 1, "t": 5}', "\u00e9" * 100, ""]
    async with pit(shared_url) as b:
        writer = Db(shared_url)
        if writer.dialect == "postgresql":
            for payload in garbage:
                writer.execute("SELECT pg_notify(?, ?)", (CHANNEL, payload))
        else:
            for payload in garbage:
                writer.execute("INSERT INTO live_changes (payload) VALUES (?)", (payload,))
        # each wakes every page (it cannot tell which changed), coalesced
        await until(lambda: b.feed.malformed == len(garbage), what="the malformed ones")
        await until(lambda: b.woken[-1] is None and b.feed._due is None, what="their wake")
        writer.announcer = Announcer()
        writer.changed(("T9",))
        writer.close()
        await until(lambda: b.woken[-1] == frozenset({"T9"}), what="the good announcement")
        assert b.feed.heard == len(garbage) + 1
        assert b.feed.connections == 1  # never dropped
        assert b.feed.listening


async def test_a_dropped_listen_connection_is_made_again_and_wakes_every_page_once(
    postgres: PostgresServer,
) -> None:
    url = prepared(postgres.new_database())
    async with pit(url) as a, pit(url) as b:
        await a.commit(envelope(1, "hand.started", data=STARTED))
        await until(lambda: frozenset({"T1"}) in b.woken, what="B to hear of T1")
        del b.woken[1:]
        floor = await Stream.open(b.served.port, "/api/live/floor", basic("ann"))
        await floor.read_until(b"floor-summary")
        admin = Db(url)
        killed = admin.all(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = ? AND datname = current_database()",
            (APPLICATION,),
        )
        admin.close()
        assert len(killed) == 2  # A's and B's listeners
        await until(lambda: b.feed.connections == 2 and b.feed.listening, what="B again")
        await until(lambda: a.feed.connections == 2 and a.feed.listening, what="A again")
        # once back, each woke every page once (whatever was announced meanwhile is lost)
        await until(lambda: b.woken == [None, None], what="B's wake after the reconnection")
        await until(lambda: a.woken == [None, None], what="A's wake after the reconnection")
        # and it hears again
        await a.commit(hold(2))
        await until(lambda: frozenset({"T1"}) in b.woken, what="B to hear A again")
        await floor.read_until(b"1 open hold<", timeout=10)
        floor.close()


async def test_a_listener_lost_is_said_on_healthz_and_in_the_banner_until_it_is_back(
    postgres: PostgresServer,
) -> None:
    url = prepared(postgres.new_database())
    database = url.rsplit("/", 1)[1]
    health = PitHealth(broker_connected=True, follows_changes=True)

    async def healthz(client: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
        answer = await client.get("/healthz")
        return answer.status_code, answer.json()

    async with serve(url, health=health) as served:
        base = f"http://127.0.0.1:{served.port}"
        async with httpx.AsyncClient(base_url=base) as client:
            status, body = await healthz(client)
            assert status == 503
            assert body["changes"] is False
            assert [p["part"] for p in body["lost"]] == ["changes"]
            feed = ChangeFeed(
                url, served.board, reread=3600.0, backoff=Backoff(0.01, 0.05), health=health
            )
            task = asyncio.create_task(feed.run())
            admin = Db(postgres.url())
            try:
                await until(lambda: feed.listening, what="the feed to listen")
                status, body = await healthz(client)
                assert (status, body["status"], body["changes"], body["lost"]) == (
                    200,
                    "ok",
                    True,
                    [],
                )
                # the listening connection cut, and no new one let in: lost until it is back
                admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
                admin.all(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = ? AND datname = ?",
                    (APPLICATION, database),
                )
                await until(lambda: not health.ok("changes"), what="the listener lost")
                status, body = await healthz(client)
                assert status == 503
                assert body["store"] is True
                assert body["changes"] is False
                lost = body["lost"]
                assert isinstance(lost, list)
                assert [p["part"] for p in lost] == ["changes"]
                assert lost[0]["reason"]
                page = await client.get("/login")
                assert "other pit processes" in page.text  # the banner names what is lost
                admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
                await until(lambda: feed.listening, timeout=20, what="the listener back")
                status, body = await healthz(client)
                assert (status, body["changes"], body["lost"]) == (200, True, [])
            finally:
                admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
                admin.close()
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
