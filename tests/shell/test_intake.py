"""The intake: the dealer and the floor first, floods shed and counted, everyone answered."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config import SecuritySection
from controller.keyring import parse_keyring
from controller.shell.daemon import rates_of
from controller.shell.gate import Gate, Policy, RefusedError, Request
from controller.shell.intake import Intake, Queued, Rates, Replayed, Urgency
from controller.signing import Signer, new_key, sign_request


def now() -> datetime:
    """The table's clock: the signatures are made with the real time."""
    return datetime.now(UTC)


DEALER, DEALER_PUBLIC = new_key()
EYE, EYE_PUBLIC = new_key()
KEYRING = parse_keyring(
    {
        "keys": {
            "ann": {"person": "Ann", "roles": ["dealer"], "public_key": DEALER_PUBLIC},
            "eve": {"person": "Eve", "roles": ["surveillance"], "public_key": EYE_PUBLIC},
        }
    }
)


def intake(**rates: Any) -> tuple[Intake, list[tuple[dict[str, Any], Urgency]]]:
    answers: list[tuple[dict[str, Any], Urgency]] = []
    return Intake(Gate("T1", Policy(require_signed=False), KEYRING), Rates(**rates)), answers


def signed(signer: Signer, verb: str, transaction: str) -> bytes:
    return json.dumps(signer.sign(verb, {"transaction": transaction})).encode()


async def test_signed_dealer_requests_are_served_before_anything_else() -> None:
    queue, answers = intake()

    def reply(body: dict[str, Any], urgency: Urgency) -> None:
        answers.append((body, urgency))

    queue.offer("start_hand", b"not json", now(), reply)
    queue.offer("start_hand", b'{"transaction": "u"}', now(), reply)
    queue.offer("hold", signed(Signer(EYE, "eve", "T1"), "hold", "s"), now(), reply)
    queue.offer("start_hand", signed(Signer(DEALER, "ann", "T1"), "start_hand", "d"), now(), reply)
    order = [(await queue.next()).priority for _ in range(4)]
    assert order == [0, 1, 2, 3]
    assert answers == []  # nothing was shed: the worker answers them all


async def test_a_flood_is_shed_at_once_and_counted_but_the_dealer_still_gets_in() -> None:
    queue, answers = intake(anonymous=1.0, anonymous_burst=5.0, queue_limit=3)

    def reply(body: dict[str, Any], urgency: Urgency) -> None:
        answers.append((body, urgency))

    for n in range(20):
        queue.offer("action", json.dumps({"transaction": f"g{n}"}).encode(), now(), reply)
    assert len(queue) == 3  # five got tokens, the queue holds three
    shed = [body["error"] for body, urgency in answers if urgency is Urgency.SHED]
    assert len(shed) == 17
    assert {reason.split(":")[0] for reason in shed} == {"rate limited", "overloaded"}
    # a dealer's request takes the place of the least urgent one waiting
    queue.offer("start_hand", signed(Signer(DEALER, "ann", "T1"), "start_hand", "d"), now(), reply)
    assert len(queue) == 3
    assert (await queue.next()).priority == 0
    report = queue.shed_report()
    assert sum(report.values()) == 18
    assert queue.shed_report() == {}


# --------------------------------------------------------------------------- replays


def stale(signer: Signer, verb: str, transaction: str, minutes: float = 10) -> bytes:
    body = sign_request(
        signer.private,
        signer.key_id,
        verb,
        "T1",
        {"transaction": transaction},
        now=now() - timedelta(minutes=minutes),
    )
    return json.dumps(body).encode()


def forged(verb: str, transaction: str) -> bytes:
    body = Signer(DEALER, "ann", "T1").sign(verb, {"transaction": transaction})
    body["auth"]["sig"] = base64.b64encode(secrets.token_bytes(64)).decode()
    return json.dumps(body).encode()


def collect() -> tuple[list[dict[str, Any]], Any]:
    answers: list[dict[str, Any]] = []

    def reply(body: dict[str, Any], urgency: Urgency) -> None:
        answers.append(body)

    return answers, reply


async def test_stale_replays_cost_the_replays_never_the_keys_owner() -> None:
    rates = Rates()
    started = time.monotonic()
    queue = Intake(Gate("T1", Policy(), KEYRING), rates)
    answers, reply = collect()
    dealer = Signer(DEALER, "ann", "T1")
    captured = stale(dealer, "round_closed", "captured")
    for n in range(2000):
        queue.offer("round_closed", captured, now(), reply)
        if n % 100 == 0:  # the dealer's own requests, in the middle of the flood
            queue.offer("round_closed", signed(dealer, "round_closed", f"d{n}"), now(), reply)
    flooded = time.monotonic() - started
    waiting = [await queue.next() for _ in range(len(queue))]
    dealer_requests = [item for item in waiting if item.priority == 0]
    assert len(dealer_requests) == 20  # not one of the dealer's was shed
    replays = [item for item in waiting if item.priority == 4]
    # the replays' own bucket: its burst, and what it earned back (replays a second) while the
    # flood went on (the intake's clock is the real one: on a busy machine the 2,000 offers
    # take seconds, not the tenth of one they take on an idle one)
    assert 0 < len(replays) <= rates.replays_burst + rates.replays * flooded
    assert waiting[: len(dealer_requests)] == dealer_requests  # and the dealer's go first
    assert all(isinstance(item.read, Replayed) for item in replays)
    # answered at once, and never in the owner's name: no transaction
    assert len(answers) == 2000 - len(replays)
    assert {a["transaction"] for a in answers} == {None}


async def test_copies_of_a_fresh_request_are_replays_once_the_first_is_queued() -> None:
    queue = Intake(Gate("T1", Policy(), KEYRING))
    answers, reply = collect()
    dealer = Signer(DEALER, "ann", "T1")
    request = signed(dealer, "round_closed", "live")
    for _ in range(500):
        queue.offer("round_closed", request, now(), reply)
    queue.offer("round_closed", signed(dealer, "round_closed", "next"), now(), reply)
    waiting = [await queue.next() for _ in range(len(queue))]
    assert [item.priority for item in waiting[:2]] == [0, 0]
    assert {item.read.transaction for item in waiting[:2]} == {"live", "next"}
    assert all(item.priority == 4 for item in waiting[2:])
    claimed = waiting[0].read
    assert isinstance(claimed, Request)
    assert claimed.claimed  # its nonce was spent as it was queued
    assert len(answers) == 499 - len(waiting[2:])  # the other copies, shed at once ...
    assert {a["transaction"] for a in answers} == {None}  # ... not in the owner's name


async def test_forged_signatures_cost_the_unsigned_never_the_key_they_name() -> None:
    queue = Intake(Gate("T1", Policy(), KEYRING))
    answers, reply = collect()
    for n in range(1000):
        queue.offer("round_closed", forged("round_closed", f"f{n}"), now(), reply)
    dealer = Signer(DEALER, "ann", "T1")
    for n in range(int(Rates().per_key_burst)):
        queue.offer("round_closed", signed(dealer, "round_closed", f"d{n}"), now(), reply)
    waiting = [await queue.next() for _ in range(len(queue))]
    assert sum(item.priority == 0 for item in waiting) == Rates().per_key_burst
    refused = [item for item in waiting if item.priority == 3]
    assert all("signature does not hold" in str(item.read) for item in refused)
    assert {a["error"].split(":")[0] for a in answers} == {"rate limited"}


async def test_a_request_shed_for_a_more_urgent_one_may_come_again() -> None:
    queue = Intake(Gate("T1", Policy(), KEYRING), Rates(queue_limit=1))
    answers, reply = collect()
    eye = Signer(EYE, "eve", "T1")
    hold = signed(eye, "hold", "h")
    queue.offer("hold", hold, now(), reply)
    queue.offer("start_hand", signed(Signer(DEALER, "ann", "T1"), "start_hand", "d"), now(), reply)
    assert [a["error"].split(":")[0] for a in answers] == ["overloaded"]
    assert (await queue.next()).priority == 0
    queue.offer("hold", hold, now(), reply)  # the console sends it again: it is not a replay
    again = await queue.next()
    assert again.priority == 1
    assert isinstance(again.read, Request)
    assert again.read.claimed


async def test_a_retained_request_is_refused_and_journaled_once() -> None:
    queue = Intake(Gate("T1", Policy(), KEYRING))
    answers, reply = collect()
    request = signed(Signer(DEALER, "ann", "T1"), "start_hand", "r")
    queue.offer("start_hand", request, now(), reply, retained=True)
    first = await queue.next()
    assert first.priority == 3
    assert isinstance(first.read, RefusedError)
    assert first.read.reason.startswith("retained")
    assert answers == []  # the worker answers it, and journals the refusal
    for _ in range(3):  # the broker gives it again on each connection: answered, not queued
        queue.offer("start_hand", request, now(), reply, retained=True)
    assert len(queue) == 0
    assert [a["error"].split(":")[0] for a in answers] == ["retained"] * 3
    assert queue.shed_report() == {"retained": 3}


def test_every_rate_of_the_config_reaches_the_intake() -> None:
    names = [n for n in SecuritySection.model_fields if n.startswith("rate_")]
    values: dict[str, Any] = {name: 10.0 + n for n, name in enumerate(names)}
    rates = rates_of(SecuritySection.model_validate({**values, "queue_limit": 777}))
    assert {f"rate_{k}": v for k, v in dataclasses.asdict(rates).items() if k != "queue_limit"} == (
        values
    )
    assert rates.queue_limit == 777


async def drain(queue: Intake) -> list[Queued]:
    return [await queue.next() for _ in range(len(queue))]


KINDS = st.sampled_from(["dealer", "copy", "stale", "forged", "garbage", "unsigned", "eye"])


@settings(max_examples=40, deadline=None)
@given(st.lists(KINDS, max_size=200))
def test_whatever_others_send_the_dealers_own_requests_are_queued_first(kinds: list[str]) -> None:
    queue = Intake(Gate("T1", Policy(), KEYRING), Rates(queue_limit=50))
    answers, reply = collect()
    dealer, eye = Signer(DEALER, "ann", "T1"), Signer(EYE, "eve", "T1")
    sent: list[bytes] = []
    fresh = 0
    for n, kind in enumerate(kinds):
        if kind == "dealer" and fresh < Rates().per_key_burst:  # within the dealer's own rate
            fresh += 1
            payload = signed(dealer, "round_closed", f"d{n}")
            sent.append(payload)
        elif kind == "copy" and sent:
            payload = sent[n % len(sent)]
        elif kind == "stale":
            payload = stale(dealer, "round_closed", f"s{n}")
        elif kind == "eye":
            payload = signed(eye, "hold", f"h{n}")
        elif kind == "unsigned":
            payload = json.dumps({"transaction": f"u{n}"}).encode()
        elif kind == "garbage":
            payload = b"\x00 not json"
        else:
            payload = forged("round_closed", f"f{n}")
        queue.offer("round_closed", payload, now(), reply)
    waiting = asyncio.run(drain(queue))
    dealing = [item for item in waiting if item.priority == 0]
    # every fresh dealer request is queued once, ahead of everything else
    assert sorted(str(item.read.transaction) for item in dealing) == sorted(
        json.loads(p)["transaction"] for p in sent
    )
    assert waiting[: len(dealing)] == dealing
    # nothing is lost: each offer is queued or answered at once
    assert len(waiting) + len(answers) == len(kinds)
    # an answer given at once names a transaction only when the signature held
    proven = {json.loads(p)["transaction"] for p in sent} | {f"h{n}" for n in range(len(kinds))}
    assert {a["transaction"] for a in answers} <= proven | {None}
