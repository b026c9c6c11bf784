"""The scenario file format ``tablectl.scenario/1`` (TOML), parsed and validated with pydantic.

One file describes one table, one shuffled deck, a sequence of steps (dealer commands, shuffler and
reader happenings, device faults, macros) and the events expected. ``docs/scenarios.md`` is the
reference; :func:`load_scenario` turns any mistake into a :class:`ScenarioError` that names the
file, the line and the key.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from simulators.errors import ScenarioError

FORMAT: Literal["tablectl.scenario/1"] = "tablectl.scenario/1"

Mode = Literal["core", "device"]
MODES: tuple[Mode, ...] = ("core", "device")
StepKind = Literal["dealer", "shuffler", "reader", "device", "auto", "wait"]
_KINDS: tuple[StepKind, ...] = ("dealer", "shuffler", "reader", "device", "auto", "wait")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScenarioMeta(_Strict):
    """``[scenario]``: what the file is and which rules apply."""

    name: str
    description: str = ""
    format: Literal["tablectl.scenario/1"] = FORMAT
    profile: str = "rrop-cash"
    house_rules: dict[str, Any] = Field(default_factory=dict)
    deck: str = Field("house-a", description="deck manifest (config/decks/<deck>.toml)")
    modes: list[Mode] = Field(
        default_factory=lambda: list(MODES),
        min_length=1,
        description="where the file runs: the pure core, the devices, or both (the default)",
    )


class TableSpec(_Strict):
    """``[table]``: seats and stacks (these seats are dealt in), button, blinds, ante."""

    id: str = "T1"
    stacks: dict[int, int]
    button: int
    blinds: tuple[int, int] = (1, 2)
    ante: int = 0
    settle: float = Field(3.0, gt=0, description="seconds the readers get to see dealt cards")
    dispense: Literal["dealer", "host"] = Field(
        "dealer",
        description="who paces the shuffler: the dealer's keypad, or the host asking for each "
        "group (a shuffler step then delivers the group the table asked for)",
    )

    @model_validator(mode="after")
    def _seats_make_sense(self) -> TableSpec:
        if len(self.stacks) < 2:
            raise ValueError("at least two seats need stacks")
        for seat, chips in self.stacks.items():
            if not 1 <= seat <= 10:
                raise ValueError(f"seat {seat} is not between 1 and 10")
            if chips < 0:
                raise ValueError(f"seat {seat} has a negative stack")
        if self.button not in self.stacks:
            raise ValueError(f"the button seat {self.button} has no stack")
        return self


class DeckSpec(_Strict):
    """``[deck]``: the shuffled order (top first) or a seed, and the card-identity policy."""

    order: list[str] | None = None
    seed: int | None = None
    id_policy: Literal["withhold", "live"] = "withhold"

    @model_validator(mode="after")
    def _one_source(self) -> DeckSpec:
        if self.order is not None and self.seed is not None:
            raise ValueError("give either order or seed, not both")
        return self


class Step(_Strict):
    """One ``[[step]]``: exactly one of dealer, shuffler, reader, device or auto."""

    dealer: str | None = None
    shuffler: Literal["shuffle", "dispense", "reshuffle", "reveal"] | None = None
    reader: Literal["arrive", "depart"] | None = None
    device: (
        Literal["fault", "clear", "unplug", "replug", "power_loss", "rejected", "restart"] | None
    ) = None
    auto: Literal["deal_hole", "board", "check_round", "showdown"] | None = None
    wait: float | None = Field(None, gt=0, description="seconds that pass with nothing happening")
    at: float | None = Field(None, ge=0, description="seconds since the scenario started")
    # dealer command fields
    button: int | None = None
    seats: list[int] | None = None
    straddles: list[int] | None = None
    seat: int | None = None
    action: str | None = None
    amount: int | None = None
    card: str | None = None
    reason: str | None = None
    hold: str | None = None
    rule: str | None = None
    decision: str | None = None
    by: Literal["dealer", "player"] | None = None
    left_table: bool | None = None
    oversized_chip: bool | None = None
    target: int | None = None
    # shuffler fields
    purpose: Literal["hole", "burn", "flop", "turn", "river", "board_other", "extra"] | None = None
    count: int | None = Field(None, ge=0, le=52)
    verdict: (
        Literal[
            "ok",
            "short",
            "extra",
            "duplicate",
            "foreign_back",
            "unreadable",
            "wrong_profile",
            "commitment_mismatch",
        ]
        | None
    ) = None
    order: list[str] | None = None
    seed: int | None = None
    # reader fields
    zone: str | None = None
    cards: list[str] | None = None
    uids: list[str] | None = None
    deck: str | None = Field(None, description="the manifest whose UIDs the cards are read with")
    # device fields
    name: str | None = None
    code: str | None = None
    # macro fields
    street: Literal["flop", "turn", "river"] | None = None

    @property
    def kind(self) -> StepKind:
        """Which kind of step this is."""
        for kind in _KINDS:
            if getattr(self, kind) is not None:
                return kind
        raise AssertionError("validated to have a kind")

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Step:
        chosen = [k for k in _KINDS if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(
                "a step needs exactly one of dealer, shuffler, reader, device, auto, wait"
                + (f" (this one has {', '.join(chosen)})" if chosen else "")
            )
        if self.reader is not None and self.zone is None:
            raise ValueError("a reader step needs a zone")
        if self.cards is not None and self.uids is not None:
            raise ValueError("give cards or uids, not both")
        if self.device is not None and self.name is None:
            raise ValueError("a device step needs the device name")
        if self.auto == "board" and self.street is None:
            raise ValueError('auto = "board" needs street = "flop", "turn" or "river"')
        return self


class Expectation(_Strict):
    """``[[expect]]`` / ``[[expect_not]]``: an event pattern."""

    type: str
    rules: list[str] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)
    severity: Literal["info", "warn", "hold", "critical"] | None = None
    needs_confirm: bool | None = None
    hand_id: str | None = None


class Scenario(_Strict):
    """A whole scenario file."""

    scenario: ScenarioMeta
    table: TableSpec
    deck: DeckSpec = DeckSpec()
    step: list[Step] = Field(default_factory=list)
    expect: list[Expectation] = Field(default_factory=list)
    expect_not: list[Expectation] = Field(default_factory=list)


def load_scenario(path: Path) -> Scenario:
    """Read, parse and validate a scenario file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_scenario(text, str(path))


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Parse scenario text; errors name ``source``, the line and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from None
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        lines = [_describe(err, text) for err in exc.errors()]
        raise ScenarioError(f"{source}:\n  " + "\n  ".join(lines)) from None


def _describe(err: Any, text: str) -> str:
    loc = [str(p) for p in err["loc"]]
    line = locate(text, loc)
    where = ".".join(loc) or "(file)"
    message = err["msg"].removeprefix("Value error, ")
    return f"line {line}: {where}: {message}" if line else f"{where}: {message}"


def locate(text: str, loc: list[str]) -> int | None:
    """The line of a key path such as ``["step", "3", "seat"]`` in TOML text, if it can be found."""
    lines = text.splitlines()
    start, end = 0, len(lines)
    if loc and loc[0] in ("step", "expect", "expect_not") and len(loc) > 1 and loc[1].isdigit():
        header = re.compile(rf"^\s*\[\[\s*{loc[0]}\s*\]\]")
        hits = [i for i, line in enumerate(lines) if header.match(line)]
        index = int(loc[1])
        if index >= len(hits):
            return None
        start = hits[index]
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
            len(lines),
        )
        keys = loc[2:]
    elif loc:
        header = re.compile(rf"^\s*\[\s*{re.escape(loc[0])}\s*\]")
        hit = next((i for i, line in enumerate(lines) if header.match(line)), None)
        if hit is None:
            return None
        start = hit
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
            len(lines),
        )
        keys = loc[1:]
    else:
        return None
    if keys:
        key = re.compile(rf'^\s*"?{re.escape(keys[0])}"?\s*=')
        for i in range(start, end):
            if key.match(lines[i]):
                return i + 1
    return start + 1
