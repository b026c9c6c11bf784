"""Dealer requests: validated, executed at most once per ``transaction``, always answered.

A request is a JSON object on ``{prefix}/{table}/request/{command}``: the command's fields
(design.md §3.7) and a ``transaction`` chosen by the sender. The answer goes to
``{prefix}/{table}/response/{command}``::

    {"transaction": "…", "status": "ok" | "error", "data": {…}, "error": "…" | null}

* A request whose ``transaction`` was seen before gets the stored response; nothing runs again
  (MQTT delivers a QoS 1 request at least once, and a console retries after a timeout).
* A request that is not valid (not JSON, unknown command, missing or wrong field) is answered
  with an error naming the field, and journaled as a ``command.rejected`` event; the table does
  not change.
* A valid request goes to the core, stamped with the time it was received; the core may still
  refuse it (``command.rejected``, status ``error``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from controller.shell.journal import NewCommand
from controller.shell.table import TableRunner
from controller.table.events import Severity, TableEvent
from controller.table.inputs import COMMANDS, DealerInput

MAX_TRANSACTION = 128


class RequestError(ValueError):
    """A request that is not valid; the message says which field and why."""


def parse_request(verb: str, payload: bytes, received: datetime) -> tuple[str, DealerInput]:
    """``(transaction, command input)`` of a request; RequestError when it is not valid.

    The transaction is read first so that even an invalid request is answered with it.
    """
    body = _body(payload)
    transaction = _transaction(body)
    cls = COMMANDS.get(verb)
    if cls is None:
        raise RequestError(f"unknown command {verb!r} (known: {', '.join(sorted(COMMANDS))})")
    names = {f.name for f in dataclasses.fields(cls)} - {"ts"}
    fields = {k: v for k, v in body.items() if k != "transaction"}
    extra = sorted(set(fields) - names)
    if extra:
        takes = ", ".join(sorted(names)) or "no fields"
        raise RequestError(f"{verb} does not take {', '.join(extra)} (it takes {takes})")
    if "ts" in body:
        raise RequestError("ts: set by the table when the request arrives")
    try:
        command = TypeAdapter(cls).validate_python({**fields, "ts": received})
    except ValidationError as exc:
        raise RequestError(
            "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or verb}: {err['msg']}"
                for err in exc.errors()
            )
        ) from None
    return transaction, command


def transaction_of(payload: bytes) -> str | None:
    """The request's transaction if it has a usable one (to answer even a broken request)."""
    try:
        return _transaction(_body(payload))
    except RequestError:
        return None


def _body(payload: bytes) -> dict[str, Any]:
    try:
        body = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(f"the request is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestError("the request must be a JSON object")
    return body


def _transaction(body: Mapping[str, Any]) -> str:
    transaction = body.get("transaction")
    if transaction is None:
        raise RequestError("transaction: required (a unique id per request)")
    if not isinstance(transaction, str) or not 0 < len(transaction) <= MAX_TRANSACTION:
        raise RequestError(f"transaction: a string of 1 to {MAX_TRANSACTION} characters")
    return transaction


def response(
    transaction: str | None,
    verb: str,
    seqs: list[int],
    events: list[TableEvent],
    error: str | None = None,
) -> dict[str, Any]:
    """The response body: ``ok`` unless the request or the core refused it."""
    rejected = [e for e in events if e.type == "command.rejected"]
    if error is None and rejected:
        error = str(rejected[0].data.get("reason", "rejected"))
    return {
        "transaction": transaction,
        "status": "error" if error else "ok",
        "command": verb,
        "data": {
            "events": [{"seq": seq, "type": e.type} for seq, e in zip(seqs, events, strict=False)],
            "last_seq": seqs[-1] if seqs else None,
        },
        "error": error,
    }


class CommandHandler:
    """Turns requests into inputs (or refusals) and responses."""

    def __init__(self, runner: TableRunner) -> None:
        self.runner = runner

    async def handle(self, verb: str, payload: bytes, received: datetime) -> dict[str, Any]:
        """Handle one request; return the response to publish."""
        transaction = transaction_of(payload)
        if transaction is not None:
            stored = await self.runner.writer.call(
                self.runner.journal.command_response, transaction
            )
            if stored is not None:
                return stored
        try:
            transaction, command = parse_request(verb, payload, received)
        except RequestError as exc:
            return await self._refuse(verb, payload, transaction, str(exc), received)
        events: list[TableEvent] = []
        record = NewCommand(
            transaction,
            verb,
            payload.decode(errors="replace"),
            # runs inside the journal transaction, once the events have their numbers
            lambda seqs: response(transaction, verb, seqs, events),
        )
        appended = await self.runner.submit(command, record, capture=events)
        assert appended is not None
        assert appended.response is not None
        return dict(appended.response)

    async def _refuse(
        self, verb: str, payload: bytes, transaction: str | None, reason: str, received: datetime
    ) -> dict[str, Any]:
        hand = self.runner.state.hand
        event = TableEvent(
            "command.rejected",
            received,
            hand.hand_id if hand is not None else None,
            {"command": verb, "reason": reason},
            (),
            Severity.WARN,
        )
        record = None
        if transaction is not None:
            text = payload.decode(errors="replace")
            record = NewCommand(
                transaction, verb, text, lambda seqs: response(transaction, verb, seqs, [event])
            )
        appended = await self.runner.record_rejection(event, record)
        if appended.response is not None:
            return dict(appended.response)
        return response(transaction, verb, appended.seqs, [event], reason)
