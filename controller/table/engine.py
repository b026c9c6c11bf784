"""``apply(state, input) -> (state, events)``: the one entry point of the pure core.

The core takes one input at a time and returns the new table state and the events the input
caused. It never mutates the state it is given, never reads a clock (the time comes with the
input), never draws a random number and never does I/O, so replaying the same inputs always gives
the same events.

A dealer command that makes no sense in the current state changes nothing and yields a single
``command.rejected`` event with the reason. A device event is a fact: it is never rejected, and
what it means (including "this should not have happened") is reported as events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.table import dealing, hand
from controller.table.context import Context, RejectedError
from controller.table.events import Severity, TableEvent
from controller.table.inputs import (
    COMMAND_NAMES,
    Action,
    Award,
    DealerInput,
    DeckChecked,
    DeckRevealed,
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    GroupDispensed,
    Input,
    Muck,
    RoundClosed,
    ShuffleCompleted,
    StartHand,
    TableHand,
    TagArrived,
    TagDeparted,
)
from controller.table.state import TableState

Handler = Callable[[Context, Any], None]

_HANDLERS: dict[type, Handler] = {
    StartHand: hand.start_hand,
    Action: hand.betting_action,
    RoundClosed: hand.round_closed,
    TableHand: hand.table_hand,
    Muck: hand.muck_hand,
    Award: hand.award,
    DeckChecked: dealing.deck_checked,
    ShuffleCompleted: dealing.shuffle_completed,
    GroupDispensed: dealing.group_dispensed,
    DeckRevealed: dealing.deck_revealed,
    TagArrived: dealing.tag_arrived,
    TagDeparted: dealing.tag_departed,
    DeviceFault: dealing.device_fault,
    DeviceFaultCleared: dealing.device_fault_cleared,
    DeviceHealthChanged: dealing.device_health,
    DeviceRebooted: dealing.device_rebooted,
}


def apply(state: TableState, event: Input) -> tuple[TableState, list[TableEvent]]:
    """Apply one input; return the new state and the events it caused."""
    ctx = Context(state, event.ts)
    handler = _HANDLERS.get(type(event))
    try:
        if handler is None:
            raise RejectedError(f"{type(event).__name__} is not handled by this table")
        handler(ctx, event)
    except RejectedError as exc:
        if not isinstance(event, DealerInput):
            raise  # device handlers report problems as events; reaching here is a bug
        return state, [_rejection(state, event, exc)]
    return ctx.table, ctx.events


def _rejection(state: TableState, command: DealerInput, exc: RejectedError) -> TableEvent:
    return TableEvent(
        "command.rejected",
        command.ts,
        state.hand.hand_id if state.hand is not None else None,
        {"command": COMMAND_NAMES.get(type(command), type(command).__name__), "reason": exc.reason},
        tuple(exc.rules),
        Severity.WARN,
    )
