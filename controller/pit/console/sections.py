"""What the console's live pages show, read from the store: each page's sections, computed once
per change for the page and every stream of it (:class:`.streams.LiveSource`)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from fastapi import HTTPException

from controller.pit.approved_builds import ApprovedBuilds, judged
from controller.pit.console.local_time import LocalTime
from controller.pit.console.picture import picture
from controller.pit.console.render import render_section
from controller.pit.console.streams import CSRF_MARK, LiveSource, Sections, Sources
from controller.pit.console.views import (
    HOST_TIME,
    Viewer,
    degraded_view,
    device_faults,
    event_view,
    hold_view,
    hole_cards,
    table_view,
    tile,
)
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.query_rows import HoldRow
from controller.pit.store import Store, Stream
from controller.pit.worker import StoreWorker
from controller.table import event_types as et
from controller.table.state import Ruling
from controller.view.svg import table_svg

#: What the floor may decide instead when it overrides a hold (the controller's rulings).
DECISIONS = tuple(r.value for r in Ruling)
#: Events a table page shows, newest first.
TABLE_EVENTS = 60
#: Seconds back the floor map counts the messages refused from each table.
REFUSED_WINDOW = 3600.0
#: Refused messages the alarms page lists.
REFUSED_SHOWN = 50


def viewer_kind(viewer: Viewer) -> Viewer:
    """What a page's sections depend on of a viewer: the roles that change them and whether
    their forms carry a CSRF token (:data:`CSRF_MARK`, each session puts its own)."""
    return Viewer(
        "",
        frozenset(viewer.roles & {"floor", "surveillance", "maintenance"}),
        CSRF_MARK if viewer.csrf else None,
    )


def floor_calls(alarms: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The dealers' calls of the floor nobody has acknowledged yet, newest first (an alarm of
    type ``floor.called``; docs/console.md, "A dealer calls the floor"): each with a key the
    page's script chimes once for."""
    return [
        {
            "key": f"{a['table_id']}-{a['epoch']}-{a['seq']}",
            "table_id": a["table_id"],
            "hand_id": a["hand_id"],
            "rule": a["rule"],
            "reason": a["reason"],
        }
        for a in alarms
        if a["type"] == et.FloorCalled.TYPE
    ]


def _kind_key(kind: Viewer) -> tuple[str, ...]:
    return (*sorted(kind.roles), "csrf" if kind.csrf else "")


class LivePages:
    """The live pages' sources: the floor map one for everyone, the holds queue and the alarms
    one per kind of viewer, a table's page one per table and whether its viewer sees cards."""

    def __init__(
        self,
        reader: StoreWorker,
        board: LiveBoard,
        limits: StreamLimits,
        approved: ApprovedBuilds | None = None,
        clock: LocalTime = HOST_TIME,
    ) -> None:
        self.reader = reader
        self.approved = approved
        self.clock = clock  # the floor's time zone, the pages' times are written in
        self.board = board
        self.limits = limits
        self.sources = Sources()
        # the floor map is the same for everyone: read once per change, however many are watching
        self.floor = self._source(self._floor_sections, lambda: board.version)

    def _source(
        self, compute: Callable[[], Awaitable[Sections]], follows: Callable[[], int]
    ) -> LiveSource:
        return LiveSource(compute, follows, render_section, self.limits.interval)

    async def _floor_sections(self) -> Sections:
        reader = self.reader
        tables = judged(self.approved, await reader.call(Store.tables))
        states = await reader.call(Store.table_states)
        holds = await reader.call(Store.holds, open_only=True)
        alarms = await reader.call(Store.alarms, limit=1000, unacknowledged=True)
        refused = await reader.call(Store.reject_counts, time.time() - REFUSED_WINDOW)
        devices = await reader.call(Store.devices)
        by_table: dict[str, list[HoldRow]] = {}
        for h in holds:
            by_table.setdefault(h["table_id"], []).append(h)
        alarm_count: dict[str, int] = {}
        for a in alarms:
            alarm_count[a["table_id"]] = alarm_count.get(a["table_id"], 0) + 1
        sections: Sections = {
            "floor-summary": (
                "_floor_summary.html",
                {
                    "tables": len(tables),
                    "online": sum(1 for t in tables if t["online"]),
                    "holds": len(holds),
                    "alarms": len(alarms),
                    "refused": sum(refused.values()),
                },
            )
        }
        calls = floor_calls(alarms)
        for t in tables:
            name = t["table_id"]
            shown = tile(
                t,
                states.get(name),
                by_table.get(name, []),
                devices.get(name, {}),
                alarm_count.get(name, 0),
                refused.get(name, 0),
            )
            # a dealer calling the floor to the table: the newest call not yet acknowledged
            shown["floor_call"] = next((c for c in calls if c["table_id"] == name), None)
            sections[f"tile-{name}"] = ("_tile.html", {"t": shown})
        return sections

    def holds(self, viewer: Viewer) -> LiveSource:
        """The holds queue: open holds with their buttons, the last resolved."""
        kind = viewer_kind(viewer)
        reader, clock = self.reader, self.clock

        async def sections() -> Sections:
            open_holds = await reader.call(Store.holds, open_only=True)
            resolved = await reader.call(Store.resolved_holds, 10)
            alarms = await reader.call(Store.alarms, limit=200, unacknowledged=True)
            return {
                "holds-open": (
                    "_holds_open.html",
                    {
                        "holds": [hold_view(h, kind, clock) for h in open_holds],
                        "viewer": kind,
                        "decisions": DECISIONS,
                        "calls": floor_calls(alarms),
                    },
                ),
                "holds-resolved": (
                    "_holds_resolved.html",
                    {"holds": [hold_view(h, kind, clock) for h in resolved]},
                ),
            }

        return self.sources.get(
            ("holds", *_kind_key(kind)), lambda: self._source(sections, lambda: self.board.version)
        )

    def table(self, viewer: Viewer, table: str) -> LiveSource:
        """A table's state and its latest events (404: no such table)."""
        kind = viewer_kind(viewer)
        cards = viewer.sees_cards
        reader, board, clock = self.reader, self.board, self.clock

        async def sections() -> Sections:
            rows = await reader.call(Store.tables, table)
            if not rows:
                raise HTTPException(status_code=404, detail=f"no table {table!r}")
            state = await reader.call(Store.table_state, table)
            epoch = rows[0]["epoch"]
            stream: Stream = "secure" if cards else "public"
            events = (
                await reader.call(Store.recent_events, table, epoch, TABLE_EVENTS, stream)
                if epoch
                else []
            )
            hand = (state or {}).get("hand")
            hand_id = hand.get("hand_id") if isinstance(hand, dict) else None
            holes = hole_cards(events, hand_id if isinstance(hand_id, str) else None)
            devices = (await reader.call(Store.devices, table)).get(table, {})
            view = table_view(rows[0], state, devices, holes if cards else {})
            drawing, left_out = picture(view, events)
            view["malformed"] = view["malformed"] or left_out
            return {
                "table-state": (
                    "_table_state.html",
                    {"v": view, "viewer": kind, "drawing": table_svg(drawing)},
                ),
                "table-events": (
                    "_events.html",
                    {
                        "events": [event_view(e, kind, clock) for e in events],
                        "id": "table-events",
                    },
                ),
            }

        return self.sources.get(
            ("table", table, "cards" if cards else ""),
            lambda: self._source(sections, lambda: board.table_version(table)),
        )

    def alarms(self, viewer: Viewer) -> LiveSource:
        """The alarms, device faults, degraded tables and refused messages."""
        kind = viewer_kind(viewer)
        reader, board, clock = self.reader, self.board, self.clock

        async def sections() -> Sections:
            alarms = await reader.call(Store.alarms, limit=200)
            tables = judged(self.approved, await reader.call(Store.tables))
            refused = await reader.call(Store.rejects, limit=REFUSED_SHOWN)
            devices = await reader.call(Store.devices)
            degraded = [degraded_view(t) for t in tables if t["degraded"] or t["alarms"]]
            return {
                "alarm-list": (
                    "_alarms.html",
                    {
                        "alarms": [{**a, "when": clock.of(a["ts"])} for a in alarms],
                        "faults": device_faults(devices),
                        "degraded": degraded,
                        "refused": [
                            {
                                "table_id": r["table_id"],
                                "topic": r["topic"],
                                "reason": r["reason"],
                                "received_at": _when(r["received_at"]),
                                "when": clock.of(r["received_at"]),
                                "size": r["size"],
                            }
                            for r in refused
                        ],
                        "viewer": kind,
                    },
                )
            }

        return self.sources.get(
            ("alarms", *_kind_key(kind)), lambda: self._source(sections, lambda: board.version)
        )


def _when(stamp: Any) -> str:
    """A Unix time as RFC 3339 UTC (to the second)."""
    try:
        return datetime.fromtimestamp(float(stamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"
