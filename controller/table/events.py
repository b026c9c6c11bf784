"""The events the core emits.

An event is what the core decided, with the rule IDs that decided it. The shell adds the rest of
the envelope (``schema``, ``table_id``, ``epoch``, ``seq``, ``event_id``, ``historical``) when it
journals and publishes it (docs/events.md).

Card identities that are not public yet (hole cards, burns, mucked hands, undealt order) never go
in ``data``: they go in ``secret``, which only the secure surveillance stream carries (SEC-1).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple


class Severity(StrEnum):
    """How urgent an event is for the pit."""

    INFO = "info"
    WARN = "warn"
    HOLD = "hold"
    CRITICAL = "critical"


class TableEvent(NamedTuple):
    """One event: its type, the rule IDs that decided it, and its data."""

    type: str
    ts: datetime
    hand_id: str | None
    data: Mapping[str, Any]
    rules: tuple[str, ...] = ()
    severity: Severity = Severity.INFO
    needs_confirm: bool = False
    secret: Mapping[str, Any] | None = None
    by: Mapping[str, str] | None = None  # who gave the command that caused it (§3.10)

    @property
    def secure(self) -> bool:
        """True when the event carries identities for surveillance only."""
        return self.secret is not None

    def public_view(self) -> dict[str, Any]:
        """The event as the public stream carries it: no secret fields."""
        view = {
            "ts": _rfc3339(self.ts),
            "hand_id": self.hand_id,
            "type": self.type,
            "rules": list(self.rules),
            "severity": self.severity.value,
            "needs_confirm": self.needs_confirm,
            "data": dict(self.data),
        }
        if self.by is not None:
            view["by"] = dict(self.by)
        return view

    def secure_view(self) -> dict[str, Any]:
        """The event as the surveillance stream carries it: data and secret fields merged."""
        view = self.public_view()
        if self.secret is not None:
            view["data"] = {**view["data"], **self.secret}
            view["secure"] = True
        return view


def _rfc3339(ts: datetime) -> str:
    text = ts.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
