"""Export a completed hand as a PHH hand history (TOML, the Poker Hand History standard).

PHH lists players by position: the first left of the button first, the button last; ``seats``
maps positions back to seat numbers. Amounts are "to", as our actions are. What PHH cannot say
(burn cards, rule IDs, the table's hand id) goes in user-defined fields, which start with an
underscore and which PHH readers ignore. Antes are ordinary contributions
(``ante_trimming_status = true``), as the core treats them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.table.inputs import ActionKind
from controller.table.state import BURN, HandState
from controller.table.streets import STREETS, Street


@dataclass(frozen=True)
class PhhHand:
    """What a PHH hand history says of a completed hand: from the core's hand
    (:func:`hand_to_phh`) or from the stored events of the hand (``controller/pit/phh.py``)."""

    table_id: str
    number: int
    hand_id: str
    button: int
    order: tuple[int, ...]  # dealt-in seats, first left of the button, button last
    deal_order: tuple[int, ...]  # the order the hole groups went out
    dealt: Mapping[int, tuple[str, ...]]  # a seat's hole cards, where known
    board: tuple[str, ...]
    actions: tuple[tuple[Street, int, ActionKind, int], ...]
    declarations: tuple[tuple[int, bool], ...]  # (seat, shown) at showdown, as they happened
    start_stacks: Mapping[int, int]
    finishing_stacks: Mapping[int, int]
    burns: tuple[str, ...]
    blinds: tuple[int, int]
    ante: int


def hand_to_phh(hand: HandState, *, table_id: str, blinds: tuple[int, int], ante: int) -> str:
    """The PHH text of a completed ``hand``."""
    return render_phh(
        PhhHand(
            table_id=table_id,
            number=hand.number,
            hand_id=hand.hand_id,
            button=hand.button,
            order=hand.order,
            deal_order=hand.deal_order,
            dealt=hand.deal.dealt,
            board=tuple(hand.cards.board),
            actions=tuple((r.street, r.seat, r.kind, r.to) for r in hand.chips.actions),
            declarations=hand.showdown.declarations,
            start_stacks=hand.start_stacks,
            finishing_stacks=hand.chips.stacks,
            burns=tuple(hand.cards.at(BURN)),
            blinds=blinds,
            ante=ante,
        )
    )


def render_phh(hand: PhhHand) -> str:
    """The PHH text of a hand.

    Every showdown declaration is written in the order it happened: ``pN sm CARDS`` for a hand
    tabled (or read for a player who declared the board), ``pN sm`` for one mucked, conceded or
    killed. A PHH reader that finds no declaration for a hand turns it face up, which would
    let a mucked loser back into the pot.
    """
    order = hand.order
    blinds = hand.blinds
    position = {seat: f"p{i + 1}" for i, seat in enumerate(order)}
    actions: list[str] = [
        f"d dh {position[seat]} {''.join(hand.dealt.get(seat, ('??', '??')))}"
        for seat in hand.deal_order
    ]
    for street in Street:
        if street is not Street.PREFLOP:
            start, end = STREETS[street].start, STREETS[street].board_after
            if len(hand.board) < end:
                break
            actions.append(f"d db {''.join(hand.board[start:end])}")
        for action_street, seat, kind, to in hand.actions:
            if action_street is not street:
                continue
            who = position[seat]
            if kind is ActionKind.FOLD:
                actions.append(f"{who} f")
            elif kind in (ActionKind.CHECK, ActionKind.CALL):
                actions.append(f"{who} cc")
            else:
                actions.append(f"{who} cbr {to}")
    for seat, shown in hand.declarations:
        cards = "".join(hand.dealt.get(seat, ()))
        actions.append(f"{position[seat]} sm {cards}" if shown else f"{position[seat]} sm")

    blind_list = [0] * len(order)
    if len(order) == 2:
        blind_list = [blinds[0], blinds[1]]  # PHH readers reverse them heads-up
    else:
        blind_list[0], blind_list[1] = blinds
    fields: list[tuple[str, object]] = [
        ("variant", "NT"),
        ("ante_trimming_status", True),
        ("antes", [hand.ante] * len(order)),
        ("blinds_or_straddles", blind_list),
        ("min_bet", blinds[1]),
        ("starting_stacks", [hand.start_stacks[s] for s in order]),
        ("actions", actions),
        ("table", hand.table_id),
        ("hand", hand.number),
        ("seat_count", 10),
        ("seats", list(order)),
        ("finishing_stacks", [hand.finishing_stacks[s] for s in order]),
        ("_hand_id", hand.hand_id),
        ("_button", hand.button),
        ("_burn_cards", list(hand.burns)),
    ]
    return "".join(f"{key} = {_value(value)}\n" for key, value in fields)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)
