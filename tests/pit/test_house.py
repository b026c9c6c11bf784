"""The house's money and the blind structures in the pit's store, SQLite and PostgreSQL alike:
each hand's row holds its rake, jackpot drop, time collected, straddles, table ante and runouts,
and its PHH from the stored events is the core's own export."""

from __future__ import annotations

import json
from typing import Any

from controller.envelope import envelope
from controller.pit.phh import phh_from_events
from controller.pit.schema import AUTO_ID, MIGRATIONS
from controller.pit.store import Store
from controller.profiles import AnteKind
from controller.rules.start import table_ante_seat
from simulators.scenario.primitives import CoreRun
from tests.helpers import run_file
from tests.pit import test_store
from tests.pit.test_phh import HOUSE_SCENARIOS, core_phh
from tests.pit.test_store import event_in


def _ingest_out_of_order(store: Store, run: CoreRun, epoch: str) -> None:
    """Both views of every event of the run, in batches of seven, the last batch first."""
    views = [
        event_in(envelope(e, table_id="T1", epoch=epoch, seq=seq, secure=secure), stream)
        for seq, e in enumerate(run.events, start=1)
        for secure, stream in ((False, "public"), (True, "secure"))
    ]
    batches = [views[i : i + 7] for i in range(0, len(views), 7)]
    for batch in reversed(batches):
        store.ingest(batch)


def _expected_row(run: CoreRun) -> dict[str, Any]:
    """The house's money and blind structures of the run's last hand, from the core."""
    state = run.state
    hand = state.last_hand
    assert hand is not None
    take = hand.showdown.take
    kind = state.profile.ante_kind
    time = None
    for e in run.events:  # HOUSE-TIME: the time collected just before this hand started
        if e.type == "house.time.collected":
            time = e.data["total"]
        elif e.type == "hand.started":
            if e.hand_id == hand.hand_id:
                break
            time = None
    straddles = {str(seat): chips for seat, chips in hand.chips.straddles}
    return {
        "rake": None if take is None else sum(take.rake),
        "rake_pots": None if take is None else list(take.rake),
        "jackpot": None if take is None else take.jackpot,
        "rake_waived": None if take is None else take.waived,
        "time_collected": time,
        "straddles": straddles or None,
        "ante_seat": table_ante_seat(hand, kind)
        if kind is not AnteKind.EACH and state.ante
        else None,
        "runouts": len(hand.showdown.boards) + 1,
    }


def test_hands_hold_the_house_s_money_and_their_phh_is_the_core_s(store: Store) -> None:
    runs = {name: run_file(name) for name in HOUSE_SCENARIOS}
    for name, run in runs.items():
        _ingest_out_of_order(store, run, epoch=name)
    seen: dict[str, set[Any]] = {key: set() for key in ("rake", "time", "straddles", "ante")}
    for name, run in runs.items():
        hand = run.state.last_hand
        assert hand is not None
        rows = [h for h in store.hands(limit=1000) if h["epoch"] == name]
        row = next(h for h in rows if h["hand_id"] == hand.hand_id)
        expected = _expected_row(run)
        assert {k: dict(row)[k] for k in expected} == expected, name
        phh = phh_from_events(store.hand_events("T1", name, hand.hand_id, "secure"))
        assert phh == core_phh(run), name
        seen["rake"].add(row["rake_waived"] if row["rake"] == 0 else row["rake"] is not None)
        seen["time"].add(row["time_collected"] is not None)
        seen["straddles"].add(row["straddles"] is not None)
        seen["ante"].add(row["ante_seat"] is not None)
    # the scenarios cover both sides of each column, and a waived rake
    assert all({True, False} <= values for values in seen.values()), seen
    assert any(isinstance(v, str) for v in seen["rake"])
    assert {h["runouts"] for h in store.hands(limit=1000)} == {1, 2}
    # the filters still work on the new rows
    raked = store.hands(rule="HOUSE-RAKE", limit=1000)
    assert raked
    assert all(h["rake"] is not None for h in raked)
    assert {h["epoch"] for h in store.hands(rule="RUN-TWICE", limit=1000)} >= {
        "rule-RUN-TWICE.toml"
    }


def test_a_store_of_the_previous_schema_gains_the_columns_from_its_events(
    store_url: str,
) -> None:
    """Migration 3 derives the new columns of the hands stored before it from their events."""
    names = (
        "rule-HOUSE-RAKE.toml",
        "house-time-next-period.toml",
        "rule-RUN-TWICE.toml",
        "rule-STRADDLE.toml",
        "rule-ANTE-TABLE.toml",
        "rule-HOUSE-DROP-JACKPOT.toml",
    )
    store = Store(store_url)
    try:
        for number, text in enumerate(MIGRATIONS[:2], start=1):
            with store.db.transaction():
                store.db.script(text.replace("{id}", AUTO_ID[store.db.dialect]))
                store.db.execute(
                    "INSERT INTO pit_meta (key, value) VALUES ('schema', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(number),),
                )
        runs = {name: run_file(name) for name in names}
        for name, run in runs.items():  # the events as schema 2 stored them
            for seq, e in enumerate(run.events, start=1):
                body = envelope(e, table_id="T1", epoch=name, seq=seq)
                store.db.execute(
                    "INSERT INTO events (table_id, epoch, seq, ts, hand_id, type, severity, "
                    "public, source, committed_at, fresh) "
                    "VALUES ('T1', ?, ?, ?, ?, ?, ?, ?, 'live', 0, 1)",
                    (name, seq, body["ts"], e.hand_id, e.type, body["severity"], json.dumps(body)),
                )
            store.db.execute(
                "INSERT INTO hands (table_id, epoch, hand_id, first_seq, last_seq) "
                "VALUES ('T1', ?, ?, 1, 1)",
                (name, run.state.last_hand.hand_id),  # type: ignore[union-attr]
            )
        assert store.migrate() == len(MIGRATIONS)
        for name, run in runs.items():
            hand = run.state.last_hand
            assert hand is not None
            (row,) = [
                h for h in store.hands() if (h["epoch"], h["hand_id"]) == (name, hand.hand_id)
            ]
            expected = _expected_row(run)
            assert {k: dict(row)[k] for k in expected} == expected, name
    finally:
        store.close()


def test_malformed_house_money_is_left_out_and_the_rest_kept(store: Store) -> None:
    start = {"button": 1, "seats": [2, 1], "blinds": [1, 2], "ante": 0, "stacks": {"1": 9}}
    # an optional field that does not fit (a straddle that is not chips, a waiver that is not
    # a reason) is left out and the rest of its event used
    started = test_store.envelope(1, "hand.started", data={**start, "straddles": {"3": "big"}})
    taken = test_store.envelope(
        2, "pot.rake.taken", data={"rake": 3, "jackpot": 1, "pots": [3], "total": 4, "waived": 7}
    )
    # a required one that does not fit: the data is not that event's, nothing of it is derived
    ran = test_store.envelope(3, "board.runout.started", data={"run": "two"})
    started_2 = test_store.envelope(4, "hand.started", data=start, hand="T1-00002")
    taken_2 = test_store.envelope(
        5,
        "pot.rake.taken",
        data={"rake": "ten", "jackpot": 1, "pots": ["x", 2], "total": 3},
        hand="T1-00002",
    )
    store.ingest([event_in(e) for e in (taken, ran, started, taken_2, started_2)])
    first, other = sorted(store.hands(), key=lambda h: h["hand_id"])
    assert first["straddles"] is None
    assert first["button"] == 1
    assert (first["rake"], first["rake_pots"], first["jackpot"]) == (3, [3], 1)
    assert first["rake_waived"] is None
    assert first["runouts"] == 1
    assert (other["rake"], other["rake_pots"], other["jackpot"]) == (None, None, None)
    assert other["button"] == 1
