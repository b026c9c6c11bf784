"""The drop: the house's take per table and period (HOUSE-RAKE, HOUSE-DROP-JACKPOT, HOUSE-TIME),
with the hands played, hands per hour and the average pot.

What each figure is, as ``tablectl journal export --drop`` counts it from a table's journal
(``controller/shell/export.py``), so the two agree on the same hands:

* **rake** and **jackpot**: a hand's ``pot.rake.taken`` (``hands.rake``, ``hands.jackpot``),
  in the period of the hand's end: the rake is taken by the input that ends the hand (the award
  after the showdown), so ``pot.rake.taken`` and ``hand.completed`` have one ``ts``.
* **time collected**: a ``house.time.collected`` total (``hands.time_collected``, on the row of
  the hand it came before), in the period of that hand's start: it is collected by the input
  that starts the hand.
* **drop**: rake + jackpot + time collected (the export's ``total``).
* **raked**: the hands that paid rake (rake > 0).
* **hands**: the hands completed in the period (a misdeal or a void hand is not a hand played).
* **hours**: the clock hours in which the table completed a hand (an hour with none is an hour
  the table was closed); **hands per hour** is hands / hours.
* **average pot**: the pots before the house's take (the award's pots + rake + jackpot) over
  the hands with a pot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from controller.pit.db import Db
from controller.pit.reports.charts import Chart, Series, bar_chart, line_chart
from controller.pit.reports.params import ReportQuery
from controller.pit.reports.periods import rfc3339
from controller.pit.reports.quarters import (
    hour_span,
    quarter_span,
    whole_hours,
    whole_quarters,
)
from controller.pit.reports.registry import Part, Report, ReportOut
from controller.pit.reports.sql import among, bucket_param, bucket_table, snapshot


class DropRow(BaseModel):
    """The house's take of one table (or the floor: ``table_id`` ``*``) over one period (or
    the whole span: ``period`` ``total``)."""

    table_id: str
    period: str
    start: str = Field(description="RFC 3339 UTC")
    end: str = Field(description="RFC 3339 UTC, exclusive")
    rake: int = Field(description="HOUSE-RAKE: the rake from the pots")
    jackpot: int = Field(description="HOUSE-DROP-JACKPOT: the jackpot or promotion drop")
    time_collected: int = Field(description="HOUSE-TIME: the time collected")
    drop: int = Field(description="rake + jackpot + time collected")
    hands: int = Field(description="hands completed")
    raked: int = Field(description="hands that paid rake")
    hours: int = Field(description="clock hours with a hand completed")
    hands_per_hour: float | None = Field(description="hands / hours (null: no hour of play)")
    pots: int = Field(description="hands with a pot")
    pot_total: int = Field(description="their pots before the house's take")
    average_pot: float | None = Field(description="pot_total / pots (null: no pot)")


class DropReport(ReportOut):
    """``drop``: the grid of tables × periods, each table's and each period's totals, the
    floor's."""

    rows: list[DropRow] = Field(description="each table and period with play or take")
    tables_total: list[DropRow] = Field(description="each table over the span")
    periods_total: list[DropRow] = Field(description="the floor in each period")
    total: DropRow = Field(description="the floor over the span")


#: The figures of a row that add up: (rake, jackpot, time, hands, raked, hours, pots, pot_total)
_SUMS = ("rake", "jackpot", "time_collected", "hands", "raked", "hours", "pots", "pot_total")


def compute(db: Db, query: ReportQuery, head: dict[str, Any]) -> DropReport:
    """The drop over the query's span, grouped by its periods, in one statement: from the
    hands by quarter hour when the span is made of whole quarters (a date, a shift, a month
    always is), else from the hands themselves."""
    if whole_hours(query):
        sql, params = by_hours(db, query)
    elif whole_quarters(query):
        sql, params = by_quarters(db, query)
    else:
        sql, params = by_hands(db, query)
    with snapshot(db):
        found = db.all(sql, params)
    spans = query.periods
    rows = [
        _row(str(r[0]), spans[int(r[1])].name, spans[int(r[1])].start, spans[int(r[1])].end, r[2:])
        for r in found
    ]
    return DropReport(**head, **totals(rows, [(p.name, p.start, p.end) for p in spans], query))


def by_hours(db: Db, query: ReportQuery) -> tuple[str, list[Any]]:
    """The statement over ``hand_hours``: each hour in one period, summed into it at once (an
    hour of play: one with a hand completed)."""
    tables, table_params = among("x.table_id", query.tables)
    number = "CAST({} AS DOUBLE PRECISION)" if db.dialect == "postgresql" else "{}"
    sums = ", ".join(
        f"sum({number.format('x.' + name)})"
        for name in ("rake", "jackpot", "time_collected", "hands", "raked")
    )
    sql = (
        f"WITH b AS ({bucket_table(db)}) "  # noqa: S608
        f"SELECT x.table_id, b.p, {sums}, sum(CASE WHEN x.hands > 0 THEN 1 ELSE 0 END), "
        f"sum({number.format('x.pots')}), sum({number.format('x.pot_total')}) "
        f"FROM hand_hours x JOIN b ON b.k = x.hour WHERE x.hour >= ? AND x.hour < ?{tables} "
        "AND (x.hands > 0 OR x.time_collected > 0) "
        "GROUP BY x.table_id, b.p ORDER BY x.table_id, b.p"
    )
    first, last = hour_span(query)
    return sql, [bucket_param(query.buckets), first, last, *table_params]


def by_quarters(db: Db, query: ReportQuery) -> tuple[str, list[Any]]:
    """The statement over ``hand_quarters`` (controller/pit/reports/quarters.py). Both
    statements give a row per table and period: the table, the period's index, then the
    figures of :data:`_SUMS` in order."""
    # the statements are this module's text; what a reader gives is only ever a parameter
    tables, table_params = among("table_id", query.tables)
    key = "substr(quarter, 1, 13)" if query.buckets.minutes == 60 else "quarter"
    # PostgreSQL sums a bigint as numeric, slowly (tens of MB for a month's hours); as double
    # precision it is as fast as an integer, and exact below 2⁵³ chips
    number = "CAST({} AS DOUBLE PRECISION)" if db.dialect == "postgresql" else "{}"
    sums = ", ".join(
        f"sum({number.format(name)}) AS {name}"
        for name in ("rake", "jackpot", "time_collected", "hands", "raked", "pots", "pot_total")
    )
    # the quarters summed by clock hour first (an hour of play: one with a hand completed), then
    # into the periods, each step a hash aggregate, no sort of the month's quarters; by the hour,
    # an hour is in one period, and is summed into it at once
    hours = (
        f"SELECT table_id, {key} AS k, substr(quarter, 1, 13) AS hour, {sums}, "  # noqa: S608
        "max(CASE WHEN hands > 0 THEN 1 ELSE 0 END) AS played "
        # a quarter of hands started but none completed is none of the drop's
        f"FROM hand_quarters WHERE quarter >= ? AND quarter < ?{tables} "
        "AND (hands > 0 OR time_collected > 0) "
        f"GROUP BY table_id, {key}, substr(quarter, 1, 13)"
    )
    if query.buckets.minutes != 60:  # an hour may be in two periods: played once in each
        hours = (
            "SELECT h.table_id, b.p AS k, h.hour, sum(h.rake) AS rake, "  # noqa: S608
            "sum(h.jackpot) AS jackpot, sum(h.time_collected) AS time_collected, "
            "sum(h.hands) AS hands, sum(h.raked) AS raked, sum(h.pots) AS pots, "
            "sum(h.pot_total) AS pot_total, max(h.played) AS played "
            f"FROM ({hours}) h JOIN b ON b.k = h.k GROUP BY h.table_id, b.p, h.hour"
        )
        period = "h.k"
        join = ""
    else:
        period = "b.p"
        join = " JOIN b ON b.k = h.k"
    sql = (
        f"WITH b AS ({bucket_table(db)}) "  # noqa: S608
        f"SELECT h.table_id, {period}, sum(h.rake), sum(h.jackpot), sum(h.time_collected), "
        "sum(h.hands), sum(h.raked), sum(h.played), sum(h.pots), sum(h.pot_total) "
        f"FROM ({hours}) h{join} GROUP BY h.table_id, {period} ORDER BY h.table_id, {period}"
    )
    first, last = quarter_span(query)
    return sql, [bucket_param(query.buckets), first, last, *table_params]


def by_hands(db: Db, query: ReportQuery) -> tuple[str, list[Any]]:
    """The statement over the hands of the span (a span cut inside a quarter hour)."""
    tables, table_params = among("table_id", query.tables)
    low, high = query.months
    ended, started = query.buckets.sql("ended_ts"), query.buckets.sql("started_ts")
    # each table's hands grouped first by bucket and clock hour, then into the periods
    sql = (
        f"WITH b AS ({bucket_table(db)}), x AS ("  # noqa: S608
        f"SELECT table_id, {ended} AS k, substr(ended_ts, 1, 13) AS hour, count(*) AS hands, "
        "sum(CASE WHEN rake > 0 THEN 1 ELSE 0 END) AS raked, sum(rake) AS rake, "
        "sum(jackpot) AS jackpot, 0 AS time_collected, count(pot) AS pots, "
        "sum(pot + COALESCE(rake, 0) + COALESCE(jackpot, 0)) AS pot_total "
        "FROM hands WHERE outcome = 'completed' AND ended_ts >= ? AND ended_ts < ? "
        f"AND month >= ? AND month <= ?{tables} "
        f"GROUP BY table_id, {ended}, substr(ended_ts, 1, 13) "
        "UNION ALL "
        f"SELECT table_id, {started} AS k, NULL AS hour, 0, 0, 0, 0, sum(time_collected), 0, 0 "
        "FROM hands WHERE time_collected IS NOT NULL AND started_ts >= ? AND started_ts < ? "
        f"AND month >= ? AND month <= ?{tables} "
        f"GROUP BY table_id, {started}) "
        "SELECT x.table_id, b.p, sum(x.rake), sum(x.jackpot), sum(x.time_collected), "
        "sum(x.hands), sum(x.raked), count(DISTINCT x.hour), sum(x.pots), sum(x.pot_total) "
        "FROM x JOIN b ON b.k = x.k GROUP BY x.table_id, b.p ORDER BY x.table_id, b.p"
    )
    span = (query.since_text, query.until_text, low, high)
    return sql, [bucket_param(query.buckets), *span, *table_params, *span, *table_params]


def totals(
    rows: list[DropRow], spans: Sequence[tuple[str, Any, Any]], query: ReportQuery
) -> dict[str, Any]:
    """The grid and its totals: each table's over the span, the floor's in each period and
    over the span (an hour of play counts once per table)."""
    by_table: dict[str, list[DropRow]] = defaultdict(list)
    by_period: dict[str, list[DropRow]] = defaultdict(list)
    for row in rows:
        by_table[row.table_id].append(row)
        by_period[row.period].append(row)
    whole = (query.since, query.until)
    return {
        "rows": rows,
        "tables_total": [_sum(name, "total", *whole, part) for name, part in by_table.items()],
        "periods_total": [
            _sum("*", name, start, end, by_period.get(name, [])) for name, start, end in spans
        ],
        "total": _sum("*", "total", *whole, rows),
    }


def _row(table: str, period: str, start: Any, end: Any, figures: Sequence[Any]) -> DropRow:
    values = dict(zip(_SUMS, (int(v or 0) for v in figures), strict=True))
    return _finish(table, period, start, end, values)


def _sum(table: str, period: str, start: Any, end: Any, rows: Sequence[DropRow]) -> DropRow:
    values = {name: sum(int(getattr(r, name)) for r in rows) for name in _SUMS}
    return _finish(table, period, start, end, values)


def _finish(table: str, period: str, start: Any, end: Any, values: dict[str, int]) -> DropRow:
    return DropRow(
        table_id=table,
        period=period,
        start=rfc3339(start),
        end=rfc3339(end),
        drop=values["rake"] + values["jackpot"] + values["time_collected"],
        hands_per_hour=round(values["hands"] / values["hours"], 2) if values["hours"] else None,
        average_pot=round(values["pot_total"] / values["pots"], 2) if values["pots"] else None,
        **values,
    )


def charts(report: DropReport) -> list[Chart]:
    """The floor's drop per period (bars by kind of take), and a line per table of its drop
    per period."""
    labels = [p.name for p in report.periods]
    floor = {r.period: r for r in report.periods_total}
    out = [
        bar_chart(
            "drop-floor",
            "The floor's drop per period",
            f"Rake, jackpot drop and time collected of every table asked, per "
            f"{report.group or 'period'}, from {report.since} to {report.until}.",
            labels,
            [
                Series("rake", tuple(float(floor[n].rake) for n in labels)),
                Series("jackpot", tuple(float(floor[n].jackpot) for n in labels)),
                Series("time", tuple(float(floor[n].time_collected) for n in labels)),
            ],
            unit="chips",
            label_name=report.group or "period",
        )
    ]
    grid: dict[str, dict[str, DropRow]] = defaultdict(dict)
    for row in report.rows:
        grid[row.table_id][row.period] = row
    for index, table in enumerate(sorted(grid)):
        cells = grid[table]
        out.append(
            line_chart(
                f"drop-table-{index}",
                f"Table {table}: drop per period",
                f"The drop (rake + jackpot + time) of table {table} per "
                f"{report.group or 'period'}; a period without play is 0.",
                labels,
                [
                    Series(
                        "drop", tuple(float(cells[n].drop) if n in cells else 0.0 for n in labels)
                    )
                ],
                unit="chips",
                label_name=report.group or "period",
            )
        )
    return out


REPORT: Report[DropReport] = Report(
    name="drop",
    title="Drop",
    summary="The house's take per table and period: rake, jackpot drop, time collected, hands, "
    "hands per hour, average pot.",
    model=DropReport,
    compute=compute,
    parts=(
        Part("grid", "Each table in each period", DropRow, lambda r: r.rows),
        Part("tables", "Each table over the period", DropRow, lambda r: r.tables_total),
        Part("periods", "The floor in each period", DropRow, lambda r: r.periods_total),
    ),
    template="report_drop.html",
    charts=charts,
    groups=("day", "shift", "month"),
    # the quarters (or hours) over whole quarter hours, else the hands
    reads=lambda query: ("quarters",) if whole_quarters(query) else ("hands",),
    notes=(
        "Rake and jackpot drop count in the period the hand ended (the rake is taken by the "
        "input that ends it); time collected in the period of the hand it came before.",
        "Hands are the hands completed; hours the clock hours in which the table completed a "
        "hand; the average pot is before the house's take.",
        "The same figures as tablectl journal export --drop on each table's journal.",
    ),
)
