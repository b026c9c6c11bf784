"""What the ingest makes of each topic and message, and a batch with one bad event in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt import Message, Topic
from controller.pit import ingest
from controller.pit.batches import Batch
from controller.pit.config import PitConfig
from controller.pit.ingest import Ingest, Route, apply_batch, parse_event, route
from controller.pit.metrics import PitMetrics
from controller.pit.published import RejectedError
from controller.pit.store import Store
from controller.pit.worker import StoreWorker
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


async def test_a_copy_of_a_message_in_the_same_batch_is_taken_once_and_counted_a_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process taking over an away member's share gets each message of its own share twice
    (the share's and the direct subscription's), side by side: the copy is not parsed again."""
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    made = Store(url)
    made.migrate()
    made.close()
    config = PitConfig(
        pit={"id": "p", "confirm": False}, store={"url": url}, broker={"host": "127.0.0.1"}
    )
    worker = StoreWorker(url, "ingest")
    await worker.open()
    metrics = PitMetrics("p")
    taking = Ingest(config, worker, metrics)
    parsed: list[bytes] = []

    def counting(payload: bytes, where: Route) -> Any:
        parsed.append(payload)
        return parse_event(payload, where)

    monkeypatch.setattr(ingest, "parse_event", counting)
    live = json.dumps(envelope(1)).encode()
    replayed = json.dumps({**envelope(1), "historical": True}).encode()
    messages = [
        ("tables/T1/events", live),
        ("tables/T1/events", live),  # the same message, from the other subscription
        ("tables/T1/replay/p", replayed),  # other bytes: parsed, and found stored already
        ("tables/T1/events", json.dumps(envelope(2)).encode()),
    ]
    for mid, (topic, payload) in enumerate(messages, 1):
        assert taking.take(Message(Topic(topic), payload, 1, False, mid, None)) is False
    applied = await taking.flush()
    await worker.close()
    assert parsed == [live, replayed, messages[3][1]]
    assert sum(applied.stored.values()) == 2
    assert applied.duplicates == 1  # the replay's; the copy never reached the store
    assert "tablectl_pit_duplicates_total 2.0" in metrics.text().decode()
