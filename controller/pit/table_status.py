"""What the pit keeps of each table's status, retained state and devices (births and deaths, the
snapshot a table last retained), and of the messages it refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from controller.pit.db import Db
from controller.pit.rows import (
    alarm_list,
    last_per_key,
    text_or_none,
    typed_columns,
)

#: Whether a status (``excluded``) is of the table's current connection or a newer one than
#: the row's (docs/pit.md, "Births and deaths"). In one journal, the higher ``bdseq`` is the
#: newer connection, and a connection's death comes after its birth (a birth republished
#: while the table is up updates it). Between two journals, the status made later by the
#: table's clock: a new journal's birth is newer than the last status of the journal before
#: it, and a late Will of that journal's last connection, made when that connection began, is
#: older than the new journal's birth.
NEWER = (
    "(COALESCE(tables.journal, '') = excluded.journal AND (excluded.bdseq > tables.bdseq "
    "OR (excluded.bdseq = tables.bdseq AND (excluded.online = 0 OR tables.online = 1)))) "
    "OR (COALESCE(tables.journal, '') <> excluded.journal AND (tables.status_ts IS NULL "
    "OR excluded.status_ts > tables.status_ts))"
)


class _Status(NamedTuple):
    """A birth or death, as :meth:`TableStatus.record_statuses` takes it."""

    table: str
    state: str
    bdseq: int
    journal: str
    epoch: str | None
    ts: str | None
    body: Mapping[str, Any]


def _name(value: Any) -> bool:
    """A journal's or an epoch's name, or none given."""
    return value is None or (isinstance(value, str) and 0 < len(value) <= 64)


class TableStatus:
    """Statuses, states and refused messages of a :class:`~controller.pit.store.Store`."""

    db: Db

    # ------------------------------------------------------------------ status and state

    def record_status(self, table: str, body: Mapping[str, Any], now: float) -> bool:
        """A birth or death on a table's status topic; False when it was known already."""
        new, refused = self.record_statuses([(table, body)], now)
        if refused:
            raise ValueError(refused[0][2])
        return bool(new)

    def record_statuses(
        self, statuses: Sequence[tuple[str, Mapping[str, Any]]], now: float
    ) -> tuple[list[tuple[str, str]], list[tuple[str, Mapping[str, Any], str]]]:
        """Births and deaths, in one transaction: the new ones (table, ``online`` or
        ``offline``), and those refused.

        A birth or death is one connection's, ``(journal, bdseq)``: ``bdseq`` counts in the
        journal the status names (``''`` for a table too old to name one), and a journal that
        starts again counts from 1. The table's row follows its newest connection
        (:data:`NEWER`); every status is kept in ``births`` all the same. A status republished
        on the same connection (its degraded state or alarms changed) is no new birth, but the
        table's row takes its ``degraded`` and ``alarms``.
        """
        db = self.db
        good: list[_Status] = []
        refused: list[tuple[str, Mapping[str, Any], str]] = []
        for table, body in statuses:
            state, bdseq = body.get("state"), body.get("bdseq")
            journal, epoch = body.get("journal"), body.get("epoch")
            if state not in ("online", "offline") or not isinstance(bdseq, int):
                reason = "a status needs state online/offline and an integer bdseq"
                refused.append((table, body, reason))
                continue
            if not (_name(journal) and _name(epoch)):
                reason = "a status's journal and epoch are names (text of 1 to 64 characters)"
                refused.append((table, body, reason))
                continue
            ts = text_or_none(body.get("ts"))
            good.append(_Status(table, str(state), bdseq, journal or "", epoch, ts, body))
        if not good:
            return [], refused
        good.sort(key=lambda g: (g.table, g.ts or "", g.journal, g.bdseq, g.state == "offline"))
        with db.transaction():  # births, then tables: the order every transaction takes
            db.changed({g.table for g in good})  # every pit's live pages hear of it with the commit
            rows = db.returning_many(
                "INSERT INTO births (table_id, journal, bdseq, state, epoch, ts, body, "
                "received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING RETURNING bdseq",
                [
                    (g.table, g.journal, g.bdseq, g.state, g.epoch, g.ts, json.dumps(g.body), now)
                    for g in good
                ],
            )
            db.many(
                "INSERT INTO tables (table_id, online, bdseq, journal, status_ts, version, build, "
                "degraded, alarms, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (table_id) "
                "DO UPDATE SET online = excluded.online, bdseq = excluded.bdseq, "
                "journal = excluded.journal, status_ts = excluded.status_ts, "
                "version = excluded.version, build = excluded.build, "
                "degraded = excluded.degraded, alarms = excluded.alarms, "
                f"updated_at = excluded.updated_at WHERE {NEWER}",
                [
                    (
                        g.table,
                        1 if g.state == "online" else 0,
                        g.bdseq,
                        g.journal,
                        g.ts,
                        text_or_none(g.body.get("version")),
                        build_of(g.body.get("build")),
                        1 if g.body.get("degraded") is True else 0,
                        json.dumps(alarm_list(g.body.get("alarms")), separators=(",", ":")),
                        now,
                    )
                    for g in good
                ],
            )
        new = [(g.table, g.state) for g, row in zip(good, rows, strict=True) if row is not None]
        return new, refused

    def record_state(
        self, table: str, body: Mapping[str, Any], now: float, streams: Iterable[str]
    ) -> None:
        """A table's retained snapshot: the table now, and the last seq it has published."""
        refused = self.record_states([(table, body)], now, streams)
        if refused:
            raise ValueError(refused[0][2])

    def record_states(
        self,
        states: Sequence[tuple[str, Mapping[str, Any]]],
        now: float,
        streams: Iterable[str],
    ) -> list[tuple[str, Mapping[str, Any], str]]:
        """Tables' retained snapshots, in one transaction; those refused."""
        db = self.db
        good: list[tuple[str, str, int, Mapping[str, Any]]] = []
        refused: list[tuple[str, Mapping[str, Any], str]] = []
        for table, body in states:
            epoch, seq = body.get("epoch"), body.get("seq")
            if not isinstance(epoch, str) or not isinstance(seq, int):
                refused.append((table, body, "a state needs an epoch and an integer seq"))
                continue
            good.append((table, epoch, seq, body))
        if not good:
            return refused
        good.sort(key=lambda g: (g[0], g[2]))
        known: dict[tuple[str, str, str], int] = {}
        for table, epoch, seq, _ in good:
            for stream in streams:
                key = (table, epoch, stream)
                known[key] = max(known.get(key, 0), seq)
        rows = []
        for table, epoch, seq, body in good:
            hand = body.get("hand") if isinstance(body.get("hand"), dict) else None
            hand_id = text_or_none(hand.get("hand_id")) if hand else None
            phase = text_or_none(hand.get("phase")) if hand else None
            text = json.dumps(body, separators=(",", ":"))
            rows.append((table, epoch, text, seq, hand_id, phase, now))
        g = db.greatest
        with db.transaction():  # streams before tables: the order every transaction takes
            db.changed({table for table, *_ in good})
            db.insert(
                "streams",
                typed_columns("table_id epoch stream known_last"),
                [(t, e, st, seq) for (t, e, st), seq in sorted(known.items())],
                "ON CONFLICT (table_id, epoch, stream) DO UPDATE SET "
                f"known_last = {g}(streams.known_last, excluded.known_last)",
            )
            db.insert(
                "tables",
                typed_columns("table_id epoch state state_seq hand_id phase updated_at"),
                last_per_key(rows, 1),  # a table's newest snapshot of the batch
                "ON CONFLICT (table_id) DO UPDATE SET "
                "state = excluded.state, state_seq = excluded.state_seq, "
                "hand_id = excluded.hand_id, phase = excluded.phase, "
                "epoch = COALESCE(tables.epoch, excluded.epoch), updated_at = excluded.updated_at "
                "WHERE tables.state_seq IS NULL OR tables.epoch IS NULL "
                "OR tables.epoch <> excluded.epoch OR excluded.state_seq >= tables.state_seq",
            )
        return refused

    def record_known_last(self, table: str, epoch: str, stream: str, last: int) -> None:
        """The table said its journal goes up to ``last`` (a replay's answer)."""
        g = self.db.greatest
        self.db.execute(
            "INSERT INTO streams (table_id, epoch, stream, known_last) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (table_id, epoch, stream) DO UPDATE SET "
            f"known_last = {g}(streams.known_last, excluded.known_last)",
            (table, epoch, stream, last),
        )

    def record_reject(
        self,
        topic: str,
        size: int,
        digest: str,
        head: str,
        reason: str,
        table: str | None = None,
        now: float | None = None,
    ) -> None:
        """A message that is not what its topic carries (kept as a bounded record), and the
        table it came from."""
        self.db.execute(
            "INSERT INTO rejects (topic, size, sha256, head, reason, received_at, table_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                topic[:300],
                size,
                digest,
                head,
                reason[:300],
                time.time() if now is None else now,
                None if table is None else table[:200],
            ),
        )

    def rejects(self, *, table: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The refused messages, newest first (of one table)."""
        where = "WHERE table_id = ? " if table is not None else ""
        rows = self.db.all(
            "SELECT id, table_id, topic, size, sha256, head, reason, received_at FROM rejects "
            f"{where}ORDER BY received_at DESC, id DESC LIMIT ?",
            (*(() if table is None else (table,)), limit),
        )
        names = ("id", "table_id", "topic", "size", "sha256", "head", "reason", "received_at")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def reject_counts(self, since: float) -> dict[str, int]:
        """Table → messages refused from it since ``since`` (Unix time)."""
        rows = self.db.all(
            "SELECT table_id, COUNT(*) FROM rejects WHERE received_at >= ? "
            "AND table_id IS NOT NULL GROUP BY table_id",
            (since,),
        )
        return {r[0]: int(r[1]) for r in rows}


def build_of(value: Any) -> str | None:
    """A birth's build identity as the tables' row keeps it (JSON), or None: none given, or not
    of its shape (a version and a SHA-256 as text, ``editable`` true or false, ``modified`` a
    count when given)."""
    if not isinstance(value, dict):
        return None
    version, digest, editable = (
        value.get("version"),
        value.get("record_sha256"),
        value.get("editable"),
    )
    if not isinstance(version, str) or not isinstance(editable, bool):
        return None
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64):
        return None
    modified = value.get("modified")
    if modified is not None and not (type(modified) is int and modified >= 0):
        return None
    build: dict[str, Any] = {
        "version": version[:100],
        "record_sha256": digest,
        "editable": editable,
    }
    if modified is not None:
        build["modified"] = modified
    return json.dumps(build, separators=(",", ":"))
