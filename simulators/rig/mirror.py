"""The daemon's table as its journal tells it: read while the daemon writes, input by input.

The core is deterministic, so applying the journaled inputs in order to the table the journal
began with gives the daemon's own state, exactly. That is how the rig's automatic dealer knows
whose turn it is and which hole group comes next without asking the daemon anything, and how it
knows the daemon has taken what the devices reported: it waits until the input shows up.

The journal is SQLite in WAL mode; a read-only connection sees each committed transaction whole
(an input and its events are committed together). Waiting is polling with a deadline, on the
event loop (each look is a quick local read).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config import TableSection
from controller.envelope import envelope
from controller.profiles import load_profile
from controller.shell.table import initial_state
from controller.table.codec import event_from_json, input_from_json
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import Input
from controller.table.state import TableState

POLL = 0.002
POLL_IDLE = 0.02  # what the polling slows down to while nothing new is journaled


def _backoff(idle: int) -> float:
    """The next pause: POLL while the journal grows, up to POLL_IDLE while it does not (a busy
    machine running several rigs is not kept busier by their waiting)."""
    return min(POLL * (1 << min(idle, 8)), POLL_IDLE)


class MirrorError(RuntimeError):
    """The journal did not show what was waited for, or the replay disagrees with it."""


class JournalReader:
    """A read-only view of a daemon's journal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        self.conn.execute("PRAGMA busy_timeout=5000")

    def meta(self) -> dict[str, str]:
        """The journal's meta table (table id, epoch, genesis)."""
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def read(
        self, after_input: int, after_seq: int
    ) -> tuple[list[tuple[int, str]], list[tuple[int, int | None, str]]]:
        """New inputs and new events, from one consistent snapshot of the journal."""
        self.conn.execute("BEGIN")
        try:
            inputs = self.conn.execute(
                "SELECT id, body FROM inputs WHERE id > ? ORDER BY id", (after_input,)
            ).fetchall()
            events = self.conn.execute(
                "SELECT seq, input_id, body FROM events WHERE seq > ? ORDER BY seq", (after_seq,)
            ).fetchall()
        finally:
            self.conn.execute("COMMIT")
        return inputs, events

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


async def open_reader(path: Path, timeout: float = 20.0) -> JournalReader:
    """Open the journal once the daemon created it (polling with a deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        if path.exists():
            try:
                reader = JournalReader(path)
                if reader.meta().get("epoch"):
                    return reader
                reader.close()
            except sqlite3.DatabaseError:
                pass
        if time.monotonic() > deadline:
            raise MirrorError(f"no journal at {path} after {timeout} s")
        await asyncio.sleep(POLL)


@dataclass
class Applied:
    """One journaled input and the events it caused."""

    key: int
    item: Input
    events: list[TableEvent]


@dataclass
class TableRun:
    """What the mirror knows: the state now, every input and every event (with its seq)."""

    state: TableState
    inputs: list[Input] = field(default_factory=list)
    events: list[TableEvent] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)


class Mirror:
    """The daemon's table, rebuilt from its journal as it grows."""

    def __init__(self, reader: JournalReader) -> None:
        self.reader = reader
        meta = reader.meta()
        self.table_id = meta["table_id"]
        self.epoch = meta["epoch"]
        genesis: dict[str, Any] = json.loads(meta.get("genesis", "{}"))
        profile = load_profile(genesis["profile"]).with_overrides(genesis.get("house_rules", {}))
        manifest = TableSection.model_validate(
            {
                "id": genesis["table_id"],
                "stacks": genesis["stacks"],
                "button": genesis["button"],
                "blinds": genesis["blinds"],
                "deck": genesis.get("deck", "house-a"),
            }
        ).manifest()
        self.run = TableRun(initial_state(genesis, profile, manifest))
        self.applied: list[Applied] = []
        self.last_input = 0
        self.last_seq = 0
        self._by_seq: dict[int, TableEvent] = {}

    @property
    def state(self) -> TableState:
        """The table after the last input read."""
        return self.run.state

    def catch_up(self) -> list[Applied]:
        """Apply every input journaled since the last call; return them with their events."""
        inputs, events = self.reader.read(self.last_input, self.last_seq)
        by_input: dict[int | None, list[TableEvent]] = {}
        for seq, input_id, body in events:
            event = event_from_json(body)
            by_input.setdefault(input_id, []).append(event)
            self._by_seq[seq] = event
            self.run.events.append(event)
            self.run.seqs.append(seq)
            self.last_seq = seq
        applied = []
        for key, body in inputs:
            item = input_from_json(body)
            self.run.state, replayed = apply(self.run.state, item)
            journaled = by_input.get(key, [])
            if [e.type for e in replayed] != [e.type for e in journaled]:
                raise MirrorError(
                    f"the replay of input {key} ({type(item).__name__}) gives "
                    f"{[e.type for e in replayed]}, the journal has {[e.type for e in journaled]}"
                )
            self.run.inputs.append(item)
            self.last_input = key
            applied.append(Applied(key, item, journaled))
        self.applied.extend(applied)
        return applied

    def mark(self) -> int:
        """A place in the inputs read so far, to wait for what comes after it."""
        self.catch_up()
        return len(self.applied)

    async def wait_for(
        self, wanted: Callable[[Input], bool], what: str, since: int, timeout: float = 10.0
    ) -> Applied:
        """The first input after ``since`` (a :meth:`mark`) that ``wanted`` accepts, reading on
        until the daemon journals one."""
        deadline = time.monotonic() + timeout
        position = since
        idle = 0
        while True:
            self.catch_up()
            for applied in self.applied[position:]:
                if wanted(applied.item):
                    return applied
            idle = 0 if len(self.applied) > position else idle + 1
            position = len(self.applied)
            if time.monotonic() > deadline:
                raise MirrorError(f"the daemon did not journal {what} within {timeout} s")
            await asyncio.sleep(_backoff(idle))

    async def wait_seq(self, seq: int, timeout: float = 10.0) -> None:
        """Read on until event ``seq`` was read."""
        deadline = time.monotonic() + timeout
        idle = 0
        while True:
            before = self.last_seq
            self.catch_up()
            if self.last_seq >= seq:
                return
            idle = 0 if self.last_seq > before else idle + 1
            if time.monotonic() > deadline:
                raise MirrorError(f"the daemon did not journal event {seq} within {timeout} s")
            await asyncio.sleep(_backoff(idle))

    def events_at(self, seqs: list[int]) -> list[TableEvent]:
        """The events with these sequence numbers (those read so far)."""
        return [self._by_seq[s] for s in seqs if s in self._by_seq]

    def envelopes(self, upto: int | None = None) -> list[dict[str, Any]]:
        """Every event read so far (up to ``upto``), as surveillance-view envelopes."""
        return [
            envelope(event, table_id=self.table_id, epoch=self.epoch, seq=seq, secure=True)
            for seq, event in zip(self.run.seqs, self.run.events, strict=True)
            if upto is None or seq <= upto
        ]

    def close(self) -> None:
        """Close the journal."""
        self.reader.close()
