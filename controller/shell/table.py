"""The table in the shell: state, journal, and the order in which inputs meet the core.

Every input, from a device or the dealer, goes through :meth:`TableRunner.submit` one at a time
(an asyncio lock, which is first come first served): the core applies it, the input, its events,
the device commands they need and (for a request) the inbox row are committed in one
transaction, and only then does the runner adopt the new state and wake the publisher. If the
journal cannot be written nothing changes: a full disk raises
:class:`~controller.shell.space.JournalFullError` (the table is degraded until a write succeeds
again, :mod:`controller.shell.space`), and any other failure ends the daemon: a table that
cannot record what happened must not go on as if it had.

:meth:`TableRunner.recover` replays the journal through the core at start: the state after the
last committed input, exactly, and the device commands still outstanding.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from controller.decks import DeckManifest, known_decks
from controller.profiles import RulesProfile
from controller.shell.checkpoint import core_fingerprint, dump_state, load_state
from controller.shell.codec import event_from_json, event_to_json, input_from_json, input_to_json
from controller.shell.dispatch import Dispatch, Need, Planner
from controller.shell.journal import Appended, NewCommand, NewDispatch, NewEvent
from controller.shell.space import JournalFullError
from controller.shell.writer import JournalWriter
from controller.table.context import RejectedError
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import DeckRevealed, DeviceInput, Input
from controller.table.state import TableState, new_table

log = structlog.get_logger("tablectl.table")

Listener = Callable[[], None]
_RECENT = 2048  # device inputs remembered for de-duplication


@dataclass
class RecoveryReport:
    """What replaying the journal found."""

    inputs: int = 0
    events: int = 0
    diverged: int = 0
    outstanding: int = 0
    snapshot: int = 0  # the input the replay started after (0: the genesis)


class ShutdownError(RuntimeError):
    """The table no longer takes inputs (the daemon is stopping)."""


def initial_state(
    genesis: Mapping[str, Any], profile: RulesProfile, manifest: DeckManifest
) -> TableState:
    """The table a journal starts from.

    The readers' settle time comes from the genesis (the core's deadlines depend on it, so a
    replay must use the one the journal began with); the other shipped decks are known so that
    a card of another deck is told from a tag never seen (FOUL-DUP, FOUL-FOREIGN).
    """
    stacks = {int(seat): int(chips) for seat, chips in genesis["stacks"].items()}
    small, big = genesis["blinds"]
    state = new_table(
        genesis["table_id"],
        profile,
        manifest,
        stacks,
        genesis["button"],
        (small, big),
        genesis.get("ante", 0),
    )
    state.settle = float(genesis.get("settle", state.settle))
    state.other_decks = known_decks(exclude=manifest.deck_id)
    return state


class TableRunner:
    """Applies inputs to the core in order and journals them."""

    def __init__(
        self, writer: JournalWriter, state: TableState, shuffler: str, *, host_paced: bool = True
    ) -> None:
        self.writer = writer
        self.journal = writer.journal
        self.state = state
        self.planner = Planner(shuffler, host_paced=host_paced)
        self.accepting = True
        self.connected: Callable[[], bool] = lambda: False
        self.listeners: list[Listener] = []
        self.last_seq = self.journal.last_seq()
        self.commit_started: float | None = None
        self._lock = asyncio.Lock()
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._keys: OrderedDict[tuple[Any, ...], None] = OrderedDict()

    # ------------------------------------------------------------------ recovery

    def recover(self) -> RecoveryReport:
        """Replay the journal through the core (synchronous: before the loop runs).

        From the newest snapshot this core wrote (between two hands), else from the genesis.
        The events the replay gives are compared with the journaled ones; a difference means the
        core changed under an existing journal, and is logged (the journal stays the record).
        """
        report = RecoveryReport()
        state, after = self._from_snapshot(report)
        journaled: dict[int, list[str]] = {}
        for row in self.journal.events(after_input=after):
            if row.input_id is not None:
                journaled.setdefault(row.input_id, []).append(row.body)
        for row in self.journal.inputs(after=max(0, after - _RECENT)):
            if row.key <= after:  # before the snapshot: only remembered, for de-duplication
                self._remember(input_from_json(row.body), row.body)
                continue
            item = input_from_json(row.body)
            state, events = apply(state, item)
            report.inputs += 1
            report.events += len(events)
            self._remember(item, row.body)
            stored = [event_from_json(b) for b in journaled.get(row.key, [])]
            replayed = [event_from_json(event_to_json(e)) for e in events]
            if stored != replayed:
                report.diverged += 1
                log.error("journal.replay_diverged", input_id=row.key, input=type(item).__name__)
        self.state = state
        revealed = {
            item.shuffle_id
            for row in self.journal.inputs(after=after)
            if '"DeckRevealed"' in row.body
            and isinstance(item := input_from_json(row.body), DeckRevealed)
        }
        rows = list(self.journal.dispatches())
        dispatches = [
            Dispatch.from_row(key, device, body)
            for key, device, body, input_id in rows
            # a reveal asked before the snapshot was answered or abandoned by then
            if input_id is None or input_id > after or '"reveal"' not in body
        ]
        for key, device, body, _ in rows:
            need = Dispatch.from_row(key, device, body).need
            if need.kind == "reveal" and need.shuffle_id is not None:
                self.planner.revealed.add(need.shuffle_id)
        self.planner.adopt(dispatches, state)
        for sid in revealed:
            self.planner.done(Need("reveal", None, sid))
        report.outstanding = len(self.planner.outstanding)
        self.last_seq = self.journal.last_seq()
        return report

    def _from_snapshot(self, report: RecoveryReport) -> tuple[TableState, int]:
        found = self.journal.latest_snapshot(core_fingerprint())
        if found is None:
            return self.state, 0
        input_id, blob = found
        try:
            state = load_state(blob)
        except Exception as exc:  # a snapshot is only a shortcut: replay everything instead
            log.warning("journal.snapshot_unusable", input_id=input_id, error=repr(exc))
            return self.state, 0
        report.snapshot = input_id
        return state, input_id

    # ------------------------------------------------------------------ inputs

    async def submit(
        self,
        item: Input,
        command: NewCommand | None = None,
        capture: list[TableEvent] | None = None,
    ) -> Appended | None:
        """Apply one input and journal it with its events; None for a dropped duplicate.

        ``capture`` receives the events before the journal transaction (a request's response
        is built from them inside it).
        """
        async with self._lock:
            if not self.accepting:
                raise ShutdownError("the table is shutting down")
            body = input_to_json(item)
            if isinstance(item, DeviceInput) and self._duplicate(item, body):
                log.warning(
                    "device.duplicate_dropped", device=item.device, input=type(item).__name__
                )
                return None
            before = self.state
            after, events = apply(before, item)
            planned = self.planner.plan(after, events)
            if capture is not None:
                capture.extend(events)
            snapshot = None
            if before.hand is not None and after.hand is None:  # between hands: a snapshot
                snapshot = (core_fingerprint(), dump_state(after))
            self.commit_started = time.monotonic()
            try:
                appended = await self.writer.call(
                    self.journal.append,
                    snapshot=snapshot,
                    input_row=(item.ts.isoformat(), type(item).__name__, body),
                    events=[_new_event(e) for e in events],
                    dispatches=[
                        NewDispatch(self.planner.shuffler, Dispatch(0, "", need, group).to_json())
                        for need, group in planned
                    ],
                    command=command,
                    live=self.connected(),
                )
            finally:
                self.commit_started = None
            self.state = after
            self._remember(item, body)
            self.planner.adopt(
                [
                    Dispatch(key, self.planner.shuffler, need, group)
                    for key, (need, group) in zip(appended.dispatch_ids, planned, strict=True)
                ],
                after,
            )
            if isinstance(item, DeckRevealed):
                self.planner.done(Need("reveal", None, item.shuffle_id))
            if appended.seqs:
                self.last_seq = appended.seqs[-1]
            self._notify()
            return appended

    async def submit_when_writable(self, item: Input) -> Appended | None:
        """:meth:`submit`, waiting while the journal is full: the input is held, not lost.

        For the inputs that have nowhere else to wait: a device's (its driver acknowledges it
        only once this returns, so the device keeps it meanwhile), the clock's, the restart's.
        """
        space = self.writer.space
        while True:
            await space.writable.wait()
            try:
                return await self.submit(item)
            except JournalFullError:
                continue  # full again: wait for the next successful write

    async def record_rejection(self, event: TableEvent, command: NewCommand | None) -> Appended:
        """Journal an event no input caused: a request refused before it reached the core, a
        report of shed requests, the journal's disk (it changes nothing)."""
        async with self._lock:
            appended = await self.writer.call(
                self.journal.append,
                input_row=None,
                events=[_new_event(event)],
                command=command,
                live=self.connected(),
            )
            self.last_seq = appended.seqs[-1]
            self._notify()
            return appended

    def accepts(self, item: Input) -> bool:
        """Whether the core handles ``item`` (a dry run; the state is not touched).

        The shell's own inputs (``ControllerRestarted``, ``Tick``) go in only once the core
        handles them; a core that does not know one treats it as a bug.
        """
        try:
            apply(self.state, item)
        except RejectedError:
            return False
        return True

    async def stop(self) -> None:
        """Take no more inputs; return once the input being committed (if any) is committed."""
        async with self._lock:
            self.accepting = False

    @property
    def busy(self) -> bool:
        """An input is being applied or committed."""
        return self._lock.locked()

    # ------------------------------------------------------------------ helpers

    def _notify(self) -> None:
        for listener in self.listeners:
            listener()

    def _duplicate(self, item: DeviceInput, body: str) -> bool:
        """A device event seen before: the same bytes, or the same deck / group again."""
        digest = hashlib.sha256(body.encode()).hexdigest()
        key = _identity(item)
        return digest in self._recent or (key is not None and key in self._keys)

    def _remember(self, item: Input, body: str) -> None:
        if not isinstance(item, DeviceInput):
            return
        self._recent[hashlib.sha256(body.encode()).hexdigest()] = None
        key = _identity(item)
        if key is not None:
            self._keys[key] = None
        while len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        while len(self._keys) > _RECENT:
            self._keys.popitem(last=False)


def _identity(item: DeviceInput) -> tuple[Any, ...] | None:
    """What makes a deck or group event unique: a device reports each deck check, shuffle,
    group and reveal once, so a second one with the same identity is a redelivery."""
    shuffle_id = getattr(item, "shuffle_id", None)
    if shuffle_id is None:
        return None
    return (type(item).__name__, item.device, shuffle_id, getattr(item, "group", None))


def _new_event(event: TableEvent) -> NewEvent:
    return NewEvent(event.type, event.hand_id, event_to_json(event))
