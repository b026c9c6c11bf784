"""What the pit derives from each newly stored public event, in the batch's transaction: its rule
IDs, its hand's row (start, outcome, stacks, payouts, the house's money), holds and their
resolution, rulings, alarms, and the time collected before a hand.

Every event is read as its typed record (controller/table/decoder.py): a field that did not fit
its type was left out of the record, so nothing here checks a value's type, only that a column
can hold it (controller/pit/rows.py).
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controller.pit.batches import EventIn
from controller.pit.db import Column, Db
from controller.pit.partitions import EVERY_MONTH, add_months, key_of, month_window
from controller.pit.reports.quarters import refresh as refresh_quarters
from controller.pit.rows import (
    amount_list,
    bigint_or_none,
    integer_or_none,
    json_or_null,
    last_per_key,
    seat_chips,
    seat_list,
    text_or_none,
    typed_columns,
)
from controller.table import event_types as et
from controller.table.decoder import decode
from controller.table.events import EventData, Recorded

#: How many seqs apart time collected (``house.time.collected``) and the start of its hand may be:
#: they are events of one command, a few seqs apart.
_TIME_REACH = 64


class Projections:
    """The derived rows of a :class:`~controller.pit.store.Store`."""

    db: Db

    # ------------------------------------------------------------------ derived rows

    def _derive(self, events: Sequence[EventIn]) -> None:
        """Rule IDs, hands, holds, rulings and alarms of newly stored public events."""
        db = self.db
        event_rules: list[tuple[Any, ...]] = []
        hand_rules: set[tuple[str, str, str, str]] = set()
        rulings: list[tuple[Any, ...]] = []
        alarms: list[tuple[Any, ...]] = []
        holds_raised: list[tuple[Any, ...]] = []
        holds_resolved: list[tuple[Any, ...]] = []
        hands: dict[tuple[str, str, str], dict[str, Any]] = {}
        #: the first time of each hand's events in the batch: the month a new hand is filed under
        hand_ts: dict[tuple[str, str, str], str] = {}
        time_marks: set[tuple[str, str, int, str]] = set()
        #: hands whose holds may have been settled by the hand's end (below)
        settled: dict[tuple[str, str, str], tuple[int | None, Any, Any]] = {}
        for e in events:
            body, record = e.body, e.record
            rules = [r for r in body.get("rules", ()) if isinstance(r, str)]
            by = body.get("by") if isinstance(body.get("by"), dict) else {}
            assert isinstance(by, dict)
            for rule in rules:
                event_rules.append((e.table_id, e.epoch, e.seq, rule, e.ts))
                if e.hand_id is not None:
                    hand_rules.add((e.table_id, e.epoch, e.hand_id, rule))
            if e.hand_id is not None:
                which = (e.table_id, e.epoch, e.hand_id)
                hand_ts[which] = min(hand_ts.get(which, e.ts), e.ts)
                hand = hands.setdefault(
                    (e.table_id, e.epoch, e.hand_id), {"first_seq": e.seq, "last_seq": e.seq}
                )
                hand["first_seq"] = min(hand["first_seq"], e.seq)
                hand["last_seq"] = max(hand["last_seq"], e.seq)
                columns = _hand_columns(record, e.ts, rules)
                if isinstance(record, et.HandStarted) and by.get("role") == "dealer":
                    columns["dealer"] = text_or_none(by.get("person"))  # who deals it (reports)
                if "runouts" in columns:  # a batch may hold the hand's events in any order
                    columns["runouts"] = max(columns["runouts"], hand.get("runouts", 0))
                hand.update(columns)
            else:  # HOUSE-TIME: time is collected just before a hand starts, in no hand
                time_marks.add((e.table_id, e.epoch, e.seq, e.ts))
            if isinstance(record, et.HandStarted):
                time_marks.add((e.table_id, e.epoch, e.seq, e.ts))
            if record.RULING:
                cited, hold, decision = _ruling(record)
                rulings.append(
                    (
                        e.table_id,
                        e.epoch,
                        e.seq,
                        e.hand_id,
                        e.ts,
                        e.type,
                        cited or (rules[0] if rules else None),
                        hold,
                        decision,
                        text_or_none(by.get("person")),
                        text_or_none(by.get("role")),
                    )
                )
            # a device's fault is an alarm whatever its severity: the floor acknowledges it; so
            # is the dealer calling the floor to the table (docs/console.md)
            fault = record.fault if isinstance(record, et.DeviceStatus) else None
            alarm = isinstance(record, et.IntegrityAlarm | et.FloorCalled)
            if alarm or e.severity == "critical" or fault is not None:
                cited, reason = _alarm(record)
                alarms.append(
                    (
                        e.table_id,
                        e.epoch,
                        e.seq,
                        e.ts,
                        e.hand_id,
                        e.type,
                        e.severity,
                        cited or (rules[0] if rules else None),
                        reason,
                    )
                )
            if isinstance(record, et.HandHold):
                # the evidence as the hold showed it: every field beside the hold's own
                evidence = record.evidence.public()
                holds_raised.append(
                    (
                        e.table_id,
                        e.epoch,
                        record.hold,
                        e.hand_id,
                        record.rule,
                        record.reason,
                        record.ruling,
                        integer_or_none(record.seat),
                        json.dumps(evidence, separators=(",", ":")),
                        e.ts,
                        e.seq,
                        *self._window(e.ts[:7]),
                    )
                )
            if e.hand_id is not None and type(record) in HAND_END:
                which = (e.table_id, e.epoch, e.hand_id)
                settled[which] = (e.seq, by.get("person"), by.get("role"))
            if isinstance(record, et.HandHold) and e.hand_id is not None:
                settled.setdefault((e.table_id, e.epoch, e.hand_id), (None, None, None))
            if isinstance(record, et.HandResume) and record.hold is not None:
                holds_resolved.append(
                    (
                        e.table_id,
                        e.epoch,
                        record.hold,
                        e.hand_id,
                        e.ts,
                        e.seq,
                        record.decision,
                        record.by,
                        text_or_none(by.get("person")),
                        text_or_none(by.get("role")),
                        *self._window(e.ts[:7]),
                    )
                )
        nothing = "ON CONFLICT DO NOTHING"
        db.insert("event_rules", typed_columns("table_id epoch seq rule ts"), event_rules, nothing)
        db.insert(
            "rulings",
            typed_columns("table_id epoch seq hand_id ts type rule hold decision person role"),
            rulings,
            nothing,
        )
        db.insert(
            "alarms",
            typed_columns("table_id epoch seq ts hand_id type severity rule reason"),
            alarms,
            nothing,
        )
        holds = key_of(db, "holds")
        self._anchored(
            "holds",
            "table_id epoch hold hand_id rule reason ruling seat evidence raised_ts raised_seq",
            last_per_key(holds_raised, 3),
            f"ON CONFLICT {holds} DO UPDATE SET hand_id = excluded.hand_id, "
            "rule = excluded.rule, reason = excluded.reason, ruling = excluded.ruling, "
            "seat = excluded.seat, evidence = excluded.evidence, raised_ts = excluded.raised_ts, "
            "raised_seq = excluded.raised_seq",
        )
        self._anchored(
            "holds",
            "table_id epoch hold hand_id resolved_ts resolved_seq decision resolved_by person role",
            last_per_key(holds_resolved, 3),
            f"ON CONFLICT {holds} DO UPDATE SET "
            "resolved_ts = excluded.resolved_ts, resolved_seq = excluded.resolved_seq, "
            "decision = excluded.decision, resolved_by = excluded.resolved_by, "
            "person = excluded.person, role = excluded.role",
        )
        self._hands(hands, hand_ts)
        self._settled_by_the_end(settled)
        # a hand's rule IDs are filed under its row's month: written after it
        self._anchored(
            "hand_rules",
            "table_id epoch hand_id rule",
            [(*row, *self._window(hand_ts[row[:3]][:7])) for row in sorted(hand_rules)],
            nothing,
            anchor="hands",
        )
        self._time_collected(time_marks)
        # the reports' quarter hours these hands are in, counted again (time collected too)
        refresh_quarters(db, events)

    def _settled_by_the_end(
        self, hands: dict[tuple[str, str, str], tuple[int | None, Any, Any]]
    ) -> None:
        """A hold still open when its hand ended was settled by that end: a ruling that ends
        the hand (a misdeal confirmed, RR-SD-4's award pushed, a hand voided) journals the end,
        not ``hand.resume``, which only a hand that goes on has. Such a hold is resolved by the
        hand's end (``resolved_by`` ``hand end``, the decision its outcome, the person of the
        event that ended it), whichever of the hold and the end the store took first."""
        db = self.db
        for (table, epoch, hand), (seq, person, role) in sorted(hands.items(), key=str):
            db.execute(
                "UPDATE holds SET resolved_ts = (SELECT h.ended_ts FROM hands h WHERE "
                "h.table_id = holds.table_id AND h.epoch = holds.epoch AND "
                "h.hand_id = holds.hand_id), resolved_seq = COALESCE(?, (SELECT h.last_seq "
                "FROM hands h WHERE h.table_id = holds.table_id AND h.epoch = holds.epoch AND "
                "h.hand_id = holds.hand_id)), decision = (SELECT h.outcome FROM hands h WHERE "
                "h.table_id = holds.table_id AND h.epoch = holds.epoch AND "
                f"h.hand_id = holds.hand_id), resolved_by = 'hand end', "
                f"person = COALESCE(?, ({_ENDED_BY % 'person'})), "
                f"role = COALESCE(?, ({_ENDED_BY % 'role'})) "
                "WHERE table_id = ? AND epoch = ? AND hand_id = ? AND resolved_seq IS NULL "
                "AND raised_seq IS NOT NULL AND EXISTS (SELECT 1 FROM hands h WHERE "
                "h.table_id = holds.table_id AND h.epoch = holds.epoch AND "
                "h.hand_id = holds.hand_id AND h.ended_ts IS NOT NULL)",
                (seq, text_or_none(person), text_or_none(role), table, epoch, hand),
            )

    def _window(self, month: str) -> tuple[str, str, str]:
        """A row's month and the months its row may be found in already (every month on a
        store that is not partitioned)."""
        if self.db.dialect == "sqlite":
            return (month, *EVERY_MONTH)
        return _around(month)

    def _ts_window(self, ts: str) -> tuple[str, str]:
        """The ``ts`` bounds of the events a few seqs from one of time ``ts``: the month before
        it to the month after (every time on a store that is not partitioned)."""
        if self.db.dialect == "sqlite":
            return EVERY_MONTH
        return _ts_bounds(ts[:7])

    def _anchored(
        self,
        table: str,
        names: str,
        rows: Sequence[tuple[Any, ...]],
        tail: str,
        *,
        anchor: str | None = None,
    ) -> None:
        """Write rows of a hand or hold (or a hand's rule IDs), each ending with its month and
        the window of :meth:`_window`: filed under the month of the row the key already has
        in that window (of ``anchor``, the table itself by default), or under its own month
        (``controller/pit/partitions.py``)."""
        found = anchor or table
        key = ("table_id", "epoch", "hold" if found == "holds" else "hand_id")
        columns: tuple[Column, ...] = (
            *typed_columns(names),
            ("month", "text"),
            ("month_lo", "text"),
            ("month_hi", "text"),
        )
        month = (
            f"COALESCE((SELECT x.month FROM {found} x WHERE "
            + " AND ".join(f"x.{k} = v.{k}" for k in key)
            + " AND x.month >= v.month_lo AND x.month <= v.month_hi ORDER BY x.month LIMIT 1), "
            "v.month)"
        )
        select = ", ".join(f"v.{n}" for n in names.split()) + f", {month}"
        self.db.insert_from(table, (*names.split(), "month"), columns, rows, select, tail)

    def _time_collected(self, marks: Iterable[tuple[str, str, int, str]]) -> None:
        """HOUSE-TIME: the time collected goes on the row of the hand that starts next.

        ``house.time.collected`` belongs to no hand: it comes in the same command as the
        ``hand.started`` after it, with no other hand's events between. Each mark (a new
        ``hand.started`` or event of no hand) looks back, a command's events at most, for the
        last time collected at or before it; the hand it belongs to is the first
        ``hand.started`` after that, once every seq between the two is stored (the missing seq,
        when it comes, is a mark too).
        """
        db = self.db
        # the events looked at are a command's, seconds apart: on PostgreSQL only the months
        # around the mark's are read (``ts`` bounds prune the other partitions)
        collected: dict[tuple[str, str, int], str] = {}
        for table, epoch, seq, ts in marks:
            row = db.one(
                "SELECT max(seq) FROM events WHERE table_id = ? AND epoch = ? "
                "AND seq BETWEEN ? AND ? AND type = ? AND ts >= ? AND ts < ?",
                (
                    table,
                    epoch,
                    seq - _TIME_REACH,
                    seq,
                    et.HouseTimeCollected.TYPE,
                    *self._ts_window(ts),
                ),
            )
            if row is not None and row[0] is not None:
                collected.setdefault((table, epoch, int(row[0])), ts)
        for (table, epoch, seq), ts in sorted(collected.items()):
            low, high = self._ts_window(ts)
            start = db.one(
                "SELECT seq, hand_id, ts FROM events WHERE table_id = ? AND epoch = ? "
                "AND seq > ? AND seq <= ? AND type = ? AND ts >= ? AND ts < ? "
                "ORDER BY seq LIMIT 1",
                (table, epoch, seq, seq + _TIME_REACH, et.HandStarted.TYPE, low, high),
            )
            if start is None:
                continue
            between = db.one(
                "SELECT count(*) FROM events WHERE table_id = ? AND epoch = ? "
                "AND seq > ? AND seq < ? AND ts >= ? AND ts < ?",
                (table, epoch, seq, start[0], low, high),
            )
            if between is None or int(between[0]) != int(start[0]) - seq - 1:
                continue
            body = db.one(
                "SELECT public FROM events WHERE table_id = ? AND epoch = ? AND seq = ? "
                "AND ts >= ? AND ts < ?",
                (table, epoch, seq, low, high),
            )
            record = decode(json.loads(body[0])) if body and body[0] else None
            total = (
                bigint_or_none(record.total) if isinstance(record, et.HouseTimeCollected) else None
            )
            if total is not None:
                _, first, last = self._window(str(start[2])[:7])
                db.execute(
                    "UPDATE hands SET time_collected = ? WHERE table_id = ? AND epoch = ? "
                    "AND hand_id = ? AND month >= ? AND month <= ?",
                    (total, table, epoch, start[1], first, last),
                )

    def _hands(
        self,
        hands: Mapping[tuple[str, str, str], Mapping[str, Any]],
        first_ts: Mapping[tuple[str, str, str], str],
    ) -> None:
        db = self.db
        grouped: dict[tuple[str, ...], list[tuple[Any, ...]]] = defaultdict(list)
        for (table, epoch, hand_id), columns in sorted(hands.items()):
            names = tuple(sorted(k for k in columns if k not in ("first_seq", "last_seq")))
            grouped[names].append(
                (
                    table,
                    epoch,
                    hand_id,
                    columns["first_seq"],
                    columns["last_seq"],
                    *(columns[n] for n in names),
                    *self._window(first_ts[table, epoch, hand_id][:7]),
                )
            )
        for names, rows in grouped.items():
            names_all = ("table_id", "epoch", "hand_id", "first_seq", "last_seq", *names)
            updates = [
                f"first_seq = {db.least}(hands.first_seq, excluded.first_seq)",
                f"last_seq = {db.greatest}(hands.last_seq, excluded.last_seq)",
                *(
                    f"{n} = {db.greatest}(COALESCE(hands.{n}, 0), excluded.{n})"
                    if n == "runouts"  # RUN-TWICE: the most runouts any event showed
                    else f"{n} = excluded.{n}"
                    for n in names
                ),
            ]
            self._anchored(
                "hands",
                " ".join(names_all),
                rows,
                f"ON CONFLICT {key_of(db, 'hands')} DO UPDATE SET {', '.join(updates)}",
            )


@functools.lru_cache(maxsize=64)
def _around(month: str) -> tuple[str, str, str]:
    """A month and the months around it (:func:`month_window`), worked out once: every row of
    a batch asks for its month's, and a batch's rows are of a month or two."""
    return (month, *month_window(month))


@functools.lru_cache(maxsize=64)
def _ts_bounds(month: str) -> tuple[str, str]:
    """The ``ts`` bounds of :meth:`Projections._ts_window` for an event of ``month``."""
    _, low, high = _around(month)
    if low == high:  # not a month: anywhere
        return EVERY_MONTH
    return low, add_months(high, 1)


#: Who ended a hand, as the rulings have it (the end itself, or the award before it): for a hold
#: the store takes after the hand's end.
_ENDED_BY = (
    "SELECT r.%s FROM rulings r WHERE r.table_id = holds.table_id AND r.epoch = holds.epoch "
    "AND r.hand_id = holds.hand_id AND r.type IN ('hand.misdeal', 'hand.void', 'pot.awarded') "
    "AND r.person IS NOT NULL ORDER BY r.seq DESC LIMIT 1"
)

#: How a hand ended, by the record of the event that ended it.
HAND_END: dict[type[EventData], str] = {
    et.HandCompleted: "completed",
    et.HandMisdeal: "misdeal",
    et.HandVoid: "void",
}


def _hand_columns(record: EventData, ts: str, rules: Sequence[str] = ()) -> dict[str, Any]:
    """The columns of a hand's row that this event decides (a value a column cannot hold is left
    out, not served: controller/pit/published.py names it among the refused messages)."""
    if isinstance(record, et.HandStarted):
        straddles = seat_chips(dict(record.straddles or {}))
        return {
            "started_ts": ts,
            "straddles": json.dumps(straddles) if straddles else None,
            "runouts": 1,
            "button": integer_or_none(record.button),
            "seats": json_or_null(seat_list(list(record.seats))),
            "blinds": json_or_null(amount_list(list(record.blinds))),
            "ante": bigint_or_none(record.ante),
            "stacks_before": json_or_null(seat_chips(dict(record.stacks))),
        }
    outcome = HAND_END.get(type(record))
    if outcome is not None:
        columns: dict[str, Any] = {"ended_ts": ts, "outcome": outcome}
        if isinstance(record, et.HandCompleted):
            columns["stacks_after"] = json_or_null(seat_chips(dict(record.stacks)))
        return columns
    if isinstance(record, et.PotAwarded):
        return {
            "payouts": json_or_null(seat_chips(dict(record.payouts))),
            "pot": bigint_or_none(sum(pot.amount for pot in record.pots)),
        }
    if isinstance(record, et.PotRakeTaken):  # HOUSE-RAKE, HOUSE-DROP-JACKPOT
        rake_pots = amount_list(list(record.pots), keep_valid=True)
        return {
            "rake": bigint_or_none(record.rake),
            "rake_pots": None if rake_pots is None else json.dumps(rake_pots),
            "jackpot": bigint_or_none(record.jackpot),
            "rake_waived": record.waived,
        }
    if isinstance(record, et.BoardRunoutStarted):  # RUN-TWICE
        run = integer_or_none(record.run)
        return {} if run is None else {"runouts": run}
    if isinstance(record, et.BettingAction) and record.blind == "ante" and "ANTE-TABLE" in rules:
        return {"ante_seat": integer_or_none(record.seat)}
    return {}


def _ruling(record: EventData) -> tuple[str | None, str | None, str | None]:
    """A ruling's rule, the hold it decides and the decision, as its record says them."""
    if isinstance(record, et.HandResume | et.FloorOverride):
        return record.rule, record.hold, record.decision
    if isinstance(record, et.HandHold):
        return record.rule, record.hold, record.ruling
    if isinstance(record, et.HandMisdeal | et.HandVoid):
        return record.rule, None, None
    return None, None, None  # an award, a corrected action: the rules cited say it


def _alarm(record: EventData) -> tuple[str | None, str | None]:
    """An alarm's rule and reason: a device's fault, or what the event says of itself (an
    event this pit does not know, or whose data did not fit its type, as it came)."""
    if isinstance(record, et.DeviceStatus) and record.fault is not None:
        detail = f": {record.detail}" if record.detail is not None else ""
        return None, f"{record.device} fault {record.fault}{detail}"
    if isinstance(record, Recorded):
        written = record.public()
        return text_or_none(written.get("rule")), text_or_none(written.get("reason"))
    return text_or_none(getattr(record, "rule", None)), text_or_none(
        getattr(record, "reason", None)
    )
