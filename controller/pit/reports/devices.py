"""Devices: each device's faults, shuffler jams, stale readers and reboots per period, and each
table's uptime.

* From the tables' ``device.status`` events (docs/events.md) in the period: a **fault** is one
  with a ``fault`` code; a **jam** a fault whose code is a jam (GLI29-ERR-JAM:
  :data:`controller.rules.devices.JAMS`); **stale** a ``health`` of ``stale`` (a reader, or a
  shuffler, that stopped answering within its deadline); **lost** a ``health`` of
  ``reconnecting`` or ``failed``; a **reboot** a ``rebooted`` (SHF-POWER). The events are read
  by type and time (an index), a few a table a day.
* **Uptime**: the share of the period each table was connected to the floor, from its births
  and deaths as this pit heard them (``births.received_at``: a Last Will's own ``ts`` is when
  its connection began, not when it ended). Connections of one table that overlap count once;
  a connection still open runs to now; time to come is not counted.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from controller.pit.db import Db
from controller.pit.reports.charts import Chart, Series, bar_chart
from controller.pit.reports.params import ReportQuery
from controller.pit.reports.periods import Period, rfc3339
from controller.pit.reports.registry import Part, Report, ReportOut, reading
from controller.pit.reports.sql import (
    among,
    bucket_param,
    bucket_table,
    json_path,
    json_value,
    snapshot,
)
from controller.rules.devices import JAMS


class DeviceRow(BaseModel):
    """One device of one table over one period (or the whole span: ``period`` ``total``)."""

    table_id: str
    device: str
    kind: str | None = Field(description="shuffler or reader, as the device said")
    period: str
    faults: int
    jams: int = Field(description="GLI29-ERR-JAM: faults that are jams")
    stale: int = Field(description="times it went stale")
    lost: int = Field(description="times it was reconnecting or failed")
    reboots: int = Field(description="SHF-POWER: times it came back with a new boot")


class UptimeRow(BaseModel):
    """One table's connection to the floor over one period (or the span: ``total``)."""

    table_id: str
    period: str
    start: str
    end: str
    seconds: float = Field(description="of the period, the time that has come")
    up_seconds: float
    uptime: float | None = Field(description="up / seconds, percent (null: no time yet)")


class DevicesReport(ReportOut):
    """``devices``."""

    devices: list[DeviceRow] = Field(description="each device and period with anything")
    devices_total: list[DeviceRow] = Field(description="each device over the span")
    uptime: list[UptimeRow] = Field(description="each table heard of and period")
    uptime_total: list[UptimeRow] = Field(description="each table over the span")


_FIGURES = ("faults", "jams", "stale", "lost", "reboots")


def compute(db: Db, query: ReportQuery, head: dict[str, Any]) -> DevicesReport:
    # the statements are this module's text; what a reader gives is only ever a parameter
    tables, table_params = among("table_id", query.tables)
    # each envelope parsed once (``OFFSET 0`` keeps PostgreSQL from folding the subquery into
    # the one above, which would parse it again for every field read), then its fields read
    parsed = (
        f"SELECT table_id, {query.buckets.sql('ts')} AS k, "  # noqa: S608
        f"{json_value(db, 'COALESCE(public, secure)')} AS j "
        f"FROM events WHERE type = 'device.status' AND ts >= ? AND ts < ?{tables}"
        + (" OFFSET 0" if db.dialect == "postgresql" else "")
    )
    fields = ", ".join(
        f"{json_path(db, 'j', 'data', name)} AS {name}"
        for name in ("device", "fault", "health", "kind", "rebooted")
    )
    jams = ", ".join(f"'{code}'" for code in sorted(JAMS))
    # a device's events, by type and time (events_type), their fields read from the envelope
    inner = f"SELECT table_id, k, {fields} FROM ({parsed}) p"  # noqa: S608
    truth = "'true'" if db.dialect == "postgresql" else "1"
    sql = (
        f"WITH b AS ({bucket_table(db)}) "  # noqa: S608
        "SELECT e.table_id, e.device, max(e.kind), b.p, "
        "sum(CASE WHEN e.fault IS NOT NULL THEN 1 ELSE 0 END), "
        f"sum(CASE WHEN e.fault IN ({jams}) THEN 1 ELSE 0 END), "
        "sum(CASE WHEN e.health = 'stale' THEN 1 ELSE 0 END), "
        "sum(CASE WHEN e.health IN ('reconnecting', 'failed') THEN 1 ELSE 0 END), "
        f"sum(CASE WHEN e.rebooted = {truth} THEN 1 ELSE 0 END) "
        f"FROM ({inner}) e JOIN b ON b.k = e.k WHERE e.device IS NOT NULL "
        "GROUP BY e.table_id, e.device, b.p ORDER BY e.table_id, e.device, b.p"
    )
    births_tables, births_params = among("table_id", query.tables)
    since_at, until_at = query.since.timestamp(), query.until.timestamp()
    with snapshot(db):
        found = db.all(
            sql, [bucket_param(query.buckets), query.since_text, query.until_text, *table_params]
        )
        connections = db.all(
            "SELECT table_id, journal, bdseq, "  # noqa: S608
            "min(CASE WHEN state = 'online' THEN received_at END), "
            "min(CASE WHEN state = 'offline' THEN received_at END) "
            f"FROM births WHERE 1 = 1{births_tables} GROUP BY table_id, journal, bdseq",
            births_params,
        )
    spans = query.periods
    rows = [
        DeviceRow(
            table_id=str(r[0]),
            device=str(r[1]),
            kind=None if r[2] is None else str(r[2]),
            period=spans[int(r[3])].name,
            **dict(zip(_FIGURES, (int(v or 0) for v in r[4:]), strict=True)),
        )
        for r in found
    ]
    by_table: dict[str, list[tuple[float, float]]] = defaultdict(list)
    now = query.now.timestamp()
    for table, _journal, _bdseq, up, down in connections:
        if up is None or float(up) >= until_at:
            continue  # a death whose birth this pit never heard, or a table not there yet
        end = float(down) if down is not None else now
        # a table offline for the whole period is there, at 0 %
        intervals = by_table[str(table)]
        if end > since_at:
            intervals.append((float(up), end))
    uptime: list[UptimeRow] = []
    uptime_total: list[UptimeRow] = []
    whole = _Span(Period("total", query.since, query.until), now)
    periods = [_Span(period, now) for period in spans]
    for table in sorted(by_table):
        intervals = merged(by_table[table])
        ends = [e for _, e in intervals]
        uptime.extend(_uptime(table, span, intervals, ends) for span in periods)
        uptime_total.append(_uptime(table, whole, intervals, ends))
    return DevicesReport(
        **head,
        devices=rows,
        devices_total=_totals(rows),
        uptime=uptime,
        uptime_total=uptime_total,
    )


def _totals(rows: Sequence[DeviceRow]) -> list[DeviceRow]:
    grouped: dict[tuple[str, str], list[DeviceRow]] = defaultdict(list)
    for row in rows:
        grouped[row.table_id, row.device].append(row)
    return [
        DeviceRow(
            table_id=table,
            device=device,
            kind=next((r.kind for r in part if r.kind), None),
            period="total",
            **{name: sum(getattr(r, name) for r in part) for name in _FIGURES},
        )
        for (table, device), part in sorted(grouped.items())
    ]


def merged(intervals: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Intervals as disjoint ones covering the same time, in order."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def covered(
    intervals: Sequence[tuple[float, float]],
    start: float,
    end: float,
    ends: Sequence[float] | None = None,
) -> float:
    """Seconds of ``[start, end)`` that disjoint, ordered ``intervals`` cover (``ends``: their
    ends, when the caller has them already)."""
    if end <= start:
        return 0.0
    total = 0.0
    first = bisect.bisect_right(ends if ends is not None else [e for _, e in intervals], start)
    for lo, hi in intervals[first:]:
        if lo >= end:
            break
        total += max(0.0, min(hi, end) - max(lo, start))
    return total


class _Span:
    """A period as the uptime rows need it, worked out once for every table."""

    def __init__(self, period: Period, now: float) -> None:
        self.name = period.name
        self.start = period.start.timestamp()
        self.end = min(period.end.timestamp(), max(now, self.start))
        self.seconds = max(0.0, self.end - self.start)
        self.texts = (rfc3339(period.start), rfc3339(period.end))


def _uptime(
    table: str,
    span: _Span,
    intervals: Sequence[tuple[float, float]],
    ends: Sequence[float],
) -> UptimeRow:
    up = covered(intervals, span.start, span.end, ends)
    # built from figures computed here: no validation to run (thousands a report)
    return UptimeRow.model_construct(
        table_id=table,
        period=span.name,
        start=span.texts[0],
        end=span.texts[1],
        seconds=round(span.seconds, 3),
        up_seconds=round(up, 3),
        uptime=round(100.0 * up / span.seconds, 3) if span.seconds > 0 else None,
    )


def charts(report: DevicesReport) -> list[Chart]:
    labels = [p.name for p in report.periods]
    per_period: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in report.devices:
        for name in _FIGURES:
            per_period[row.period][name] += getattr(row, name)
    group = report.group or "period"
    ordered = sorted(report.uptime_total, key=lambda r: (r.uptime or 0.0, r.table_id))[:40]
    return [
        bar_chart(
            "devices-events",
            "Device faults per period",
            f"Faults, shuffler jams, stale readers and lost devices of every table asked, per "
            f"{group}, from {report.since} to {report.until}.",
            labels,
            [
                Series(name, tuple(float(per_period[n][name]) for n in labels))
                for name in ("faults", "jams", "stale", "lost")
            ],
            unit="events",
            label_name=group,
        ),
        bar_chart(
            "devices-uptime",
            "Uptime per table",
            "The share of the period each table was connected to the floor, the lowest first "
            f"(at most {len(ordered)} tables).",
            [r.table_id for r in ordered],
            [Series("uptime", tuple(r.uptime for r in ordered))],
            unit="%",
            label_name="table",
        ),
    ]


REPORT: Report[DevicesReport] = Report(
    name="devices",
    title="Devices",
    summary="Faults, shuffler jams, stale readers and reboots per device and period; each "
    "table's uptime.",
    model=DevicesReport,
    compute=compute,
    parts=(
        Part("devices", "Each device in each period", DeviceRow, lambda r: r.devices),
        Part("totals", "Each device over the period", DeviceRow, lambda r: r.devices_total),
        Part("uptime", "Each table's uptime in each period", UptimeRow, lambda r: r.uptime),
        Part("uptime-totals", "Each table's uptime", UptimeRow, lambda r: r.uptime_total),
    ),
    template="report_devices.html",
    charts=charts,
    groups=("day", "shift", "month"),
    reads=reading("events"),
    notes=(
        "Faults, jams, stale readers, lost devices and reboots are the tables' device.status "
        "events in the period.",
        "Uptime is the share of the period a table was connected to the floor, from its "
        "births and deaths as this pit heard them.",
    ),
)
