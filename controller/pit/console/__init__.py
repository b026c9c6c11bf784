"""The floor's web console: pages rendered on the server, kept live by Server-Sent Events.

Pages (each needs a login; without one the browser is sent to ``/login``): the floor map ``/``,
the holds queue ``/holds``, a table ``/tables/{table}``, hands ``/hands`` and a hand's timeline
``/hands/{hand_id}``, alarms ``/alarms``. Each page names its stream, ``/api/live/{page}``: the
stream waits for the pit to learn something (:class:`controller.pit.live.LiveBoard`) and sends
the page's sections that changed, as HTML to put in place (:mod:`.streams`: computed once for
every stream of a page, paced, bounded); the small script in ``static/console.js`` does that,
keeps ages ticking and sends the rulings. No build step and nothing from another site: the
templates, the script and the style ship in this package.

A section that cannot be rendered from what the store holds (data of a shape nobody foresaw)
is shown as a "malformed" marker in its place (a tile names its table), never as a failed page.

Every page carries the pit's own health (:mod:`controller.pit.health`, what ``/healthz``
answers from): a banner naming the broker or the store lost and since when, and a live
indicator that says live only when nothing is lost. Without the store no page can be read: a
page asked for then is a 503 page naming it (:func:`render_unavailable`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import jinja2
import structlog
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from controller import __version__
from controller.pit.api import Authed, User, current_user, utc_time
from controller.pit.console.streams import (
    CSRF_MARK,
    LiveResponse,
    LiveSource,
    Sections,
    Snapshot,
    Sources,
    StreamRegistry,
    Watch,
    stream_events,
)
from controller.pit.console.views import (
    Viewer,
    degraded_view,
    device_faults,
    event_view,
    hand_view,
    health_view,
    hold_view,
    hole_cards,
    table_view,
    tile,
)
from controller.pit.health import PitHealth
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.store import Store, Stream
from controller.pit.users import csrf_token, token_digest
from controller.pit.worker import StoreLostError, StoreWorker
from controller.table.state import Ruling

log = structlog.get_logger("tablectl.pit.console")

#: What the floor may decide instead when it overrides a hold (the controller's rulings).
DECISIONS = tuple(r.value for r in Ruling)
#: Events a table page shows, newest first.
TABLE_EVENTS = 60

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("controller.pit.console", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["tojson_compact"] = lambda v: json.dumps(v, separators=(",", ":"), default=str)

#: Seconds back the floor map counts the messages refused from each table.
REFUSED_WINDOW = 3600.0
#: Refused messages the alarms page lists.
REFUSED_SHOWN = 50


class LoginRequiredError(Exception):
    """A page asked for without a login: to the login page, then back."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def render(template: str, **context: Any) -> str:
    """A template of the console, rendered."""
    return _env.get_template(template).render(version=__version__, **context)


#: Every page: its script, style and streams from this site only, never framed by another.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def pit_health(app: Any) -> dict[str, Any]:
    """What the pages say of the pit's own health now (:func:`health_view`)."""
    health: PitHealth = app.state.health
    return health_view(health.lost(), time.time(), app.state.store_name)


def render_login(request: Request, *, error: str, next: str, status: int) -> HTMLResponse:
    """The login page."""
    return HTMLResponse(
        render(
            "login.html",
            error=error,
            next=next,
            viewer=None,
            live=None,
            health=pit_health(request.app),
        ),
        status,
        headers=PAGE_HEADERS,
    )


#: Seconds between two loads of the page shown while the store is lost.
UNAVAILABLE_RETRY = 5


def render_unavailable(request: Request) -> HTMLResponse:
    """What a page is while the store does not answer (every page is read from it, the login
    too): 503, the banner naming the store and since when, and the page loads itself again."""
    return HTMLResponse(
        render(
            "unavailable.html",
            viewer=None,
            live=None,
            health=pit_health(request.app),
            retry=UNAVAILABLE_RETRY,
        ),
        503,
        headers={**PAGE_HEADERS, "Retry-After": str(UNAVAILABLE_RETRY)},
    )


def health_event(app: Any) -> str:
    """The live streams' ``health`` event: whether the pit is live, the indicator's words when
    not, and the banner's HTML to put in place."""
    view = pit_health(app)
    data = {
        "live": view["live"],
        "indicator": view["indicator"],
        "banner": render("_health.html", health=view),
    }
    return f"event: health\ndata: {json.dumps(data)}\n\n"


def render_section(target: str, template: str, context: dict[str, Any]) -> str:
    """A section of a page; one that cannot be rendered is a visible "malformed" marker."""
    try:
        return render(template, **context)
    except Exception:
        log.exception("pit.console.section_failed", target=target[:100], template=template)
        return render("_malformed.html", target=target, tile=target.startswith("tile-"))


def viewer_kind(viewer: Viewer) -> Viewer:
    """What a page's sections depend on of a viewer: the roles that change them and whether
    their forms carry a CSRF token (:data:`CSRF_MARK`, each session puts its own)."""
    return Viewer(
        "",
        frozenset(viewer.roles & {"floor", "surveillance", "maintenance"}),
        CSRF_MARK if viewer.csrf else None,
    )


def _kind_key(kind: Viewer) -> tuple[str, ...]:
    return (*sorted(kind.roles), "csrf" if kind.csrf else "")


def add_pages(app: FastAPI) -> None:
    """Add the console's pages, streams and static files to the pit's app."""
    reader: StoreWorker = app.state.reader
    board: LiveBoard = app.state.board
    limits: StreamLimits = app.state.streams
    registry = app.state.stream_registry = StreamRegistry(limits)
    sources = app.state.live_sources = Sources()
    app.mount(
        "/static",
        StaticFiles(packages=[("controller.pit.console", "static")]),
        name="static",
    )

    def source(
        compute: Callable[[], Awaitable[Sections]], follows: Callable[[], int]
    ) -> LiveSource:
        return LiveSource(compute, follows, render_section, limits.interval)

    @app.exception_handler(LoginRequiredError)
    async def to_login(request: Request, exc: LoginRequiredError) -> Response:
        return RedirectResponse(f"/login?next={quote(exc.path)}", status_code=303)

    async def viewer_of(request: Request) -> Viewer:
        try:
            user = await current_user(request)
        except HTTPException as exc:
            if exc.status_code == 401:
                raise LoginRequiredError(request.url.path) from None
            raise
        return _viewer(request, user)

    def page(template: str, viewer: Viewer, live: str | None, **context: Any) -> HTMLResponse:
        return HTMLResponse(
            render(template, viewer=viewer, live=live, health=pit_health(app), **context),
            headers=PAGE_HEADERS,
        )

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    async def login_form(request: Request, next: str = "/") -> HTMLResponse:
        return render_login(request, error="", next=next, status=200)

    # ------------------------------------------------------------------ floor map

    async def floor_sections() -> Sections:
        tables = await reader.call(Store.tables)
        states = await reader.call(Store.table_states)
        holds = await reader.call(Store.holds, open_only=True)
        alarms = await reader.call(Store.alarms, limit=1000, unacknowledged=True)
        refused = await reader.call(Store.reject_counts, time.time() - REFUSED_WINDOW)
        by_table: dict[str, list[dict[str, Any]]] = {}
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
        for t in tables:
            name = t["table_id"]
            sections[f"tile-{name}"] = (
                "_tile.html",
                {
                    "t": tile(
                        t,
                        states.get(name),
                        by_table.get(name, []),
                        board.devices.get(name, {}),
                        alarm_count.get(name, 0),
                        refused.get(name, 0),
                    )
                },
            )
        return sections

    # the floor map is the same for everyone: read once per change, however many are watching
    floor = app.state.floor_source = source(floor_sections, lambda: board.version)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def floor_page(request: Request) -> HTMLResponse:
        viewer = await viewer_of(request)
        snapshot = await floor.get(board.version)
        return page("floor.html", viewer, "/api/live/floor", sections=_html(snapshot, viewer))

    # ------------------------------------------------------------------ holds queue

    def holds_source(viewer: Viewer) -> LiveSource:
        kind = viewer_kind(viewer)

        async def sections() -> Sections:
            open_holds = await reader.call(Store.holds, open_only=True)
            resolved = await reader.call(Store.resolved_holds, 10)
            return {
                "holds-open": (
                    "_holds_open.html",
                    {
                        "holds": [hold_view(h, kind) for h in open_holds],
                        "viewer": kind,
                        "decisions": DECISIONS,
                    },
                ),
                "holds-resolved": (
                    "_holds_resolved.html",
                    {"holds": [hold_view(h, kind) for h in resolved]},
                ),
            }

        return sources.get(
            ("holds", *_kind_key(kind)), lambda: source(sections, lambda: board.version)
        )

    @app.get("/holds", response_class=HTMLResponse, include_in_schema=False)
    async def holds(
        request: Request, answered: str | None = None, status: str | None = None
    ) -> HTMLResponse:
        viewer = await viewer_of(request)
        snapshot = await holds_source(viewer).get(board.version)
        return page(
            "holds.html",
            viewer,
            "/api/live/holds",
            sections=_html(snapshot, viewer),
            answered=answered,
            status=status,
        )

    # ------------------------------------------------------------------ a table

    def table_source(viewer: Viewer, table: str) -> LiveSource:
        kind = viewer_kind(viewer)
        cards = viewer.sees_cards

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
            view = table_view(rows[0], state, board.devices.get(table, {}), holes if cards else {})
            return {
                "table-state": ("_table_state.html", {"v": view, "viewer": kind}),
                "table-events": (
                    "_events.html",
                    {"events": [event_view(e, kind) for e in events], "id": "table-events"},
                ),
            }

        return sources.get(
            ("table", table, "cards" if cards else ""),
            lambda: source(sections, lambda: board.table_version(table)),
        )

    @app.get("/tables/{table}", response_class=HTMLResponse, include_in_schema=False)
    async def table_page(request: Request, table: str) -> HTMLResponse:
        viewer = await viewer_of(request)
        snapshot = await table_source(viewer, table).get(board.table_version(table))
        return page(
            "table.html",
            viewer,
            f"/api/live/tables/{table}",
            table=table,
            sections=_html(snapshot, viewer),
        )

    # ------------------------------------------------------------------ hands

    @app.get("/hands", response_class=HTMLResponse, include_in_schema=False)
    async def hands(
        request: Request,
        table: str = "",
        hand: str = "",
        rule: str = "",
        since: str = "",
        until: str = "",
    ) -> HTMLResponse:
        viewer = await viewer_of(request)
        error = ""
        found: list[dict[str, Any]] = []
        try:
            if hand:
                one = await reader.call(Store.hand, hand.strip())
                found = [one] if one is not None else []
            else:
                found = await reader.call(
                    Store.hands,
                    table=table.strip() or None,
                    rule=rule.strip() or None,
                    since=utc_time(since.strip() or None),
                    until=utc_time(until.strip() or None),
                    limit=200,
                )
        except HTTPException as exc:
            error = str(exc.detail)
        query = {"table": table, "hand": hand, "rule": rule, "since": since, "until": until}
        rows = [hand_view(h) for h in found]
        return page("hands.html", viewer, None, hands=rows, query=query, error=error)

    @app.get("/hands/{hand_id}", response_class=HTMLResponse, include_in_schema=False)
    async def hand_page(request: Request, hand_id: str) -> HTMLResponse:
        viewer = await viewer_of(request)
        found = await reader.call(Store.hand, hand_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no hand {hand_id!r}")
        stream: Stream = "secure" if viewer.sees_cards else "public"
        events = await reader.call(
            Store.hand_events, found["table_id"], found["epoch"], hand_id, stream
        )
        return page(
            "hand.html",
            viewer,
            None,
            hand=hand_view(found),
            events=[event_view(e, viewer) for e in events],
        )

    # ------------------------------------------------------------------ alarms

    def alarms_source(viewer: Viewer) -> LiveSource:
        kind = viewer_kind(viewer)

        async def sections() -> Sections:
            alarms = await reader.call(Store.alarms, limit=200)
            tables = await reader.call(Store.tables)
            refused = await reader.call(Store.rejects, limit=REFUSED_SHOWN)
            degraded = [degraded_view(t) for t in tables if t["degraded"] or t["alarms"]]
            return {
                "alarm-list": (
                    "_alarms.html",
                    {
                        "alarms": alarms,
                        "faults": device_faults(board.devices),
                        "degraded": degraded,
                        "refused": [
                            {
                                "table_id": r["table_id"],
                                "topic": r["topic"],
                                "reason": r["reason"],
                                "received_at": _when(r["received_at"]),
                                "size": r["size"],
                            }
                            for r in refused
                        ],
                        "viewer": kind,
                    },
                )
            }

        return sources.get(
            ("alarms", *_kind_key(kind)), lambda: source(sections, lambda: board.version)
        )

    @app.get("/alarms", response_class=HTMLResponse, include_in_schema=False)
    async def alarms(request: Request) -> HTMLResponse:
        viewer = await viewer_of(request)
        snapshot = await alarms_source(viewer).get(board.version)
        return page("alarms.html", viewer, "/api/live/alarms", sections=_html(snapshot, viewer))

    # ------------------------------------------------------------------ live streams

    async def live(
        request: Request, user: User, shown: LiveSource, follows: Callable[[], int]
    ) -> LiveResponse:
        token: str | None = getattr(request.state, "session_token", None)
        session = token_digest(token) if token else f"basic:{user.username}"
        stream = registry.open(session, user.username)  # 429 when the process is full
        try:
            first = await shown.get(follows())
        except BaseException:
            registry.close(stream)
            raise
        viewer = _viewer(request, user)

        async def still_logged_in() -> bool:
            # the user removed, their session ended, or their roles changed (what the stream
            # shows depends on them): the stream ends, and a reload asks for a login again
            try:
                if token is not None:
                    name = await reader.call(Store.session_user, token_digest(token), time.time())
                    if name != user.username:
                        return False
                found = await reader.call(Store.user, user.username)
            except StoreLostError:
                return True  # cannot tell: the health event says the store is lost
            return found is not None and sorted(found[1]) == sorted(user.roles)

        watch = Watch(app.state.health, lambda: health_event(app), still_logged_in, limits.recheck)
        events = stream_events(stream, shown, board, follows, first, viewer.csrf, watch)
        return LiveResponse(events, stream, registry, limits.write_timeout)

    live_responses: dict[int | str, dict[str, Any]] = {
        200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"},
        429: {"description": "the pit serves all the streams it may: try again (Retry-After)"},
    }

    @app.get(
        "/api/live/floor",
        tags=["live"],
        response_class=LiveResponse,
        status_code=200,
        responses=live_responses,
    )
    async def live_floor(request: Request, user: Authed) -> LiveResponse:
        """The floor map's tiles as they change (Server-Sent Events: ``replace``)."""
        return await live(request, user, floor, lambda: board.version)

    @app.get(
        "/api/live/holds",
        tags=["live"],
        response_class=LiveResponse,
        status_code=200,
        responses=live_responses,
    )
    async def live_holds(request: Request, user: Authed) -> LiveResponse:
        """The holds queue as it changes (Server-Sent Events: ``replace``)."""
        shown = holds_source(_viewer(request, user))
        return await live(request, user, shown, lambda: board.version)

    @app.get(
        "/api/live/tables/{table}",
        tags=["live"],
        response_class=LiveResponse,
        status_code=200,
        responses=live_responses,
    )
    async def live_table(request: Request, table: str, user: Authed) -> LiveResponse:
        """A table's state and events as they change (Server-Sent Events: ``replace``)."""
        shown = table_source(_viewer(request, user), table)
        return await live(request, user, shown, lambda: board.table_version(table))

    @app.get(
        "/api/live/alarms",
        tags=["live"],
        response_class=LiveResponse,
        status_code=200,
        responses=live_responses,
    )
    async def live_alarms(request: Request, user: Authed) -> LiveResponse:
        """The alarms as they change (Server-Sent Events: ``replace``)."""
        shown = alarms_source(_viewer(request, user))
        return await live(request, user, shown, lambda: board.version)


def _viewer(request: Request, user: User) -> Viewer:
    token: str | None = getattr(request.state, "session_token", None)
    return Viewer(user.username, frozenset(user.roles), csrf_token(token) if token else None)


def _html(snapshot: Snapshot, viewer: Viewer) -> dict[str, str]:
    """The sections of a page for ``viewer`` (their forms with the session's CSRF token)."""
    csrf = viewer.csrf
    return {
        target: section.html if csrf is None else section.html.replace(CSRF_MARK, csrf)
        for target, section in snapshot.sections.items()
    }


def _when(stamp: Any) -> str:
    """A Unix time as RFC 3339 UTC (to the second)."""
    from datetime import UTC, datetime  # noqa: PLC0415

    try:
        return datetime.fromtimestamp(float(stamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"
