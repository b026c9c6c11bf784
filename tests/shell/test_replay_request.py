"""The replay request's fields, its answer per epoch, and the ranges an answer says are
missing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.authority import Role
from controller.shell.gate import Principal, RefusedError, Request
from controller.shell.journal import Journal, NewEpoch, NewEvent
from controller.shell.replay import MAX_EVENTS, ReplayRequest, _missing, answer, parse
from controller.shell.retention import Retention
from controller.shell.topics import Topics
from controller.table.codec import event_from_json, event_to_json
from controller.table.event_types import JournalAccepted
from controller.table.events import Severity, TableEvent
from tests.played import inputs_of
from tests.played import write as _write
from tests.shell.test_retention import FUTURE, SMALL


def request(fields: dict[str, object], roles: frozenset[Role] = frozenset({Role.PIT})) -> Request:
    body = {"transaction": "t1", **fields}
    return Request("replay", body, "t1", Principal("pit", "the pit", roles))


def test_fields_are_strict_and_bounded() -> None:
    good = {"pit": "pit-1", "epoch": "e", "from_seq": 3, "to_seq": 5}
    assert parse(request(good)).stream == "public"
    for bad, problem in (
        ({**good, "from_seq": "3"}, "from_seq"),
        ({**good, "to_seq": 2}, "before from_seq"),
        ({**good, "to_seq": 3 + MAX_EVENTS}, f"at most {MAX_EVENTS}"),
        ({**good, "pit": "a/b"}, "pit"),
        ({**good, "extra": 1}, "extra"),
    ):
        with pytest.raises(RefusedError, match=problem):
            parse(request(bad))
    with pytest.raises(RefusedError, match="surveillance"):
        parse(request({**good, "stream": "secure"}))
    both = frozenset({Role.PIT, Role.SURVEILLANCE})
    assert parse(request({**good, "stream": "secure"}, both)).stream == "secure"


@given(
    first=st.integers(min_value=1, max_value=50),
    span=st.integers(min_value=0, max_value=50),
    data=st.data(),
)
def test_missing_ranges_are_exactly_the_seqs_not_found(
    first: int, span: int, data: st.DataObject
) -> None:
    last = first + span
    found = sorted(data.draw(st.sets(st.integers(min_value=first, max_value=last))))
    ranges = _missing(first, last, found)
    covered = {seq for a, b in ranges for seq in range(a, b + 1)}
    assert covered == set(range(first, last + 1)) - set(found)
    assert all(a <= b for a, b in ranges)


def _journal_with_two_epochs(path: Path) -> Journal:
    """Epoch one holds journal keys 1-3, epoch ``e2`` keys 4-5."""
    journal = Journal.open(path / "journal.sqlite", table_id="T1", genesis={"table_id": "T1"})
    for n in range(5):
        data = JournalAccepted("alarm", f"event {n + 1}", n, n, "e2")
        event = TableEvent(data, datetime(2026, 1, 1, tzinfo=UTC), None, (), Severity.INFO)
        epoch = NewEpoch("e2", 4, "accepted") if n == 3 else None
        journal.append(
            input_row=None,
            events=[NewEvent(event.type, None, event_to_json(event))],
            epoch=epoch,
        )
    return journal


def _replay(
    journal: Journal, epoch: str, first: int, last: int
) -> tuple[list[int], dict[str, Any]]:
    ask = ReplayRequest(pit="p1", epoch=epoch, from_seq=first, to_seq=last)
    messages, response = answer(journal, Topics("tables", "T1"), ask, "t1")
    bodies = [json.loads(m.payload) for m in messages]
    assert all(m.topic == "tables/T1/replay/p1" for m in messages)
    assert all(b["epoch"] == epoch and b["historical"] for b in bodies)
    assert all(b["event_id"] == f"T1:{epoch}:{b['seq']}" for b in bodies)
    return [int(b["data"]["reason"].split()[1]) for b in bodies], response


def test_a_replay_names_its_events_as_their_epoch_did(tmp_path: Path) -> None:
    journal = _journal_with_two_epochs(tmp_path)
    first = journal.epochs[0].name
    try:
        found, response = _replay(journal, first, 2, 3)
        assert found == [2, 3]  # the journal's keys 2 and 3
        assert response["data"]["last_seq"] == 3
        found, response = _replay(journal, "e2", 1, 2)
        assert found == [4, 5]  # e2:1 and e2:2 are the journal's keys 4 and 5
        assert response["status"] == "ok"
        assert response["data"] == {
            "epoch": "e2",
            "from_seq": 1,
            "to_seq": 2,
            "sent": 2,
            "missing": [],
            "last_seq": 2,
        }
    finally:
        journal.close()


def test_a_replay_of_an_unknown_epoch_or_past_an_epoch_is_refused(tmp_path: Path) -> None:
    journal = _journal_with_two_epochs(tmp_path)
    first = journal.epochs[0].name
    try:
        found, response = _replay(journal, "nope", 1, 1)
        assert found == []
        assert response["status"] == "error"
        assert "not this journal's" in response["error"]
        assert first in response["error"]
        found, response = _replay(journal, first, 3, 4)  # key 4 is e2's first
        assert found == []
        assert response["status"] == "error"
        assert "has 3 events" in response["error"]
        found, response = _replay(journal, "e2", 2, 3)
        assert found == []
        assert "has 2 events" in response["error"]
    finally:
        journal.close()


def test_a_closed_epoch_is_replayed_from_the_archive_segments(tmp_path: Path) -> None:
    """A journal that went on in a new epoch, whose closed epoch retention then moved into
    segment files: the closed epoch is the journal's history, replayed with its own ids; only
    an epoch the journal never had is refused."""
    path = tmp_path / "journal.sqlite"
    asyncio.run(_write(path, inputs_of(20)))
    with sqlite3.connect(path) as conn:  # the broker acknowledged every event
        conn.execute("DELETE FROM outbox")
    journal = Journal.open_existing(path)
    try:
        closed, last = journal.epoch, journal.last_seq()
        before = journal.events_between(1, 10)
        data = JournalAccepted("alarm", "event 1", 0, 0, "e2")
        event = TableEvent(data, datetime(2026, 1, 1, tzinfo=UTC), None, (), Severity.INFO)
        journal.append(
            input_row=None,
            events=[NewEvent(event.type, None, event_to_json(event))],
            epoch=NewEpoch("e2", last + 1, "accepted"),
        )
        Retention(journal, SMALL).run_once(FUTURE)
        assert journal.segments()
        assert all(closed in segment.epochs for segment in journal.segments())
        live = [int(r[0]) for r in journal.read("SELECT seq FROM events")]
        assert min(live) > 10  # the closed epoch's first events are in segment files only
        ask = ReplayRequest(pit="p1", epoch=closed, from_seq=1, to_seq=10)
        messages, response = answer(journal, Topics("tables", "T1"), ask, "t1")
        assert response["status"] == "ok", response
        assert response["data"]["sent"] == 10
        assert response["data"]["missing"] == []
        assert response["data"]["last_seq"] == last  # the epoch's end, for good
        bodies = [json.loads(m.payload) for m in messages]
        assert [b["event_id"] for b in bodies] == [f"T1:{closed}:{n}" for n in range(1, 11)]
        assert all(b["historical"] for b in bodies)
        assert [b["type"] for b in bodies] == [event_from_json(text).type for _, text in before]
        found, response = _replay(journal, "e2", 1, 1)
        assert found == [1]  # e2:1, the accepted event
        _, response = _replay(journal, "never", 1, 1)
        assert response["status"] == "error"
        assert f"its epochs: {closed}, e2" in response["error"]
    finally:
        journal.close()
