"""What the daemon's MQTT link publishes, as bytes: the birth and death bodies, the retained head,
each event's envelope per stream, and the checks on what it reads back (the connection is in
controller/shell/mqtt.py, the drain of the outbox in controller/shell/mqtt_drain.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from controller import __version__, strict_json
from controller.build_identity import birth_build
from controller.envelope import chain_stamp, envelope
from controller.mqtt import Properties, publish_properties
from controller.shell.journal import OutboxRow
from controller.table.codec import event_from_json, rfc3339


def compact(body: dict[str, Any]) -> bytes:
    """``body`` as the link sends it: JSON without spaces."""
    return json.dumps(body, separators=(",", ":")).encode()


def status_body(
    state: str,
    *,
    bdseq: int,
    journal: str,
    epoch: str,
    simulated: bool,
    require_signed: bool,
    alarms: list[dict[str, Any]],
) -> dict[str, Any]:
    """The birth (``online``) or death (``offline``) body of the connection numbered ``bdseq``.

    ``journal`` names the journal the connection's ``bdseq`` counts in (its origin, the
    journal's first epoch: a new journal counts from 1 again), ``epoch`` the epoch its events
    are in now. ``degraded``: the table is up but takes no input (its journal's disk is full, or
    an integrity alarm holds it); the ``alarms`` say why, and what else is wrong.
    """
    online = state == "online"
    raised = alarms if online else []
    return {
        "state": state,
        "bdseq": bdseq,
        "journal": journal,
        "epoch": epoch,
        "ts": rfc3339(datetime.now(UTC)),
        "version": __version__,
        "build": birth_build(),
        "simulated": simulated,
        "require_signed": require_signed,
        "degraded": any(degrading(a) for a in raised),
        "alarms": raised,
    }


def degrading(alarm: dict[str, Any]) -> bool:
    """Whether a raised alarm makes the table degraded (it takes no input) rather than only
    warned: a full journal disk, or an integrity alarm that holds the table."""
    return alarm.get("alarm") == "journal.full" or alarm.get("held") is True


def head_body(journal: str, table: str, row: OutboxRow) -> dict[str, Any]:
    """The retained head naming the event of ``row``: the journal it comes from (its origin),
    the event's id and its place in the chain."""
    epoch, seq = row.event
    return {
        "journal": journal,
        "epoch": epoch,
        "seq": seq,
        "event_id": f"{table}:{epoch}:{seq}",
        "pos": row.chain.pos,
        "hash": row.chain.hash,
        "ts": rfc3339(datetime.now(UTC)),
    }


def event_messages(
    rows: list[OutboxRow], table: str, historical_after_ns: int
) -> Iterator[tuple[OutboxRow, bytes, Properties, bool]]:
    """Each outbox row of one event with its payload, its properties and whether it is
    historical (judged as it is about to go): the event is read back once for all its
    streams, and its properties (the same ``event_id``) are made once."""
    first = rows[0]
    event = event_from_json(first.body)
    epoch, seq = first.event
    event_id = f"{table}:{epoch}:{seq}"
    properties = publish_properties(content_type="application/json", user=("event_id", event_id))
    chain = chain_stamp(event.type, first.chain.pos, first.chain.hash)
    for row in rows:
        late = time.time_ns() - row.created_ns > historical_after_ns
        historical = not row.live or late
        body = envelope(
            event,
            table_id=table,
            epoch=epoch,
            seq=seq,
            historical=historical,
            secure=row.stream == "secure",
            chain=chain,
        )
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        yield row, payload, properties, historical


def by_event(rows: list[OutboxRow]) -> list[list[OutboxRow]]:
    """Consecutive outbox rows grouped by event (its public and secure messages)."""
    groups: list[list[OutboxRow]] = []
    for row in rows:
        if groups and groups[-1][0].seq == row.seq:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def plain_level(verb: str) -> bool:
    """A short topic level of letters, digits and underscores (every command's is)."""
    return 0 < len(verb) <= 64 and verb.replace("_", "").isalnum() and verb.isascii()


def json_object(payload: Any) -> dict[str, Any] | None:
    """A received payload read as a JSON object (None: anything else)."""
    try:
        body = strict_json.loads(payload if isinstance(payload, bytes | str) else b"")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
