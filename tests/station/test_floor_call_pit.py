"""A dealer's call of the floor as the pit keeps it: an alarm of the table, naming the hold and
its rule, to acknowledge (docs/console.md, "A dealer calls the floor")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.pit.store import Store
from tests.pit.test_store import envelope, event_in


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(f"sqlite:///{tmp_path / 'pit.sqlite'}")
    opened.migrate()
    yield opened
    opened.close()


def test_a_floor_call_is_an_alarm_of_the_table_naming_the_hold_seat_count(store: Store) -> None:
    hold = envelope(
        1,
        "hand.hold",
        data={
            "hold": "T1-00001-h1",
            "rule": "SEAT-COUNT",
            "reason": "seat 2 holds 1 card",
            "ruling": "dead hand",
            "seat": 2,
        },
        rules=["SEAT-COUNT"],
        severity="hold",
    )
    called = envelope(
        2,
        "floor.called",
        data={
            "reason": "two cards seen",
            "hold": "T1-00001-h1",
            "rule": "SEAT-COUNT",
            "seat": 2,
        },
        rules=["SEAT-COUNT"],
        severity="warn",
        by={"person": "ann", "role": "dealer"},
    )
    store.ingest([event_in(hold), event_in(called)])
    alarms = store.alarms(unacknowledged=True)
    assert [(a["type"], a["rule"], a["reason"]) for a in alarms] == [
        ("floor.called", "SEAT-COUNT", "two cards seen")
    ]
    assert [h["hold"] for h in store.holds()] == ["T1-00001-h1"]  # still waiting for the floor
    assert store.ack_alarm("T1", "e1", 2, "bob", ["floor"], 10.0) == "acked"
    assert store.alarms(unacknowledged=True) == []
