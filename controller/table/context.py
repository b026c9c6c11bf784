"""The working context of one ``apply`` call: the state being changed and the events so far."""

from __future__ import annotations

from datetime import datetime

from controller.authority import Authority
from controller.rules.ids import Rule
from controller.table.events import EventData, Severity, TableEvent
from controller.table.state import HandState, TableState


class RejectedError(Exception):
    """A dealer command that makes no sense now: nothing changes; ``command.rejected`` says why."""

    def __init__(self, reason: str, rules: tuple[Rule, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rules = rules


class Context:
    """A copy of the table to change, plus the events the input caused."""

    __slots__ = ("authority", "by", "events", "original", "table", "ts")

    def __init__(self, table: TableState, ts: datetime, authority: Authority | None = None) -> None:
        self.original = table.hand  # the hand as it was: never changed, so it can be kept
        self.table = table.copy()
        if table.hand is not None:
            self.table.hand = table.hand.copy()
        self.ts = ts
        self.authority = authority  # who gave the command being applied (None: a device)
        self.by = authority.attribution() if authority is not None else None
        self.events: list[TableEvent] = []

    @property
    def hand(self) -> HandState:
        """The hand in progress (callers check there is one)."""
        hand = self.table.hand
        if hand is None:
            raise RejectedError("no hand is in progress")
        return hand

    def emit(
        self,
        data: EventData,
        rules: tuple[Rule, ...] = (),
        *,
        severity: Severity = Severity.INFO,
        needs_confirm: bool = False,
    ) -> None:
        """Record an event caused by the input."""
        hand = self.table.hand
        self.events.append(
            TableEvent(
                data,
                self.ts,
                hand.hand_id if hand is not None else None,
                rules,
                severity,
                needs_confirm,
                self.by,
            )
        )
