"""The event envelope (docs/events.md): what consumers receive for every table event."""

from __future__ import annotations

from typing import Any

from controller.table.event_types import HandCompleted
from controller.table.events import TableEvent

SCHEMA = "tablectl.event/1"

#: The events whose envelope carries their row's place in the journal's hash chain.
CHAIN_STAMPED = frozenset({HandCompleted.TYPE})


def chain_stamp(event_type: str, pos: int, digest: str) -> dict[str, Any] | None:
    """``chain`` of an envelope: the journal's chain head at this event, on each
    ``hand.completed`` (a pit that keeps them can later prove the journal unchanged)."""
    return {"pos": pos, "hash": digest} if event_type in CHAIN_STAMPED else None


def envelope(
    event: TableEvent,
    *,
    table_id: str,
    epoch: str,
    seq: int,
    historical: bool = False,
    secure: bool = False,
    chain: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The envelope of ``event``; ``secure`` selects the surveillance view (SEC-1)."""
    view = event.secure_view() if secure else event.public_view()
    body = {
        "schema": SCHEMA,
        "table_id": table_id,
        "epoch": epoch,
        "seq": seq,
        "event_id": f"{table_id}:{epoch}:{seq}",
        "historical": historical,
        **view,
    }
    if chain is not None:
        body["chain"] = chain
    return body
