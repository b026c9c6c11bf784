"""Small helpers shared by the core tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.table.events import TableEvent
from simulators.scenario.cli import envelopes
from simulators.scenario.core_runner import run_core
from simulators.scenario.expect import check
from simulators.scenario.model import load_scenario, parse_scenario
from simulators.scenario.primitives import CoreRun

SCENARIOS = Path(__file__).parent / "scenarios"


def run_file(name: str) -> CoreRun:
    """Play ``tests/scenarios/<name>`` into the core and assert its expectations hold."""
    scenario = load_scenario(SCENARIOS / name)
    run = run_core(scenario)
    verdict = check(envelopes(scenario, run.events), scenario.expect, scenario.expect_not)
    assert verdict.passed, "\n".join(verdict.failures)
    return run


def run_text(text: str) -> CoreRun:
    """Play scenario text into the core (expectations are not checked)."""
    return run_core(parse_scenario(text))


def of_type(events: list[TableEvent], type_: str) -> list[TableEvent]:
    """The events of one type."""
    return [e for e in events if e.type == type_]


def one(events: list[TableEvent], type_: str) -> TableEvent:
    """The single event of a type."""
    found = of_type(events, type_)
    assert len(found) == 1, f"expected one {type_}, got {len(found)}"
    return found[0]


def data(event: TableEvent) -> dict[str, Any]:
    """The event's data and secret fields together."""
    return {**event.data, **(event.secret or {})}


def scenario_text(
    stacks: dict[int, int],
    button: int,
    steps: str,
    *,
    profile: str = "rrop-cash",
    house_rules: str = "{}",
    deck: str = "seed = 1",
    blinds: tuple[int, int] = (1, 2),
    ante: int = 0,
) -> str:
    """A scenario file's text around ``steps`` (TOML ``[[step]]`` tables)."""
    seats = ", ".join(f"{s} = {c}" for s, c in stacks.items())
    return (
        f'[scenario]\nname = "test"\nprofile = "{profile}"\nhouse_rules = {house_rules}\n'
        f"[table]\nstacks = {{ {seats} }}\nbutton = {button}\n"
        f"blinds = [{blinds[0]}, {blinds[1]}]\nante = {ante}\n"
        f"[deck]\n{deck}\n{steps}"
    )


START = '[[step]]\ndealer = "start_hand"\n[[step]]\nshuffler = "shuffle"\n'
DEAL = START + '[[step]]\nauto = "deal_hole"\n'


def act(seat: int, action: str, amount: int | None = None) -> str:
    """One ``action`` dealer step."""
    text = f'[[step]]\ndealer = "action"\nseat = {seat}\naction = "{action}"\n'
    return text + (f"amount = {amount}\n" if amount is not None else "")


def step(**fields: object) -> str:
    """Any step from keyword fields."""
    body = "".join(f"{k} = {_toml(v)}\n" for k, v in fields.items() if v is not None)
    return "[[step]]\n" + body


def _toml(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


RUNOUT = '[[step]]\nauto = "check_round"\n' + "".join(
    f'[[step]]\nauto = "board"\nstreet = "{s}"\n[[step]]\nauto = "check_round"\n'
    for s in ("flop", "turn", "river")
)
