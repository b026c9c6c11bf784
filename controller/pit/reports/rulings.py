"""Irregularities and rulings: the holds raised in the period by rule ID and by device, who
ruled them and how, the time from raised to ruled, and the other rulings (misdeals, voids,
overrides, corrected actions) by rule.

An irregularity here is a hold (``hand.hold``): each cites the rule that found it, and waits for
a ruling (``hand.resume``: ``confirm``, ``reject``, the floor's ``override``, or the deck's own
check). A hold is in the period it was raised in. Its device: the table's shuffler for a rule of
the shuffler's (:data:`SHUFFLER_RULES`) or a hold whose evidence names a shuffle or a device's
fault code, else the reader of the zone its evidence names (``reader seat:3``); else none.

Who ruled is the ``by`` of the ruling's event (the person and the role the table accepted the
command from). A dealer may rule some holds (``dealer_may_confirm``): their names are for the
floor and surveillance only; anyone else reads ``a dealer``. The irregularities by dealer are
the ``dealers`` report's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from controller.pit.db import Db
from controller.pit.reports.charts import Chart, Series, bar_chart
from controller.pit.reports.params import ReportQuery
from controller.pit.reports.registry import Part, Report, ReportOut, reading
from controller.pit.reports.sql import among, json_field, seconds_between, snapshot
from controller.rules.ids import Rule
from controller.table import event_types as et

#: Rules about the shuffler: a hold citing one is the table's shuffler's (catalogue sections A
#: and K, docs/rules.md).
SHUFFLER_RULES = (
    Rule.DE_1544A_APPR,
    Rule.SHF_COUNT,
    Rule.SHF_RECOG,
    Rule.SHF_RAND,
    Rule.GLI29_RNG,
    Rule.GLI29_PROG,
    Rule.GLI29_ERR_JAM,
    Rule.SHF_MID_HAND,
    Rule.SHF_DOOR,
    Rule.SHF_POWER,
    Rule.SHF_INFO,
)
#: How a ``hand.resume`` names who decided (``by``), as the report says it.
HOW = {"confirm": "confirm", "reject": "reject", "floor": "override", "deck": "deck"}
#: Holds listed one by one, at most (the newest; every hold is counted).
LISTED = 10_000
#: What the report shows for a dealer's name to a reader who may not see it.
A_DEALER = "a dealer"


class RuleRow(BaseModel):
    """The holds and rulings citing one rule."""

    rule: str
    holds: int = Field(description="holds raised")
    confirmed: int
    rejected: int
    overridden: int = Field(description="decided by the floor's override")
    by_deck: int = Field(description="settled by the deck's own check")
    open: int = Field(description="not ruled yet")
    average_seconds: float | None = Field(description="raised to ruled, the holds ruled")
    longest_seconds: float | None
    misdeals: int = Field(description="hand.misdeal citing the rule")
    voids: int = Field(description="hand.void citing the rule")
    overrides: int = Field(description="floor.override citing the rule (with or without a hold)")
    corrections: int = Field(description="betting.action.corrected citing the rule")


class DeviceRow(BaseModel):
    """The holds one device of one table was behind, by rule."""

    table_id: str
    device: str = Field(description="shuffler, or reader ZONE")
    rule: str
    holds: int


class RulerRow(BaseModel):
    """The holds one person ruled, and how."""

    person: str = Field(description="``a dealer`` to readers who may not see dealers' names")
    role: str
    confirmed: int
    rejected: int
    overridden: int
    rulings: int
    average_seconds: float | None = Field(description="raised to ruled")


class HoldRow(BaseModel):
    """One hold."""

    table_id: str
    epoch: str
    hand_id: str | None
    hold: str
    rule: str | None
    device: str | None
    raised_ts: str | None
    resolved_ts: str | None
    seconds: float | None = Field(description="raised to ruled")
    decision: str | None
    how: str | None = Field(description="confirm, reject, override, deck (null: open)")
    person: str | None
    role: str | None


class RulingsReport(ReportOut):
    """``rulings``."""

    rules: list[RuleRow]
    devices: list[DeviceRow]
    rulers: list[RulerRow]
    holds: list[HoldRow] = Field(description=f"the newest {LISTED} holds of the period")
    holds_total: int = Field(description="every hold of the period")


def _device_sql(db: Db) -> str:
    rules = ", ".join(f"'{r.value}'" for r in SHUFFLER_RULES)
    zone = json_field(db, "evidence", "zone")
    code, shuffle = json_field(db, "evidence", "code"), json_field(db, "evidence", "shuffle_id")
    return (
        f"CASE WHEN rule IN ({rules}) THEN 'shuffler' "
        f"WHEN {zone} IS NOT NULL THEN 'reader ' || {zone} "
        f"WHEN {code} IS NOT NULL OR {shuffle} IS NOT NULL THEN 'shuffler' END"
    )


def compute(db: Db, query: ReportQuery, head: dict[str, Any]) -> RulingsReport:
    # the statements are this module's text; what a reader gives is only ever a parameter
    tables, table_params = among("table_id", query.tables)
    low, high = query.months
    seconds = seconds_between(db, "raised_ts", "resolved_ts")
    holds_sql = (
        "SELECT table_id, epoch, hand_id, hold, rule, "  # noqa: S608
        f"{_device_sql(db)} AS device, raised_ts, resolved_ts, "
        f"CASE WHEN resolved_ts IS NOT NULL THEN {seconds} END AS seconds, decision, "
        "resolved_by, person, role FROM holds "
        f"WHERE raised_ts >= ? AND raised_ts < ? AND month >= ? AND month <= ?{tables}"
    )
    params = [query.since_text, query.until_text, low, high, *table_params]
    with snapshot(db):
        by_rule = db.all(
            "SELECT rule, count(*), "  # noqa: S608
            "sum(CASE WHEN resolved_by = 'confirm' THEN 1 ELSE 0 END), "
            "sum(CASE WHEN resolved_by = 'reject' THEN 1 ELSE 0 END), "
            "sum(CASE WHEN resolved_by = 'floor' THEN 1 ELSE 0 END), "
            "sum(CASE WHEN resolved_by = 'deck' THEN 1 ELSE 0 END), "
            "sum(CASE WHEN resolved_ts IS NULL THEN 1 ELSE 0 END), avg(seconds), max(seconds) "
            f"FROM ({holds_sql}) h GROUP BY rule",
            params,
        )
        others = db.all(
            "SELECT rule, type, count(*) FROM rulings "  # noqa: S608
            f"WHERE type IN (?, ?, ?, ?) AND ts >= ? AND ts < ?{tables} GROUP BY rule, type",
            [
                et.HandMisdeal.TYPE,
                et.HandVoid.TYPE,
                et.FloorOverride.TYPE,
                et.BettingActionCorrected.TYPE,
                query.since_text,
                query.until_text,
                *table_params,
            ],
        )
        devices = db.all(
            f"SELECT table_id, device, rule, count(*) FROM ({holds_sql}) h "  # noqa: S608
            "WHERE device IS NOT NULL GROUP BY table_id, device, rule "
            "ORDER BY table_id, device, rule",
            params,
        )
        rulers = db.all(
            "SELECT person, role, sum(CASE WHEN resolved_by = 'confirm' THEN 1 ELSE 0 END), "  # noqa: S608
            "sum(CASE WHEN resolved_by = 'reject' THEN 1 ELSE 0 END), "
            "sum(CASE WHEN resolved_by = 'floor' THEN 1 ELSE 0 END), count(*), avg(seconds) "
            f"FROM ({holds_sql}) h WHERE resolved_ts IS NOT NULL "
            # a hold settled by its hand's end is a ruling only of the person who ended it
            "AND NOT (resolved_by = 'hand end' AND person IS NULL) "
            "GROUP BY person, role ORDER BY count(*) DESC, person",
            params,
        )
        listed = db.all(
            f"SELECT * FROM ({holds_sql}) h ORDER BY raised_ts DESC, table_id, hold LIMIT ?",  # noqa: S608
            [*params, LISTED],
        )
    counted: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for rule, kind, count in others:
        counted[str(rule or "")][str(kind)] += int(count)
    rows: dict[str, RuleRow] = {}
    for r in by_rule:
        rule = str(r[0] or "")
        rows[rule] = _rule_row(rule, r[1:], counted.get(rule, {}))
    for rule, kinds in counted.items():
        if rule not in rows:
            rows[rule] = _rule_row(rule, (0, 0, 0, 0, 0, 0, None, None), kinds)
    return RulingsReport(
        **head,
        rules=sorted(rows.values(), key=lambda r: (-r.holds, r.rule)),
        devices=[
            DeviceRow(table_id=str(t), device=str(d), rule=str(rule or ""), holds=int(n))
            for t, d, rule, n in devices
        ],
        rulers=[
            RulerRow(
                person=str(person) if person is not None else "(nobody named)",
                role=str(role) if role is not None else "",
                confirmed=int(c or 0),
                rejected=int(j or 0),
                overridden=int(o or 0),
                rulings=int(n or 0),
                average_seconds=_round(avg),
            )
            for person, role, c, j, o, n, avg in rulers
        ],
        holds=[
            HoldRow(
                table_id=str(h[0]),
                epoch=str(h[1]),
                hand_id=h[2],
                hold=str(h[3]),
                rule=h[4],
                device=h[5],
                raised_ts=h[6],
                resolved_ts=h[7],
                seconds=_round(h[8]),
                decision=h[9],
                how=HOW.get(str(h[10]), h[10]) if h[10] is not None else None,
                person=h[11],
                role=h[12],
            )
            for h in listed
        ],
        holds_total=sum(r.holds for r in rows.values()),
    )


def _round(value: Any) -> float | None:
    return None if value is None else round(float(value), 3)


def _rule_row(rule: str, figures: Any, kinds: dict[str, int]) -> RuleRow:
    holds, confirmed, rejected, overridden, deck, still_open, average, longest = figures
    return RuleRow(
        rule=rule,
        holds=int(holds or 0),
        confirmed=int(confirmed or 0),
        rejected=int(rejected or 0),
        overridden=int(overridden or 0),
        by_deck=int(deck or 0),
        open=int(still_open or 0),
        average_seconds=_round(average),
        longest_seconds=_round(longest),
        misdeals=kinds.get(et.HandMisdeal.TYPE, 0),
        voids=kinds.get(et.HandVoid.TYPE, 0),
        overrides=kinds.get(et.FloorOverride.TYPE, 0),
        corrections=kinds.get(et.BettingActionCorrected.TYPE, 0),
    )


def redact(report: RulingsReport) -> RulingsReport:
    """The report without dealers' names (for a reader who is not the floor or surveillance):
    every ruler of the dealer role is one row, ``a dealer``."""
    rulers = [r for r in report.rulers if r.role != "dealer"]
    dealers = [r for r in report.rulers if r.role == "dealer"]
    if dealers:
        count = sum(r.rulings for r in dealers)
        timed = [(r.average_seconds, r.rulings) for r in dealers if r.average_seconds is not None]
        weight = sum(n for _, n in timed)
        rulers.append(
            RulerRow(
                person=A_DEALER,
                role="dealer",
                confirmed=sum(r.confirmed for r in dealers),
                rejected=sum(r.rejected for r in dealers),
                overridden=sum(r.overridden for r in dealers),
                rulings=count,
                average_seconds=_round(sum(a * n for a, n in timed) / weight) if weight else None,
            )
        )
    holds = [
        h.model_copy(update={"person": A_DEALER}) if h.role == "dealer" else h for h in report.holds
    ]
    return report.model_copy(update={"rulers": rulers, "holds": holds})


def charts(report: RulingsReport) -> list[Chart]:
    rules = report.rules[:30]  # the rules with the most holds
    out = [
        bar_chart(
            "rulings-rules",
            "Holds by rule",
            f"Holds raised from {report.since} to {report.until}, by the rule each cites, the "
            "most first, confirmed and rejected and overridden beside them.",
            [r.rule for r in rules],
            [
                Series("holds", tuple(float(r.holds) for r in rules)),
                Series("confirmed", tuple(float(r.confirmed) for r in rules)),
                Series("rejected", tuple(float(r.rejected) for r in rules)),
                Series("overridden", tuple(float(r.overridden) for r in rules)),
            ],
            unit="holds",
            label_name="rule",
        )
    ]
    per_device: dict[str, int] = defaultdict(int)
    for d in report.devices:
        per_device[f"{d.table_id} {d.device}"] += d.holds
    top = sorted(per_device.items(), key=lambda kv: (-kv[1], kv[0]))[:30]
    out.append(
        bar_chart(
            "rulings-devices",
            "Holds by device",
            "Holds behind each table's shuffler and reader zones, the most first.",
            [name for name, _ in top],
            [Series("holds", tuple(float(n) for _, n in top))],
            unit="holds",
            label_name="device",
        )
    )
    timed = [r for r in rules if r.average_seconds is not None]
    out.append(
        bar_chart(
            "rulings-time",
            "Time from raised to ruled",
            "The average and the longest seconds from a hold's raising to its ruling, by rule.",
            [r.rule for r in timed],
            [
                Series("average", tuple(r.average_seconds for r in timed)),
                Series("longest", tuple(r.longest_seconds for r in timed)),
            ],
            unit="seconds",
            label_name="rule",
        )
    )
    return out


REPORT: Report[RulingsReport] = Report(
    name="rulings",
    title="Irregularities and rulings",
    summary="Holds by rule ID and by device, who ruled them and how, the time to a ruling; "
    "misdeals, voids, overrides and corrections by rule.",
    model=RulingsReport,
    compute=compute,
    parts=(
        Part("rules", "By rule", RuleRow, lambda r: r.rules),
        Part("devices", "By device", DeviceRow, lambda r: r.devices),
        Part("rulers", "Who ruled", RulerRow, lambda r: r.rulers),
        Part("holds", "Holds", HoldRow, lambda r: r.holds),
    ),
    template="report_rulings.html",
    charts=charts,
    redact=redact,
    reads=reading("rulings", "holds"),
    notes=(
        "An irregularity is a hold: each cites the rule that found it. A hold counts in the "
        "period it was raised in.",
        "How: confirm or reject (the dealer or the floor), override (the floor's own "
        "decision), deck (settled by the deck's check).",
        "A device is the table's shuffler (a shuffler's rule, a shuffle or a fault code in "
        "the evidence) or the reader of the zone the evidence names.",
    ),
)
