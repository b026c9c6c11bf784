"""Which months of a report's span are archived (docs/reports.md, "An archived month").

A month archived by ``tablectl pit archive run`` is off the store (docs/pit.md, "The store for
years"): a report over it would count nothing there and show zeros as if the floor had not
played. Each report names the data kinds its figures come from (``[retention] <kind>_months``,
:data:`controller.pit.partitions.KINDS`), and its answer lists the months of its span that any
of them has archived and not brought back, so that the page and the JSON say so.

The months are UTC months, as the store files its rows: a floor day at the edge of an archived
month is listed with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from controller.pit.db import Db
from controller.pit.partitions import month_of


class ArchivedOut(BaseModel):
    """A data kind a report reads, and the months of its span archived."""

    kind: str = Field(description="the data kind ([retention] <kind>_months)")
    months: list[str] = Field(
        description="its months (YYYY-MM, UTC) in the span archived and not read: `tablectl pit "
        "archive restore MONTH` brings one back for an audit"
    )


def span_months(since: datetime, until: datetime) -> tuple[str, str]:
    """The first and last UTC month of ``[since, until)``."""
    last = until - timedelta(microseconds=1) if until > since else since
    return month_of(since.timestamp()), month_of(last.timestamp())


def archived_in(
    db: Db, since: datetime, until: datetime, kinds: Sequence[str]
) -> list[ArchivedOut]:
    """The months of ``[since, until)`` each of ``kinds`` has archived (restored ones are
    online), the kinds in the order given; a kind with none is left out."""
    if not kinds:
        return []
    first, last = span_months(since, until)
    marks = ", ".join("?" for _ in kinds)
    rows = db.all(
        "SELECT DISTINCT kind, month FROM archived WHERE restored_at IS NULL "  # noqa: S608
        f"AND kind IN ({marks}) AND month >= ? AND month <= ? ORDER BY month",
        (*kinds, first, last),
    )
    found: dict[str, list[str]] = {}
    for kind, month in rows:
        found.setdefault(str(kind), []).append(str(month))
    return [ArchivedOut(kind=k, months=found[k]) for k in kinds if k in found]
