"""Running it twice (RUN-TWICE, house rules ``run_twice.allowed``).

When every player is all in, they may agree before the next street's burn to run the rest of the
board twice. The first runout is dealt as any board; once its river is out the second is dealt
from the cards they had in common, each street with its burn, and the burn, exposure and board
rulings apply to each runout on its own. At the award each pot is divided between the runouts
(the odd chip of that division to the first) and each part goes to the best hands on its board,
with its own odd chips per the profile.
"""

from __future__ import annotations

from controller.rules.ids import Rule
from controller.table.context import Context, RejectedError
from controller.table.event_types import HandRunoutsAgreed
from controller.table.inputs import Purpose, RunItTwice
from controller.table.state import HELD, Phase
from controller.table.streets import STREETS, Street
from controller.table.tray import BOARD_PURPOSES

_CITE = (Rule.RUN_TWICE,)


def run_it_twice(ctx: Context, _cmd: RunItTwice) -> None:
    """The players all in agree to run the rest of the board twice."""
    hand = ctx.hand
    if not ctx.table.profile.run_twice_allowed:
        raise RejectedError("this table does not run it twice (run_twice.allowed)", _CITE)
    if hand.showdown.runs > 1:
        raise RejectedError("the runouts are agreed already", _CITE)
    if hand.phase is not Phase.BOARD or hand.street is Street.RIVER:
        raise RejectedError("the betting is not over with a street to come", _CITE)
    if sum(1 for seat in hand.live if hand.chips.stacks[seat] > 0) > 1:
        raise RejectedError("every player but one at most must be all in", _CITE)
    begun = (
        len(hand.cards.board) != STREETS[hand.street].board_after
        or hand.cards.at(HELD)
        or Street(hand.street + 1) in hand.board_rulings.burn_for
        or any(g.purpose in (*BOARD_PURPOSES, Purpose.BURN) for g in hand.deal.pending)
    )
    if begun:
        raise RejectedError("the next street has begun: they agree before its burn", _CITE)
    showdown = hand.edit_showdown()
    showdown.runs = 2
    showdown.run_from = hand.street
    ctx.emit(HandRunoutsAgreed(2, hand.street.label, hand.cards.board), _CITE)
