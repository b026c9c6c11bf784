"""Dealer requests are validated before they reach the core; bad ones are named precisely."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from controller.shell.commands import RequestError, parse_request, response, transaction_of
from controller.table.events import Severity, TableEvent
from controller.table.inputs import Action, ActionKind, StartHand

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def req(**body: object) -> bytes:
    return json.dumps(body).encode()


def test_a_valid_request_becomes_the_core_input_stamped_with_the_receive_time() -> None:
    txn, command = parse_request(
        "action", req(transaction="t1", seat=3, action="raise", amount=8), NOW
    )
    assert txn == "t1"
    assert command == Action(NOW, 3, ActionKind.RAISE, 8)
    assert parse_request("start_hand", req(transaction="t2"), NOW)[1] == StartHand(NOW)


@pytest.mark.parametrize(
    ("verb", "payload", "words"),
    [
        ("action", b"not json", "not JSON"),
        ("action", b"[1, 2]", "a JSON object"),
        ("action", req(seat=1, action="call"), "transaction: required"),
        ("action", req(transaction="", seat=1, action="call"), "transaction: a string"),
        ("action", req(transaction=5, seat=1, action="call"), "transaction: a string"),
        ("dance", req(transaction="t"), "unknown command 'dance'"),
        ("action", req(transaction="t", seat=1), "action: Field required"),
        ("action", req(transaction="t", seat="x", action="call"), "seat: Input should be a valid"),
        ("action", req(transaction="t", seat=1, action="shove"), "action: Input should be"),
        (
            "action",
            req(transaction="t", seat=1, action="call", colour="red"),
            "does not take colour",
        ),
        ("award", req(transaction="t", ts="2026-01-01T00:00:00Z"), "does not take ts"),
    ],
)
def test_invalid_requests_are_refused_with_the_field_named(
    verb: str, payload: bytes, words: str
) -> None:
    with pytest.raises(RequestError, match=words):
        parse_request(verb, payload, NOW)


def test_the_transaction_is_read_even_from_a_request_that_is_otherwise_wrong() -> None:
    assert transaction_of(req(transaction="t9", seat="x")) == "t9"
    assert transaction_of(b"junk") is None
    assert transaction_of(req(transaction=3)) is None


def test_response_reports_the_cores_refusal() -> None:
    ok = TableEvent("betting.action", NOW, "T1-00001", {"seat": 1})
    body = response("t", "action", [7], [ok])
    assert body == {
        "transaction": "t",
        "status": "ok",
        "command": "action",
        "data": {"events": [{"seq": 7, "type": "betting.action"}], "last_seq": 7},
        "error": None,
    }
    refused = TableEvent(
        "command.rejected", NOW, None, {"reason": "not your turn"}, (), Severity.WARN
    )
    body = response("t", "action", [8], [refused])
    assert body["status"] == "error"
    assert body["error"] == "not your turn"
