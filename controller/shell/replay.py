"""The ``replay`` request: the pit asks the table for events it never received.

A pit that finds a range of seqs missing (``docs/pit.md``, "Gap repair") sends a signed request
on ``{prefix}/{table}/request/replay``::

    {"transaction": "…", "pit": "pit-1", "epoch": "3f9c…", "from_seq": 120, "to_seq": 180,
     "stream": "public", "auth": {…}}

It passes the gate like any request (signature, freshness, the ``pit`` role; ``stream =
"secure"`` also needs the surveillance role), but it is not an input of the core: nothing is
journaled when it is answered, and the table does not change. The table reads the range from its
journal and publishes each event, as it published it live but marked ``historical``, on
``{prefix}/{table}/replay/{pit}`` (``{prefix}/{table}/secure/replay/{pit}`` for the secure view),
then answers on ``response/replay``::

    {"status": "ok", "data": {"epoch", "from_seq", "to_seq", "sent", "missing": [[a, b]…],
     "last_seq"}}

``from_seq`` and ``to_seq`` number the events of ``epoch`` as they went out (from 1 in each
epoch, docs/operations.md "The journal's integrity"); the journal's epochs table maps them to its
own keys, so any epoch the journal holds can be replayed, the current one or one it has closed
(rolled back, or accepted after an integrity alarm): a closed epoch is the journal's history,
read from its live rows and the archive segments still on disk (``Journal.events_between``),
with the ids its events had. ``last_seq`` is the epoch's last number so far (a closed epoch's
for good), ``missing`` the ranges the journal does not hold (pruned). Only an epoch the journal
never had (another journal's: a table whose journal started again, on a new PC or a new state
directory), or a range past the epoch's last event, is answered ``error`` with the reason (and
the epochs it has); the table does not change. A refusal before
that (unsigned, another role, a bad field) is journaled as ``command.rejected``, as every refused
request is. While an integrity alarm holds the table a replay is answered with the alarm: the
journal it would read is in doubt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.authority import Role
from controller.envelope import CHAIN_STAMPED, chain_stamp, envelope
from controller.mqtt import publish_properties
from controller.shell.gate import RefusedError, Request
from controller.shell.journal import Epoch, Journal
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter
from controller.table.codec import event_from_json

VERB = "replay"
MAX_EVENTS = 1000


class ReplayRequest(BaseModel):
    """``replay``: publish the journal's events ``from_seq`` to ``to_seq`` of ``epoch`` again."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    pit: str = Field(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="the asking pit: the answer's topic level"
    )
    epoch: str = Field(min_length=1, max_length=64, description="the journal's epoch")
    from_seq: int = Field(ge=1, description="the first seq wanted")
    to_seq: int = Field(ge=1, description=f"the last seq wanted (at most {MAX_EVENTS} in all)")
    stream: Literal["public", "secure"] = Field(
        default="public", description="secure: the surveillance view (surveillance role too)"
    )

    @model_validator(mode="after")
    def _range(self) -> ReplayRequest:
        if self.to_seq < self.from_seq:
            raise ValueError("to_seq is before from_seq")
        if self.to_seq - self.from_seq + 1 > MAX_EVENTS:
            raise ValueError(f"at most {MAX_EVENTS} events per request")
        return self


def parse(request: Request) -> ReplayRequest:
    """The request's fields, strictly typed, and the role the secure view needs."""
    try:
        replay = ReplayRequest.model_validate(request.fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or VERB}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise RefusedError(problems, request.transaction) from None
    if replay.stream == "secure" and Role.SURVEILLANCE not in request.principal.roles:
        raise RefusedError(
            f"{request.principal.person} may not replay the secure stream (surveillance only)",
            request.transaction,
        )
    return replay


@dataclass(frozen=True)
class Message:
    """One message to publish: topic, payload, MQTT properties."""

    topic: str
    payload: bytes
    properties: Any


def epoch_span(journal: Journal, name: str) -> tuple[Epoch, int] | None:
    """Epoch ``name`` of the journal and its number of events so far (None: not this
    journal's)."""
    epochs = journal.epochs
    for index, epoch in enumerate(epochs):
        if epoch.name == name:
            after = epochs[index + 1].first_seq if index + 1 < len(epochs) else None
            last_key = after - 1 if after is not None else journal.last_seq()
            return epoch, max(0, last_key - epoch.first_seq + 1)
    return None


def answer(
    journal: Journal, topics: Topics, replay: ReplayRequest, transaction: str
) -> tuple[list[Message], dict[str, Any]]:
    """The replayed events' messages and the response (runs on the journal's thread)."""
    span = epoch_span(journal, replay.epoch)
    if span is None:
        known = ", ".join(e.name for e in journal.epochs)
        reason = f"epoch {replay.epoch!r} is not this journal's (its epochs: {known})"
        return [], _response(transaction, "error", {"epochs": known.split(", ")}, reason)
    epoch, count = span
    if replay.to_seq > count:
        reason = (
            f"epoch {replay.epoch!r} has {count} events so far: "
            f"{replay.from_seq}..{replay.to_seq} goes past its last"
        )
        return [], _response(transaction, "error", {"epoch": epoch.name, "last_seq": count}, reason)
    secure = replay.stream == "secure"
    base = f"{topics.base}/secure/replay" if secure else f"{topics.base}/replay"
    topic = f"{base}/{replay.pit}"
    offset = epoch.first_seq - 1  # journal key = offset + number in the epoch
    messages = []
    found: list[int] = []
    for key, body in journal.events_between(offset + replay.from_seq, offset + replay.to_seq):
        event = event_from_json(body)
        chain = journal.chain_of(key) if event.type in CHAIN_STAMPED else None
        document = envelope(
            event,
            table_id=topics.table,
            epoch=epoch.name,
            seq=key - offset,
            historical=True,
            secure=secure,
            chain=None if chain is None else chain_stamp(event.type, chain.pos, chain.hash),
        )
        properties = publish_properties(
            content_type="application/json", user=("event_id", document["event_id"])
        )
        payload = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
        messages.append(Message(topic, payload, properties))
        found.append(key - offset)
    data = {
        "epoch": epoch.name,
        "from_seq": replay.from_seq,
        "to_seq": replay.to_seq,
        "sent": len(found),
        "missing": _missing(replay.from_seq, replay.to_seq, found),
        "last_seq": count,
    }
    return messages, _response(transaction, "ok", data, None)


class Replayer:
    """Answers ``replay`` requests from the journal, publishing through the broker link."""

    def __init__(
        self, writer: JournalWriter, topics: Topics, publish: Callable[[Message], None]
    ) -> None:
        self.writer = writer
        self.topics = topics
        self.publish = publish

    async def handle(self, request: Request) -> dict[str, Any]:
        """Check the fields (RefusedError), publish the events, return the response."""
        replay = parse(request)
        messages, response = await self.writer.call(
            answer, self.writer.journal, self.topics, replay, request.transaction
        )
        for message in messages:
            self.publish(message)
        return response


def _missing(first: int, last: int, found: list[int]) -> list[list[int]]:
    """The ranges of ``first..last`` not in ``found`` (sorted)."""
    ranges: list[list[int]] = []
    expected = first
    for seq in found:
        if seq > expected:
            ranges.append([expected, seq - 1])
        expected = seq + 1
    if expected <= last:
        ranges.append([expected, last])
    return ranges


def _response(
    transaction: str, status: str, data: Mapping[str, Any], error: str | None
) -> dict[str, Any]:
    return {
        "transaction": transaction,
        "status": status,
        "command": VERB,
        "data": dict(data),
        "error": error,
    }
