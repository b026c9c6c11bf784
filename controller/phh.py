"""Export a completed hand as a PHH hand history (TOML, the Poker Hand History standard).

PHH lists players by position: the first left of the button first, the button last; ``seats``
maps positions back to seat numbers. Amounts are "to", as our actions are. What PHH cannot say
(burn cards, rule IDs, the table's hand id) goes in user-defined fields, which start with an
underscore and which PHH readers ignore. Antes are ordinary contributions
(``ante_trimming_status = true``), as the core treats them. The house's take from the pots
(HOUSE-RAKE, HOUSE-DROP-JACKPOT) is in ``_rake``, ``_rake_pots`` (main pot first) and
``_jackpot_drop``; the finishing stacks are after it. A hand run twice (RUN-TWICE) writes the
first runout's streets, then the second runout's, and ``_runouts = 2``.
"""

from __future__ import annotations

from controller.table.inputs import ActionKind
from controller.table.state import BURN, HandState
from controller.table.streets import STREETS, Street


def hand_to_phh(
    hand: HandState,
    *,
    table_id: str,
    blinds: tuple[int, int],
    ante: int,
    ante_seat: int | None = None,
) -> str:
    """The PHH text of a completed ``hand``.

    Every showdown declaration is written in the order it happened: ``pN sm CARDS`` for a hand
    tabled (or read for a player who declared the board), ``pN sm`` for one mucked, conceded or
    killed. A PHH reader that finds no declaration for a hand turns it face up, which would
    let a mucked loser back into the pot.

    ``ante_seat``: the seat that posted the table's ante (ANTE-TABLE), written as PHH's dead
    antes (``ante_trimming_status = false``, the ante in that seat's position only).
    """
    order = hand.order
    position = {seat: f"p{i + 1}" for i, seat in enumerate(order)}
    actions: list[str] = [
        f"d dh {position[seat]} {''.join(hand.deal.dealt.get(seat, ('??', '??')))}"
        for seat in hand.deal_order
    ]
    # RUN-TWICE: the first runout's board with the betting, the later runouts' streets after it
    boards = (*hand.showdown.boards, hand.cards.board)
    for street in Street:
        if street is not Street.PREFLOP:
            start, end = STREETS[street].start, STREETS[street].board_after
            if len(boards[0]) < end:
                break
            actions.append(f"d db {''.join(boards[0][start:end])}")
        for record in hand.chips.actions:
            if record.street is not street:
                continue
            who = position[record.seat]
            if record.kind is ActionKind.FOLD:
                actions.append(f"{who} f")
            elif record.kind in (ActionKind.CHECK, ActionKind.CALL):
                actions.append(f"{who} cc")
            else:
                actions.append(f"{who} cbr {record.to}")
    for board in boards[1:]:
        run_from = hand.showdown.run_from or Street.PREFLOP
        for street in Street:
            if street > run_from:
                start, end = STREETS[street].start, STREETS[street].board_after
                actions.append(f"d db {''.join(board[start:end])}")
    for seat, shown in hand.showdown.declarations:
        cards = "".join(hand.deal.dealt.get(seat, ()))
        actions.append(f"{position[seat]} sm {cards}" if shown else f"{position[seat]} sm")

    blind_list = [0] * len(order)
    if len(order) == 2:
        blind_list = [blinds[0], blinds[1]]  # PHH readers reverse them heads-up
    else:
        blind_list[0], blind_list[1] = blinds
    for seat, chips in hand.chips.straddles:  # STRADDLE: in the straddler's position
        blind_list[order.index(seat)] = chips
    antes = [ante] * len(order)
    if ante_seat is not None:
        posting = order[::-1] if len(order) == 2 else order  # as the blinds, heads-up
        antes = [ante if seat == ante_seat else 0 for seat in posting]
    fields: list[tuple[str, object]] = [
        ("variant", "NT"),
        ("ante_trimming_status", ante_seat is None),
        ("antes", antes),
        ("blinds_or_straddles", blind_list),
        ("min_bet", blinds[1]),
        ("starting_stacks", [hand.start_stacks[s] for s in order]),
        ("actions", actions),
        ("table", table_id),
        ("hand", hand.number),
        ("seat_count", 10),
        ("seats", list(order)),
        ("finishing_stacks", [hand.chips.stacks[s] for s in order]),
        ("_hand_id", hand.hand_id),
        ("_button", hand.button),
        ("_burn_cards", list(hand.cards.at(BURN))),
    ]
    if len(boards) > 1:  # the runouts: PHH readers of this version deal one board
        fields.append(("_runouts", len(boards)))
    take = hand.showdown.take
    if take is not None:
        # the house's take: user-defined fields, since a PHH reader's ``rake`` is its raking
        # rule (pokerkit's rake function), not an amount; finishing_stacks are after the rake
        fields += [("_rake", sum(take.rake)), ("_rake_pots", list(take.rake))]
        if take.jackpot:
            fields.append(("_jackpot_drop", take.jackpot))
    return "".join(f"{key} = {_value(value)}\n" for key, value in fields)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)
