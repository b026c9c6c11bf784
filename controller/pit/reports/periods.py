"""The periods a report groups by: the floor's days, shifts or months in its time zone, as UTC
instants (pure: no I/O).

A report reads rows whose times are the tables' RFC 3339 UTC text (``2026-01-05T22:14:03.120Z``),
and the floor counts in its own days and shifts, whose edges move with daylight saving time.
So the store never converts a time: each row goes to a *bucket* named by a prefix of its text
(its UTC hour ``2026-01-05T22``, quarter hour ``2026-01-05T22:0`` or minute), and this module
maps every bucket of the report's span to its period, computed here with the zone's rules
(:class:`Buckets`). A bucket never straddles two periods: its length is the largest of an hour,
a quarter hour and a minute that divides every edge's UTC time (an hour for a floor whose zone
is whole hours from UTC and whose shifts begin on the hour; every zone in use today is whole
quarter hours from UTC, and shifts begin on the quarter hour: ``[reports] shifts``).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal, get_args

Group = Literal["day", "shift", "month"]
GROUPS: tuple[Group, ...] = get_args(Group)


@dataclass(frozen=True)
class Calendar:
    """The floor's time: its zone (None: the host's), when its day begins, its shifts (name,
    start) in the order of the day."""

    zone: tzinfo | None = None
    day_start: time = time(0, 0)
    shifts: tuple[tuple[str, time], ...] = (
        ("day", time(6)),
        ("swing", time(14)),
        ("grave", time(22)),
    )

    def local(self, moment: datetime) -> datetime:
        """An aware instant as the floor's wall clock (naive)."""
        return moment.astimezone(self.zone).replace(tzinfo=None)

    def instant(self, wall: datetime) -> datetime:
        """The floor's wall clock (naive) as a UTC instant: the first of two in the hour a clock
        goes back, and one past the gap in the hour it goes forward (PEP 495's ``fold=0``)."""
        if self.zone is None:
            return wall.astimezone(UTC)  # a naive time's astimezone reads it as the host's
        return wall.replace(tzinfo=self.zone).astimezone(UTC)

    @property
    def name(self) -> str:
        """The zone's name ("Europe/Berlin"; the host's abbreviation when it is the host's)."""
        if self.zone is not None:
            return str(self.zone)
        return datetime.now().astimezone().tzname() or "local time"

    def gaming_date(self, moment: datetime) -> date:
        """The floor's date of an instant: its day begins at ``day_start``."""
        wall = self.local(moment)
        start = datetime.combine(wall.date(), self.day_start)
        return wall.date() if wall >= start else wall.date() - timedelta(days=1)


@dataclass(frozen=True)
class Period:
    """One period of a report: its name and its UTC bounds (the report's span cuts the first
    and the last)."""

    name: str
    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def periods(since: datetime, until: datetime, group: Group, calendar: Calendar) -> list[Period]:
    """The periods of ``group`` that ``[since, until)`` covers, in order, cut to it."""
    if until <= since:
        raise ValueError("until must be after since")
    edges = _edges(since, until, group, calendar)
    out: list[Period] = []
    for (start, name), (end, _) in itertools.pairwise(edges):
        if end <= since or start >= until:
            continue
        out.append(Period(name, max(start, since), min(end, until)))
    return out


def _edges(
    since: datetime, until: datetime, group: Group, calendar: Calendar
) -> list[tuple[datetime, str]]:
    """Each period's start (UTC) and name, from one at or before ``since`` to one at or after
    ``until``, strictly increasing."""
    first = calendar.gaming_date(since) - timedelta(days=1)
    last = calendar.gaming_date(until) + timedelta(days=1)
    starts: dict[datetime, str] = {}
    if group == "month":
        month = date(first.year, first.month, 1)
        while month <= last:
            starts[calendar.instant(datetime.combine(month, calendar.day_start))] = f"{month:%Y-%m}"
            month = date(month.year + month.month // 12, month.month % 12 + 1, 1)
        # and the first month after ``until``'s, the last period's end
        starts[calendar.instant(datetime.combine(month, calendar.day_start))] = f"{month:%Y-%m}"
    else:
        day = first
        while day <= last:
            if group == "day":
                starts[calendar.instant(datetime.combine(day, calendar.day_start))] = (
                    day.isoformat()
                )
            else:
                for name, begins in calendar.shifts:
                    # a shift that begins before the day does is the day's last, after midnight
                    on = day if begins >= calendar.day_start else day + timedelta(days=1)
                    starts[calendar.instant(datetime.combine(on, begins))] = f"{day} {name}"
            day += timedelta(days=1)
    return sorted(starts.items())


#: Bucket lengths in minutes, longest first, and how the store names a time's bucket from its
#: RFC 3339 text (``{t}``: the column).
BUCKETS: dict[int, str] = {
    60: "substr({t}, 1, 13)",
    # text comparisons only: a malformed time (a table's ``ts`` is stored as it came) can give
    # no error, where a cast would
    15: "substr({t}, 1, 14) || CASE WHEN substr({t}, 15, 2) < '15' THEN '0' "
    "WHEN substr({t}, 15, 2) < '30' THEN '1' WHEN substr({t}, 15, 2) < '45' THEN '2' ELSE '3' END",
    1: "substr({t}, 1, 16)",
}


@dataclass(frozen=True)
class Buckets:
    """Every bucket of a report's span and the period it is in."""

    minutes: int
    keys: tuple[tuple[str, int], ...]  # (bucket name, index of its period)

    def sql(self, column: str) -> str:
        """The store's expression of the bucket of ``column`` (an RFC 3339 UTC text column)."""
        return BUCKETS[self.minutes].format(t=column)


def bucket_name(moment: datetime, minutes: int) -> str:
    """The name of the bucket an instant is in (what :meth:`Buckets.sql` gives of its text)."""
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")
    if minutes == 60:
        return text[:13]
    if minutes == 15:
        return text[:14] + str(int(text[14:16]) // 15)
    return text


def buckets(spans: Sequence[Period]) -> Buckets:
    """The buckets of the periods ``spans`` (in order, touching each other)."""
    if not spans:
        return Buckets(60, ())
    inner = [p.start for p in spans[1:]]
    # an edge off the minute (a zone's offset of seconds, before 1972): minutes, the finest
    minutes = next((m for m in BUCKETS if all(_aligned(t, m) for t in inner)), 1)
    step = timedelta(minutes=minutes)
    first = spans[0].start.astimezone(UTC)
    moment = first - timedelta(
        minutes=first.minute % minutes, seconds=first.second, microseconds=first.microsecond
    )
    starts = [p.start for p in spans]
    keys: list[tuple[str, int]] = []
    while moment < spans[-1].end:
        index = max(0, bisect.bisect_right(starts, moment) - 1)
        keys.append((bucket_name(moment, minutes), index))
        moment += step
    return Buckets(minutes, tuple(keys))


def _aligned(moment: datetime, minutes: int) -> bool:
    utc = moment.astimezone(UTC)
    return utc.second == 0 and utc.microsecond == 0 and utc.minute % minutes == 0


def rfc3339(moment: datetime) -> str:
    """An instant as the tables write times (UTC, milliseconds, ``Z``), which sorts as time
    does: what a report compares the stored ``ts`` with."""
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
