"""What the ingest makes of each topic and message, and a batch with one bad event in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.pit.batches import Batch
from controller.pit.ingest import Route, apply_batch, parse_event, route
from controller.pit.published import RejectedError
from controller.pit.store import Store
from tests.pit.test_store import envelope, event_in


def test_topics_route_to_what_they_carry() -> None:
    assert route("tables/T1/events", "tables", "p1") == Route("event", "T1")
    assert route("tables/T1/secure/events", "tables", "p1") == Route("event", "T1", "secure")
    assert route("tables/T1/replay/p1", "tables", "p1") == Route("event", "T1", "public", "replay")
    assert route("tables/T1/replay/p2", "tables", "p1").kind == "other"  # another pit's
    assert route("tables/T1/secure/replay/p1", "tables", "p1").stream == "secure"
    assert route("a/b/T1/status", "a/b", "p1") == Route("status", "T1")
    assert route("tables/T1/state", "tables", "p1").kind == "state"
    assert route("tables/T1/response/replay", "tables", "p1").kind == "response"
    assert route("tables/T1/response/stored", "tables", "p1").verb == "stored"
    assert route("tables/T1/response/action", "tables", "p1").kind == "other"
    assert route("other/T1/events", "tables", "p1").kind == "other"


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda b: b.update(table_id="T2"), "on the topic of table"),
        (lambda b: b.update(seq=0), "seq"),
        (lambda b: b.update(seq=True), "seq"),
        (lambda b: b.update(event_id="T1:e1:9"), "event_id"),
        (lambda b: b.update(schema="x"), "schema"),
        (lambda b: b.update(data=[]), "data"),
        (lambda b: b.update(hand_id=3), "hand_id"),
    ],
)
def test_an_envelope_that_is_not_one_is_refused(mutate: Any, problem: str) -> None:
    body = envelope(1)
    mutate(body)
    with pytest.raises(RejectedError, match=problem):
        parse_event(json.dumps(body).encode(), Route("event", "T1"))
    with pytest.raises(RejectedError, match="not JSON"):
        parse_event(b"\xff", Route("event", "T1"))


def test_one_event_the_store_refuses_does_not_hold_back_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'pit.sqlite'}")
    store.migrate()
    derive = Store._derive

    def fragile(self: Store, events: Any) -> None:
        if any(e.seq == 2 for e in events):
            raise TypeError("a bug met by event 2")
        derive(self, events)

    monkeypatch.setattr(Store, "_derive", fragile)
    batch = Batch(events=[event_in(envelope(s)) for s in (1, 2, 3)])
    batch.statuses.append(("T1", {"state": "online", "bdseq": 1}))
    batch.statuses.append(("T1", {"state": "sideways"}))
    applied = apply_batch(store, batch, secure=False)
    assert [e.seq for e in applied.stored_events] == [1, 3]
    assert [k[2] for k in store.event_keys()] == [1, 3]
    rejects = store.db.all("SELECT topic, reason FROM rejects ORDER BY id")
    assert [topic for topic, _ in rejects] == ["T1/events", "T1/status"]
    assert "a bug met by event 2" in rejects[0][1]
    assert store.tables()[0]["online"] is True
    store.close()
