"""A report, as the pit serves it: a small registered unit.

Each report is a :class:`Report`: its name (``/api/reports/{name}``, ``/reports/{name}``), who
may read it, whether and how it groups by period, the function that computes it in the store
(given a :class:`~controller.pit.db.Db`, the checked :class:`~.params.ReportQuery` and the
fields every answer begins with, it returns the report's pydantic model: the JSON answer, as
the OpenAPI describes it), the CSV tables it can be written as (:class:`Part`: a list of rows
of one model), its page's template and the charts drawn from it. :mod:`.catalogue` lists the
reports the pit serves.

Who sees dealers' names: a report whose rows name dealers (``by`` of the events) gives them to
the floor and surveillance only (:data:`NAMES_ROLES`); for anyone else it is ``redact``-ed
before it leaves the store's thread, or refused whole (``roles``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from controller.pit.db import Db
from controller.pit.reports.archived import ArchivedOut, archived_in
from controller.pit.reports.charts import Chart
from controller.pit.reports.params import ReportQuery
from controller.pit.reports.periods import Group, rfc3339

#: Who reads reports (design §3.16): the floor, surveillance and the pit.
READERS = frozenset({"floor", "surveillance", "pit"})
#: Who sees the names of dealers in a report.
NAMES_ROLES = frozenset({"floor", "surveillance"})


class PeriodOut(BaseModel):
    """One period of a report: its name (the floor's date, ``date shift`` or month) and its
    UTC bounds, cut to the report's span."""

    name: str
    start: str = Field(description="RFC 3339 UTC, inclusive")
    end: str = Field(description="RFC 3339 UTC, exclusive")


class ReportOut(BaseModel):
    """What every report's answer begins with: what it is and what it was asked for."""

    report: str
    title: str
    since: str = Field(description="the span's start, RFC 3339 UTC (inclusive)")
    until: str = Field(description="the span's end, RFC 3339 UTC (exclusive)")
    zone: str = Field(description="the floor's time zone its days and shifts are counted in")
    group: str | None = Field(description="day, shift or month; null: not grouped by period")
    tables: list[str] = Field(description="the tables asked for (empty: every table)")
    periods: list[PeriodOut] = Field(description="the periods the rows are grouped in")
    archived: list[ArchivedOut] = Field(
        default_factory=list,
        description="the data kinds the figures come from with months of the span archived "
        "(not counted: the figures there are not the floor's); empty: every month is online",
    )


R = TypeVar("R", bound=ReportOut)


@dataclass(frozen=True)
class Part(Generic[R]):
    """A table of a report as CSV: one row of ``model`` per row ``rows`` gives, its columns the
    model's fields in order."""

    name: str
    title: str
    model: type[BaseModel]
    rows: Callable[[R], Sequence[BaseModel]]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.model.model_fields)


@dataclass(frozen=True)
class Report(Generic[R]):
    """A report the pit serves."""

    name: str
    title: str
    summary: str
    model: type[R]
    #: the report in the store: the connection, what it is asked, and the fields of
    #: :class:`ReportOut` (:func:`head`) its answer begins with
    compute: Callable[[Db, ReportQuery, dict[str, Any]], R]
    parts: tuple[Part[R], ...]
    template: str
    charts: Callable[[R], Sequence[Chart]]
    #: the roles that read it (any one of them)
    roles: frozenset[str] = READERS
    #: the periods it groups by, the first by default (none: it is not grouped by period)
    groups: tuple[Group, ...] = ()
    #: the answer for a reader who may not see dealers' names (None: it names none)
    redact: Callable[[R], R] | None = None
    #: what the figures mean, a sentence each, shown under the page's title
    notes: tuple[str, ...] = field(default=())
    #: the data kinds (``[retention] <kind>_months``) its figures come from, for a query: the
    #: months of its span they have archived are said with the answer (:mod:`.archived`)
    reads: Callable[[ReportQuery], tuple[str, ...]] = field(default=lambda query: ())

    def part(self, name: str | None) -> Part[R]:
        """The CSV table ``name`` (None: the first); KeyError names the ones there are."""
        if not name:
            return self.parts[0]
        for part in self.parts:
            if part.name == name:
                return part
        raise KeyError(f"part: {name!r} is not one of {', '.join(p.name for p in self.parts)}")

    def visible(self, result: R, roles: frozenset[str]) -> R:
        """``result`` as a reader with ``roles`` may see it."""
        if self.redact is None or roles & NAMES_ROLES:
            return result
        return self.redact(result)


def head(report: Report[Any], query: ReportQuery) -> dict[str, Any]:
    """The fields of :class:`ReportOut` for ``report`` asked ``query``."""
    return {
        "report": report.name,
        "title": report.title,
        "since": rfc3339(query.since),
        "until": rfc3339(query.until),
        "zone": query.calendar.name,
        "group": query.group,
        "tables": list(query.tables),
        "periods": [
            PeriodOut(name=p.name, start=rfc3339(p.start), end=rfc3339(p.end))
            for p in query.periods
        ],
    }


def run(report: Report[R], db: Db, query: ReportQuery, roles: frozenset[str]) -> R:
    """``report`` computed in the store for a reader with ``roles`` (on the store's thread)."""
    result = report.compute(db, query, head(report, query))
    result.archived = archived_in(db, query.since, query.until, report.reads(query))
    return report.visible(result, roles)


def reading(*kinds: str) -> Callable[[ReportQuery], tuple[str, ...]]:
    """A report's :attr:`Report.reads` that is the same for every query."""
    return lambda query: kinds
