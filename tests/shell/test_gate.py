"""The request gate: limits, strict fields, signatures, freshness, roles (docs/security.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.authority import Authority, Role
from controller.keyring import parse_keyring
from controller.shell.commands import response
from controller.shell.gate import Gate, Limits, Policy, RefusedError, bounded_record, parse_body
from controller.signing import Signer, new_key, sign_request
from controller.table.event_types import BettingAction, CommandRejected
from controller.table.events import Severity, TableEvent
from controller.table.inputs import Action, ActionKind, StartHand

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DEALER, DEALER_PUBLIC = new_key()
FLOOR, FLOOR_PUBLIC = new_key()
CONSOLE, CONSOLE_PUBLIC = new_key()
OLD, OLD_PUBLIC = new_key()
KEYRING = parse_keyring(
    {
        "keys": {
            "ann": {"person": "Ann", "roles": ["dealer"], "public_key": DEALER_PUBLIC},
            "bob": {"person": "Bob", "roles": ["floor", "dealer"], "public_key": FLOOR_PUBLIC},
            "gone": {
                "person": "Gone",
                "roles": ["floor"],
                "public_key": OLD_PUBLIC,
                "revoked": True,
            },
            "late": {
                "person": "Late",
                "roles": ["floor"],
                "public_key": OLD_PUBLIC,
                "valid_until": "2025-12-31T00:00:00Z",
            },
            "t2": {"person": "T2", "roles": ["dealer"], "public_key": OLD_PUBLIC, "tables": ["T2"]},
            "pit": {
                "person": "pit console",
                "roles": ["floor", "dealer"],
                "public_key": CONSOLE_PUBLIC,
                "acts_for": ["Carol", "Dave"],
            },
        },
        "persons": {"Carol": {"roles": ["floor"]}, "Dave": {"roles": ["surveillance"]}},
    }
)


def gate(**policy: object) -> Gate:
    return Gate("T1", Policy(**policy), KEYRING)  # type: ignore[arg-type]


def raw(**body: object) -> bytes:
    return json.dumps(body).encode()


def signed(signer: Signer, command: str, *args: datetime, **body: Any) -> bytes:
    at = args[0] if args else NOW
    return json.dumps(
        sign_request(signer.private, signer.key_id, command, "T1", body, now=at)
    ).encode()


ANN = Signer(DEALER, "ann", "T1")
BOB = Signer(FLOOR, "bob", "T1")


def admitted(g: Gate, verb: str, payload: bytes, now: datetime = NOW) -> object:
    return g.admit(g.read(verb, payload, now), now)


def test_a_signed_request_becomes_the_core_input_with_who_gave_it() -> None:
    g = gate()
    command = admitted(
        g, "action", signed(ANN, "action", transaction="t1", seat=3, action="raise", amount=8)
    )
    assert command == Action(
        NOW, 3, ActionKind.RAISE, 8, authority=Authority("Ann", Role.DEALER, "ann")
    )
    # a person holding several roles gives each command in the least powerful that may
    command = admitted(g, "start_hand", signed(BOB, "start_hand", transaction="t2"))
    assert command == StartHand(NOW, authority=Authority("Bob", Role.DEALER, "bob"))
    assert admitted(
        g,
        "floor_override",
        signed(BOB, "floor_override", transaction="t3", rule="MD-CUTOFF", decision="misdeal"),
    ).authority == Authority("Bob", Role.FLOOR, "bob")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("verb", "payload", "words"),
    [
        ("action", b"not json", "not valid JSON"),
        ("action", b"\xff\xfe", "not UTF-8"),
        ("action", b"[1, 2]", "a JSON object"),
        ("action", raw(seat=1, action="call"), "transaction: required"),
        ("action", raw(transaction="", seat=1), "transaction: a string"),
        ("action", raw(transaction=5, seat=1), "transaction: a string"),
        ("action", raw(transaction="t" * 129), "transaction: a string"),
        ("dance", raw(transaction="t"), "unknown command 'dance'"),
        ("action", b'{"transaction": "t", "seat": 1, "seat": 2}', "given twice"),
        ("action", b'{"transaction": "t", "amount": NaN}', "not a JSON number"),
        ("action", b'{"transaction": "t", "amount": -Infinity}', "not a JSON number"),
        ("action", b'{"transaction": "t", "amount": 1e999999}', "not finite"),
        ("action", b'{"transaction": "t", "amount": -1.5e400}', "not finite"),
        ("action", b'{"transaction": "t", "amount": 1' + b"0" * 30 + b"}", "more than 18 digits"),
        ("action", b'{"transaction": "t", "x": "' + b"a" * 2000 + b'"}', "the limit is 1024"),
        ("action", b'{"transaction": "t", "x": "\\udfff"}', "lone surrogate"),
        ("action", b'{"\\udfff": 1, "transaction": "t"}', "lone surrogate"),
        (
            "action",
            b'{"transaction": "t", "seat": ' + b"[" * 1000 + b"]" * 1000 + b"}",
            "nested deeper",
        ),
        ("action", b"{" + b" " * 20000 + b"}", "the limit is 16384"),
        ("action", raw(transaction="t", seat=1, action="call"), "unsigned"),
    ],
)
def test_malformed_requests_are_refused_before_anything_else(
    verb: str, payload: bytes, words: str
) -> None:
    with pytest.raises(RefusedError, match=words):
        gate().read(verb, payload, NOW)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"seat": 1}, "action: Field required"),
        ({"seat": True, "action": "call"}, "seat: Input should be a valid integer"),
        ({"seat": "3", "action": "call"}, "seat: Input should be a valid integer"),
        ({"seat": 3.0, "action": "call"}, "seat: Input should be a valid integer"),
        ({"seat": 1, "action": "shove"}, "action: Input should be"),
        ({"seat": 1, "action": "call", "colour": "red"}, "does not take colour"),
        ({"ts": "2026-01-01T00:00:00Z"}, "does not take ts"),
        ({"authority": {"person": "me", "role": "floor"}}, "does not take authority"),
    ],
)
def test_fields_are_strictly_typed(fields: dict[str, object], words: str) -> None:
    with pytest.raises(RefusedError, match=words):
        admitted(gate(), "action", signed(ANN, "action", transaction="t", **fields))


def test_what_a_key_may_not_do_is_refused() -> None:
    g = gate()
    with pytest.raises(RefusedError, match=r"Ann \(dealer\) may not give floor_override"):
        admitted(
            g,
            "floor_override",
            signed(ANN, "floor_override", transaction="a", rule="MD-CUTOFF", decision="void"),
        )
    for key, words in (
        ("gone", "revoked"),
        ("late", "expired"),
        ("t2", "not for table T1"),
        ("eve", "unknown key"),
    ):
        forged = signed(Signer(OLD, key, "T1"), "start_hand", transaction=key)
        with pytest.raises(RefusedError, match=words):
            g.read("start_hand", forged, NOW)


def test_a_signature_covers_the_command_the_table_the_fields_and_the_time() -> None:
    g = gate()
    body = json.loads(signed(ANN, "action", transaction="t", seat=3, action="call"))
    for change in ({"seat": 4}, {"transaction": "u"}):
        tampered = json.dumps({**body, **change}).encode()
        with pytest.raises(RefusedError, match="signature does not hold"):
            g.read("action", tampered, NOW)
    with pytest.raises(RefusedError, match="signature does not hold"):
        g.read("correction", json.dumps(body).encode(), NOW)  # another verb
    with pytest.raises(RefusedError, match="signature does not hold"):
        Gate("T2", Policy(), KEYRING).read("action", json.dumps(body).encode(), NOW)
    forged = {**body, "auth": {**body["auth"], "ts": "2026-01-01T00:00:05Z"}}
    with pytest.raises(RefusedError, match="signature does not hold"):
        g.read("action", json.dumps(forged).encode(), NOW)
    with pytest.raises(RefusedError, match="signature does not hold"):
        g.read("action", signed(Signer(FLOOR, "ann", "T1"), "action", transaction="x"), NOW)


def test_an_old_request_and_a_replayed_nonce_are_refused() -> None:
    g = gate()
    stale = signed(ANN, "start_hand", NOW - timedelta(seconds=31), transaction="old")
    with pytest.raises(RefusedError, match="31 s from the table's clock"):
        admitted(g, "start_hand", stale)
    ahead = signed(ANN, "start_hand", NOW + timedelta(seconds=40), transaction="ahead")
    with pytest.raises(RefusedError, match="40 s from the table's clock"):
        admitted(g, "start_hand", ahead)
    fresh = signed(ANN, "start_hand", NOW - timedelta(seconds=29), transaction="ok")
    admitted(g, "start_hand", fresh)
    with pytest.raises(RefusedError, match="nonce was used before"):
        admitted(g, "start_hand", fresh)


def test_a_console_signs_for_a_person_with_the_roles_both_hold() -> None:
    g = gate()
    console = Signer(CONSOLE, "pit", "T1", on_behalf_of="Carol")
    override = console.sign(
        "floor_override", {"transaction": "c1", "rule": "MD-CUTOFF", "decision": "misdeal"}
    )
    command = g.admit(
        g.read("floor_override", json.dumps(override).encode(), datetime.now(UTC)),
        datetime.now(UTC),
    )
    assert command.authority == Authority("Carol", Role.FLOOR, "pit", via="pit")
    # the console may relay floor and dealer commands; Dave holds neither
    dave = Signer(CONSOLE, "pit", "T1", on_behalf_of="Dave").sign(
        "start_hand", {"transaction": "c2"}
    )
    with pytest.raises(RefusedError, match=r"Dave \(no role\) may not give start_hand"):
        g.admit(
            g.read("start_hand", json.dumps(dave).encode(), datetime.now(UTC)), datetime.now(UTC)
        )
    stranger = Signer(CONSOLE, "pit", "T1", on_behalf_of="Mallory").sign(
        "start_hand", {"transaction": "c3"}
    )
    with pytest.raises(RefusedError, match="may not act for 'Mallory'"):
        g.read("start_hand", json.dumps(stranger).encode(), datetime.now(UTC))


def test_unsigned_requests_only_where_the_table_takes_them() -> None:
    g = gate(require_signed=False)
    command = admitted(g, "start_hand", raw(transaction="u1"))
    assert command == StartHand(NOW, authority=Authority("unsigned", Role.DEALER, None))
    request = g.read("start_hand", raw(transaction="u1"), NOW)
    assert request.inbox_key == ":u1"  # never the same as a signed key's transaction
    assert (
        g.read("start_hand", signed(ANN, "start_hand", transaction="u1"), NOW).inbox_key == "ann:u1"
    )


def test_limits_are_settings() -> None:
    small = Limits(max_bytes=300, max_depth=2, max_int_digits=4, max_string=64)
    parse_body(b'{"a": [1, 9999]}', small)
    for payload in (b'{"a": [[1]]}', b'{"a": 10000}', b'{"a": "' + b"x" * 65 + b'"}', b" " * 301):
        with pytest.raises(RefusedError):
            parse_body(payload, small)


def test_a_refused_request_is_kept_as_a_bounded_record() -> None:
    payload = b'{"transaction": "t", "x": "' + b"\xf0" * 10_000_000 + b'"}'
    record = bounded_record(payload)
    assert record.size == len(payload)
    assert len(record.head) <= 200
    assert len(json.dumps(record.public(), ensure_ascii=False).encode()) < 900
    assert len(RefusedError("x" * 100_000).reason) <= 300


def test_response_reports_the_cores_refusal() -> None:
    ok = TableEvent(BettingAction(1, ActionKind.CHECK, 100, False), NOW, "T1-00001")
    body = response("t", "action", [7], [ok])
    assert body == {
        "transaction": "t",
        "status": "ok",
        "command": "action",
        "data": {"events": [{"seq": 7, "type": "betting.action"}], "last_seq": 7},
        "error": None,
    }
    refused = TableEvent(CommandRejected("action", "not your turn"), NOW, None, (), Severity.WARN)
    body = response("t", "action", [8], [refused])
    assert body["status"] == "error"
    assert body["error"] == "not your turn"
