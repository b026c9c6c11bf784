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
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from controller.config import TableSection
from controller.decks import DeckManifest, known_decks
from controller.profiles import RulesProfile, load_profile
from controller.shell.chain import JournalDamagedError, JournalError, damage_advice
from controller.shell.checkpoint import (
    SnapshotNeededError,
    SnapshotUnreadableError,
    is_legacy,
    read_legacy,
)
from controller.shell.checkpoint import decode as decode_snapshot
from controller.shell.dispatch import Dispatch, Need, Planner
from controller.shell.journal import (
    Appended,
    DeviceOrigin,
    Journal,
    NewCommand,
    NewDispatch,
    NewEpoch,
    NewEvent,
)
from controller.shell.space import JournalFullError
from controller.shell.writer import JournalWriter
from controller.table.codec import (
    CodecError,
    event_from_json,
    event_to_json,
    input_from_json,
    input_to_json,
)
from controller.table.context import RejectedError
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import DeckRevealed, DeviceInput, Input, Origin
from controller.table.state import TableState, new_table

log = structlog.get_logger("tablectl.table")

Listener = Callable[[], None]
#: Told the journal keys and the events of each commit (the console's watchers).
Committed = Callable[[Sequence[int], Sequence[TableEvent]], None]
RECENT_INPUTS = 2048  # device inputs remembered for de-duplication


@dataclass
class RecoveryReport:
    """What replaying the journal found.

    ``diverged`` lists the inputs whose replay gave other events than the journal holds, or
    that cannot be read back; ``accepted`` counts those maintenance accepted before
    (``journal.accepted``), which are only logged.
    """

    inputs: int = 0
    events: int = 0
    diverged: list[int] = field(default_factory=list)
    accepted: int = 0
    outstanding: int = 0
    snapshot: int = 0  # the input the replay started after (0: the genesis)
    snapshot_format: str = ""  # the format it was read in ("pickled": before the format)
    unreadable: list[str] = field(default_factory=list)  # snapshots this version cannot read


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


def journal_table(journal: Journal, manifest: DeckManifest | None = None) -> TableState:
    """The table the journal began with (its genesis; the deck it names unless ``manifest``).

    A genesis that cannot give a table means the journal's meta table is damaged:
    :class:`JournalDamagedError`, naming the file and what to do.
    """
    genesis = journal.genesis
    try:
        profile = load_profile(genesis["profile"]).with_overrides(genesis.get("house_rules", {}))
        if manifest is None:
            manifest = TableSection.model_validate(
                {
                    "id": genesis["table_id"],
                    "stacks": genesis["stacks"],
                    "button": genesis["button"],
                    "blinds": genesis["blinds"],
                    "deck": genesis.get("deck", "house-a"),
                }
            ).manifest()
        return initial_state(genesis, profile, manifest)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise JournalDamagedError(
            f"{journal.path}: the table it began with cannot be read ({exc!r}): "
            f"{damage_advice(journal.path)}"
        ) from None


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
        self.committed: list[Committed] = []
        self.last_seq = self.journal.last_seq()
        self.commit_started: float | None = None
        self._lock = asyncio.Lock()
        self._keys: OrderedDict[tuple[Any, ...], None] = OrderedDict()
        # per device: the last event it numbered, and the parts of it journaled
        self._origins: dict[str, tuple[tuple[int, int], set[int]]] = {}

    # ------------------------------------------------------------------ recovery

    def recover(self) -> RecoveryReport:
        """Replay the journal through the core (synchronous: before the loop runs).

        From the newest snapshot this core wrote (between two hands), else from the genesis.
        The events the replay gives are compared with the journaled ones; an input that gives
        others (the core changed under the journal, or the journal was rewritten) or cannot be
        read back is listed in the report, and the daemon raises the integrity alarm
        (controller/shell/integrity.py) unless maintenance accepted it before.
        """
        report = RecoveryReport()
        accepted = self.journal.accepted_through("input_through")
        state, after = self._from_snapshot(report)
        pruned = []
        if after == 0 and self.journal.pruned():
            self.journal.readopt_restored()  # segments put back from the archive
            pruned = self.journal.pruned()
        if pruned and report.unreadable:
            raise SnapshotNeededError(
                f"{self.journal.path}: this version cannot read the journal's snapshot "
                f"({report.unreadable[0]}) and cannot replay from the journal's start instead: "
                f"{pruned[0].span()} was pruned ({pruned[0].reason}); run the version that "
                "wrote it, or copy the pruned segments back from the archive "
                '(docs/operations.md, "Upgrading")'
            )
        if pruned:
            raise JournalError(
                f"{self.journal.path}: no snapshot of this software's core, and the replay from "
                f"the journal's start needs {pruned[0].span()}, pruned ({pruned[0].reason}): "
                "copy the pruned segments from the archive into "
                f"{self.journal.segments_dir} and start again "
                '(docs/operations.md, "Retention")'
            )
        journaled: dict[int, list[str]] = {}
        for row in self.journal.events(after_input=after):
            if row.input_id is not None:
                journaled.setdefault(row.input_id, []).append(row.body)
        revealed: set[int] = set()
        numbered: dict[str, int] = {}  # per device, the input of its last numbered event read
        for row in self.journal.inputs(after=max(0, after - RECENT_INPUTS)):
            try:
                item = input_from_json(row.body)
            except CodecError as exc:
                if row.key > after:
                    self._diverged(report, row.key, accepted, "unreadable", str(exc))
                continue
            self._remember(item)
            if isinstance(item, DeviceInput) and item.origin is not None:
                numbered[item.device] = row.key
            if row.key <= after:  # before the snapshot: only remembered, for de-duplication
                continue
            if isinstance(item, DeckRevealed):
                revealed.add(item.shuffle_id)
            state, events = apply(state, item)
            report.inputs += 1
            report.events += len(events)
            try:
                stored = [event_from_json(b) for b in journaled.get(row.key, [])]
            except CodecError as exc:
                self._diverged(report, row.key, accepted, type(item).__name__, str(exc))
                continue
            replayed = [event_from_json(event_to_json(e)) for e in events]
            if stored != replayed:
                self._diverged(report, row.key, accepted, type(item).__name__, "other events")
        self._adopt_origins(numbered)
        self.state = state
        rows = []
        for key, device, body, input_id in self.journal.dispatches():
            try:
                rows.append((Dispatch.from_row(key, device, body), input_id))
            except (ValueError, KeyError, TypeError) as exc:  # a damaged row: the chain says so
                log.error("journal.dispatch_unreadable", dispatch=key, error=str(exc))
        dispatches = [
            dispatch
            for dispatch, input_id in rows
            # a reveal asked before the snapshot was answered or abandoned by then
            if input_id is None or input_id > after or dispatch.need.kind != "reveal"
        ]
        for dispatch, _ in rows:
            need = dispatch.need
            if need.kind == "reveal" and need.shuffle_id is not None:
                self.planner.reveal_asked(need.shuffle_id)
        self.planner.adopt(dispatches, state, inherited=True)
        for sid in revealed:
            self.planner.done(Need("reveal", None, sid))
        report.outstanding = len(self.planner.outstanding)
        self.last_seq = self.journal.last_seq()
        return report

    @staticmethod
    def _diverged(
        report: RecoveryReport, input_id: int, accepted: int, what: str, why: str
    ) -> None:
        if input_id <= accepted:
            report.accepted += 1
            log.warning("journal.replay_diverged_accepted", input_id=input_id, input=what)
        else:
            report.diverged.append(input_id)
            log.error("journal.replay_diverged", input_id=input_id, input=what, detail=why)

    def _adopt_origins(self, numbered: Mapping[str, int]) -> None:
        """Each device's last numbered event from the journal's ``origins`` rows: a device's
        last event may be older than every input a start reads (it sat unplugged while the
        others went on), and only that one can come again."""
        for device, (origin, input_id) in self.journal.origins().items():
            if input_id >= numbered.get(device, 0):
                self._origins[device] = ((origin.boot_id, origin.seq), set(origin.parts))

    def _from_snapshot(self, report: RecoveryReport) -> tuple[TableState, int]:
        """The newest snapshot this version reads that belongs to this journal, and its input;
        else the genesis's table and 0. A snapshot is only a shortcut while the journal's start
        is here: one it cannot use is reported and an older one (or the genesis) tried."""
        for input_id, key, blob in self.journal.snapshots():
            try:
                state = self._snapshot_state(input_id, key, blob)
            except SnapshotUnreadableError as exc:
                report.unreadable.append(f"input {input_id}: {exc}")
                log.warning("journal.snapshot_unusable", input_id=input_id, error=str(exc))
                continue
            report.snapshot = input_id
            report.snapshot_format = "pickled" if is_legacy(key) else key
            return state, input_id
        return self.state, 0

    def _snapshot_state(self, input_id: int, key: str, blob: bytes) -> TableState:
        """The state of one snapshot row, checked against the journal it is in."""
        if is_legacy(key):  # written before the format: no header to check
            return read_legacy(blob)
        snapshot = decode_snapshot(blob)
        journal = self.journal
        if snapshot.input_id != input_id:
            raise SnapshotUnreadableError(f"written for input {snapshot.input_id}")
        if snapshot.state.table_id != journal.table_id:
            raise SnapshotUnreadableError(f"of table {snapshot.state.table_id}")
        if snapshot.epoch not in {epoch.name for epoch in journal.epochs}:
            raise SnapshotUnreadableError(f"of epoch {snapshot.epoch}, not this journal's")
        here = journal.chain_hash_at(snapshot.chain.pos)
        if here is not None and here != snapshot.chain.hash:
            raise SnapshotUnreadableError(
                f"its chain head at {snapshot.chain.pos} is not this chain's"
            )
        return snapshot.state

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
            if isinstance(item, DeviceInput) and self._duplicate(item):
                log.warning(
                    "device.duplicate_dropped", device=item.device, input=type(item).__name__
                )
                return None
            before = self.state
            after, events = apply(before, item)
            planned = self.planner.plan(after, events)
            if capture is not None:
                capture.extend(events)
            # between hands: a snapshot (written in the input's transaction)
            snapshot = after if before.hand is not None and after.hand is None else None
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
                    origin=self._origin_after(item),
                )
            finally:
                self.commit_started = None
            self.state = after
            self._remember(item)
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
            self._notify(appended.seqs, events)
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
        return await self.record([event], command)

    async def record(
        self,
        events: list[TableEvent],
        command: NewCommand | None = None,
        *,
        meta: Mapping[str, str | None] | None = None,
    ) -> Appended:
        """Journal events that are no input's (a refusal, an alarm, the journal's disk).

        On a full disk this raises :class:`~controller.shell.space.JournalFullError` and
        nothing is written.
        """
        return await self.record_planned(lambda _: (events, None), command, meta=meta)

    async def record_planned(
        self,
        plan: Callable[[int], tuple[list[TableEvent], NewEpoch | None]],
        command: NewCommand | None = None,
        *,
        meta: Mapping[str, str | None] | None = None,
    ) -> Appended:
        """Journal events made by ``plan`` from the journal key the first of them will get,
        with the new epoch (if any) they begin (maintenance's decision, a rollback).

        ``plan`` runs on the journal's thread, in the transaction's turn: nothing is written
        between what it reads and what it writes. On a full disk this raises
        :class:`~controller.shell.space.JournalFullError` and nothing is written.
        """
        journal = self.journal
        planned: list[TableEvent] = []

        def write() -> Appended:
            events, epoch = plan(journal.last_seq() + 1)
            planned.extend(events)
            return journal.append(
                input_row=None,
                events=[_new_event(e) for e in events],
                command=command,
                live=self.connected(),
                epoch=epoch,
                meta=meta,
            )

        async with self._lock:
            appended = await self.writer.call(write)
            if appended.seqs:
                self.last_seq = appended.seqs[-1]
            self._notify(appended.seqs, planned)
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

    def _notify(self, seqs: Sequence[int], events: Sequence[TableEvent]) -> None:
        for listener in self.listeners:
            listener()
        if seqs:
            for committed in self.committed:
                committed(seqs, events)

    def _duplicate(self, item: DeviceInput) -> bool:
        """A device event journaled before: the same origin on the device, or the same deck /
        group again (after a power cut the device numbers its events anew)."""
        origin = item.origin
        if origin is not None:
            last = self._origins.get(item.device)
            if last is not None and last[0] == (origin.boot_id, origin.seq):
                return origin.part in last[1]
        key = _identity(item)
        return key is not None and key in self._keys

    def _origin_after(self, item: Input) -> DeviceOrigin | None:
        """The device's last numbered event once ``item`` is journaled (None: not numbered)."""
        if not isinstance(item, DeviceInput) or item.origin is None:
            return None
        origin = item.origin
        parts = {origin.part}
        last = self._origins.get(item.device)
        if last is not None and last[0] == (origin.boot_id, origin.seq):
            parts |= last[1]
        return DeviceOrigin(item.device, origin.boot_id, origin.seq, frozenset(parts))

    def _remember(self, item: Input) -> None:
        if not isinstance(item, DeviceInput):
            return
        if item.origin is not None:
            self._remember_origin(item.device, item.origin)
        key = _identity(item)
        if key is not None:
            self._keys[key] = None
        while len(self._keys) > RECENT_INPUTS:
            self._keys.popitem(last=False)

    def _remember_origin(self, device: str, origin: Origin) -> None:
        # Only the device's last event can come again (it sends the next one only once this
        # one was acknowledged), so one per device is enough, and a sequence number that
        # wrapped around is a new event.
        event = (origin.boot_id, origin.seq)
        last = self._origins.get(device)
        if last is not None and last[0] == event:
            last[1].add(origin.part)
        else:
            self._origins[device] = (event, {origin.part})


def _identity(item: DeviceInput) -> tuple[Any, ...] | None:
    """What makes a deck or group event unique: a device reports each deck check, shuffle,
    group and reveal once, so a second one with the same identity is a redelivery."""
    shuffle_id = getattr(item, "shuffle_id", None)
    if shuffle_id is None:
        return None
    return (type(item).__name__, item.device, shuffle_id, getattr(item, "group", None))


def _new_event(event: TableEvent) -> NewEvent:
    return NewEvent(event.type, event.hand_id, event_to_json(event))
