"""Who gave a command, in the core: the rulings the floor keeps, and ``by`` on every event."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from controller.authority import COMMAND_ROLES, Authority, Role, role_for
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import (
    COMMANDS,
    ActionKind,
    Confirm,
    FloorOverride,
    Input,
    Misdeal,
    RaiseHold,
    Reject,
)
from controller.table.state import TableState
from simulators.scenario.core_runner import run_core
from simulators.scenario.model import load_scenario
from simulators.scenario.primitives import EPOCH
from tests.helpers import SCENARIOS

TS = EPOCH + timedelta(hours=1)  # after every scenario step
DEALER = Authority("Ann", Role.DEALER, "ann")
FLOOR = Authority("Bob", Role.FLOOR, "bob")
WATCHER = Authority("Eve", Role.SURVEILLANCE, "eve")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def held_at_seat_count(house_rules: dict[str, object] | None = None) -> TableState:
    """T03 up to its SEAT-COUNT hold (the file's confirm left out)."""
    scenario = load_scenario(SCENARIOS / "T03-seat-reads-one-card.toml")
    steps = [s for s in scenario.step if s.dealer not in ("confirm", "reject")]
    meta = scenario.scenario.model_copy(update={"house_rules": house_rules or {}})
    run = run_core(scenario.model_copy(update={"step": steps, "scenario": meta}))
    hand = run.state.hand
    assert hand is not None
    assert [h.rule.value for h in hand.irregular.holds] == ["SEAT-COUNT"]
    return run.state


def feed(state: TableState, command: Input) -> tuple[TableState, list[TableEvent]]:
    return apply(state, command)


def test_a_hold_is_the_floors_ruling_unless_the_house_lets_dealers_confirm_it() -> None:
    state = held_at_seat_count()
    after, events = feed(state, Confirm(TS, authority=DEALER))
    assert [e.type for e in events] == ["command.rejected"]
    assert "SEAT-COUNT is the floor's ruling" in events[0].data["reason"]
    assert events[0].by == {"person": "Ann", "role": "dealer"}
    assert after is state
    _, events = feed(state, Reject(TS, authority=DEALER))
    assert events[0].type == "command.rejected"
    # the floor rules; every event of the ruling names who made it
    _, events = feed(state, Confirm(TS, authority=FLOOR))
    assert "hand.misdeal" in [e.type for e in events]
    assert all(e.by == {"person": "Bob", "role": "floor"} for e in events)
    # with dealer_may_confirm naming the rule, the dealer may
    lenient = held_at_seat_count({"dealer_may_confirm": ["SEAT-COUNT"]})
    _, events = feed(lenient, Confirm(TS, authority=DEALER))
    assert "hand.misdeal" in [e.type for e in events]
    # a command without an authority (a scenario file, an unsigned table) is not restricted
    _, events = feed(state, Confirm(TS))
    assert "hand.misdeal" in [e.type for e in events]
    assert all(e.by is None for e in events)


def test_md_cutoff_after_the_cutoff_only_the_floor_calls_a_misdeal() -> None:
    scenario = load_scenario(SCENARIOS / "rule-MD-CUTOFF.toml")
    steps = [s for s in scenario.step if s.dealer != "misdeal"]
    state = run_core(scenario.model_copy(update={"step": steps})).state
    _, events = feed(state, Misdeal(TS, "cards flashed", authority=DEALER))
    assert events[0].type == "command.rejected"
    assert "MD-CUTOFF" in events[0].rules
    _, events = feed(state, Misdeal(TS, "cards flashed", authority=FLOOR))
    misdeal = next(e for e in events if e.type == "hand.misdeal")
    assert "MD-CUTOFF" in misdeal.rules
    assert misdeal.by == {"person": "Bob", "role": "floor"}


def test_floor_override_is_the_floors_and_surveillance_raises_a_hold() -> None:
    state = held_at_seat_count()
    override = FloorOverride(TS, "SEAT-COUNT", "continue", authority=DEALER)
    _, events = feed(state, override)
    assert events[0].type == "command.rejected"
    assert "only the floor" in events[0].data["reason"]
    # surveillance holds the hand (even while it is held already) for the floor to rule on
    _, events = feed(
        state, RaiseHold(TS, "FOUL-DUP", "two aces of spades on camera", authority=WATCHER)
    )
    hold = events[0]
    assert (hold.type, hold.data["rule"], hold.data["reason"]) == (
        "hand.hold",
        "FOUL-DUP",
        "two aces of spades on camera",
    )
    assert hold.by == {"person": "Eve", "role": "surveillance"}
    _, events = feed(state, RaiseHold(TS, "NOT-A-RULE", authority=WATCHER))
    assert events[0].type == "command.rejected"


def test_every_command_has_its_roles_and_the_docs_list_them_all() -> None:
    assert set(COMMANDS) <= set(COMMAND_ROLES)
    assert role_for("action", [Role.FLOOR, Role.DEALER]) is Role.DEALER
    assert role_for("confirm", [Role.FLOOR, Role.DEALER]) is Role.FLOOR
    assert role_for("floor_override", [Role.DEALER]) is None
    text = DOCS.read_text()
    for command, roles in COMMAND_ROLES.items():
        row = next(
            (line for line in text.splitlines() if line.startswith(f"| `{command}` |")), None
        )
        assert row is not None, f"docs/security.md has no row for {command}"
        listed = {cell.strip().strip("`") for cell in row.split("|")[2].split(",")}
        assert listed == {r.value for r in roles}, f"{command}: the doc says {listed}"


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_a_command_carries_its_authority_through_the_journal_form(verb: str) -> None:
    from controller.table.codec import input_from_json, input_to_json

    cls = COMMANDS[verb]
    fields = {
        name: value
        for name, value in {
            "seat": 1,
            "action": ActionKind.CHECK,
            "rule": "MD-CUTOFF",
            "decision": "misdeal",
            "target": 2,
        }.items()
        if name in cls.__dataclass_fields__
    }
    command = cls(TS, **fields, authority=FLOOR)
    assert input_from_json(input_to_json(command)) == command
