"""A table whose journal starts again (a new PC, a new state directory, the demo run twice): its
bdseq counts from 1 again under another journal, and its hands from 1 again in another epoch.
The pit takes it as the table's newest connection, never mistakes a late Will of the journal
before for it, and keeps the two journals' hands of one id as two hands, each with its own link.
On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from controller.envelope import envelope as envelope_of
from controller.pit.batches import EventIn
from controller.pit.db import Db
from controller.pit.ingest import Route, parse_event
from controller.pit.metrics import PitMetrics
from controller.pit.published import RejectedError, parse_status
from controller.pit.rulings import Rulings
from controller.pit.schema import AUTO_ID, MIGRATIONS
from controller.pit.store import Store
from controller.pit.users import add_user
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker
from controller.signing import Signer, new_key
from simulators.autoplay import AutoDealer, Style, random_table
from tests.pit.test_store import envelope, event_in

PASSWORD = "a long enough password"
OLD, NEW = "a1a1a1a1a1a1", "b2b2b2b2b2b2"  # two journals: each is named by its first epoch


def status(
    state: str, bdseq: int, ts: str, journal: str | None = OLD, **more: Any
) -> dict[str, Any]:
    """A birth or death as the table publishes it (``journal`` None: a table too old to name
    its journal)."""
    body: dict[str, Any] = {"state": state, "bdseq": bdseq, "ts": ts, "version": "0.2.0"}
    if journal is not None:
        body |= {"journal": journal, "epoch": more.pop("epoch", journal)}
    return body | more


def at(clock: str) -> str:
    return f"2026-03-01T{clock}.000Z"


def now_of(store: Store, table: str = "T1") -> tuple[bool | None, str | None, int | None]:
    (row,) = store.tables(table)
    return row["online"], row["journal"], row["bdseq"]


# --------------------------------------------------------------------------- births and deaths


def test_a_table_whose_journal_starts_again_is_online_and_its_births_are_stored(
    store: Store,
) -> None:
    for bdseq, clock in ((56, "09:00:00"), (57, "10:00:00")):
        store.record_statuses([("T1", status("online", bdseq, at(clock)))], 1.0)
        store.record_statuses([("T1", status("offline", bdseq, at(clock)))], 2.0)
    assert now_of(store) == (False, OLD, 57)
    # a new PC: another journal, counting from 1 again
    new, refused = store.record_statuses(
        [("T1", status("online", 1, at("11:00:00"), NEW, epoch="c3c3c3c3c3c3"))], 3.0
    )
    assert (new, refused) == ([("T1", "online")], [])
    assert now_of(store) == (True, NEW, 1)
    births = [(b["journal"], b["bdseq"], b["state"], b["epoch"]) for b in store.births("T1")]
    assert births[-1] == (NEW, 1, "online", "c3c3c3c3c3c3")
    assert (OLD, 57, "offline", OLD) in births
    assert len(births) == 5
    # the new journal's connections follow each other as any do
    store.record_statuses([("T1", status("offline", 1, at("11:00:00"), NEW))], 4.0)
    assert now_of(store) == (False, NEW, 1)
    new, _ = store.record_statuses([("T1", status("online", 2, at("11:05:00"), NEW))], 5.0)
    assert new == [("T1", "online")]
    assert now_of(store) == (True, NEW, 2)


def test_the_old_journal_s_late_will_does_not_mark_the_new_one_offline(store: Store) -> None:
    store.record_statuses([("T1", status("online", 57, at("10:00:00")))], 1.0)
    # the old PC lost its power: the new one is up before the broker gives up on the old
    store.record_statuses([("T1", status("online", 1, at("11:00:00"), NEW))], 2.0)
    new, _ = store.record_statuses([("T1", status("offline", 57, at("10:00:00")))], 3.0)
    assert new == [("T1", "offline")]  # kept: the old journal's last connection ended
    assert now_of(store) == (True, NEW, 1)
    # a late copy of the old birth (a pit process back with its queue) changes nothing either
    store.record_statuses([("T1", status("online", 57, at("10:00:00")))], 4.0)
    assert now_of(store) == (True, NEW, 1)
    # the new connection republishes its status: it is the table's
    full = {"alarm": "journal.full", "detail": "12 kB free", "since": at("11:30:00")}
    birth = status("online", 1, at("11:30:00"), NEW, degraded=True, alarms=[full])
    assert store.record_statuses([("T1", birth)], 5.0)[0] == []
    (row,) = store.tables("T1")
    assert (row["online"], row["degraded"], row["alarms"]) == (True, True, [full])
    # its own Will ends it, made when it began (before its republished birth)
    store.record_statuses([("T1", status("offline", 1, at("11:00:00"), NEW))], 6.0)
    assert now_of(store) == (False, NEW, 1)
    # the old journal's PC put back: it goes on counting in its own journal, and is the table's
    store.record_statuses([("T1", status("online", 58, at("12:00:00")))], 7.0)
    assert now_of(store) == (True, OLD, 58)
    store.record_statuses([("T1", status("offline", 1, at("11:00:00"), NEW))], 8.0)
    assert now_of(store) == (True, OLD, 58)


def test_one_batch_of_both_journals_statuses_in_any_order_leaves_the_new_one_current(
    store: Store,
) -> None:
    old_birth = status("online", 57, at("10:00:00"))
    old_will = status("offline", 57, at("10:00:00"))
    new_birth = status("online", 1, at("11:00:00"), NEW)
    orders = ([old_birth, new_birth, old_will], [new_birth, old_will, old_birth])
    for n, order in enumerate(orders):
        table = f"T{n}"
        new, _ = store.record_statuses([(table, body) for body in order], 1.0)
        assert sorted(new) == [(table, "offline"), (table, "online"), (table, "online")]
        assert now_of(store, table) == (True, NEW, 1)


def test_a_status_that_names_no_journal_is_of_one_unnamed_journal(store: Store) -> None:
    # a table of an earlier tablectl: bdseq alone, as before
    assert store.record_statuses([("T1", status("online", 2, at("09:00:00"), None))], 1.0)[0]
    store.record_statuses([("T1", status("offline", 1, at("08:00:00"), None))], 2.0)
    assert now_of(store) == (True, None, 2)  # an older death: late
    store.record_statuses([("T1", status("offline", 2, at("09:00:00"), None))], 3.0)
    assert now_of(store) == (False, None, 2)
    births = [(b["journal"], b["bdseq"], b["state"], b["epoch"]) for b in store.births("T1")]
    assert sorted(births) == [
        (None, 1, "offline", None),
        (None, 2, "offline", None),
        (None, 2, "online", None),
    ]
    # upgraded: its birth names its journal and goes on counting; a late Will from before the
    # upgrade (made before this birth) does not end it
    store.record_statuses([("T1", status("online", 3, at("10:00:00")))], 4.0)
    assert now_of(store) == (True, OLD, 3)
    store.record_statuses([("T1", status("offline", 2, at("09:00:00"), None))], 5.0)
    assert now_of(store) == (True, OLD, 3)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("journal", 5),
        ("journal", ""),
        ("journal", "x" * 65),
        ("epoch", ["e1"]),
        ("epoch", True),
    ],
)
def test_a_status_whose_journal_or_epoch_is_not_a_name_is_refused(
    store: Store, field: str, value: object
) -> None:
    store.record_statuses([("T1", status("online", 57, at("10:00:00")))], 1.0)
    bad = status("offline", 57, at("10:00:00")) | {field: value}
    new, refused = store.record_statuses([("T1", bad)], 2.0)
    assert new == []
    assert [(t, reason) for t, _, reason in refused] == [
        ("T1", "a status's journal and epoch are names (text of 1 to 64 characters)")
    ]
    assert now_of(store) == (True, OLD, 57)
    with pytest.raises(RejectedError, match=field):
        parse_status(json.dumps(bad).encode())
    assert parse_status(json.dumps(status("online", 1, at("10:00:00"), None)).encode())


def test_the_migration_keeps_the_births_stored_before_it_as_of_no_journal(
    store_url: str,
) -> None:
    (number,) = [n for n, text in enumerate(MIGRATIONS, 1) if "births_of_journals" in text]
    db = Db(store_url)
    try:
        for text in MIGRATIONS[: number - 1]:
            with db.transaction():
                db.script(text.replace("{id}", AUTO_ID[db.dialect]))
        with db.transaction():
            db.execute("INSERT INTO pit_meta (key, value) VALUES ('schema', ?)", (str(number - 1),))
            for bdseq, state in ((57, "online"), (57, "offline")):
                db.execute(
                    "INSERT INTO births (table_id, bdseq, state, ts, body, received_at) "
                    "VALUES ('T1', ?, ?, ?, '{}', 1.0)",
                    (bdseq, state, at("10:00:00")),
                )
            db.execute(
                "INSERT INTO tables (table_id, online, bdseq, status_ts) VALUES ('T1', 0, 57, ?)",
                (at("10:00:00"),),
            )
    finally:
        db.close()
    store = Store(store_url)
    try:
        assert store.migrate() == len(MIGRATIONS)
        births = [(b["journal"], b["bdseq"], b["state"]) for b in store.births("T1")]
        assert births == [(None, 57, "online"), (None, 57, "offline")]
        assert now_of(store) == (False, None, 57)
        # the same table on a new PC, with a tablectl that names its journal
        new, _ = store.record_statuses([("T1", status("online", 1, at("11:00:00"), NEW))], 2.0)
        assert new == [("T1", "online")]
        assert now_of(store) == (True, NEW, 1)
    finally:
        store.close()


# --------------------------------------------------------------------------- hands


def played_hand(seed: int, epoch: str) -> list[EventIn]:
    """A whole hand of table R (its id ``R-00001``: each journal numbers its hands from 1),
    both views of each event, in ``epoch``."""
    rng = random.Random(seed)
    dealer = AutoDealer(random_table(rng), rng, Style(fold=0.1, aggressive=0.3, all_in=0.2))
    assert dealer.play_hand()
    events = []
    for seq, event in enumerate(dealer.run.events, start=1):
        for stream in ("public", "secure"):
            body = envelope_of(event, table_id="R", epoch=epoch, seq=seq, secure=stream == "secure")
            route = Route("event", "R", stream, "live")
            events.append(parse_event(json.dumps(body).encode(), route))
    return events


@pytest.fixture
async def client(store_url: str, store: Store) -> AsyncIterator[httpx.AsyncClient]:
    """The pit's app on a store holding table R's hand R-00001 of two journals (epochs OLD,
    then NEW), and T1's hand T1-00001 of one."""
    add_user(store, "ann", ["floor"], PASSWORD)
    store.ingest(played_hand(3, OLD))
    store.ingest(played_hand(4, NEW))
    store.ingest([event_in(envelope(1, "hand.started", data=None))])
    worker = StoreWorker(store_url, "api")
    await worker.open()
    app = create_app(worker, PitMetrics("p"), pit_id="p")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://pit", auth=("ann", PASSWORD)
    ) as test_client:
        yield test_client
    await worker.close()


async def test_two_journals_hands_of_one_id_are_listed_twice_with_links_of_their_own(
    client: httpx.AsyncClient,
) -> None:
    listed = (await client.get("/api/hands?table=R")).json()
    assert sorted((h["hand_id"], h["epoch"]) for h in listed) == [
        ("R-00001", OLD),
        ("R-00001", NEW),
    ]
    assert [h["epoch"] for h in (await client.get("/api/hands?hand=R-00001")).json()] == [
        h["epoch"] for h in listed
    ]
    page = (await client.get("/hands?table=R")).text
    links = {f"/hands/R-00001?table=R&amp;epoch={e}" for e in (OLD, NEW)}
    phh = {f"/api/hands/R-00001/phh?table=R&amp;epoch={e}" for e in (OLD, NEW)}
    assert all(link in page for link in links | phh), page
    searched = (await client.get("/hands?hand=R-00001")).text
    assert all(link in searched for link in links)
    pots = {}
    for hand in listed:
        which = {"table": "R", "epoch": hand["epoch"]}
        one = await client.get("/hands/R-00001", params=which)
        assert one.status_code == 200
        assert f'epoch <code class="epoch">{hand["epoch"]}</code>' in one.text
        api = (await client.get("/api/hands/R-00001", params={"epoch": hand["epoch"]})).json()
        assert (api["epoch"], api["first_seq"], api["pot"]) == (
            hand["epoch"],
            hand["first_seq"],
            hand["pot"],
        )
        history = await client.get("/api/hands/R-00001/phh", params=which)
        assert history.status_code == 200
        assert 'variant = "NT"' in history.text
        pots[hand["epoch"]] = history.text
    assert pots[OLD] != pots[NEW]  # two hands, each its own history


async def test_a_hand_id_of_two_journals_without_its_epoch_is_ambiguous_and_one_of_one_is_not(
    client: httpx.AsyncClient,
) -> None:
    for path in ("/api/hands/R-00001", "/api/hands/R-00001/phh"):
        answer = await client.get(path)
        assert answer.status_code == 409
        detail = answer.json()["detail"]
        assert f"table=R&epoch={OLD}" in detail
        assert f"table=R&epoch={NEW}" in detail
    # a link of before: the page lists each hand of the id, each with its own link
    choice = await client.get("/hands/R-00001")
    assert choice.status_code == 200
    assert "2 hands have the id <strong>R-00001</strong>" in choice.text
    assert f"/hands/R-00001?table=R&amp;epoch={NEW}" in choice.text
    # an id only one hand has: its links of before work as they did
    assert (await client.get("/api/hands/T1-00001")).json()["epoch"] == "e1"
    assert (await client.get("/hands/T1-00001")).status_code == 200
    assert (await client.get("/api/hands/T1-00001?epoch=e1")).status_code == 200
    # and an epoch or table it is not in: no such hand
    assert (await client.get("/api/hands/T1-00001?epoch=e9")).status_code == 404
    assert (await client.get(f"/hands/R-00001?table=T1&epoch={OLD}")).status_code == 404


# --------------------------------------------------------------------------- rulings


def hold_raised(epoch: str, seq: int) -> EventIn:
    data = {"hold": "T1-00001-h1", "rule": "SEAT-COUNT", "reason": "r", "ruling": "misdeal"}
    return event_in(envelope(seq, "hand.hold", epoch=epoch, data=data, severity="hold"))


async def test_a_ruling_names_the_hold_s_epoch_and_never_rules_for_a_journal_left(
    store_url: str, store: Store
) -> None:
    add_user(store, "ann", ["floor"], PASSWORD)
    # the old journal's hand held, never resolved: its PC was replaced; the new journal's
    # first hand is held too, under the same hold id
    store.record_statuses([("T1", status("online", 57, at("10:00:00")))], 1.0)
    store.ingest([hold_raised(OLD, 5)])
    store.record_statuses([("T1", status("online", 1, at("11:00:00"), NEW))], 2.0)
    store.ingest([hold_raised(NEW, 3)])
    sent: list[dict[str, Any]] = []
    rulings: Rulings

    async def publish(topic: str, payload: bytes) -> None:
        body = json.loads(payload)
        sent.append(body)
        rulings.on_response("T1", {"transaction": body["transaction"], "status": "ok"})

    rulings = Rulings("tables", publish, Signer(new_key()[0], "pit", ""), timeout=5)
    worker = StoreWorker(store_url, "api")
    await worker.open()
    app = create_app(worker, PitMetrics("p"), pit_id="p", rulings=rulings)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://pit", auth=("ann", PASSWORD)
        ) as client:
            held = (await client.get("/api/holds")).json()
            assert sorted(h["epoch"] for h in held) == sorted([OLD, NEW])
            confirm = "/api/holds/T1-00001-h1/confirm"
            ambiguous = await client.post(confirm, params={"table": "T1"})
            assert ambiguous.status_code == 409
            assert "give epoch" in ambiguous.json()["detail"]
            left = await client.post(confirm, params={"table": "T1", "epoch": OLD})
            assert left.status_code == 409
            assert f"journal {OLD}" in left.json()["detail"]
            assert sent == []
            form = {"table": "T1", "epoch": NEW}  # as the console's form sends it
            ruled = await client.post(confirm, data=form, headers={"Accept": "application/json"})
            assert (ruled.status_code, ruled.json()["status"]) == (200, "ok")
            assert [body["hold"] for body in sent] == ["T1-00001-h1"]
            page = (await client.get("/holds")).text
            assert f'<input type="hidden" name="epoch" value="{NEW}">' in page
            assert f'id="hold-T1-{OLD}-T1-00001-h1"' in page
    finally:
        await worker.close()
