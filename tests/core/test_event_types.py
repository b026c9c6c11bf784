"""The typed event records: how each becomes JSON, and that docs and records name the same types."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from controller.cards import Card
from controller.table.event_types import (
    EVENT_TYPES,
    CardBurnAssigned,
    FloorOverride,
    HandHold,
    HoldEvidence,
    IrregularityDetected,
    PotAwarded,
    PotShare,
    StubReshuffleRequired,
)
from controller.table.events import Recorded, TableEvent

DOCS = Path(__file__).resolve().parents[2] / "docs" / "events.md"
TS = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_field_without_a_default_is_written_even_when_null() -> None:
    assert FloorOverride("DEFECT-KNOWER", "refund withheld", None).public() == {
        "rule": "DEFECT-KNOWER",
        "decision": "refund withheld",
        "hold": None,
    }


def test_evidence_that_does_not_apply_is_absent_not_null() -> None:
    found = IrregularityDetected("button in place", rule="BUTTON-POS")
    assert found.public() == {"reason": "button in place", "rule": "BUTTON-POS"}
    assert found.hidden() is None


def test_a_secret_field_travels_apart_under_its_key_sec_1() -> None:
    burn = CardBurnAssigned("flop", "EXP-OTHER", hidden_card=Card("As"))
    event = TableEvent(burn, TS, "T1-00001")
    assert event.data == {"street": "flop", "source": "EXP-OTHER"}
    assert event.secret == {"card": "As"}
    assert event.secure
    assert event.secure_view()["data"] == {"street": "flop", "source": "EXP-OTHER", "card": "As"}
    assert "card" not in event.public_view()["data"]


def test_a_holds_evidence_is_written_beside_its_fields_and_its_secrets_stay_secret() -> None:
    evidence = HoldEvidence(count=3, expected_cards=(Card("Kd"), Card("2c")))
    held = HandHold("T1-00001-h1", "EXP-REPL-CHECK", "not the next card", "continue", 4, evidence)
    assert held.public() == {
        "hold": "T1-00001-h1",
        "rule": "EXP-REPL-CHECK",
        "reason": "not the next card",
        "ruling": "continue",
        "seat": 4,
        "count": 3,
    }
    assert held.hidden() == {"expected": ["Kd", "2c"]}
    assert held.has_hidden()


def test_a_key_that_is_not_a_python_name_and_nested_records() -> None:
    back = StubReshuffleRequired(50, (Card("Ah"),), 1, (7,))
    assert back.public() == {"stub": 50, "with": ["Ah"], "unread": 1, "unread_groups": [7]}
    pot = PotShare(30, (1, 2), {"1": 30}, {})
    assert PotAwarded((pot,), {"1": 30}).public() == {
        "pots": [{"amount": 30, "eligible": [1, 2], "winners": {"1": 30}, "odd_chips": {}}],
        "payouts": {"1": 30},
    }


def test_an_event_read_back_from_the_journal_keeps_what_was_written() -> None:
    recorded = Recorded("future.type", {"x": 1}, {"card": "As"})
    event = TableEvent(recorded, TS, None)
    assert (event.type, event.data, event.secret, event.secure) == (
        "future.type",
        {"x": 1},
        {"card": "As"},
        True,
    )


def test_every_record_names_a_distinct_type_and_the_docs_list_each() -> None:
    documented = set(re.findall(r"^\| `([a-z_.]+)` \|", DOCS.read_text(), re.MULTILINE))
    assert set(EVENT_TYPES) <= documented, set(EVENT_TYPES) - documented
    for event_type, cls in EVENT_TYPES.items():
        assert event_type == cls.TYPE
        camel = "".join(part.capitalize() for part in re.split(r"[._]", event_type))
        assert cls.__name__ == camel, f"{cls.__name__} should be named {camel}"
