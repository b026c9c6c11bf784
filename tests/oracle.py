"""pokerkit as a test oracle: replay a hand our core played and read pokerkit's final stacks."""

from __future__ import annotations

from pokerkit import Automation, Mode, NoLimitTexasHoldem

from controller.table.betting import Street
from controller.table.inputs import ActionKind
from controller.table.state import HandState

AUTOMATIONS = (
    Automation.ANTE_POSTING,
    Automation.BET_COLLECTION,
    Automation.BLIND_OR_STRADDLE_POSTING,
    Automation.HOLE_CARDS_SHOWING_OR_MUCKING,
    Automation.HAND_KILLING,
    Automation.CHIPS_PUSHING,
    Automation.CHIPS_PULLING,
    Automation.RUNOUT_COUNT_SELECTION,
)
_BOARD_SLICES = {Street.FLOP: (0, 3), Street.TURN: (3, 4), Street.RIVER: (4, 5)}


def pokerkit_stacks(hand: HandState, blinds: tuple[int, int], ante: int) -> dict[int, int]:
    """Replay ``hand`` (completed by our core, every live hand tabled) in pokerkit.

    pokerkit's positions are ours: position 0 is the first seat left of the button, the last
    position is the button; heads-up its reversed blinds put the small blind on the button too.
    Antes count as ordinary contributions on both sides (pokerkit's ante trimming on).

    Two of pokerkit's conventions are configured to match the catalogue's rules:

    * pokerkit kills every hand that cannot win before it pushes chips, and then merges pots
      whose surviving contenders are the same; POT-SEP splits every pot separately, each with its
      own odd chip. The oracle keeps every live hand until the pots are pushed
      (``can_win_now`` answers yes), so pokerkit splits each pot on its own too.
    * pokerkit gives a pot's whole remainder to the first tied winner left of the button; the
      comparison runs with the house rule ``odd_chip.max_per_player = 0``, which means the same.
    """
    order = hand.order
    state = NoLimitTexasHoldem.create_state(
        AUTOMATIONS,
        True,
        ante,
        blinds,
        blinds[1],
        tuple(hand.start_stacks[s] for s in order),
        len(order),
        mode=Mode.CASH_GAME,
    )
    state.can_win_now = lambda player_index: True  # type: ignore[method-assign]
    for seat in hand.deal_order:
        state.deal_hole("".join(hand.dealt[seat]), order.index(seat))
    for street in Street:
        _formal_checks(state)
        if street is not Street.PREFLOP and len(hand.board) >= _BOARD_SLICES[street][1]:
            start, end = _BOARD_SLICES[street]
            state.burn_card(hand.burns[street - 1])
            state.deal_board("".join(hand.board[start:end]))
        for record in (a for a in hand.actions if a.street is street):
            if record.kind is ActionKind.FOLD:
                state.fold()
            elif record.kind in (ActionKind.CHECK, ActionKind.CALL):
                state.check_or_call()
            else:
                state.complete_bet_or_raise_to(record.to)
    _formal_checks(state)
    if state.status:
        raise AssertionError(f"pokerkit did not finish the hand: {state.status}")
    return {seat: state.stacks[i] for i, seat in enumerate(order)}


def _formal_checks(state: object) -> None:
    """pokerkit asks a lone seat facing nobody who could call a raise to check anyway.

    Our core closes such a round at once (there is nothing to decide); the oracle makes the
    formal check for pokerkit, and only where every other live seat is all in.
    """
    while getattr(state, "actor_index", None) is not None:
        actor = state.actor_index  # type: ignore[attr-defined]
        others = [
            i
            for i, live in enumerate(state.statuses)  # type: ignore[attr-defined]
            if live and i != actor
        ]
        if state.checking_or_calling_amount or any(state.stacks[i] for i in others):  # type: ignore[attr-defined]
            return
        state.check_or_call()  # type: ignore[attr-defined]
