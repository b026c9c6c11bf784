"""Export a completed hand as a PHH hand history (TOML, the Poker Hand History standard).

PHH lists players by position: the first left of the button first, the button last; ``seats``
maps positions back to seat numbers. Amounts are "to", as our actions are. What PHH cannot say
(burn cards, rule IDs, the table's hand id) goes in user-defined fields, which start with an
underscore and which PHH readers ignore. Antes are ordinary contributions
(``ante_trimming_status = true``), as the core treats them. The house's take from the pots
(HOUSE-RAKE, HOUSE-DROP-JACKPOT) is in ``_rake``, ``_rake_pots`` (main pot first) and
``_jackpot_drop``; the finishing stacks are after it. A hand run twice (RUN-TWICE) writes the
first runout's streets, then the second runout's, and ``_runouts = 2``.

The variant is the table's betting structure: ``NT`` (no-limit Texas hold'em, with ``min_bet``,
the big blind) or ``FT`` (fixed-limit, with ``small_bet`` and ``big_bet``: the big blind and
twice it, RR-BR-5/6; the cap in ``_cap``). PHH has no code for pot-limit hold'em (phh-std,
"Required fields": its variant codes), so a pot-limit hand has no PHH: :class:`PhhError`.

Several hands go in one file in PHH's bulk form (``.phhs``, read by pokerkit's
``HandHistory.load_all``): one TOML table per hand, ``[1]``, ``[2]``… in order (phh-std,
"Tooling"); :func:`bulk_phh`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.profiles import AnteKind
from controller.rules.start import table_ante_seat
from controller.table.inputs import ActionKind
from controller.table.state import BURN, HandState, TableState
from controller.table.streets import STREETS, Street


class PhhError(ValueError):
    """A hand PHH cannot say; the message says why."""


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
    #: The seat that posted the table's ante (ANTE-TABLE; None: every seat antes).
    ante_seat: int | None = None
    straddles: tuple[tuple[int, int], ...] = ()  # (seat, chips): STRADDLE
    #: RUN-TWICE: the earlier runouts' boards (``board`` is the last one) and the street after
    #: which they were run (None: from the preflop).
    runouts: tuple[tuple[str, ...], ...] = ()
    run_from: Street | None = None
    rake: tuple[int, ...] | None = None  # HOUSE-RAKE per pot, main pot first (None: no take)
    jackpot: int = 0  # HOUSE-DROP-JACKPOT
    #: The betting structure (``controller.game.betting.Structure``'s value) and fixed-limit's
    #: cap (RR-BR-3/4).
    betting: str = "no_limit"
    cap: int | None = None


def hand_to_phh(
    hand: HandState,
    *,
    table_id: str,
    blinds: tuple[int, int],
    ante: int,
    ante_seat: int | None = None,
    betting: str = "no_limit",
    cap: int | None = None,
) -> str:
    """The PHH text of a completed ``hand`` (PhhError: a hand PHH cannot say).

    ``ante_seat``: the seat that posted the table's ante (ANTE-TABLE), written as PHH's dead
    antes (``ante_trimming_status = false``, the ante in that seat's position only);
    ``betting`` and ``cap``: the table's betting structure.
    """
    take = hand.showdown.take
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
            ante_seat=ante_seat,
            straddles=tuple(hand.chips.straddles),
            runouts=tuple(tuple(board) for board in hand.showdown.boards),
            run_from=hand.showdown.run_from,
            rake=None if take is None else tuple(take.rake),
            jackpot=0 if take is None else take.jackpot,
            betting=betting,
            cap=cap,
        )
    )


def table_phh(table: TableState, table_id: str) -> str:
    """The PHH text of ``table``'s last hand, at its blinds, ante and betting structure (what
    ``tablectl journal export --phh`` writes of each hand; PhhError: one PHH cannot say)."""
    hand = table.last_hand
    assert hand is not None, "no hand has been completed"
    profile = table.profile
    kind = profile.ante_kind
    return hand_to_phh(
        hand,
        table_id=table_id,
        blinds=table.blinds,
        ante=table.ante,
        # a table with no ante has no one posting it (as the pit's PHH, from the events)
        ante_seat=table_ante_seat(hand, kind) if kind is not AnteKind.EACH and table.ante else None,
        betting=profile.betting_structure.value,
        cap=profile.betting_cap,
    )


def bulk_phh(texts: Sequence[str]) -> str:
    """Hands' PHH texts (each of :func:`render_phh`) as one bulk PHH document (``.phhs``).

    Each hand becomes a TOML table named by its place in the file, from 1, which is the form
    pokerkit's ``HandHistory.dumps_all`` writes and ``load_all`` reads. A hand's own fields are
    plain keys (no tables of their own), so they nest under its header unchanged.
    """
    return "\n".join(f"[{place}]\n{text}" for place, text in enumerate(texts, 1))


def render_phh(hand: PhhHand) -> str:
    """The PHH text of a hand.

    Every showdown declaration is written in the order it happened: ``pN sm CARDS`` for a hand
    tabled (or read for a player who declared the board), ``pN sm`` for one mucked, conceded or
    killed. A PHH reader that finds no declaration for a hand turns it face up, which would
    let a mucked loser back into the pot.
    """
    if hand.betting == "pot_limit":
        raise PhhError(
            f"hand {hand.hand_id} was played pot-limit, and PHH has no variant for pot-limit "
            "hold'em: export its events instead"
        )
    order = hand.order
    blinds = hand.blinds
    position = {seat: f"p{i + 1}" for i, seat in enumerate(order)}
    actions: list[str] = [
        f"d dh {position[seat]} {''.join(hand.dealt.get(seat, ('??', '??')))}"
        for seat in hand.deal_order
    ]
    # RUN-TWICE: the first runout's board with the betting, the later runouts' streets after it
    boards = (*hand.runouts, hand.board)
    for street in Street:
        if street is not Street.PREFLOP:
            start, end = STREETS[street].start, STREETS[street].board_after
            if len(boards[0]) < end:
                break
            actions.append(f"d db {''.join(boards[0][start:end])}")
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
    for board in boards[1:]:
        run_from = hand.run_from or Street.PREFLOP
        for street in Street:
            if street > run_from:
                start, end = STREETS[street].start, STREETS[street].board_after
                actions.append(f"d db {''.join(board[start:end])}")
    for seat, shown in hand.declarations:
        cards = "".join(hand.dealt.get(seat, ()))
        actions.append(f"{position[seat]} sm {cards}" if shown else f"{position[seat]} sm")

    blind_list = [0] * len(order)
    if len(order) == 2:
        blind_list = [blinds[0], blinds[1]]  # PHH readers reverse them heads-up
    else:
        blind_list[0], blind_list[1] = blinds
    for seat, chips in hand.straddles:  # STRADDLE: in the straddler's position
        blind_list[order.index(seat)] = chips
    antes = [hand.ante] * len(order)
    if hand.ante_seat is not None:
        posting = order[::-1] if len(order) == 2 else order  # as the blinds, heads-up
        antes = [hand.ante if seat == hand.ante_seat else 0 for seat in posting]
    fixed = hand.betting == "fixed_limit"
    # RR-BR-5/6: the small bet is the big blind, the big bet twice it
    bets = [("small_bet", blinds[1]), ("big_bet", 2 * blinds[1])] if fixed else []
    fields: list[tuple[str, object]] = [
        ("variant", "FT" if fixed else "NT"),
        ("ante_trimming_status", hand.ante_seat is None),
        ("antes", antes),
        ("blinds_or_straddles", blind_list),
        *(bets or [("min_bet", blinds[1])]),
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
    if fixed and hand.cap is not None:  # RR-BR-3/4: PHH's readers assume a bet and 3 raises
        fields.append(("_cap", hand.cap))
    if len(boards) > 1:  # the runouts: PHH readers of this version deal one board
        fields.append(("_runouts", len(boards)))
    if hand.rake is not None:
        # the house's take: user-defined fields, since a PHH reader's ``rake`` is its raking
        # rule (pokerkit's rake function), not an amount; finishing_stacks are after the rake
        fields += [("_rake", sum(hand.rake)), ("_rake_pots", list(hand.rake))]
        if hand.jackpot:
            fields.append(("_jackpot_drop", hand.jackpot))
    return "".join(f"{key} = {_value(value)}\n" for key, value in fields)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)
