"""``call_floor``: the dealer calls the floor to the table (the station's "Call the floor").

Floor rulings are never made at the dealer's station, except where the house lets the dealer
confirm (``dealer_may_confirm``). For every other hold, and for anything the dealer cannot
decide, the dealer calls the floor: the table journals ``floor.called`` with who called, the
pending hold it is about (the one named, else the first pending one) and its rule, and publishes
it like any event (waiting in the outbox while the broker is away); the pit raises it as an
alarm on its console, beside the hold on the holds queue (docs/console.md). Nothing at the table
changes: the hold keeps the hand held until the floor rules on it (confirm, reject, override).

The shell answers it, not the core: it changes no state, so it is no input to replay. It is
signed and runs at most once per transaction like every request.
"""

from __future__ import annotations

from controller.shell.gate import RefusedError, bounded_text
from controller.shell.maintenance import CallFloor
from controller.table.event_types import FloorCalled
from controller.table.events import Severity, TableEvent
from controller.table.state import TableState

#: The most characters of the dealer's own words an event keeps.
MAX_REASON = 200


def floor_called(state: TableState, command: CallFloor) -> TableEvent:
    """The ``floor.called`` event of ``command`` (RefusedError: a hold or seat it cannot be)."""
    hand = state.hand
    holds = hand.irregular.holds if hand is not None else ()
    hold = holds[0] if holds else None
    if command.hold is not None:
        hold = next((h for h in holds if h.id == command.hold), None)
        if hold is None:
            pending = ", ".join(h.id for h in holds) or "none"
            raise RefusedError(
                f"no pending hold {bounded_text(command.hold, 40)!r} (pending: {pending})"
            )
    seats = hand.order if hand is not None else tuple(state.stacks)
    if command.seat is not None and command.seat not in seats:
        raise RefusedError(f"seat {command.seat} is not at the table")
    reason = bounded_text(command.reason.strip(), MAX_REASON) or "the dealer calls the floor"
    called = FloorCalled(
        reason,
        hold.id if hold is not None else None,
        hold.rule.value if hold is not None else None,
        command.seat if command.seat is not None else (hold.seat if hold is not None else None),
    )
    authority = command.authority
    return TableEvent(
        called,
        command.ts,
        hand.hand_id if hand is not None else None,
        (hold.rule.value,) if hold is not None else (),
        Severity.WARN,
        by=authority.attribution() if authority is not None else None,
    )
