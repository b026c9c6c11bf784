"""The working context of one ``apply`` call: the state being changed and the events so far."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import NamedTuple

from controller.authority import Authority
from controller.rules.ids import Rule
from controller.table.events import EventData, Severity, TableEvent
from controller.table.state import HandState, Hold, Ruling, TableState

_new_tuple = tuple.__new__


class RejectedError(Exception):
    """A dealer command that makes no sense now: nothing changes; ``command.rejected`` says why."""

    def __init__(self, reason: str, rules: tuple[Rule, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rules = rules


RulingFn = Callable[["Context", HandState, Hold], None]
#: Why the floor's decision cannot apply to a hold now (None: it can).
OverrideCheck = Callable[[HandState, Hold, Ruling], str | None]


class Rulings(NamedTuple):
    """The rulings a hold can end in, as the engine registers them (controller/table/engine.py).

    ``decide``: what each ruling does; ``on_reject``: what rejecting a ruling settles (the hand
    goes on as it is, and this records why, so the same facts do not raise the same hold again);
    ``after``: called after every ruling, to let what waited for it go on (cards held back, say);
    ``overrides``: for the holds of a rule whose hold may be decided otherwise only in some ways,
    why a decision of the floor's cannot apply (FLOOR-CALL: a hold that names no card).
    """

    decide: Mapping[Ruling, RulingFn]
    on_reject: Mapping[Ruling, RulingFn]
    after: tuple[Callable[[Context, HandState], None], ...]
    overrides: Mapping[Rule, OverrideCheck] = MappingProxyType({})


class Context:
    """A copy of the table to change, plus the events the input caused."""

    __slots__ = ("authority", "by", "events", "original", "rulings", "table", "ts")

    def __init__(
        self,
        table: TableState,
        ts: datetime,
        authority: Authority | None,
        rulings: Rulings,
    ) -> None:
        self.original = table.hand  # the hand as it was: never changed, so it can be kept
        self.table = table.copy()
        if table.hand is not None:
            self.table.hand = table.hand.copy()
        self.ts = ts
        self.authority = authority  # who gave the command being applied (None: a device)
        self.rulings = rulings
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
        # the tuple built directly: the same TableEvent without the call of its generated __new__
        # (an input emits one event or more)
        fields = (
            data,
            self.ts,
            hand.hand_id if hand is not None else None,
            rules,
            severity,
            needs_confirm,
            self.by,
        )
        self.events.append(_new_tuple(TableEvent, fields))
