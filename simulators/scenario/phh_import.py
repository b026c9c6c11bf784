"""A PHH hand history as a scenario file (``tablectl scenario from-phh FILE``).

PHH (the Poker Hand History format, TOML) lists players by position: the first left of the
button first, the button last; ``seats`` maps them to seat numbers (without it, position N is
seat N). The scenario deals the same cards in the same order (hole cards, then a burn and the
street's cards for each street; burns the history does not name are cards nobody saw), makes the
same actions, shows and mucks the same hands, and expects the table to end where the history
says (``finishing_stacks``).

What the history's blinds, antes and straddles say becomes the table and its house rules: equal
antes are posted by every seat; a single ante in the big blind's position is a big-blind ante,
in the button's a button ante (ANTE-TABLE); straddles from under the gun on, or on the button,
each twice the one before (STRADDLE). The house's rake is not in PHH (a reader's rake is its
raking rule): give it as house rules (``--house rake.mode=pot``); ``_rake`` written by
``tablectl journal export --phh`` becomes an expectation on ``pot.rake.taken``. A hand run twice
(RUN-TWICE) says so with ``_runouts = 2``: the first runout's streets, then the second's, and the
players agree before the first street they do not share.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.cards import STANDARD_DECK
from controller.table.event_types import HandCompleted, PotRakeTaken

_STREETS = ("flop", "turn", "river")


class PhhImportError(ValueError):
    """A hand history the table cannot play; the message says what and where."""


@dataclass
class _Betting:
    """Enough of the betting to tell a check from a call and a bet from a raise."""

    bets: list[int]
    stacks: list[int]
    steps: list[dict[str, Any]] = field(default_factory=list)

    def new_street(self) -> None:
        self.bets = [0] * len(self.bets)

    def act(self, position: int, seat: int, verb: str, amount: int | None) -> dict[str, Any]:
        current = max(self.bets)
        if verb == "f":
            return {"dealer": "action", "seat": seat, "action": "fold"}
        if verb == "cc":
            owed = min(current - self.bets[position], self.stacks[position])
            self.stacks[position] -= owed
            self.bets[position] += owed
            return {"dealer": "action", "seat": seat, "action": "call" if owed else "check"}
        assert amount is not None
        self.stacks[position] -= amount - self.bets[position]
        self.bets[position] = amount
        kind = "raise" if current else "bet"
        return {"dealer": "action", "seat": seat, "action": kind, "amount": amount}


def phh_to_scenario(
    text: str,
    *,
    name: str,
    profile: str = "rrop-cash",
    house_rules: Mapping[str, Any] | None = None,
    hand: str | None = None,
) -> str:
    """The scenario TOML that plays the hand history ``text``: one hand (``.phh``), or the
    one named ``hand`` of a bulk file (``.phhs``, its table's name: ``1``, ``2``…)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PhhImportError(f"not a PHH file (TOML): {exc}") from None
    doc = _one_hand(doc, hand)
    if doc.get("variant") != "NT":
        raise PhhImportError(f"variant {doc.get('variant')!r}: this table plays NT (hold'em)")
    stacks: list[int] = list(doc["starting_stacks"])
    count = len(stacks)
    seats: list[int] = list(doc.get("seats", range(1, count + 1)))
    if len(seats) != count or not all(1 <= s <= 10 for s in seats):
        raise PhhImportError(f"seats {seats}: one seat from 1 to 10 for each starting stack")
    rules: dict[str, Any] = {"odd_chip.max_per_player": 0, **(house_rules or {})}
    blinds, straddles, bets = _blinds(list(doc["blinds_or_straddles"]), seats, rules)
    ante = _antes(list(doc.get("antes", [0] * count)), doc, seats, rules)
    runs = int(doc.get("_runouts", 1))
    holes, boards, shows = _cards(doc["actions"], count, runs)
    run_from = 2 * len(_STREETS) - len(boards) if runs == 2 else None
    if run_from is not None:
        rules.setdefault("run_twice.allowed", True)
    antes = list(doc.get("antes", [0] * count))
    if len(antes) == 2:
        antes.reverse()
    # A short stack posts what it has, in the order the table posts (controller/rules/start.py):
    # every seat's ante before the blinds; the one ante of a big blind or the button after them
    # (a short big blind's chips go to its blind first).
    if rules.get("ante.kind") in ("big_blind", "button"):
        bets = [min(bet, stack) for bet, stack in zip(bets, stacks, strict=True)]
        antes = [min(a, s - b) for a, s, b in zip(antes, stacks, bets, strict=True)]
    else:
        antes = [min(a, s) for a, s in zip(antes, stacks, strict=True)]
        bets = [min(bet, s - a) for bet, s, a in zip(bets, stacks, antes, strict=True)]
    behind = [s - b - a for s, b, a in zip(stacks, bets, antes, strict=True)]
    betting = _Betting(list(bets), behind)
    steps: list[dict[str, Any]] = [
        {"dealer": "start_hand", **({"straddles": straddles} if straddles else {})},
        {"shuffler": "shuffle"},
        {"auto": "deal_hole"},
    ]
    street = 0
    for line in doc["actions"]:
        words = line.split()
        if words[:2] == ["d", "db"]:
            betting.new_street()
            if street == run_from:
                steps.append({"dealer": "run_it_twice"})
            label = _STREETS[street] if street < len(_STREETS) else None
            if label is None:  # the second runout: its streets after the common ones
                label = _STREETS[street - len(_STREETS) + (run_from or 0)]
            steps.append({"auto": "board", "street": label})
            street += 1
        elif words[0].startswith("p") and words[1] in ("f", "cc", "cbr"):
            position = int(words[0][1:]) - 1
            amount = int(words[2]) if words[1] == "cbr" else None
            steps.append(betting.act(position, seats[position], words[1], amount))
    for position, shown in shows:
        verb = "table" if shown else "muck"
        steps.append({"dealer": verb, "seat": seats[position]})
    steps.append({"auto": "showdown"})
    deck = _deck(holes, boards, doc.get("_burn_cards", []), seats)
    expects = _expectations(doc, seats)
    return _toml(name, profile, rules, seats, stacks, blinds, ante, deck, steps, expects)


def _one_hand(doc: dict[str, Any], hand: str | None) -> dict[str, Any]:
    """The hand to play: the document itself, or one table of a bulk PHH document."""
    bulk = "variant" not in doc and bool(doc) and all(isinstance(v, dict) for v in doc.values())
    if not bulk:
        if hand is not None:
            raise PhhImportError(f"--hand {hand}: this file holds one hand, not a bulk .phhs")
        return doc
    names = list(doc)
    if hand is None:
        if len(names) == 1:
            return dict(doc[names[0]])
        raise PhhImportError(
            f"a bulk PHH of {len(names)} hands ({_listed(names)}): name one with --hand"
        )
    if hand not in doc:
        raise PhhImportError(f"--hand {hand}: not in this file ({_listed(names)})")
    return dict(doc[hand])


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:5])
    return shown if len(names) <= 5 else f"{shown}, … {names[-1]}"


def _blinds(
    raw: list[int], seats: list[int], rules: dict[str, Any]
) -> tuple[tuple[int, int], list[int], list[int]]:
    """The blinds, the straddlers (seats, in order) and each position's forced bet."""
    count = len(raw)
    small, big = raw[0], raw[1]
    extra = [(i, chips) for i, chips in enumerate(raw) if i >= 2 and chips]
    straddlers: list[int] = []
    previous = big
    for i, chips in extra:
        if chips != 2 * previous:
            raise PhhImportError(
                f"blinds_or_straddles {raw}: a straddle is twice the blind before it"
            )
        previous = chips
        straddlers.append(seats[i])
    if extra:
        positions = [i for i, _ in extra]
        if positions == list(range(2, 2 + len(extra))):
            rules.setdefault("straddle.mode", "utg")
        elif positions == [count - 1]:
            rules.setdefault("straddle.mode", "mississippi")
        else:
            raise PhhImportError(f"blinds_or_straddles {raw}: straddles this table cannot take")
        rules.setdefault("straddle.max", len(extra))
    if not 0 < small <= big:
        raise PhhImportError(f"blinds_or_straddles {raw}: a small and a big blind first")
    bets = [big, small] if count == 2 else raw  # heads-up PHH readers reverse the blinds
    return (small, big), straddlers, bets


def _antes(raw: list[int], doc: Mapping[str, Any], seats: list[int], rules: dict[str, Any]) -> int:
    """The table's ante, and who posts it (ANTE-TABLE) in the house rules."""
    paying = [(i, a) for i, a in enumerate(raw) if a]
    if not paying:
        return 0
    if len(paying) == len(raw) and len({a for _, a in paying}) == 1:
        return paying[0][1]
    if len(paying) == 1:
        position, ante = paying[0]
        # the big blind is the second position; heads-up PHH readers reverse the positions
        # of blinds and antes, so the button's ante is the first
        button = 0 if len(raw) == 2 else len(raw) - 1
        if position == 1:
            rules.setdefault("ante.kind", "big_blind")
            return ante
        if position == button:
            rules.setdefault("ante.kind", "button")
            return ante
    raise PhhImportError(f"antes {raw}: antes this table cannot post")


def _cards(
    actions: Sequence[str], count: int, runs: int
) -> tuple[dict[int, str], list[str], list[tuple[int, bool]]]:
    """Each position's hole cards, each street's board cards, and the showdown in order."""
    holes: dict[int, str] = {}
    boards: list[str] = []
    shows: list[tuple[int, bool]] = []
    for number, line in enumerate(actions, start=1):
        words = line.split()
        if len(words) < 2:
            raise PhhImportError(f"action {number} {line!r}: not an action")
        if words[:2] == ["d", "dh"]:
            position = int(words[2][1:]) - 1
            if "?" in words[3]:
                raise PhhImportError(f"action {number} {line!r}: the hole cards are unknown")
            holes[position] = words[3]
        elif words[:2] == ["d", "db"]:
            boards.append(words[2])
        elif words[1] == "sm":
            shows.append((int(words[0][1:]) - 1, len(words) > 2 and "?" not in words[2]))
        elif words[1] not in ("f", "cc", "cbr"):
            raise PhhImportError(f"action {number} {line!r}: not an action this table knows")
    if len(holes) != count:
        raise PhhImportError(f"hole cards for {len(holes)} of {count} players")
    if runs not in (1, 2):
        raise PhhImportError(f"_runouts = {runs}: this table runs a board once or twice")
    if len(boards) > len(_STREETS) and runs == 1:
        raise PhhImportError(
            "more than one board: a history run twice says so with _runouts = 2 "
            "(tablectl journal export --phh writes it)"
        )
    if runs == 2 and not len(_STREETS) < len(boards) <= 2 * len(_STREETS):
        raise PhhImportError(f"_runouts = 2 with {len(boards)} boards dealt")
    return holes, boards, shows


def _split(cards: str) -> list[str]:
    return [cards[i : i + 2] for i in range(0, len(cards), 2)]


def _deck(
    holes: dict[int, str], boards: list[str], burns: Sequence[str], seats: list[int]
) -> list[str]:
    """The shuffler's order: hole groups first left of the button, then burn and board by street
    (a burn the history does not name is a card nobody saw)."""
    used = {c for cards in holes.values() for c in _split(cards)}
    used |= {c for cards in boards for c in _split(cards)} | set(burns)
    unseen = [c for c in STANDARD_DECK if c not in used]
    order = [c for position in range(len(seats)) for c in _split(holes[position])]
    for street, cards in enumerate(boards):
        order.append(burns[street] if street < len(burns) else unseen.pop(0))
        order += _split(cards)
    return order + [c for c in unseen if c not in order]


def _expectations(doc: Mapping[str, Any], seats: list[int]) -> list[dict[str, Any]]:
    expects: list[dict[str, Any]] = []
    if "_rake" in doc:
        expects.append({"type": PotRakeTaken.TYPE, "data": {"rake": doc["_rake"]}})
    if "finishing_stacks" in doc:
        final = {str(s): c for s, c in zip(seats, doc["finishing_stacks"], strict=True)}
        expects.append({"type": HandCompleted.TYPE, "data": {"stacks": final}})
    return expects


def _toml(
    name: str,
    profile: str,
    rules: Mapping[str, Any],
    seats: list[int],
    stacks: list[int],
    blinds: tuple[int, int],
    ante: int,
    deck: list[str],
    steps: list[dict[str, Any]],
    expects: list[dict[str, Any]],
) -> str:
    lines = [
        "[scenario]",
        f"name = {_value(name)}",
        f"profile = {_value(profile)}",
        f"house_rules = {_value(dict(rules))}",
        "",
        "[table]",
        f"stacks = {_value({str(s): c for s, c in zip(seats, stacks, strict=True)})}",
        f"button = {seats[-1]}",
        f"blinds = {_value(list(blinds))}",
        f"ante = {ante}",
        "",
        "[deck]",
        f"order = {_value(deck)}",
    ]
    for step in steps:
        lines += ["", "[[step]]", *(f"{k} = {_value(v)}" for k, v in step.items())]
    for expect in expects:
        lines += ["", "[[expect]]", *(f"{k} = {_value(v)}" for k, v in expect.items())]
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    """A TOML value (inline tables for mappings, quoted keys)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))} = {_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)
