"""The pit's store on SQLite and PostgreSQL: each event once, what is derived from it, gaps."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.pit.batches import EventIn
from controller.pit.db import StoreError
from controller.pit.ingest import Route, parse_event
from controller.pit.schema import SCHEMA_VERSION
from controller.pit.store import Store

#: The default event's data: a check, whole (the pit names any field an event lacks).
_CHECK = {"seat": 1, "action": "check", "stack": 100, "all_in": False}


def envelope(
    seq: int,
    type_: str = "betting.action",
    *,
    table: str = "T1",
    epoch: str = "e1",
    hand: str | None = "T1-00001",
    data: dict[str, Any] | None = None,
    rules: list[str] | None = None,
    severity: str = "info",
    by: dict[str, str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schema": "tablectl.event/1",
        "table_id": table,
        "epoch": epoch,
        "seq": seq,
        "event_id": f"{table}:{epoch}:{seq}",
        "historical": False,
        "ts": f"2026-01-01T00:00:{seq % 60:02d}.000Z",
        "hand_id": hand,
        "type": type_,
        "rules": rules or [],
        "severity": severity,
        "needs_confirm": False,
        "data": data if data is not None else _CHECK if type_ == "betting.action" else {},
    }
    if by is not None:
        body["by"] = by
    return body


STREAMS = ("public", "secure")


def event_in(body: dict[str, Any], stream: str = "public", source: str = "live") -> EventIn:
    route = Route("event", body["table_id"], stream, source)  # type: ignore[arg-type]
    return parse_event(json.dumps(body).encode(), route)


def test_migrations_apply_once_and_a_newer_schema_is_refused(store: Store) -> None:
    assert store.schema_version() == SCHEMA_VERSION
    assert store.migrate() == SCHEMA_VERSION
    store.db.execute("UPDATE pit_meta SET value = ? WHERE key = 'schema'", (str(99),))
    with pytest.raises(StoreError, match="newer than this tablectl"):
        store.migrate()


def test_each_view_of_an_event_is_stored_once(store: Store) -> None:
    first = [event_in(envelope(1)), event_in(envelope(2)), event_in(envelope(1))]
    applied = store.ingest(first)
    assert applied.stored == {"T1": 2}
    assert applied.duplicates == 1
    again = store.ingest([event_in(envelope(2)), event_in(envelope(2), "secure")])
    assert again.duplicates == 1
    assert [e.stream for e in again.stored_events] == ["secure"]
    assert store.event_keys() == [("T1", "e1", 1), ("T1", "e1", 2)]
    row = store.db.one("SELECT public IS NOT NULL, secure IS NOT NULL FROM events WHERE seq = 2")
    assert row is not None
    assert (bool(row[0]), bool(row[1])) == (True, True)
    tables = store.tables()
    assert tables[0]["last_seq"] == 2
    assert tables[0]["epoch"] == "e1"


def test_both_views_and_their_copies_in_one_batch_are_stored_once_each(store: Store) -> None:
    first, second = event_in(envelope(1)), event_in(envelope(1), "secure")
    applied = store.ingest([second, first, first, second, event_in(envelope(2), "secure")])
    assert sorted((e.seq, e.stream) for e in applied.stored_events) == [
        (1, "public"),
        (1, "secure"),
        (2, "secure"),
    ]
    assert applied.duplicates == 2
    again = store.ingest([first, event_in(envelope(2)), second])
    assert [(e.seq, e.stream) for e in again.stored_events] == [(2, "public")]
    assert again.duplicates == 2


def test_hands_holds_rulings_and_alarms_are_derived_once(store: Store) -> None:
    started = envelope(
        1,
        "hand.started",
        data={"button": 3, "seats": [1, 2, 3], "blinds": [1, 2], "ante": 0, "stacks": {"1": 100}},
    )
    hold = envelope(
        5,
        "hand.hold",
        data={
            "hold": "T1-00001-h1",
            "rule": "SEAT-COUNT",
            "reason": "seat 3 holds 1 card",
            "ruling": "misdeal",
            "seat": 3,
            "count": 1,
        },
        rules=["SEAT-COUNT"],
        severity="hold",
    )
    resume = envelope(
        6,
        "hand.resume",
        data={"hold": "T1-00001-h1", "decision": "misdeal", "by": "confirm"},
        by={"person": "Bob Floor", "role": "floor"},
    )
    alarm = envelope(7, "integrity.alarm", data={"reason": "foreign card"}, severity="critical")
    awarded = envelope(
        8,
        "pot.awarded",
        data={
            "pots": [{"amount": 6, "eligible": [1, 3], "winners": {"1": 6}, "odd_chips": {}}],
            "payouts": {"1": 6},
        },
        rules=["DE-1552"],
    )
    done = envelope(9, "hand.completed", data={"stacks": {"1": 104}, "next_button": 1})
    # out of order, in two batches, one of them twice
    store.ingest([event_in(resume), event_in(done), event_in(hold)])
    store.ingest([event_in(started), event_in(alarm), event_in(awarded), event_in(hold)])
    hands = store.hands(table="T1")
    assert len(hands) == 1
    hand = hands[0]
    assert hand["outcome"] == "completed"
    assert (hand["first_seq"], hand["last_seq"]) == (1, 9)
    assert hand["pot"] == 6
    assert hand["payouts"] == {"1": 6}
    assert hand["rake"] is None
    assert hand["rules"] == ["DE-1552", "SEAT-COUNT"]
    assert [r["type"] for r in hand["rulings"]] == ["hand.hold", "hand.resume", "pot.awarded"]
    assert hand["rulings"][1]["person"] == "Bob Floor"
    assert [h["hand_id"] for h in store.hands(rule="SEAT-COUNT")] == ["T1-00001"]
    assert store.hands(rule="DE-1546a") == []
    assert store.hands(since="2026-01-01T00:00:02.000Z") == []
    assert store.holds() == []
    resolution = store.holds(open_only=False)[0]["resolution"]
    assert resolution is not None
    assert resolution["decision"] == "misdeal"
    assert store.holds(open_only=False)[0]["evidence"] == {"count": 1}
    assert [a["type"] for a in store.alarms()] == ["integrity.alarm"]
    assert store.counts()["hands"] == 1


def test_an_alarm_is_acknowledged_once_with_who_and_when(store: Store) -> None:
    alarm = envelope(3, "integrity.alarm", data={"reason": "duplicate card"}, severity="critical")
    store.ingest([event_in(alarm)])
    assert [a["acked_by"] for a in store.alarms(unacknowledged=True)] == [None]
    assert store.ack_alarm("T1", "e1", 4, "ann", ["floor"], 10.0) == "unknown"
    assert store.ack_alarm("T1", "e1", 3, "ann", ["floor"], 10.0) == "acked"
    assert store.ack_alarm("T1", "e1", 3, "sam", ["surveillance"], 11.0) == "already"
    (acked,) = store.alarms()
    assert (acked["acked_by"], acked["acked_at"]) == ("ann", 10.0)
    assert store.alarms(unacknowledged=True) == []
    fault = envelope(
        4,
        "device.status",
        data={"device": "shuffler", "fault": "JAM_INPUT", "detail": "cards jammed"},
        severity="warn",
    )
    health = envelope(5, "device.status", data={"device": "shuffler", "health": "online"})
    store.ingest([event_in(fault), event_in(health)])
    (jam,) = store.alarms(unacknowledged=True)
    assert jam["type"] == "device.status"
    assert jam["reason"] == "shuffler fault JAM_INPUT: cards jammed"


def test_resolved_holds_come_last_resolved_first(store: Store) -> None:
    for n, seat in ((1, 1), (2, 2)):
        raised = envelope(
            n * 10,
            "hand.hold",
            data={"hold": f"h{n}", "rule": "SEAT-COUNT", "reason": "r", "ruling": "misdeal"},
        )
        resume = envelope(
            n * 10 + 1,
            "hand.resume",
            data={"hold": f"h{n}", "decision": "misdeal", "by": "confirm", "seat": seat},
            by={"person": f"p{n}", "role": "floor"},
        )
        store.ingest([event_in(raised), event_in(resume)])
    assert [h["hold"] for h in store.resolved_holds(10)] == ["h2", "h1"]
    (last,) = store.resolved_holds(1)
    assert last["resolution"] is not None
    assert last["resolution"]["person"] == "p2"
    assert store.holds() == []


def test_births_and_deaths_the_newest_connection_decides(store: Store) -> None:
    online = {"state": "online", "bdseq": 2, "ts": "t", "version": "1"}
    assert store.record_status("T1", online, 1.0)
    assert not store.record_status("T1", online, 2.0)
    store.record_status("T1", {"state": "offline", "bdseq": 1}, 3.0)  # an older death: late
    assert store.tables()[0]["online"] is True
    store.record_status("T1", {"state": "offline", "bdseq": 2}, 4.0)
    assert store.tables()[0]["online"] is False
    births = sorted((b["bdseq"], b["state"]) for b in store.births("T1"))
    assert births == [(1, "offline"), (2, "offline"), (2, "online")]


def test_a_status_republished_on_one_connection_updates_degraded_and_alarms(
    store: Store,
) -> None:
    full = {"alarm": "journal.full", "detail": "12 kB free", "since": "2026-01-01T00:00:00Z"}
    birth = {"state": "online", "bdseq": 3, "ts": "t", "version": "1"}
    new, _ = store.record_statuses([("T1", birth)], 1.0)
    assert new == [("T1", "online")]
    assert (store.tables()[0]["degraded"], store.tables()[0]["alarms"]) == (False, [])
    new, _ = store.record_statuses([("T1", {**birth, "degraded": True, "alarms": [full]})], 2.0)
    assert new == []  # the same connection: no birth, but the table is degraded now
    table = store.tables()[0]
    assert (table["online"], table["degraded"], table["alarms"]) == (True, True, [full])
    store.record_statuses([("T1", {**birth, "alarms": "not a list"})], 3.0)
    assert (store.tables()[0]["degraded"], store.tables()[0]["alarms"]) == (False, [])
    new, _ = store.record_statuses([("T1", {"state": "offline", "bdseq": 3})], 4.0)
    assert new == [("T1", "offline")]
    store.record_statuses([("T1", birth)], 5.0)  # a late copy of the birth: the death stays
    assert store.tables()[0]["online"] is False


SHIPPED = {"version": "0.1.0", "record_sha256": "a" * 64, "editable": False}


@pytest.mark.parametrize(
    ("build", "kept"),
    [
        ({"version": "0.1.0", "record_sha256": "a" * 64, "editable": False}, True),
        ({"version": "0.1.0", "record_sha256": None, "editable": True}, True),
        ({"version": "0.1.0", "record_sha256": "a" * 64, "editable": False, "modified": 3}, True),
        ({"version": "0.1.0", "record_sha256": "a" * 64, "editable": False, "modified": -1}, False),
        (
            {"version": "0.1.0", "record_sha256": "a" * 64, "editable": False, "modified": True},
            False,
        ),
        ({"version": "0.1.0", "record_sha256": "a" * 63, "editable": False}, False),
        ({"version": 1, "record_sha256": "a" * 64, "editable": False}, False),
        ({"version": "0.1.0", "record_sha256": "a" * 64}, False),
        ("0.1.0", False),
        (None, False),
    ],
)
def test_the_build_a_table_runs_is_kept_from_its_birth_when_it_has_its_shape(
    store: Store, build: object, kept: bool
) -> None:
    birth = {"state": "online", "bdseq": 1, "ts": "t", "version": "0.1.0", "build": build}
    store.record_statuses([("T1", birth)], 1.0)
    assert store.tables()[0]["build"] == (build if kept else None)
    newer = {"version": "0.2.0", "record_sha256": "b" * 64, "editable": False}
    store.record_statuses([("T1", {**birth, "bdseq": 2, "build": newer})], 2.0)
    assert store.tables()[0]["build"] == newer  # the newest connection's build


def test_a_new_epoch_is_recorded_with_how_it_began(store: Store) -> None:
    store.ingest([event_in(envelope(s, hand=None)) for s in (1, 2, 3)])
    began = envelope(
        1,
        "journal.epoch.started",
        epoch="e2",
        hand=None,
        data={"epoch": "e2", "previous": "e1", "reason": "rollback"},
    )
    applied = store.ingest([event_in(began), event_in(envelope(2, epoch="e2", hand=None))])
    assert applied.new_epochs == [("T1", "e2")]
    epochs = {e["epoch"]: e for e in store.epochs("T1")}
    assert (epochs["e1"]["previous"], epochs["e1"]["reason"]) == (None, None)
    assert (epochs["e2"]["previous"], epochs["e2"]["reason"]) == ("e1", "rollback")
    table = store.tables()[0]
    assert (table["epoch"], table["last_seq"]) == ("e2", 2)


def test_an_epoch_whose_first_commit_rolled_back_is_recorded_by_the_next(store: Store) -> None:
    """A store does not write again an epoch it saw committed (one statement less a batch);
    one whose transaction rolled back was not committed, and the next batch writes it."""
    failures = ["the commit fails once"]

    def announce(_db: object, _tables: object) -> None:
        if failures:
            raise RuntimeError(failures.pop())

    store.db.announcer = announce  # runs in the transaction, just before its commit
    with pytest.raises(RuntimeError):
        store.ingest([event_in(envelope(1, epoch="e9", hand=None))])
    applied = store.ingest([event_in(envelope(1, epoch="e9", hand=None))])
    assert applied.new_epochs == [("T1", "e9")]
    assert [e["epoch"] for e in store.epochs("T1")] == ["e9"]
    # seen committed: a batch of the same epoch finds nothing new to write of it
    again = store.ingest([event_in(envelope(2, epoch="e9", hand=None))])
    assert again.new_epochs == []
    assert store.tables()[0]["epoch"] == "e9"


def test_the_watermark_never_passes_a_gap_and_waits_for_every_stream(store: Store) -> None:
    store.ingest([event_in(envelope(1, epoch="e0"))])  # an epoch before
    store.ingest([event_in(envelope(s)) for s in (1, 2, 3, 6, 7)])
    store.ingest([event_in(envelope(s), "secure") for s in (1, 2)])
    for table, epoch, stream, contiguous, end in store.streams_behind():
        store.holes(table, epoch, stream, contiguous, end)
    assert store.tables()[0]["stored_seq"] == 3
    assert sorted(store.watermarks(["public"])) == [("T1", "e0", 1, True), ("T1", "e1", 3, True)]
    assert store.watermarks(["public", "secure"]) == [("T1", "e1", 2, True)]
    store.ingest([event_in(envelope(s)) for s in (4, 5)])  # the gap repaired
    store.streams_behind()
    assert ("T1", "e1", 7, True) in store.watermarks(["public"])
    store.record_status("T1", {"state": "offline", "bdseq": 1}, 1.0)
    assert ("T1", "e1", 7, False) in store.watermarks(["public"])


def test_a_missing_range_becomes_a_gap_claimed_by_one_process(store_url: str) -> None:
    first, second = Store(store_url), Store(store_url)
    first.migrate()
    try:
        first.ingest([event_in(envelope(s)) for s in (1, 2, 5, 6)])
        first.record_state("T1", {"epoch": "e1", "seq": 9, "hand": None}, 1.0, ["public"])
        behind = first.streams_behind()
        assert behind == [("T1", "e1", "public", 0, 9)]
        mark, holes = first.holes("T1", "e1", "public", 0, 9)
        assert (mark, holes) == (2, [(3, 4), (7, 9)])
        gaps = first.track_holes("T1", "e1", "public", holes, 10.0)
        assert [(g.from_seq, g.to_seq, g.state) for g in gaps] == [(3, 4, "open"), (7, 9, "open")]
        again = second.track_holes("T1", "e1", "public", holes, 11.0)  # the other process
        assert [g.id for g in again] == [g.id for g in gaps]
        assert first.claim_gap(gaps[0], "pit-1", 12.0, retry=5.0)
        assert not second.claim_gap(gaps[0], "pit-2", 12.5, retry=5.0)
        assert second.claim_gap(gaps[0], "pit-2", 17.5, retry=5.0)  # not answered: again
        second.ingest([event_in(envelope(s), source="replay") for s in (3, 4)])
        _, holes = first.holes("T1", "e1", "public", 2, 9)
        assert holes == [(7, 9)]
        left = first.track_holes("T1", "e1", "public", holes, 20.0)
        assert [(g.from_seq, g.state) for g in left] == [(7, "open")]
        assert [g.state for g in first.gaps(open_only=False) if g.from_seq == 3] == ["repaired"]
        first.mark_gap(left[0].id, "lost", "not in the table's journal: 7-9")
        assert not first.claim_gap(left[0], "pit-1", 100.0, retry=5.0)
        assert first.gap_counts(10) == {"open": 1, "asked": 0, "unrepaired": 1}
        assert first.tables()[0]["open_gaps"] == 1
    finally:
        first.close()
        second.close()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_delivery_order_with_repeats_stores_every_seq_once(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    count = data.draw(st.integers(min_value=1, max_value=40))
    view = st.tuples(st.integers(min_value=1, max_value=count), st.sampled_from(STREAMS))
    deliveries = data.draw(st.lists(view, max_size=3 * count))
    deliveries += [(s, "public") for s in data.draw(st.permutations(list(range(1, count + 1))))]
    sizes = data.draw(st.lists(st.integers(min_value=1, max_value=10), min_size=1))
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('prop') / 'pit.sqlite'}")
    store.migrate()
    try:
        position, index, stored, duplicates = 0, 0, 0, 0
        while position < len(deliveries):
            size = sizes[index % len(sizes)]
            batch = deliveries[position : position + size]
            applied = store.ingest([event_in(envelope(s, hand=None), st_) for s, st_ in batch])
            stored += sum(applied.stored.values())
            duplicates += applied.duplicates
            assert len(applied.stored_events) == sum(applied.stored.values())
            position += size
            index += 1
        # each view counted as stored once, every other delivery as a duplicate
        assert stored == len(set(deliveries))
        assert duplicates == len(deliveries) - len(set(deliveries))
        assert [k[2] for k in store.event_keys()] == list(range(1, count + 1))
        secure = {s for s, stream in deliveries if stream == "secure"}
        rows = store.db.all("SELECT seq FROM events WHERE secure IS NOT NULL ORDER BY seq")
        assert [int(r[0]) for r in rows] == sorted(secure)
        assert store.tables()[0]["last_seq"] == count
        mark, holes = store.holes("T1", "e1", "public", 0, count)
        assert (mark, holes) == (count, [])
    finally:
        store.close()


@pytest.mark.parametrize("end_first", [False, True])
def test_a_hold_whose_ruling_ended_the_hand_is_resolved_by_the_end(
    store: Store, end_first: bool
) -> None:
    """A misdeal confirmed (SEAT-COUNT's ruling) ends the hand: the table journals
    ``hand.misdeal``, no ``hand.resume``; the hold leaves the open queue, resolved by the end,
    in whichever order the store takes the two."""
    hold = envelope(
        5,
        "hand.hold",
        data={"hold": "T1-00001-h1", "rule": "SEAT-COUNT", "reason": "r", "ruling": "misdeal"},
        rules=["SEAT-COUNT"],
        severity="hold",
    )
    other = envelope(
        5,
        "hand.hold",
        table="T2",
        hand="T2-00001",
        data={"hold": "T2-00001-h1", "rule": "SEAT-COUNT", "reason": "r", "ruling": "misdeal"},
        severity="hold",
    )
    misdeal = envelope(
        6,
        "hand.misdeal",
        data={"reason": "r", "rule": "SEAT-COUNT", "returned": {}, "button": 1, "seats": [1, 2]},
        rules=["SEAT-COUNT"],
        by={"person": "ann", "role": "dealer"},
    )
    batches = [[event_in(misdeal)], [event_in(hold), event_in(other)]]
    for batch in batches if end_first else batches[::-1]:
        store.ingest(batch)
    assert [h["hold"] for h in store.holds()] == ["T2-00001-h1"]  # another hand's stays open
    (resolved,) = store.resolved_holds(10)
    assert resolved["hold"] == "T1-00001-h1"
    assert resolved["resolution"] == {
        "ts": misdeal["ts"],
        "seq": 6,
        "decision": "misdeal",
        "by": "hand end",
        "person": "ann",
        "role": "dealer",
    }
