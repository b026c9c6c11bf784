"""The intake: the dealer and the floor first, floods shed and counted, everyone answered."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from controller.keyring import parse_keyring
from controller.shell.gate import Gate, Policy
from controller.shell.intake import Intake, Rates
from controller.signing import Signer, new_key

NOW = datetime.now(UTC)
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


def intake(**rates: Any) -> tuple[Intake, list[tuple[dict[str, Any], bool]]]:
    answers: list[tuple[dict[str, Any], bool]] = []
    return Intake(Gate("T1", Policy(require_signed=False), KEYRING), Rates(**rates)), answers


def signed(signer: Signer, verb: str, transaction: str) -> bytes:
    return json.dumps(signer.sign(verb, {"transaction": transaction})).encode()


async def test_signed_dealer_requests_are_served_before_anything_else() -> None:
    queue, answers = intake()

    def reply(body: dict[str, Any], urgent: bool) -> None:
        answers.append((body, urgent))

    queue.offer("start_hand", b"not json", NOW, reply)
    queue.offer("start_hand", b'{"transaction": "u"}', NOW, reply)
    queue.offer("hold", signed(Signer(EYE, "eve", "T1"), "hold", "s"), NOW, reply)
    queue.offer("start_hand", signed(Signer(DEALER, "ann", "T1"), "start_hand", "d"), NOW, reply)
    order = [(await queue.next()).priority for _ in range(4)]
    assert order == [0, 1, 2, 3]
    assert answers == []  # nothing was shed: the worker answers them all


async def test_a_flood_is_shed_at_once_and_counted_but_the_dealer_still_gets_in() -> None:
    queue, answers = intake(anonymous=1.0, anonymous_burst=5.0, queue_limit=3)

    def reply(body: dict[str, Any], urgent: bool) -> None:
        answers.append((body, urgent))

    for n in range(20):
        queue.offer("action", json.dumps({"transaction": f"g{n}"}).encode(), NOW, reply)
    assert len(queue) == 3  # five got tokens, the queue holds three
    shed = [body["error"] for body, urgent in answers if not urgent]
    assert len(shed) == 17
    assert {reason.split(":")[0] for reason in shed} == {"rate limited", "overloaded"}
    # a dealer's request takes the place of the least urgent one waiting
    queue.offer("start_hand", signed(Signer(DEALER, "ann", "T1"), "start_hand", "d"), NOW, reply)
    assert len(queue) == 3
    assert (await queue.next()).priority == 0
    report = queue.shed_report()
    assert sum(report.values()) == 18
    assert queue.shed_report() == {}
