"""Rules profiles: the house-rule keys where the sources disagree (docs/profiles.md, C-1…C-15).

Three profiles ship in ``config/profiles/``: ``de-charitable``, ``rrop-cash`` and
``tda-tournament``. A table config or scenario picks one by name and may override keys. Keys are
written dotted, as in the catalogue (``odd_chip.recipient``); in TOML either a quoted dotted key
(``"odd_chip.recipient" = …``) or nested tables work.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from controller.game.betting import Structure
from controller.paths import config_dir
from controller.rules.ids import Rule

RULE_IDS = frozenset(rule.value for rule in Rule)


class Ruleset(StrEnum):
    """C-13: whose rules the table plays under (decides which source a shared ruling cites)."""

    DE_CHARITABLE = "de_charitable"
    RROP_CASH = "rrop_cash"
    TDA_TOURNAMENT = "tda_tournament"


class InitialScope(StrEnum):
    """C-1: which exposed initial card forces a misdeal."""

    FIRST_GROUP = "first_group"
    FIRST_CARD = "first_card"


class ExtraSingle(StrEnum):
    """C-3: what one extra card to the first player means."""

    BURN = "burn"
    MISDEAL = "misdeal"


class MisdealCutoff(StrEnum):
    """C-4: until when a misdeal can be called."""

    RROP_TWO_ACTIONS = "rrop_two_actions"
    TDA_SUBSTANTIAL_ACTION = "tda_substantial_action"


class OddChipRecipient(StrEnum):
    """C-8: who gets the odd chip of a split pot."""

    FIRST_TIED_WINNER_CLOCKWISE = "first_tied_winner_clockwise"
    FIRST_LIVE_PLAYER_LITERAL = "first_live_player_literal"


class ButtonMode(StrEnum):
    """RR-BB-2: how the button and blinds move."""

    MOVING = "moving"  # the button moves to the next player; the blinds follow it
    DEAD = "dead"  # the big blind moves one seat; the button and small blind may be dead


class HeadsUpFirstCard(StrEnum):
    """C-14: who receives the first group heads-up."""

    NON_BUTTON = "non_button"
    BUTTON = "button"


class BurnErrorAfterAction(StrEnum):
    """C-15: a burn error found after action on the street."""

    STANDS = "stands"
    CORRECT = "correct"


class PreflopExposedBoard(StrEnum):
    """C-15: a burn error before the flop that exposed a board card."""

    RESHUFFLE = "reshuffle"
    CONTINUE = "continue"


class MuckContact(StrEnum):
    """C-12: a live hand that touched the muck."""

    DEAD = "dead"
    LIVE = "live"


class GroupSizeError(StrEnum):
    """GRP-SIZE: what a wrong-sized hole group leads to."""

    RESHUFFLE = "reshuffle"
    HOLD = "hold"


class AnteKind(StrEnum):
    """ANTE-TABLE: who posts the table's ante."""

    EACH = "each"  # every seat dealt in posts it
    BIG_BLIND = "big_blind"  # the big blind posts it for the table, after its blind (TDA)
    BUTTON = "button"  # the button posts it for the table


class StraddleMode(StrEnum):
    """STRADDLE: which straddles the table takes."""

    UTG = "utg"  # under the gun, re-straddles from the seat after
    MISSISSIPPI = "mississippi"  # under the gun or on the button
    NONE = "none"


class NewPlayer(StrEnum):
    """MISSED-BLINDS: how a new player enters."""

    POST = "post"  # posts a big blind to enter (or waits for the big blind)
    WAIT = "wait"  # waits for the big blind


#: RR-BR-3/4 (RRoP, Betting and raising 3): a bet and three raises, in a game of three or more
#: betting rounds.
FIXED_LIMIT_CAP = 4


class RakeMode(StrEnum):
    """HOUSE-RAKE / HOUSE-TIME: how the house is paid."""

    NONE = "none"  # no rake (a jackpot drop may still be taken)
    POT = "pot"  # a percentage of the pot, dropped before the award
    TIME = "time"  # time collected from each seat dealt in, once per period


class RakePots(StrEnum):
    """HOUSE-RAKE: which pots are raked."""

    MAIN = "main"
    ALL = "all"


def _key(name: str, **kwargs: Any) -> Any:
    return Field(alias=name, **kwargs)


class RulesProfile(BaseModel):
    """Every house-rule key with its meaning; the defaults are the catalogue's proposals."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str = "custom"
    description: str = ""
    ruleset: Ruleset = Ruleset.RROP_CASH
    exp_initial_scope: InitialScope = _key("exp.initial_scope", default=InitialScope.FIRST_GROUP)
    extra_single: ExtraSingle = _key("extra.single", default=ExtraSingle.BURN)
    misdeal_cutoff: MisdealCutoff = _key("misdeal.cutoff", default=MisdealCutoff.RROP_TWO_ACTIONS)
    flop_redeal_include_burn: bool = _key("flop_redeal.include_burn", default=False)
    flop_redeal_burn_new: bool = _key("flop_redeal.burn_new", default=False)
    showdown_sidepot_first: bool = _key("showdown.sidepot_first", default=True)
    showdown_allin_faceup: bool = _key("showdown.allin_faceup", default=False)
    showdown_request_to_see: bool = _key("showdown.request_to_see", default=True)
    odd_chip_recipient: OddChipRecipient = _key(
        "odd_chip.recipient", default=OddChipRecipient.FIRST_TIED_WINNER_CLOCKWISE
    )
    odd_chip_max_per_player: int = _key(
        "odd_chip.max_per_player",
        default=1,
        ge=0,
        description="most odd chips one player receives from one pot; 0 means no limit",
    )
    burn_allow_return_to_top: bool = _key("burn.allow_return_to_top", default=False)
    board_group_includes_burn: bool = _key("board_group_includes_burn", default=False)
    board_claim_require_declaration: bool = _key("board_claim.require_declaration", default=True)
    boxed_initial_deal_misdeal_at: int = _key("boxed.initial_deal_misdeal_at", default=2, ge=1)
    muck_contact_default: MuckContact = _key("muck_contact.default", default=MuckContact.DEAD)
    burn_error_after_action: BurnErrorAfterAction = _key(
        "burn_error.after_action", default=BurnErrorAfterAction.STANDS
    )
    burn_error_preflop_exposed: PreflopExposedBoard = _key(
        "burn_error.preflop_exposed", default=PreflopExposedBoard.RESHUFFLE
    )
    button_mode: ButtonMode = _key("button.mode", default=ButtonMode.MOVING)
    headsup_first_card: HeadsUpFirstCard = _key(
        "headsup.first_card", default=HeadsUpFirstCard.NON_BUTTON
    )
    grp_size_error: GroupSizeError = _key("grp.size_error", default=GroupSizeError.RESHUFFLE)
    ante_kind: AnteKind = _key("ante.kind", default=AnteKind.EACH)
    straddle_mode: StraddleMode = _key("straddle.mode", default=StraddleMode.UTG)
    straddle_max: int = _key(
        "straddle.max",
        default=1,
        ge=1,
        description="most straddles in one hand: 1 = no re-straddle",
    )
    blinds_new_player: NewPlayer = _key("blinds.new_player", default=NewPlayer.POST)
    run_twice_allowed: bool = _key(
        "run_twice.allowed",
        default=False,
        description="players all in may agree to run the rest of the board twice",
    )
    betting_structure: Structure = _key(
        "betting.structure",
        default=Structure.NO_LIMIT,
        description="no_limit, pot_limit or fixed_limit (the big blind before the turn, twice "
        "it from the turn)",
    )
    betting_cap: int = _key(
        "betting.cap",
        default=FIXED_LIMIT_CAP,
        ge=2,
        description="fixed_limit: the most bets and raises in a round, the bet included, while "
        "three or more players can still bet (heads-up there is no cap)",
    )
    rake_mode: RakeMode = _key("rake.mode", default=RakeMode.NONE)
    rake_percent: float = _key(
        "rake.percent", default=0.0, ge=0, le=100, description="percent of each raked pot"
    )
    rake_cap: int = _key(
        "rake.cap", default=0, ge=0, description="most rake from one hand; 0 means no cap"
    )
    rake_chip_unit: int = _key(
        "rake.chip_unit", default=1, ge=1, description="the rake is rounded down to this chip"
    )
    rake_minimum_pot: int = _key(
        "rake.minimum_pot", default=0, ge=0, description="no rake from a hand whose pot is less"
    )
    rake_no_flop_no_drop: bool = _key("rake.no_flop_no_drop", default=True)
    rake_pots: RakePots = _key("rake.pots", default=RakePots.ALL)
    rake_jackpot_drop: int = _key(
        "rake.jackpot_drop",
        default=0,
        ge=0,
        description="chips dropped for a jackpot or promotion from a pot that reaches the "
        "threshold; 0 means none",
    )
    rake_jackpot_threshold: int = _key(
        "rake.jackpot_threshold", default=0, ge=0, description="the pot the jackpot drop needs"
    )
    rake_time_amount: int = _key(
        "rake.time_amount", default=0, ge=0, description="time: chips per seat per period"
    )
    rake_time_minutes: int = _key(
        "rake.time_minutes", default=30, ge=1, description="time: the period, in minutes"
    )
    dealer_may_confirm: tuple[str, ...] = _key(
        "dealer_may_confirm",
        default=(),
        description="rule IDs whose holds a dealer may confirm or reject (the floor rules on "
        "the others)",
    )

    @field_validator("dealer_may_confirm")
    @classmethod
    def _catalogue_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [rule for rule in value if rule not in RULE_IDS]
        if unknown:
            raise ValueError(f"not rule IDs of the catalogue: {', '.join(unknown)}")
        return value

    @model_validator(mode="after")
    def _cap_is_fixed_limits(self) -> RulesProfile:
        if (
            self.betting_cap != FIXED_LIMIT_CAP
            and self.betting_structure is not Structure.FIXED_LIMIT
        ):
            raise ValueError(
                f"betting.cap = {self.betting_cap} caps fixed-limit betting only: "
                f"betting.structure is {self.betting_structure.value!r}"
            )
        return self

    @model_validator(mode="after")
    def _rake_is_complete(self) -> RulesProfile:
        if self.rake_mode is RakeMode.POT and self.rake_percent <= 0:
            raise ValueError("rake.mode = 'pot' needs rake.percent above 0")
        if self.rake_mode is RakeMode.TIME and self.rake_time_amount <= 0:
            raise ValueError("rake.mode = 'time' needs rake.time_amount above 0")
        return self

    @property
    def drops_from_pots(self) -> bool:
        """Whether the dealer drops anything from the pots before the award."""
        return self.rake_mode is RakeMode.POT or self.rake_jackpot_drop > 0

    def with_overrides(self, overrides: Mapping[str, Any]) -> RulesProfile:
        """A copy with some keys changed; unknown keys and bad values raise ProfileError."""
        merged = self.model_dump(by_alias=True)
        merged.update(flatten(overrides))
        return _validate(merged, f"house rules of profile {self.name!r}")


class ProfileError(ValueError):
    """A profile file or an override that is not valid; the message names the key."""


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Turn nested TOML tables into dotted keys (``{"odd_chip": {"recipient": x}}``)."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def _validate(data: Mapping[str, Any], where: str) -> RulesProfile:
    try:
        return RulesProfile.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ProfileError(f"{where}: {problems}") from None


def load_profile_file(path: Path) -> RulesProfile:
    """Read and validate one profile file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    flat = flatten(data)
    flat.setdefault("name", path.stem)
    return _validate(flat, str(path))


def available_profiles(directory: Path | None = None) -> list[str]:
    """Names of the profiles shipped in ``directory`` (default: the shipped profiles)."""
    directory = directory or config_dir() / "profiles"
    return sorted(p.stem for p in directory.glob("*.toml"))


def load_profile(name: str, directory: Path | None = None) -> RulesProfile:
    """The shipped profile called ``name`` (e.g. ``rrop-cash``)."""
    directory = directory or config_dir() / "profiles"
    path = directory / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(available_profiles(directory)) or "none"
        raise ProfileError(f"no rules profile named {name!r} (available: {known})")
    return load_profile_file(path)
