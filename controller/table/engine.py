"""``apply(state, input) -> (state, events)``: the one entry point of the pure core.

The core takes one input at a time and returns the new table state and the events the input
caused. It never mutates the state it is given, never reads a clock (the time comes with the
input), never draws a random number and never does I/O, so replaying the same inputs always gives
the same events.

A dealer command that makes no sense in the current state changes nothing and yields a single
``command.rejected`` event with the reason. While a hold is pending, only ``confirm``, ``reject``,
``floor_override``, ``misdeal``, ``hold`` and ``call_floor`` are taken. A device event is a fact:
it is never rejected, and what it means (including "this should not have happened") is reported
as events. Before any input is handled, the deadlines its time has passed are checked (the
readers' settle time).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from controller.rules import (
    actions,
    blinds,
    board,
    burns,
    deal_checks,
    dealing,
    devices,
    exposure,
    floor_call,
    holds,
    integrity,
    misdeal,
    runouts,
    showdown,
    start,
)
from controller.rules.ids import Rule
from controller.table.context import Context, RejectedError, Rulings
from controller.table.event_types import CommandRejected
from controller.table.events import Severity, TableEvent
from controller.table.inputs import (
    COMMAND_NAMES,
    Action,
    Award,
    Boxed,
    ButtonReport,
    CallFloor,
    Claim,
    Concede,
    Confirm,
    ControllerRestarted,
    Correction,
    DealerInput,
    DeckChecked,
    DeckRevealed,
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    Exposed,
    FloorOverride,
    GroupDispensed,
    Input,
    Misdeal,
    Muck,
    OffTable,
    PlaysBoard,
    Post,
    RaiseHold,
    Reject,
    RequestToSee,
    RoundClosed,
    RunItTwice,
    ShuffleCompleted,
    StartHand,
    StubDisorder,
    TableHand,
    TagArrived,
    TagDeparted,
    Tick,
)
from controller.table.state import Ruling, TableState

Handler = Callable[[Context, Any], None]


_HANDLERS: dict[type, Handler] = {
    StartHand: start.start_hand,
    Post: blinds.post,
    RunItTwice: runouts.run_it_twice,
    ButtonReport: start.button_report,
    Action: actions.betting_action,
    Correction: actions.correction,
    RoundClosed: actions.round_closed,
    TableHand: showdown.table_hand,
    Muck: showdown.muck_hand,
    PlaysBoard: showdown.plays_board,
    Concede: showdown.concede,
    RequestToSee: showdown.request_to_see,
    Claim: showdown.claim,
    Award: showdown.award,
    Exposed: exposure.exposed,
    OffTable: exposure.off_table,
    Boxed: exposure.boxed,
    StubDisorder: board.stub_disorder,
    RaiseHold: holds.raise_hold_request,
    CallFloor: floor_call.call_floor,
    Misdeal: misdeal.called,
    Confirm: holds.confirm,
    Reject: holds.reject,
    FloorOverride: holds.floor_override,
    DeckChecked: dealing.deck_checked,
    ShuffleCompleted: dealing.shuffle_completed,
    GroupDispensed: dealing.group_dispensed,
    DeckRevealed: dealing.deck_revealed,
    TagArrived: dealing.tag_arrived,
    TagDeparted: dealing.tag_departed,
    Tick: dealing.tick,
    DeviceFault: devices.fault,
    DeviceFaultCleared: devices.fault_cleared,
    DeviceHealthChanged: devices.health_changed,
    DeviceRebooted: devices.rebooted,
    ControllerRestarted: devices.controller_restarted,
}

#: What confirming each ruling does, what rejecting one settles, and what runs after any.
_RULINGS = Rulings(
    decide={
        Ruling.CONTINUE: holds.go_on,
        Ruling.MISDEAL: misdeal.misdeal_ruling,
        Ruling.VOID: misdeal.void_ruling,
        Ruling.DEAD_HAND: misdeal.dead_hand_ruling,
        Ruling.CARD_DEAD: integrity.card_dead_ruling,
        Ruling.MANUAL_BOARD: devices.manual_board_ruling,
        Ruling.REDEAL_BOARD: board.redeal_board_ruling,
        Ruling.BURN_CORRECT: burns.burn_correct_ruling,
        Ruling.BURN_EXTRA_CORRECT: burns.burn_extra_correct_ruling,
        Ruling.CLAIM_UPHELD: showdown.claim_upheld_ruling,
        Ruling.AWARD_AS_PROPOSED: showdown.award_as_proposed_ruling,
    },
    on_reject={Ruling.BURN_CORRECT: burns.burn_was_there},
    after=(board.release_held_board,),
    overrides={Rule.FLOOR_CALL: floor_call.override_refusal},
)

#: Commands taken while a hold is pending (a call of the floor is about the hold, FLOOR-CALL).
_DURING_HOLD = (Confirm, Reject, FloorOverride, Misdeal, RaiseHold, CallFloor)


def apply(state: TableState, event: Input) -> tuple[TableState, list[TableEvent]]:
    """Apply one input; return the new state and the events it caused."""
    authority = event.authority if isinstance(event, DealerInput) else None
    ctx = Context(state, event.ts, authority, _RULINGS)
    handler = _HANDLERS.get(type(event))
    try:
        if handler is None:
            raise RejectedError(f"{type(event).__name__} is not handled by this table")
        current = ctx.table.hand
        if current is not None:
            if isinstance(event, DealerInput) and not isinstance(event, _DURING_HOLD):
                refusal = holds.held(current)
                if refusal is not None:
                    raise refusal
            # the deadlines the input's time has passed: the readers' settle time (SEAT-COUNT)
            due = current.deal.deadline
            if due is not None and event.ts >= due:
                deal_checks.check_seat_counts(ctx, current)
        handler(ctx, event)
    except RejectedError as exc:
        if not isinstance(event, DealerInput):
            raise  # device handlers report problems as events; reaching here is a bug
        return state, [_rejection(state, event, exc)]
    return ctx.table, ctx.events


def deadline(state: TableState) -> datetime | None:
    """When the shell must send a ``Tick`` if nothing else happens before (None: no deadline)."""
    return state.hand.deal.deadline if state.hand is not None else None


def _rejection(state: TableState, command: DealerInput, exc: RejectedError) -> TableEvent:
    return TableEvent(
        CommandRejected(COMMAND_NAMES.get(type(command), type(command).__name__), exc.reason),
        command.ts,
        state.hand.hand_id if state.hand is not None else None,
        tuple(exc.rules),
        Severity.WARN,
        by=command.authority.attribution() if command.authority is not None else None,
    )
