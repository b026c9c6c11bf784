"""Irregularities by dealer: each dealer's holds per hundred hands dealt beside the floor's.

A hand's dealer is the person of its ``hand.started``'s ``by`` when the table accepted the start
from them as a dealer (``hands.dealer``, pit schema 12: the hands stored before it, and the hands
the floor started, have none and count in the floor's figures only). A hand's irregularities are
the holds raised in it (each citing its rule). The hands are those started in the period.

Dealers' names are for the floor and surveillance (design §3.16): the report is theirs only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from controller.pit.db import Db
from controller.pit.reports.charts import Chart, Series, bar_chart
from controller.pit.reports.params import ReportQuery
from controller.pit.reports.quarters import quarter_span, whole_quarters
from controller.pit.reports.registry import NAMES_ROLES, Part, Report, ReportOut
from controller.pit.reports.sql import among, snapshot

#: The dealers drawn in the chart, at most (the most hands first).
CHARTED = 40
#: The row of the hands no dealer is named for.
NOBODY = "(no dealer named)"


class DealerRow(BaseModel):
    """One dealer's hands and the holds raised in them."""

    dealer: str
    hands: int = Field(description="hands started in the period")
    holds: int = Field(description="holds raised in those hands")
    rate: float | None = Field(description="holds per 100 hands")
    floor_rate: float | None = Field(description="the floor's: every hold per 100 hands")
    rules: str = Field(description="the rules cited, most first: RULE×count, …")


class DealersReport(ReportOut):
    """``dealers``."""

    dealers: list[DealerRow]
    floor: DealerRow = Field(description="every hand of the period (dealer ``*``)")


def compute(db: Db, query: ReportQuery, head: dict[str, Any]) -> DealersReport:
    # the statements are this module's text; what a reader gives is only ever a parameter
    tables, table_params = among("h.table_id", query.tables)
    low, high = query.months
    hands_where = (
        f"h.started_ts >= ? AND h.started_ts < ? AND h.month >= ? AND h.month <= ?{tables}"
    )
    params = [query.since_text, query.until_text, low, high, *table_params]
    # a hold is filed under its hand's month or the month after (the month of its own event)
    join = (
        "JOIN holds o ON o.table_id = h.table_id AND o.epoch = h.epoch "
        "AND o.hand_id = h.hand_id AND o.month >= h.month"
    )
    if whole_quarters(query):  # the hands started, counted by quarter hour already
        quarters, quarter_params = among("table_id", query.tables)
        counting = (
            "SELECT NULLIF(dealer, ''), sum(started) FROM dealer_quarters "  # noqa: S608
            f"WHERE quarter >= ? AND quarter < ?{quarters} GROUP BY dealer HAVING sum(started) > 0"
        )
        counting_params: list[Any] = [*quarter_span(query), *quarter_params]
    else:
        counting = f"SELECT h.dealer, count(*) FROM hands h WHERE {hands_where} GROUP BY h.dealer"  # noqa: S608
        counting_params = params
    with snapshot(db):
        hands = db.all(counting, counting_params)
        holds = db.all(
            f"SELECT h.dealer, o.rule, count(*) FROM hands h {join} WHERE {hands_where} "  # noqa: S608
            "AND o.month >= ? AND o.month <= ? GROUP BY h.dealer, o.rule",
            [*params, low, _next(high)],
        )
    dealt = {_name(d): int(n) for d, n in hands}
    cited: dict[str, dict[str, int]] = defaultdict(dict)
    for dealer, rule, count in holds:
        cited[_name(dealer)][str(rule or "")] = int(count)
    every_hand = sum(dealt.values())
    every_hold = sum(sum(r.values()) for r in cited.values())
    floor_rate = _rate(every_hold, every_hand)
    all_rules: dict[str, int] = defaultdict(int)
    for rules in cited.values():
        for rule, count in rules.items():
            all_rules[rule] += count
    rows = [
        _row(name, dealt.get(name, 0), cited.get(name, {}), floor_rate)
        for name in sorted(set(dealt) | set(cited), key=lambda n: (n == NOBODY, n))
    ]
    return DealersReport(
        **head, dealers=rows, floor=_row("*", every_hand, dict(all_rules), floor_rate)
    )


def _next(month: str) -> str:
    year, number = int(month[:4]), int(month[5:7])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def _name(dealer: Any) -> str:
    return str(dealer) if dealer is not None else NOBODY


def _rate(holds: int, hands: int) -> float | None:
    return round(100.0 * holds / hands, 3) if hands else None


def _row(name: str, hands: int, rules: dict[str, int], floor_rate: float | None) -> DealerRow:
    holds = sum(rules.values())
    listed = sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))
    return DealerRow(
        dealer=name,
        hands=hands,
        holds=holds,
        rate=_rate(holds, hands),
        floor_rate=floor_rate,
        rules=", ".join(f"{rule}×{count}" for rule, count in listed),
    )


def charts(report: DealersReport) -> list[Chart]:
    named = [d for d in report.dealers if d.dealer != NOBODY]
    shown = sorted(named, key=lambda d: (-d.hands, d.dealer))[:CHARTED]
    reference = ("floor", report.floor.rate) if report.floor.rate is not None else None
    return [
        bar_chart(
            "dealers-rate",
            "Holds per 100 hands by dealer",
            "Each dealer's holds per hundred hands dealt from "
            f"{report.since} to {report.until}, the dealers with the most hands first; the "
            "dashed line is the floor's rate.",
            [d.dealer for d in shown],
            [Series("holds per 100 hands", tuple(d.rate for d in shown))],
            unit="per 100 hands",
            label_name="dealer",
            reference=reference,
        )
    ]


REPORT: Report[DealersReport] = Report(
    name="dealers",
    title="Irregularities by dealer",
    summary="Each dealer's holds per hundred hands dealt beside the floor's rate (the floor "
    "and surveillance only).",
    model=DealersReport,
    compute=compute,
    parts=(Part("dealers", "By dealer", DealerRow, lambda r: [*r.dealers, r.floor]),),
    template="report_dealers.html",
    charts=charts,
    roles=NAMES_ROLES,
    # the hands started by quarter hour, or the hands; their holds from the hands and holds
    reads=lambda query: (
        ("quarters", "hands", "holds") if whole_quarters(query) else ("hands", "holds")
    ),
    notes=(
        "A hand's dealer is whoever started it as a dealer (the by of its hand.started); the "
        "hands stored before pit schema 12 and those the floor started name none.",
        "Irregularities are the holds raised in the dealer's hands; the rate is per hundred "
        "hands started in the period.",
    ),
)
