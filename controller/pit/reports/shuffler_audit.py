"""SHF-RAND: the pit's shuffler randomness audit and its alarm.

Every pit process runs :class:`ShufflerAudit` on its repair thread's store connection: each
round (every :data:`ROUND_SECONDS`) it checks each shuffler that has revealed ``[reports]
every`` decks since its last check, over its last ``[reports] window`` decks, by the rule of
controller/pit/reports/audit_rule.py, and keeps the verdict on the shuffler's row
(``shufflers``: the decks it rested on, the tests, and the alarm while it is up, with when it
was raised). The alarm goes on the shuffler's table as ``shuffler.randomness`` beside the alarms
of the table's own status (:func:`shuffler_alarms`, merged by the store's ``tables`` read): on
the floor map's tile, the alarms page and ``GET /api/tables``, naming the shuffler, the test and
its corrected p-value. It clears at the first check that finds no evidence.

Several processes may check the same shuffler at once: each writes the verdict of the decks it
read, the same decks give the same verdict, and a check is never older than the decks it names.
The first round also reads the decks of the events stored before pit schema 13, once
(controller/pit/reports/shuffler_decks.py), and each round brings the kept tallies of the last
two floor days up to date (controller/pit/reports/shuffler_tallies.py), so a report finds them.
The rule each process runs with is kept in ``pit_meta`` for the report to show.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from typing import Any

import structlog

from controller.pit.config import PitConfig
from controller.pit.db import Db
from controller.pit.reports.audit_rule import ALPHA, EVERY, WINDOW, Rule
from controller.pit.reports.periods import Calendar
from controller.pit.reports.randomness import TESTS, Verdict, Window
from controller.pit.reports.shuffler_decks import last_shuffler_decks
from controller.pit.reports.shuffler_tallies import days, keep_up

log = structlog.get_logger("tablectl.pit.audit")

#: The alarm a shuffler's table gets while the audit finds evidence against the shuffler.
ALARM = "shuffler.randomness"
#: Seconds between two rounds of the audit.
ROUND_SECONDS = 60.0
#: Rounds between two updates of the kept tallies of the last two floor days.
KEEP_ROUNDS = 5
#: Shufflers checked in one round at most (the others wait for the next: a round is bounded).
ROUND_CHECKS = 200
#: Where the rule the audit runs with is kept (``pit_meta``).
RULE_KEY = "shuffler_audit"

TEST_NAMES = {
    "positions": "card × position",
    "changes": "position changes",
    "suits": "suit runs",
}


def stored_rule(db: Db) -> Rule:
    """The rule the audit last ran with (the defaults if it never did)."""
    row = db.one("SELECT value FROM pit_meta WHERE key = ?", (RULE_KEY,))
    try:
        found = json.loads(row[0]) if row else {}
        return Rule(
            float(found.get("alpha", ALPHA)),
            int(found.get("window", WINDOW)),
            int(found.get("every", EVERY)),
        )
    except (ValueError, TypeError, AttributeError):
        return Rule()


def store_rule(db: Db, rule: Rule) -> None:
    """Keep the rule this process runs with, for the report."""
    text = json.dumps({"alpha": rule.alpha, "window": rule.window, "every": rule.every})
    with db.transaction():
        db.execute(
            "INSERT INTO pit_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (RULE_KEY, text),
        )


def detail(table: str, device: str, found: Verdict, decks: int) -> str | None:
    """The alarm's words for a verdict (None: no alarm)."""
    if not found.alarm:
        return None
    name = f"{table}/{device}"
    failed = sorted(found.failed, key=lambda c: c.corrected or 0.0)
    parts = [
        f"{TEST_NAMES[c.test]} p = {c.corrected:.2g} (corrected for {len(TESTS)} tests)"
        for c in failed
    ]
    if found.repeats:
        parts.append(f"{found.repeats} deck order(s) repeated")
    return (
        f"shuffler {name}: " + "; ".join(parts) + f" over its last {decks} decks "
        f"(alpha {found.alpha:g}, SHF-RAND)"
    )


def _result(found: Verdict, decks: int) -> str:
    return json.dumps(
        {
            "decks": decks,
            "alpha": found.alpha,
            "repeats": found.repeats,
            "checks": [
                {
                    "test": c.test,
                    "decks": c.decks,
                    "needed": c.needed,
                    "statistic": c.statistic,
                    "df": c.df,
                    "p": c.p_value,
                    "corrected": c.corrected,
                }
                for c in found.checks
            ],
        },
        separators=(",", ":"),
    )


def check_shuffler(db: Db, table: str, device: str, rule: Rule, now: float) -> bool:
    """Check one shuffler's last decks now; whether its alarm was raised or cleared."""
    row = db.one(
        "SELECT decks, alarm FROM shufflers WHERE table_id = ? AND device = ?", (table, device)
    )
    if row is None:
        return False
    stored, before = int(row[0]), row[1]
    decks = last_shuffler_decks(db, table, device, rule.window)
    window = Window(rule.window)
    for deck in decks:
        window.add(deck.order)
    # a repeat of a deck before the window (or of another shuffler's) counts as well
    earlier = sum(1 for deck in decks if deck.repeat_of is not None)
    found = rule.judge(window)
    found = Verdict(found.checks, max(found.repeats, earlier), found.alpha)
    words = detail(table, device, found, len(decks))
    with db.transaction():
        # raised: since it was first raised (now, if it was not up); cleared: no since
        db.execute(
            "UPDATE shufflers SET checked = ?, checked_at = ?, result = ?, alarm = ?, "
            "alarm_since = CASE WHEN CAST(? AS TEXT) IS NULL THEN NULL "
            "ELSE COALESCE(alarm_since, CAST(? AS DOUBLE PRECISION)) END "
            "WHERE table_id = ? AND device = ?",
            (stored, now, _result(found, len(decks)), words, words, now, table, device),
        )
        if before != words:
            db.changed({table})  # the floor map and the alarms page show it at once
    if (before is None) != (words is None):
        log.warning("pit.audit.alarm" if words else "pit.audit.cleared", table=table,
                    device=device, detail=words)  # fmt: skip
    return (before is None) != (words is None)


def audit_round(db: Db, rule: Rule, now: float, calendar: Calendar | None = None) -> int:
    """One round: the shufflers due checked (at most :data:`ROUND_CHECKS`); the alarms raised
    or cleared. With ``calendar``, the kept tallies of the last two floor days brought up to
    date as well."""
    due = db.all(
        "SELECT table_id, device FROM shufflers WHERE decks - checked >= ? "
        "ORDER BY decks - checked DESC, table_id, device LIMIT ?",
        (rule.every, ROUND_CHECKS),
    )
    changed = 0
    for table, device in due:
        changed += check_shuffler(db, str(table), str(device), rule, now)
    if calendar is not None:
        keep_days(db, calendar, now)
    return changed


def keep_days(db: Db, calendar: Calendar, now: float, tables: Sequence[str] = ()) -> int:
    """The kept tallies of yesterday and today (the floor's) of every shuffler with decks in
    them, brought up to date; the decks read one by one."""
    until = datetime.fromtimestamp(now, UTC)
    start = calendar.instant(
        datetime.combine(calendar.gaming_date(until) - timedelta(days=1), calendar.day_start)
    )
    end = calendar.instant(
        datetime.combine(calendar.gaming_date(until) + timedelta(days=1), calendar.day_start)
    )
    return keep_up(db, days(start, end, calendar), tables)


def shuffler_alarms(db: Db, table: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The audit's alarms up now, by table, as a table's status names its alarms (``alarm``,
    ``detail``, ``since``)."""
    where, params = ("AND table_id = ? ", (table,)) if table is not None else ("", ())
    out: dict[str, list[dict[str, Any]]] = {}
    for name, device, words, since in db.all(
        "SELECT table_id, device, alarm, alarm_since FROM shufflers "  # noqa: S608
        f"WHERE alarm IS NOT NULL {where}ORDER BY table_id, device",
        params,
    ):
        out.setdefault(str(name), []).append(
            {
                "alarm": ALARM,
                "detail": str(words),
                "since": None
                if since is None
                else datetime.fromtimestamp(float(since), UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "device": str(device),
            }
        )
    return out


def _keep_rule(store: Any, rule: Rule) -> None:
    store_rule(store.db, rule)


def _backfill(store: Any) -> int:
    return int(store.backfill_shuffler_decks())


def _round(store: Any, rule: Rule, now: float, calendar: Calendar | None) -> int:
    return audit_round(store.db, rule, now, calendar)


class ShufflerAudit:
    """The audit's rounds, on a store worker (``call(fn, *args)`` runs ``fn(store, *args)``
    on its thread)."""

    def __init__(
        self,
        worker: Any,
        rule: Rule,
        calendar: Calendar | None = None,
        interval: float = ROUND_SECONDS,
    ) -> None:
        self.worker = worker
        self.rule = rule
        self.calendar = calendar
        self.interval = interval
        self.rounds = 0

    async def run(self) -> None:
        """Read the events stored before pit schema 13 once, then a round every minute, until
        cancelled. A round that fails is logged and the next one comes (the store lost is
        shown by the worker)."""
        rule, calendar = self.rule, self.calendar
        first = True
        while True:
            try:
                if first:
                    await self.worker.call(_keep_rule, rule)
                    backfilled = await self.worker.call(_backfill)
                    if backfilled:
                        log.info("pit.audit.backfilled", decks=backfilled)
                    first = False
                keeping = calendar if self.rounds % KEEP_ROUNDS == 0 else None
                await self.worker.call(_round, rule, time.time(), keeping)
                self.rounds += 1
            except Exception as exc:
                log.warning("pit.audit.round_failed", error=str(exc))
            await asyncio.sleep(self.interval)


def audit_of(config: PitConfig, worker: Any) -> ShufflerAudit:
    """The audit a pit process runs: ``[reports]``' rule, and the floor's days (``[web]
    time_zone``, ``[reports] day_start``) for the tallies it keeps."""
    reports = config.reports
    calendar = Calendar(
        zone=config.web.zone,
        day_start=dt_time.fromisoformat(reports.day_start),
        shifts=tuple((s.name, dt_time.fromisoformat(s.start)) for s in reports.shifts),
    )
    return ShufflerAudit(worker, Rule(reports.alpha, reports.window, reports.every), calendar)
