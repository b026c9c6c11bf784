"""Table requests: authenticated, authorized, executed at most once, always answered.

A request is a JSON object on ``{prefix}/{table}/request/{command}`` (or a line on the console
socket): the command's fields (docs/mqtt.md), a ``transaction`` chosen by the sender and, on a
table that requires it, ``auth`` (the signature, docs/security.md). The answer goes to
``{prefix}/{table}/response/{command}``::

    {"transaction": "…", "status": "ok" | "error", "data": {…}, "error": "…" | null}

* Every request passes the gate (:mod:`controller.shell.gate`): size and parsing limits, the
  signature, freshness, the role. A refusal there is journaled as a ``command.rejected`` event
  holding a bounded record of the request (size, digest, first characters), never the request;
  the table does not change.
* A request whose (key, transaction) was answered before gets the stored response; nothing runs
  again (MQTT delivers a QoS 1 request at least once, and a console retries after a timeout). A
  refusal that did not prove who sent the request is not stored: nobody can pre-empt another
  key's transaction.
* An admitted request goes to the core with who gave it (``authority``), stamped with the time it
  was received; the core may still refuse it (``command.rejected``, status ``error``).
* While the journal's disk is full no request runs: each is answered at once with the reason
  (``journal full: …``) and nothing is journaled (:mod:`controller.shell.space`), maintenance's
  ``journal_accept`` included: its decision could not be recorded either.
* While an integrity alarm holds the table (:mod:`controller.shell.integrity`) only
  ``journal_accept`` runs; every other request is answered with the alarm, not journaled.
* The pit's ``stored`` is answered by the shell: the highest confirmed seq of the epoch is
  recorded outside the chain (:func:`controller.shell.retention.confirm_stored`).
* An exception while handling one request is answered "internal error", logged with its
  traceback, raised as an ``integrity.alarm``, and the table goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import structlog

from controller.shell.gate import Gate, RefusedError, Request, bounded_record, bounded_text
from controller.shell.intake import Queued, Read, Replayed
from controller.shell.integrity import Integrity
from controller.shell.journal import NewCommand
from controller.shell.maintenance import JournalAccept, Stored
from controller.shell.replay import VERB as REPLAY
from controller.shell.replay import Replayer
from controller.shell.retention import confirm_stored
from controller.shell.space import JournalFullError
from controller.shell.table import ShutdownError, TableRunner
from controller.table.event_types import CommandRejected, IntegrityAlarm, RequestsShed
from controller.table.events import Severity, TableEvent

log = structlog.get_logger("tablectl.requests")


def response(
    transaction: str | None,
    verb: str,
    seqs: list[int],
    events: list[TableEvent],
    error: str | None = None,
) -> dict[str, Any]:
    """The response body: ``ok`` unless the request or the core refused it."""
    rejected = [e.payload for e in events if isinstance(e.payload, CommandRejected)]
    if error is None and rejected:
        error = rejected[0].reason
    return {
        "transaction": transaction,
        "status": "error" if error else "ok",
        "command": bounded_text(verb, 64),
        "data": {
            "events": [{"seq": seq, "type": e.type} for seq, e in zip(seqs, events, strict=False)],
            "last_seq": seqs[-1] if seqs else None,
        },
        "error": error,
    }


def _error(verb: str, transaction: str | None, message: str) -> dict[str, Any]:
    return {
        "transaction": transaction,
        "status": "error",
        "command": bounded_text(verb, 64),
        "data": {},
        "error": message,
    }


class CommandHandler:
    """Turns requests into inputs (or refusals) and responses."""

    def __init__(
        self,
        runner: TableRunner,
        gate: Gate,
        integrity: Integrity | None = None,
        replayer: Replayer | None = None,
    ) -> None:
        self.runner = runner
        self.gate = gate
        self.integrity = integrity
        self.replayer = replayer  # answers the pit's replay requests (None: no broker)
        #: Told each ``stored`` confirmation (its answer's data, and the pit's id).
        self.on_stored: Callable[[dict[str, Any], str], None] | None = None

    async def handle(self, verb: str, payload: bytes, received: datetime) -> dict[str, Any]:
        """Read and handle one request (the gate's first steps included)."""
        try:
            read: Request | RefusedError = self.gate.read(verb, payload, received)
        except RefusedError as refused:
            read = refused
        return await self.handle_read(verb, payload, received, read)

    async def handle_queued(self, item: Queued) -> dict[str, Any]:
        """Handle a request the intake already read."""
        return await self.handle_read(item.verb, item.payload, item.received, item.read)

    async def handle_read(
        self, verb: str, payload: bytes, received: datetime, read: Read
    ) -> dict[str, Any]:
        """Handle a request read by the gate; never raises."""
        space = self.runner.writer.space
        if space.full:  # nothing can be journaled: not run, and answered with the reason
            return _error(verb, _transaction(read), space.refusal())
        try:
            return await self._handle(verb, payload, received, read)
        except JournalFullError:
            return _error(verb, _transaction(read), space.refusal())
        except ShutdownError:
            return _error(verb, _transaction(read), "the table is stopping; try again")
        except Exception as exc:  # one request must never stop the table
            log.exception("request.internal_error", command=bounded_text(verb, 64))
            await self._alarm(verb, payload, received, exc)
            return _error(verb, _transaction(read), "internal error: the request was not run")

    async def _handle(
        self, verb: str, payload: bytes, received: datetime, read: Read
    ) -> dict[str, Any]:
        if isinstance(read, Replayed):  # screened as stale or replayed: checked in full now
            try:
                read = self.gate.authenticate(read.parsed, received)
            except RefusedError as refused:
                read = refused
        if isinstance(read, RefusedError):
            return await self._refuse(verb, payload, read, None, received)
        stored = await self.runner.writer.call(self.runner.journal.command_response, read.inbox_key)
        if stored is not None:
            return stored
        held = self.integrity.refusal(read.verb) if self.integrity is not None else None
        if held is not None:  # not journaled: the journal is in doubt; ask again once decided
            return _error(verb, read.transaction, held)
        if read.verb == REPLAY:
            return await self._replay(verb, payload, read, received)
        try:
            command = self.gate.admit(read, received)
        except RefusedError as refused:
            return await self._refuse(verb, payload, refused, read, received)
        events: list[TableEvent] = []
        transaction = read.transaction
        record = NewCommand(
            read.inbox_key,
            verb,
            payload.decode("utf-8", "replace"),
            # runs inside the journal transaction, once the events have their numbers
            lambda seqs: response(transaction, verb, seqs, events),
        )
        if isinstance(command, Stored):  # not a core input, not in the inbox: idempotent
            try:
                data = await self.runner.writer.call(confirm_stored, self.runner.journal, command)
            except RefusedError as refused:
                refused.transaction = transaction
                return await self._refuse(verb, payload, refused, read, received)
            if self.on_stored is not None:
                self.on_stored(data, command.pit)
            return {**_error(verb, transaction, ""), "status": "ok", "data": data, "error": None}
        if isinstance(command, JournalAccept):
            try:
                if self.integrity is None:
                    raise RefusedError("this table keeps no integrity alarm")
                return await self.integrity.accept(command, record, events)
            except RefusedError as refused:
                refused.transaction = transaction
                return await self._refuse(verb, payload, refused, read, received)
        appended = await self.runner.submit(command, record, capture=events)
        assert appended is not None
        assert appended.response is not None
        return dict(appended.response)

    async def _replay(
        self, verb: str, payload: bytes, read: Request, received: datetime
    ) -> dict[str, Any]:
        """The pit's replay request: answered from the journal, the core not involved."""
        try:
            if self.replayer is None:
                raise RefusedError("this table has no broker to replay on", read.transaction)
            self.gate.check_fresh(read, received)
            self.gate.authorize(read)
            return await self.replayer.handle(read)
        except RefusedError as refused:
            return await self._refuse(verb, payload, refused, read, received)

    async def _refuse(
        self,
        verb: str,
        payload: bytes,
        refused: RefusedError,
        request: Request | None,
        received: datetime,
    ) -> dict[str, Any]:
        """Journal the refusal (a bounded record of the request) and answer it."""
        hand = self.runner.state.hand
        by = None
        if request is not None:
            by = {"person": request.principal.person, "role": "none"}
        rejected = CommandRejected(
            bounded_text(verb, 64),
            refused.reason,
            bounded_record(payload),
            request.principal.key if request is not None else None,
        )
        event = TableEvent(
            rejected,
            received,
            hand.hand_id if hand is not None else None,
            (),
            Severity.WARN,
            by=by,
        )
        record = None
        transaction = refused.transaction
        if request is not None:  # it proved who sent it: its answer is kept for a redelivery
            reason = refused.reason
            record = NewCommand(
                request.inbox_key,
                verb,
                _bounded_json(payload),
                lambda seqs: response(transaction, verb, seqs, [event], reason),
            )
        appended = await self.runner.record_rejection(event, record)
        if appended.response is not None:
            return dict(appended.response)
        return response(transaction, verb, appended.seqs, [event], refused.reason)

    async def _alarm(self, verb: str, payload: bytes, received: datetime, exc: Exception) -> None:
        hand = self.runner.state.hand
        alarm = IntegrityAlarm(
            "internal error while handling a request",
            command=bounded_text(verb, 64),
            error=bounded_text(f"{type(exc).__name__}: {exc}", 200),
            request=bounded_record(payload),
        )
        event = TableEvent(
            alarm,
            received,
            hand.hand_id if hand is not None else None,
            (),
            Severity.CRITICAL,
        )
        try:
            await self.runner.record_rejection(event, None)
        except Exception:
            log.exception("request.alarm_not_journaled")


def _transaction(read: Read) -> str | None:
    return None if isinstance(read, Replayed) else read.transaction


def _bounded_json(payload: bytes) -> str:
    return json.dumps(bounded_record(payload).public(), separators=(",", ":"))


def shed_event(counts: Mapping[str, int], seconds: float, received: datetime) -> TableEvent:
    """``requests.shed``: requests answered at once and not run (a flood, or a full queue)."""
    shed = RequestsShed(dict(counts), round(seconds, 3))
    return TableEvent(shed, received, None, (), Severity.WARN)
