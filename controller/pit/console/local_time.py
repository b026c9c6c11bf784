"""Times as the floor reads them: in the floor's own time zone (``[web] time_zone``, by default
the host's), to the second; the full UTC timestamp stays with each (a ``<time datetime>`` and
its ``title``), so nothing of the stored time is lost.

The events' ``ts`` are RFC 3339 UTC to the millisecond (docs/events.md); the pit's own times are
Unix times. A value that is neither is shown as it came.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any


@dataclass(frozen=True)
class LocalTime:
    """Writes times in ``zone`` (None: the host's local time zone)."""

    zone: tzinfo | None = None

    def of(self, stamp: Any) -> dict[str, str] | None:
        """``stamp`` (RFC 3339, or a Unix time) as ``text`` (local, to the second, with the
        zone's abbreviation), ``datetime`` (UTC, RFC 3339, for ``<time datetime>``) and ``utc``
        (the same, for a title); None when it is not a time."""
        moment = parse(stamp)
        if moment is None:
            return None
        try:
            local = moment.astimezone(self.zone)
        except (OverflowError, OSError, ValueError):  # past what the zone's rules can say
            return None
        utc = moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {
            "text": local.strftime("%Y-%m-%d %H:%M:%S ") + (local.tzname() or ""),
            "datetime": utc,
            "utc": f"{utc} (UTC)",
        }

    @property
    def name(self) -> str:
        """The zone's name as the pages say it ("Europe/Berlin", or the host's abbreviation)."""
        if self.zone is not None:
            return str(self.zone)
        return datetime.now().astimezone().tzname() or "local time"


def parse(stamp: Any) -> datetime | None:
    """An aware datetime from an RFC 3339 text or a Unix time (None: neither)."""
    if isinstance(stamp, bool):
        return None
    if isinstance(stamp, int | float):
        try:
            return datetime.fromtimestamp(float(stamp), UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # not RFC 3339: a time without its offset names no instant
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment
