"""The event envelope (docs/events.md): what consumers receive for every table event."""

from __future__ import annotations

from typing import Any

from controller.table.events import TableEvent

SCHEMA = "tablectl.event/1"


def envelope(
    event: TableEvent,
    *,
    table_id: str,
    epoch: str,
    seq: int,
    historical: bool = False,
    secure: bool = False,
) -> dict[str, Any]:
    """The envelope of ``event``; ``secure`` selects the surveillance view (SEC-1)."""
    view = event.secure_view() if secure else event.public_view()
    return {
        "schema": SCHEMA,
        "table_id": table_id,
        "epoch": epoch,
        "seq": seq,
        "event_id": f"{table_id}:{epoch}:{seq}",
        "historical": historical,
        **view,
    }
