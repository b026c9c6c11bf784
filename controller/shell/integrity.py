"""The journal's integrity: verified at start and while running, checked against the broker,
and maintenance's decision when it is in doubt (docs/operations.md, "The journal's integrity").

* **At start**, before the table takes any input: the hash chain is verified from the last
  verified head (only the rows written since), and the replay is compared with the events the
  journal holds (:meth:`TableRunner.recover`). A break, or an input whose replay differs, raises
  the integrity alarm and *holds* the table: systemd gets no ``READY=1`` (the daemon extends its
  start timeout while it waits), no device is started, and every request is answered with the
  alarm, except maintenance's ``journal_accept``.
* **While running**, every :data:`VERIFY_EVERY` seconds the rows written since are verified on
  a connection of their own, and the verified head moves on; a start then only verifies what
  the last minute wrote. A break found raises the alarm (the table goes on).
* **On every connect**, before any event goes out, the head the daemon left retained on the
  broker (the last event it published, with its place in the chain) is compared with the
  journal. A broker that holds an event this journal does not have, or holds it with another
  hash, means the journal was rolled back (a lost WAL, a restored backup): the events not yet
  confirmed against the broker go on under a new epoch, so no event id is ever published with
  two bodies, and the alarm says which ids were lost.
* **Maintenance decides.** ``journal_accept`` (signed, role ``maintenance``, with a reason)
  accepts the journal as it is: the breaks up to the chain's head and the replay differences up
  to the last input stay on record as accepted (``tablectl journal verify`` lists them), the
  alarm is cleared, the next events are a new epoch, and a held table starts.

An alarm is a critical ``integrity.alarm`` event (journaled at once, published when the broker
is reachable), a ``journal.integrity`` entry in the ``alarms`` of the retained birth message (a
held table is ``degraded`` there), and the systemd status line.

**A full disk** (:mod:`controller.shell.space`) stops none of this. An alarm is shown at once
and journaled once there is room. What the checks only keep in the journal's meta table (the
verified head, where the events not yet confirmed against the broker begin) is kept in memory
while the disk is full and written with the next of them that succeeds. A rollback found on a
full disk holds the connection (nothing is published) until its new epoch can be journaled:
without it the events would go out under ids the broker already has.
"""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.shell.chain import Head, JournalDamagedError, damage_advice
from controller.shell.gate import RefusedError
from controller.shell.journal import Journal, NewCommand, NewEpoch
from controller.shell.maintenance import JournalAccept
from controller.shell.space import JournalFullError, is_full
from controller.shell.table import RecoveryReport, TableRunner
from controller.table.codec import rfc3339
from controller.table.event_types import (
    EventRange,
    IntegrityAlarm,
    JournalAccepted,
    JournalEpochStarted,
)
from controller.table.events import EventData, Severity, TableEvent

log = structlog.get_logger("tablectl.integrity")

VERIFY_EVERY = 60.0  # seconds between two verifications of the rows written meanwhile
SHOWN = 10  # breaks and inputs an alarm names (the rest are counted)
ACCEPT = "journal_accept"


@dataclass(frozen=True)
class Alarm:
    """One integrity alarm: what the journal check found (``chain``, ``replay``, ``rollback``)."""

    kind: str
    reason: str
    problems: tuple[str, ...] = ()
    inputs: tuple[int, ...] = ()
    lost: EventRange | None = None
    raised: datetime = field(default_factory=lambda: datetime.now(UTC))

    def line(self) -> str:
        """The alarm in one line (the status topic, systemd, request refusals)."""
        return f"integrity alarm ({self.kind}): {self.reason}"

    def status(self, held: bool) -> dict[str, Any]:
        """The alarm as the status topic's ``alarms`` carry it (controller/shell/models.py)."""
        return {
            "alarm": "journal.integrity",
            "kind": self.kind,
            "detail": self.line(),
            "since": rfc3339(self.raised),
            "held": held,
        }

    def event(self, ts: datetime) -> TableEvent:
        """The critical ``integrity.alarm`` event."""
        alarm = IntegrityAlarm(
            self.reason,
            journal=self.kind,
            problems=self.problems or None,
            inputs=self.inputs or None,
            lost=self.lost,
        )
        return TableEvent(alarm, ts, None, (), Severity.CRITICAL)


@dataclass
class Rollback:
    """The broker holds events this journal does not: where the new epoch begins, what is lost."""

    reason: str
    first_seq: int  # the journal key of the first event of the new epoch
    lost: EventRange


@dataclass
class Integrity:
    """The integrity checks of one daemon, and the alarm they raise."""

    runner: TableRunner
    table_id: str
    on_change: Callable[[], None] = lambda: None
    alarms: list[Alarm] = field(default_factory=list)
    held: bool = False  # raised at start: the table waits for maintenance
    decided: asyncio.Event = field(default_factory=asyncio.Event)
    _verified: Head | None = None
    #: Meta values a full disk kept from being written, written with the next that succeeds.
    _unsaved: dict[str, str | None] = field(default_factory=dict)

    @property
    def journal(self) -> Journal:
        """The journal (used on the journal's thread, or before the loop runs)."""
        return self.runner.journal

    @property
    def alarm_line(self) -> str | None:
        """The raised alarm(s) in one line, or None."""
        if not self.alarms:
            return None
        return "; ".join(alarm.line() for alarm in self.alarms)

    def status_alarms(self) -> list[dict[str, Any]]:
        """The raised alarms, as the status topic carries them."""
        return [alarm.status(self.held) for alarm in self.alarms]

    # ------------------------------------------------------------------ the meta table

    def _meta_value(self, name: str) -> str | None:
        """A meta value as the checks last set it (written or not yet)."""
        if name in self._unsaved:
            return self._unsaved[name]
        return self.journal.meta_value(name)

    def _save_now(self, values: Mapping[str, str | None]) -> None:
        """Set meta values before the loop runs; on a full disk, keep them for later (and the
        table starts degraded)."""
        values = {**self._unsaved, **values}
        try:
            self.journal.set_meta(values)
        except (sqlite3.Error, OSError) as exc:
            if not is_full(exc, self.journal.path.parent):
                raise
            self.runner.writer.space.mark_full(exc)
            self._unsaved = values
            return
        self._unsaved = {}

    async def _save(self, values: Mapping[str, str | None]) -> None:
        """Set meta values (on the journal's thread); on a full disk, keep them for later."""
        values = {**self._unsaved, **values}
        try:
            await self.runner.writer.call(self.journal.set_meta, values)
        except JournalFullError:
            self._unsaved = values
            return
        self._unsaved = {}

    # ------------------------------------------------------------------ at start

    def at_start(self, replay: RecoveryReport) -> list[Alarm]:
        """Verify the chain from the verified head and look at the replay (synchronous, before
        the loop serves anything); raise :class:`JournalDamagedError` for a damaged file.

        Returns the alarms found; with any, the table is held.
        """
        journal = self.journal
        since = journal.verified_head()
        report = journal.verify(since)
        if report.damaged is not None:
            advice = damage_advice(journal.path)
            raise JournalDamagedError(f"{journal.path}: {report.damaged}: {advice}")
        alarms = []
        if not report.ok:
            count = len(report.breaks)
            alarms.append(
                Alarm(
                    "chain",
                    f"the journal's hash chain is broken after position {since.pos}: "
                    f"{count} problem(s), the first: {report.breaks[0].text}",
                    problems=tuple(report.problems[:SHOWN]),
                )
            )
        if replay.diverged:
            count = len(replay.diverged)
            alarms.append(
                Alarm(
                    "replay",
                    f"replaying the journal gives other events than it holds at {count} "
                    f"input(s), the first: input {replay.diverged[0]}",
                    inputs=tuple(replay.diverged[:SHOWN]),
                )
            )
        meta: dict[str, str | None] = {}
        if journal.meta_value("unchecked_from") is None:
            # the events from here on are confirmed against the broker's head at the next
            # connect (a start after a lost WAL journals before it can know)
            meta["unchecked_from"] = str(journal.last_seq() + 1)
        if not alarms:
            self._verified = report.head
            meta.update(_verified_meta(report.head))
        if meta:
            self._save_now(meta)
        self.alarms = alarms
        self.held = bool(alarms)
        for alarm in alarms:
            log.critical("journal.integrity_alarm", kind=alarm.kind, reason=alarm.reason)
        return alarms

    async def announce(self, alarms: Sequence[Alarm] | None = None) -> bool:
        """Show the raised alarms (status topic, systemd) and journal each as a critical event
        (``alarms``: only these). False when the journal's disk is full: shown, not journaled
        (:meth:`announce_when_room` journals them once there is room)."""
        self.on_change()
        raised = list(self.alarms if alarms is None else alarms)
        if not raised:
            return True
        try:
            await self.runner.record([alarm.event(alarm.raised) for alarm in raised])
        except JournalFullError:
            return False
        return True

    async def announce_when_room(self, alarms: Sequence[Alarm] | None = None) -> None:
        """:meth:`announce` now, or once the journal's disk has room again (the alarms still
        raised then: maintenance may have accepted the journal meanwhile, its decision naming
        them)."""
        raised = list(self.alarms if alarms is None else alarms)
        space = self.runner.writer.space
        while True:
            await space.writable.wait()
            still = [a for a in raised if any(a is b for b in self.alarms)]
            if not still or await self.announce(still):
                return

    def refusal(self, verb: str) -> str | None:
        """Why a request is not run while the table is held (None: it may run)."""
        if not self.held or verb == ACCEPT:
            return None
        return f"{self.alarm_line}; the table waits for maintenance ({ACCEPT})"

    # ------------------------------------------------------------------ while running

    async def watch(self, every: float = VERIFY_EVERY) -> None:
        """Verify the rows written since the last verification, every ``every`` seconds."""
        while True:
            await asyncio.sleep(every)
            await self.verify_new()

    async def verify_new(self) -> None:
        """Verify the rows written since the last verification (on a connection of their own,
        in a thread), then move the verified head on, or raise the alarm."""
        if any(alarm.kind == "chain" for alarm in self.alarms):
            return  # the chain is in doubt until maintenance decides
        since = self._verified or self.journal.verified_head()
        try:
            report = await asyncio.to_thread(_verify_file, self.journal.path, since)
        except (sqlite3.Error, OSError) as exc:
            if not is_full(exc, self.journal.path.parent):
                raise
            return  # no room for a reader's shared memory: the next round verifies this too
        if report.ok:
            if report.head != since or self._unsaved:
                self._verified = report.head
                await self._save(_verified_meta(report.head))
            return
        alarm = Alarm(
            "chain",
            f"the journal's hash chain broke while the table ran, after position {since.pos}: "
            f"{report.breaks[0].text}",
            problems=tuple(report.problems[:SHOWN]),
        )
        log.critical("journal.integrity_alarm", kind=alarm.kind, reason=alarm.reason)
        self.alarms.append(alarm)
        await self.announce_when_room([alarm])

    # ------------------------------------------------------------------ the broker's head

    async def check_head(self, head: Mapping[str, Any] | None) -> None:
        """Compare the broker's retained head with the journal (on every connect, before any
        event goes out); a rollback begins a new epoch and raises the alarm."""
        rollback = await self.runner.writer.call(self._rollback_of, head)
        if rollback is None:
            await self._save({"unchecked_from": None})
            return
        name = new_epoch_name()
        alarm = Alarm("rollback", rollback.reason, lost=rollback.lost)
        log.critical(
            "journal.rolled_back", reason=rollback.reason, lost=rollback.lost.public(), epoch=name
        )
        now = datetime.now(UTC)
        journal = self.journal

        def plan(next_seq: int) -> tuple[list[TableEvent], NewEpoch]:
            # the events journaled since the journal was last confirmed against the broker
            # (and any journaled while this ran) go out under the new epoch, from seq 1
            first = min(rollback.first_seq, next_seq)
            moved = EventRange(name, 1, next_seq - first) if next_seq > first else None
            started = JournalEpochStarted(name, journal.epoch, "rollback", moved)
            events = [_event(started, now, Severity.CRITICAL), alarm.event(now)]
            return events, NewEpoch(name, first, "rollback")

        space = self.runner.writer.space
        while True:
            # Nothing goes out before the new epoch is journaled: on a full disk this holds
            # the connection until there is room.
            await space.writable.wait()
            try:
                await self.runner.record_planned(
                    plan, meta={**self._unsaved, "unchecked_from": None}
                )
            except JournalFullError:
                log.error("journal.rollback_waits_for_room", epoch=name)
                continue
            break
        self._unsaved = {}
        self.alarms.append(alarm)
        self.on_change()

    def _rollback_of(self, head: Mapping[str, Any] | None) -> Rollback | None:
        """What the broker's head says about the journal (on the journal's thread)."""
        journal = self.journal
        if head is None:
            return None
        epoch, seq, digest = head.get("epoch"), head.get("seq"), head.get("hash")
        if not (isinstance(epoch, str) and isinstance(seq, int) and isinstance(digest, str)):
            log.warning("journal.head_unreadable", head=str(head)[:200])
            return None
        if head.get("journal") != journal.origin:
            log.info("journal.head_of_another_journal", journal=head.get("journal"))
            return None
        unchecked = self._meta_value("unchecked_from")
        next_seq = journal.last_seq() + 1
        first = int(unchecked) if unchecked and unchecked.isdigit() else next_seq
        names = {e.name: e.first_seq for e in journal.epochs}
        eid = f"{self.table_id}:{epoch}:{seq}"
        if epoch not in names:
            # The journal went on in an epoch this copy never had: it may have gone on in
            # this copy's epoch first, so every event not yet out goes in a new one.
            return Rollback(
                f"the broker's last event {eid} is in an epoch this journal does not have "
                "(it is an older copy of the journal)",
                min(first, journal.first_pending() or next_seq),
                EventRange(epoch, None, seq),
            )
        if epoch != journal.epoch:
            return None  # this journal has gone on in a newer epoch since
        key = names[epoch] + seq - 1
        kept = first - names[epoch]  # the events of this epoch the journal still has
        if key >= next_seq:
            last = journal.event_id(next_seq - 1) if next_seq > 1 else None
            ends = f"{self.table_id}:{last.epoch}:{last.seq}" if last else "before any event"
            return Rollback(
                f"the broker holds events up to {eid} but this journal ends at {ends} "
                "(a lost WAL, or a restored backup)",
                first,
                EventRange(epoch, kept + 1, seq),
            )
        chain = journal.chain_of(key)
        if chain is None and journal.event_pruned(key):
            # stored by the pit or archived, then pruned: nothing here to compare it with
            log.info("journal.head_pruned", event=eid)
            return None
        if chain is None or chain.hash != digest:
            return Rollback(
                f"the broker's last event {eid} is not this journal's (another history since)",
                min(first, journal.first_pending() or next_seq),
                EventRange(epoch, None, seq),
            )
        return None

    # ------------------------------------------------------------------ maintenance

    async def accept(
        self, command: JournalAccept, record: NewCommand, capture: list[TableEvent]
    ) -> dict[str, Any]:
        """``journal_accept``: keep the journal as it is, clear the alarm, go on (new epoch).

        ``capture`` receives the events (the response ``record`` builds names them).
        """
        if not self.alarms:
            raise RefusedError("no integrity alarm is raised: nothing to accept")
        authority = command.authority
        by = authority.attribution() if authority is not None else None
        alarm = self.alarm_line or ""
        journal = self.journal
        name = new_epoch_name()
        new_epoch = any(a.kind != "rollback" for a in self.alarms)
        accepted_at: list[Head] = []

        def plan(next_seq: int) -> tuple[list[TableEvent], NewEpoch | None]:
            previous, through = journal.epoch, journal.head
            accepted_at.append(through)
            accepted = JournalAccepted(
                alarm,
                command.reason,
                through.pos,
                journal.last_input(),
                name if new_epoch else previous,
            )
            events = [TableEvent(accepted, command.ts, None, (), Severity.WARN, by=by)]
            epoch = None
            if new_epoch:  # the decision is the old epoch's last event; the new one follows
                started = JournalEpochStarted(name, previous, "accepted")
                events.append(TableEvent(started, command.ts, None, (), Severity.WARN, by=by))
                epoch = NewEpoch(name, next_seq + 1, "accepted")
            capture.extend(events)
            return events, epoch

        appended = await self.runner.record_planned(plan, record)
        through = accepted_at[0]
        if new_epoch:
            # the rows up to the decision are taken as they are: the next verification
            # starts there (a rollback alone leaves the chain's verification where it was)
            await self._save(_verified_meta(through))
            self._verified = through
        log.warning(
            "journal.accepted", by=by, reason=command.reason, through=through.pos, epoch=name
        )
        self.alarms = []
        self.held = False
        self.decided.set()
        self.on_change()
        assert appended.response is not None
        return dict(appended.response)


def new_epoch_name() -> str:
    """A random epoch name (as a new journal's)."""
    return secrets.token_hex(6)


def _event(data: EventData, ts: datetime, severity: Severity) -> TableEvent:
    return TableEvent(data, ts, None, (), severity)


def _verified_meta(head: Head) -> dict[str, str | None]:
    return {"verified_pos": str(head.pos), "verified_hash": head.hash}


def _verify_file(path: Any, since: Head) -> Any:
    """Verify the journal at ``path`` after ``since`` on a connection of its own."""
    journal = Journal.open_existing(path, read_only=True)
    try:
        return journal.verify(since)
    finally:
        journal.close()
