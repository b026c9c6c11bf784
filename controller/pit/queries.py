"""What the API and the console read from the pit's store: tables, epochs, events, hands, holds,
alarms, births, gaps and counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from controller.pit.db import Db, Row
from controller.pit.partitions import BY_MONTH, KINDS, MONTH, Partitions, add_months, of_kind
from controller.pit.query_rows import (
    AlarmRow,
    ArchiveKindRow,
    ArchiveRow,
    BirthRow,
    EpochRow,
    HandRow,
    HoldRow,
    RulingRow,
    TableRow,
)
from controller.pit.reports.shuffler_audit import shuffler_alarms
from controller.pit.rows import (
    STREAM_COLUMN,
    Stream,
    alarm_list,
    amount_list,
    envelopes,
    json_object,
    json_value,
    seat_chips,
    seat_list,
)

#: A hand's row as the readers select it (its order is :func:`_hand`'s).
_HAND_COLUMNS = (
    "h.table_id, h.epoch, h.hand_id, h.started_ts, h.ended_ts, h.outcome, h.button, h.seats, "
    "h.blinds, h.ante, h.stacks_before, h.stacks_after, h.payouts, h.pot, h.rake, h.first_seq, "
    "h.last_seq, h.rake_pots, h.jackpot, h.rake_waived, h.time_collected, h.straddles, "
    "h.ante_seat, h.runouts, h.month"
)


class Queries:
    """The readers of a :class:`~controller.pit.store.Store`."""

    db: Db

    # ------------------------------------------------------------------ reading

    def tables(self, table: str | None = None) -> list[TableRow]:
        """Every table the pit has heard of (or only ``table``), with its open holds and gaps."""
        where = "WHERE t.table_id = ? " if table is not None else ""
        rows = self.db.all(
            "SELECT t.table_id, t.online, t.bdseq, t.status_ts, t.version, t.epoch, "
            "(SELECT COALESCE(MAX(s.max_seq), 0) FROM streams s WHERE s.table_id = t.table_id "
            "AND s.epoch = t.epoch), "
            "t.hand_id, t.phase, t.state_seq, "
            "(SELECT COUNT(*) FROM holds h WHERE h.table_id = t.table_id "
            "AND h.resolved_seq IS NULL AND h.raised_seq IS NOT NULL), "
            "(SELECT COUNT(*) FROM gaps g WHERE g.table_id = t.table_id AND g.closed_at IS NULL), "
            "t.degraded, t.alarms, (SELECT s.contiguous FROM streams s WHERE s.table_id = "
            "t.table_id AND s.epoch = t.epoch AND s.stream = 'public'), t.build, t.journal "
            f"FROM tables t {where}ORDER BY t.table_id",
            () if table is None else (table,),
        )
        audit = shuffler_alarms(self.db, table)  # SHF-RAND: the pit's own, beside the status's
        return [
            {
                "table_id": r[0],
                "online": None if r[1] is None else bool(r[1]),
                "bdseq": r[2],
                "status_ts": r[3],
                "version": r[4],
                "epoch": r[5],
                "last_seq": r[6],
                "hand_id": r[7],
                "phase": r[8],
                "state_seq": r[9],
                "open_holds": int(r[10]),
                "open_gaps": int(r[11]),
                "degraded": bool(r[12]),
                "alarms": alarm_list(json_value(r[13])) + audit.get(r[0], []),
                "stored_seq": int(r[14] or 0),
                "build": json_object(json_value(r[15])) or None,
                "journal": r[16] or None,
            }
            for r in rows
        ]

    def table_state(self, table: str) -> dict[str, Any] | None:
        """A table's last retained snapshot."""
        row = self.db.one("SELECT state FROM tables WHERE table_id = ?", (table,))
        state = json_value(row[0]) if row else None
        return state if isinstance(state, dict) else None

    def current_epoch(self, table: str) -> str | None:
        """The epoch the table's row follows (its newest)."""
        row = self.db.one("SELECT epoch FROM tables WHERE table_id = ?", (table,))
        return row[0] if row else None

    def epochs(self, table: str) -> list[EpochRow]:
        """Every epoch of a table, oldest first."""
        rows = self.db.all(
            "SELECT epoch, first_ts, first_seen, previous, reason FROM epochs WHERE table_id = ? "
            "ORDER BY first_seen",
            (table,),
        )
        return [
            EpochRow(epoch=r[0], first_ts=r[1], first_seen=r[2], previous=r[3], reason=r[4])
            for r in rows
        ]

    def events(
        self, table: str, epoch: str, since_seq: int, limit: int, stream: Stream = "public"
    ) -> list[str]:
        """The stored envelopes after ``since_seq``, in seq order (JSON text each)."""
        column = STREAM_COLUMN[stream]
        rows = self.db.all(
            f"SELECT {column} FROM events WHERE table_id = ? AND epoch = ? AND seq > ? "
            f"AND {column} IS NOT NULL ORDER BY seq LIMIT ?",
            (table, epoch, since_seq, limit),
        )
        return [r[0] for r in rows]

    def event_keys(self, table: str | None = None) -> list[tuple[str, str, int]]:
        """Every stored event's key (for checks and benchmarks), in order."""
        if table is None:
            rows = self.db.all("SELECT table_id, epoch, seq FROM events ORDER BY 1, 2, 3")
        else:
            rows = self.db.all(
                "SELECT table_id, epoch, seq FROM events WHERE table_id = ? ORDER BY 2, 3",
                (table,),
            )
        return [(r[0], r[1], int(r[2])) for r in rows]

    def holds(
        self,
        *,
        open_only: bool = True,
        table: str | None = None,
        resolved_last: int | None = None,
    ) -> list[HoldRow]:
        """Holds, oldest first (open ones: raised and not resolved); ``resolved_last``: that
        many resolved ones instead, the last resolved first."""
        where = ["raised_seq IS NOT NULL"]
        params: list[Any] = []
        order = "raised_ts, table_id, raised_seq"
        if open_only:
            where.append("resolved_seq IS NULL")
        if table is not None:
            where.append("table_id = ?")
            params.append(table)
        if resolved_last is not None:
            where.append("resolved_seq IS NOT NULL")
            order = f"resolved_ts DESC, table_id LIMIT {int(resolved_last)}"
        rows = self.db.all(
            "SELECT table_id, epoch, hold, hand_id, rule, reason, ruling, seat, evidence, "
            "raised_ts, raised_seq, resolved_ts, resolved_seq, decision, resolved_by, person, "
            f"role FROM holds WHERE {' AND '.join(where)} ORDER BY {order}",
            params,
        )
        return [
            {
                "table_id": r[0],
                "epoch": r[1],
                "hold": r[2],
                "hand_id": r[3],
                "rule": r[4],
                "reason": r[5],
                "ruling": r[6],
                "seat": r[7],
                "evidence": json_object(json_value(r[8])),
                "raised_ts": r[9],
                "raised_seq": r[10],
                "resolution": None
                if r[12] is None
                else {
                    "ts": r[11],
                    "seq": r[12],
                    "decision": r[13],
                    "by": r[14],
                    "person": r[15],
                    "role": r[16],
                },
            }
            for r in rows
        ]

    def hands(
        self,
        *,
        table: str | None = None,
        rule: str | None = None,
        since: str | None = None,
        until: str | None = None,
        hand_id: str | None = None,
        epoch: str | None = None,
        limit: int = 200,
    ) -> list[HandRow]:
        """Hands, newest first, by table, rule, start time, hand id and epoch (one hand is
        ``(table_id, epoch, hand_id)``: a table whose journal starts again numbers its hands
        from 1 again, in another epoch)."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("h.table_id", table), ("h.hand_id", hand_id), ("h.epoch", epoch)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if rule is not None:
            # a hand's rule IDs are filed under its own month: one partition to look in
            same_month = " AND r.month = h.month" if self.db.dialect == "postgresql" else ""
            where.append(
                "EXISTS (SELECT 1 FROM hand_rules r WHERE r.table_id = h.table_id AND "
                f"r.epoch = h.epoch AND r.hand_id = h.hand_id AND r.rule = ?{same_month})"
            )
            params.append(rule)
        if since is not None:
            where.append("h.started_ts >= ?")
            params.append(since)
        if until is not None:
            where.append("h.started_ts < ?")
            params.append(until)
        if self.db.dialect == "postgresql":
            # a hand is filed under the month of its first event stored: its start's, or the
            # next when it went on over the turn of a month; the other months' partitions are
            # not read
            for bound, moved, compare in ((since, -1, ">="), (until, 1, "<=")):
                if bound is not None and MONTH.match(bound[:7]):
                    where.append(f"h.month {compare} ?")
                    params.append(add_months(bound[:7], moved))
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self.db.all(
            f"SELECT {_HAND_COLUMNS} FROM hands h {clause} "
            "ORDER BY h.started_ts DESC, h.table_id, h.hand_id, h.first_seq DESC, h.epoch "
            "LIMIT ?",
            [*params, limit],
        )
        hands = [_hand(r) for r in rows]
        self._attach(hands, [r[24] for r in rows])
        return hands

    def hands_named(
        self, hand_id: str, *, table: str | None = None, epoch: str | None = None
    ) -> list[HandRow]:
        """The hands of id ``hand_id`` (of ``table``, in ``epoch``), newest first: one, unless
        a table's journal started again and numbered its hands from 1 again (or a hand went on
        into a new epoch)."""
        return self.hands(hand_id=hand_id, table=table, epoch=epoch, limit=50)

    def _attach(self, hands: list[HandRow], months: list[str | None]) -> None:
        """Each hand's rule IDs and rulings: one read of each for all the hands (on a
        partitioned store, of the months the hands are filed under, and around them)."""
        for hand in hands:
            hand["rules"] = []
            hand["rulings"] = []
        if not hands:
            return
        by_key: dict[tuple[str, str, str], list[HandRow]] = {}
        for hand in hands:
            by_key.setdefault((hand["table_id"], hand["epoch"], hand["hand_id"]), []).append(hand)
        values = ", ".join("(?, ?, ?)" for _ in by_key)
        keys = [value for key in by_key for value in key]
        rules_where, rulings_where = "", ""
        rules_params: list[Any] = []
        rulings_params: list[Any] = []
        filed = sorted({m for m in months if m is not None})
        if (
            self.db.dialect == "postgresql"
            and filed
            and len(filed) == len([m for m in filed if MONTH.match(m)])
        ):
            rules_where = f" AND month IN ({', '.join('?' for _ in filed)})"
            rules_params = list(filed)
            rulings_where = " AND ts >= ? AND ts < ?"
            rulings_params = [add_months(filed[0], -1), add_months(filed[-1], 2)]
        for table, epoch, hand_id, rule in self.db.all(
            "SELECT table_id, epoch, hand_id, rule FROM hand_rules WHERE "
            f"(table_id, epoch, hand_id) IN (VALUES {values}){rules_where} ORDER BY rule",
            [*keys, *rules_params],
        ):
            for hand in by_key[table, epoch, hand_id]:
                hand["rules"].append(rule)
        for r in self.db.all(
            "SELECT table_id, epoch, hand_id, seq, ts, type, rule, hold, decision, person, role "
            f"FROM rulings WHERE (table_id, epoch, hand_id) IN (VALUES {values}){rulings_where} "
            "ORDER BY seq",
            [*keys, *rulings_params],
        ):
            ruling: RulingRow = {
                "seq": r[3],
                "ts": r[4],
                "type": r[5],
                "rule": r[6],
                "hold": r[7],
                "decision": r[8],
                "person": r[9],
                "role": r[10],
            }
            for hand in by_key[r[0], r[1], r[2]]:
                hand["rulings"].append(ruling)

    def hand_events(
        self,
        table: str,
        epoch: str,
        hand_id: str,
        stream: Stream = "public",
        started: str | None = None,
    ) -> list[dict[str, Any]]:
        """A hand's stored envelopes in seq order (the secure view where it is stored and
        ``stream`` is secure; the public one otherwise). ``started``: its ``started_ts``; on a
        partitioned store only the months around it are read (a hand's events are minutes
        apart)."""
        column = "COALESCE(secure, public)" if stream == "secure" else "public"
        window, params = "", [table, epoch, hand_id]
        if self.db.dialect == "postgresql" and started is not None and MONTH.match(started[:7]):
            window = " AND ts >= ? AND ts < ?"
            params += [add_months(started[:7], -1), add_months(started[:7], 2)]
        rows = self.db.all(
            f"SELECT {column} FROM events WHERE table_id = ? AND epoch = ? AND hand_id = ?"
            f"{window} ORDER BY seq",
            params,
        )
        return envelopes(r[0] for r in rows)

    def alarms(
        self, *, since: str | None = None, limit: int = 200, unacknowledged: bool = False
    ) -> list[AlarmRow]:
        """Alarms, newest first, with who acknowledged each (``unacknowledged``: only those
        nobody has)."""
        columns = (
            "a.table_id, a.epoch, a.seq, a.ts, a.hand_id, a.type, a.severity, a.rule, a.reason"
        )
        acks = (
            "LEFT JOIN alarm_acks k ON k.table_id = a.table_id AND k.epoch = a.epoch "
            "AND k.seq = a.seq AND k.ts = a.ts"
        )
        if unacknowledged:  # every alarm online is looked at: nobody may have acknowledged it
            rows = self.db.all(
                f"SELECT {columns}, k.person, k.acked_at FROM alarms a {acks} "
                "WHERE a.ts >= ? AND k.seq IS NULL ORDER BY a.ts DESC LIMIT ?",
                (since or "", limit),
            )
        else:  # the newest first, then who acknowledged those: the older months are not read
            rows = self.db.all(
                f"SELECT {columns}, k.person, k.acked_at FROM (SELECT * FROM alarms "
                f"WHERE ts >= ? ORDER BY ts DESC LIMIT ?) a {acks} ORDER BY a.ts DESC",
                (since or "", limit),
            )
        return [
            AlarmRow(
                table_id=r[0],
                epoch=r[1],
                seq=r[2],
                ts=r[3],
                hand_id=r[4],
                type=r[5],
                severity=r[6],
                rule=r[7],
                reason=r[8],
                acked_by=r[9],
                acked_at=r[10],
            )
            for r in rows
        ]

    def ack_alarm(
        self, table: str, epoch: str, seq: int, person: str, roles: Sequence[str], now: float
    ) -> Literal["acked", "unknown", "already"]:
        """``person`` acknowledged an alarm: ``acked``, or ``unknown`` (no such alarm) or
        ``already`` (the first acknowledgement stands)."""
        with self.db.transaction():
            known = self.db.one(
                "SELECT ts FROM alarms WHERE table_id = ? AND epoch = ? AND seq = ?",
                (table, epoch, seq),
            )
            if known is None:
                return "unknown"
            # filed under its alarm's time: archived with it
            rows = self.db.returning_many(
                "INSERT INTO alarm_acks (table_id, epoch, seq, ts, person, roles, acked_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING seq",
                [(table, epoch, seq, known[0], person, json.dumps(sorted(roles)), now)],
            )
        return "acked" if rows[0] is not None else "already"

    def table_states(self) -> dict[str, dict[str, Any]]:
        """Every table's last retained snapshot, by table."""
        rows = self.db.all("SELECT table_id, state FROM tables WHERE state IS NOT NULL")
        states = {r[0]: json_value(r[1]) for r in rows}
        return {table: state for table, state in states.items() if isinstance(state, dict)}

    def resolved_holds(self, limit: int = 20) -> list[HoldRow]:
        """The holds resolved last, newest first."""
        return self.holds(open_only=False, resolved_last=limit)

    def recent_events(
        self, table: str, epoch: str, limit: int, stream: Stream = "public", after: int = 0
    ) -> list[dict[str, Any]]:
        """A table's newest envelopes after seq ``after``, newest first (the secure view where it
        is stored and ``stream`` is secure)."""
        column = "COALESCE(secure, public)" if stream == "secure" else "public"
        rows = self.db.all(
            f"SELECT {column} FROM events WHERE table_id = ? AND epoch = ? AND seq > ? "
            f"AND {column} IS NOT NULL ORDER BY seq DESC LIMIT ?",
            (table, epoch, after, limit),
        )
        return envelopes(r[0] for r in rows)

    def births(self, table: str) -> list[BirthRow]:
        """A table's births and deaths, as they were received (each connection's birth
        before its death)."""
        rows = self.db.all(
            "SELECT journal, bdseq, state, epoch, ts, received_at FROM births "
            "WHERE table_id = ? ORDER BY received_at, journal, bdseq, state DESC",
            (table,),
        )
        return [
            BirthRow(
                journal=r[0] or None,
                bdseq=r[1],
                state=r[2],
                epoch=r[3],
                ts=r[4],
                received_at=r[5],
            )
            for r in rows
        ]

    def journal_of(self, table: str, epoch: str) -> str | None:
        """The journal ``epoch`` of ``table`` belongs to, as far as the store knows (None: it
        does not): the journal a birth or death named with it or with an epoch it went on
        from (``epochs.previous``, from its ``journal.epoch.started``), or the first epoch of
        that line when a birth named it as its journal (a journal is named by its first
        epoch)."""
        line = [epoch]
        previous: dict[str, str | None] = {
            str(e): p
            for e, p in self.db.all(
                "SELECT epoch, previous FROM epochs WHERE table_id = ?", (table,)
            )
        }
        while (before := previous.get(line[-1])) and before not in line:
            line.append(before)
        named = self.db.all(
            "SELECT DISTINCT journal, epoch FROM births WHERE table_id = ? AND journal <> ''",
            (table,),
        )
        by_epoch = {str(e): str(j) for j, e in named if e is not None}
        for name in line:
            if name in by_epoch:
                return by_epoch[name]
        journals = {str(j) for j, _ in named}
        return line[-1] if line[-1] in journals else None

    def journal_left(self, table: str, epoch: str) -> str | None:
        """Whether ``epoch`` is of a journal ``table`` has left (its newest connection is of
        another journal): what to say of it, or None (the table's journal, or not known)."""
        row = self.db.one("SELECT journal FROM tables WHERE table_id = ?", (table,))
        now = row[0] if row else None
        if not now:
            return None
        journal = self.journal_of(table, epoch)
        if journal is None or journal == now:
            return None
        return (
            f"journal {journal} of table {table}, which runs journal {now} since: the table "
            "cannot rule on it"
        )

    def archive_state(self) -> ArchiveRow:
        """Where the store's older data is: for each data kind, the oldest month online (on a
        partitioned store) and the months archived, those brought back for an audit apart."""
        db = self.db
        kinds: dict[str, ArchiveKindRow] = {
            kind: {"kind": kind, "online_from": None, "archived": [], "restored": []}
            for kind in KINDS
        }
        for kind, month, restored in db.all(
            "SELECT DISTINCT kind, month, restored_at IS NOT NULL FROM archived ORDER BY month"
        ):
            row = kinds.get(str(kind))
            if row is None:
                continue
            listed = row["restored"] if restored else row["archived"]
            if month not in listed:
                listed.append(str(month))
        partitioned = False
        if db.dialect == "postgresql":
            partitions = Partitions(db)
            partitioned = partitions.partitioned("events")
            for spec in BY_MONTH if partitioned else ():
                row = kinds[spec.kind]
                if spec != of_kind(spec.kind)[0] or not partitions.partitioned(spec.table):
                    continue  # the kind's first table says it (its own, for events …)
                online = sorted(set(partitions.attached(spec.table)) - set(row["restored"]))
                row["online_from"] = online[0] if online else None
        return {"store": db.dialect, "partitioned": partitioned, "kinds": list(kinds.values())}

    def counts(self) -> dict[str, int]:
        """Rows in the main tables (for reports)."""
        return {
            name: int(self.db.one(f"SELECT COUNT(*) FROM {name}")[0])  # type: ignore[index]
            for name in ("tables", "events", "hands", "holds", "alarms", "births", "gaps")
        }


def _hand(r: Row) -> HandRow:
    """A hand's row in the API's shape (a column stored before its values were checked, of
    another shape, reads as null)."""
    return {
        "table_id": r[0],
        "epoch": r[1],
        "hand_id": r[2],
        "started_ts": r[3],
        "ended_ts": r[4],
        "outcome": r[5] if r[5] in ("completed", "misdeal", "void") else None,
        "button": r[6],
        "seats": seat_list(json_value(r[7])),
        "blinds": amount_list(json_value(r[8])),
        "ante": r[9],
        "stacks_before": seat_chips(json_value(r[10])),
        "stacks_after": seat_chips(json_value(r[11])),
        "payouts": seat_chips(json_value(r[12])),
        "pot": r[13],
        "rake": r[14],
        "first_seq": r[15],
        "last_seq": r[16],
        "rake_pots": amount_list(json_value(r[17])),
        "jackpot": r[18],
        "rake_waived": r[19],
        "time_collected": r[20],
        "straddles": seat_chips(json_value(r[21])),
        "ante_seat": r[22],
        "runouts": r[23],
    }
