"""What a report is asked for: its period, its tables and how it groups them, read from the query
string and checked (pure: no I/O). A mistake is a :class:`ParamError` naming the parameter, what
was given and what is expected; the API answers it with 422.

* ``since``, ``until``: a date (``2026-01-05``: the floor's day, from ``[reports] day_start``;
  ``until`` a date is through the end of that day), a time with its offset (RFC 3339:
  ``2026-01-05T06:00:00Z``, ``…+01:00``; ``until`` is exclusive), or a time without one (the
  floor's wall clock, as a browser's ``datetime-local`` field sends it). By default the last
  seven days of the floor, today included.
* ``tables``: table ids separated by commas (none: every table).
* ``group``: ``day``, ``shift`` or ``month``, for a report that groups by period.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from controller.pit.reports.periods import (
    GROUPS,
    Buckets,
    Calendar,
    Group,
    Period,
    buckets,
    periods,
    rfc3339,
)

#: A table id, as the pit's topics have them.
TABLE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: Tables one report is asked for by name, at most.
MAX_TABLES = 500
#: Days a report covers when ``since`` is not given.
DEFAULT_DAYS = 7


class ParamError(ValueError):
    """A parameter of a report that cannot be used (the message says which and why)."""


@dataclass(frozen=True)
class ReportQuery:
    """A report's parameters, checked: the span ``[since, until)`` (UTC), the tables (empty:
    every one), the grouping and its periods, and the floor's calendar."""

    since: datetime
    until: datetime
    tables: tuple[str, ...]
    group: Group | None
    calendar: Calendar
    periods: tuple[Period, ...]
    buckets: Buckets
    #: the floor's time now (uptime counts no time that has not come yet)
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def since_text(self) -> str:
        return rfc3339(self.since)

    @property
    def until_text(self) -> str:
        return rfc3339(self.until)

    @property
    def months(self) -> tuple[str, str]:
        """The months a hand or a hold of the span may be filed under (``YYYY-MM``): a row's
        month is that of the first of its events, the month before the span's at the earliest
        (docs/pit.md, "The store for years")."""
        first = self.since.astimezone(UTC)
        before = (first.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
        return before, self.until.astimezone(UTC).strftime("%Y-%m")


def parse_query(
    *,
    since: str | None,
    until: str | None,
    tables: str | None,
    group: str | None,
    groups: tuple[Group, ...],
    calendar: Calendar,
    max_days: int,
    now: datetime | None = None,
    report: str = "this report",
) -> ReportQuery:
    """The checked parameters of a report that groups by one of ``groups`` (none: by no
    period); ParamError names the first mistake."""
    moment = now or datetime.now(UTC)
    today = calendar.gaming_date(moment)
    start = _time(since, "since", calendar, end_of_day=False)
    end = _time(until, "until", calendar, end_of_day=True)
    if end is None:
        end = calendar.instant(datetime.combine(today + timedelta(days=1), calendar.day_start))
    if start is None:
        first = calendar.gaming_date(end - timedelta(microseconds=1)) - timedelta(
            days=DEFAULT_DAYS - 1
        )
        start = calendar.instant(datetime.combine(first, calendar.day_start))
    if end <= start:
        raise ParamError(f"until ({rfc3339(end)}) must be after since ({rfc3339(start)})")
    if end - start > timedelta(days=max_days):
        days = (end - start) / timedelta(days=1)
        raise ParamError(
            f"the period is {days:g} days: a report covers {max_days} at most ([reports] max_days)"
        )
    chosen: Group | None = None
    if groups:
        chosen = _group(group, groups)
    elif group:
        raise ParamError(f"group: {report} is not grouped by period (got {group!r})")
    spans = periods(start, end, chosen or "day", calendar)
    return ReportQuery(
        since=start,
        until=end,
        tables=parse_tables(tables),
        group=chosen,
        calendar=calendar,
        periods=tuple(spans) if chosen else (),
        buckets=buckets(spans) if chosen else Buckets(60, ()),
        now=moment,
    )


def _time(text: str | None, name: str, calendar: Calendar, *, end_of_day: bool) -> datetime | None:
    if text is None or not text.strip():
        return None
    value = text.strip()
    if len(value) > 40:
        raise ParamError(f"{name}: too long to be a date or a time ({len(value)} characters)")
    try:
        day = date.fromisoformat(value) if len(value) == 10 else None
    except ValueError:
        day = None
    if day is not None:
        if end_of_day:
            day += timedelta(days=1)
        return calendar.instant(datetime.combine(day, calendar.day_start))
    try:
        moment = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise ParamError(
            f"{name}: {value!r} is neither a date (YYYY-MM-DD) nor a time (RFC 3339, "
            "2026-01-05T06:00:00Z)"
        ) from None
    if moment.tzinfo is None:  # the floor's wall clock
        return calendar.instant(moment)
    return moment.astimezone(UTC)


def _group(text: str | None, groups: tuple[Group, ...]) -> Group:
    if text is None or not text.strip():
        return groups[0]
    for one in GROUPS:
        if one == text.strip() and one in groups:
            return one
    raise ParamError(f"group: {text!r} is not one of {', '.join(groups)}")


def parse_tables(text: str | None) -> tuple[str, ...]:
    """The tables of a comma list, each once, in the order given (empty: every table)."""
    if text is None or not text.strip():
        return ()
    names: list[str] = []
    for part in text.split(","):
        name = part.strip()
        if not TABLE.match(name):
            shown = name if len(name) <= 64 else name[:64] + "…"
            raise ParamError(
                f"tables: {shown!r} is not a table id (1 to 64 letters, digits, '_', '.', '-'; "
                "several separated by commas)"
            )
        if name not in names:
            names.append(name)
    if len(names) > MAX_TABLES:
        raise ParamError(f"tables: {len(names)} tables named, {MAX_TABLES} at most")
    return tuple(names)
