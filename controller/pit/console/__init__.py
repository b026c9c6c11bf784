"""The floor's web console: pages rendered on the server, kept live by Server-Sent Events.

Pages (each needs a login; without one the browser is sent to ``/login``): the floor map ``/``,
the holds queue ``/holds``, a table ``/tables/{table}``, hands ``/hands`` and a hand's timeline
``/hands/{hand_id}``, alarms ``/alarms``. Each page names its stream, ``/api/live/{page}``: the
stream waits for the pit to learn something (:class:`controller.pit.live.LiveBoard`), renders
the page's live sections again and sends those that changed, as HTML to put in place; the small
script in ``static/console.js`` does that, keeps ages ticking and sends the rulings. No build
step and nothing from another site: the templates, the script and the style ship in this package.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles

from controller import __version__
from controller.pit.api import Authed, User, current_user, utc_time
from controller.pit.console.views import (
    Viewer,
    event_view,
    hold_view,
    hole_cards,
    table_view,
    tile,
)
from controller.pit.live import LiveBoard
from controller.pit.store import Store, Stream
from controller.pit.users import csrf_token
from controller.pit.worker import StoreWorker
from controller.table.state import Ruling

#: Seconds a stream stays quiet before it sends a comment (proxies close silent connections).
KEEPALIVE = 15.0
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

Sections = dict[str, tuple[str, dict[str, Any]]]  # element id → (template, its context)


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


def render_login(request: Request, *, error: str, next: str, status: int) -> HTMLResponse:
    """The login page."""
    return HTMLResponse(
        render("login.html", error=error, next=next, viewer=None, live=None),
        status,
        headers=PAGE_HEADERS,
    )


def add_pages(app: FastAPI) -> None:
    """Add the console's pages, streams and static files to the pit's app."""
    reader: StoreWorker = app.state.reader
    board: LiveBoard = app.state.board
    app.mount(
        "/static",
        StaticFiles(packages=[("controller.pit.console", "static")]),
        name="static",
    )

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
            render(template, viewer=viewer, live=live, **context), headers=PAGE_HEADERS
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
                    )
                },
            )
        return sections

    # the floor map is the same for everyone: read once per change, however many are watching
    floor = Shared(floor_sections)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def floor_page(request: Request) -> HTMLResponse:
        viewer = await viewer_of(request)
        sections = await floor.get(board.version)
        return page("floor.html", viewer, "/api/live/floor", sections=_html(sections))

    # ------------------------------------------------------------------ holds queue

    async def holds_sections(viewer: Viewer) -> Sections:
        open_holds = await reader.call(Store.holds, open_only=True)
        resolved = await reader.call(Store.resolved_holds, 10)
        return {
            "holds-open": (
                "_holds_open.html",
                {
                    "holds": [hold_view(h, viewer) for h in open_holds],
                    "viewer": viewer,
                    "decisions": DECISIONS,
                },
            ),
            "holds-resolved": (
                "_holds_resolved.html",
                {"holds": [hold_view(h, viewer) for h in resolved]},
            ),
        }

    @app.get("/holds", response_class=HTMLResponse, include_in_schema=False)
    async def holds(
        request: Request, answered: str | None = None, status: str | None = None
    ) -> HTMLResponse:
        viewer = await viewer_of(request)
        sections = await holds_sections(viewer)
        return page(
            "holds.html",
            viewer,
            "/api/live/holds",
            sections=_html(sections),
            answered=answered,
            status=status,
        )

    # ------------------------------------------------------------------ a table

    async def table_sections(viewer: Viewer, table: str) -> Sections:
        rows = [t for t in await reader.call(Store.tables) if t["table_id"] == table]
        if not rows:
            raise HTTPException(status_code=404, detail=f"no table {table!r}")
        state = await reader.call(Store.table_state, table)
        epoch = rows[0]["epoch"]
        stream: Stream = "secure" if viewer.sees_cards else "public"
        events = (
            await reader.call(Store.recent_events, table, epoch, TABLE_EVENTS, stream)
            if epoch
            else []
        )
        hand_id = ((state or {}).get("hand") or {}).get("hand_id")
        holes = hole_cards(events, hand_id) if viewer.sees_cards else {}
        view = table_view(rows[0], state, board.devices.get(table, {}), holes)
        return {
            "table-state": ("_table_state.html", {"v": view, "viewer": viewer}),
            "table-events": (
                "_events.html",
                {"events": [event_view(e, viewer) for e in events], "id": "table-events"},
            ),
        }

    @app.get("/tables/{table}", response_class=HTMLResponse, include_in_schema=False)
    async def table_page(request: Request, table: str) -> HTMLResponse:
        viewer = await viewer_of(request)
        sections = await table_sections(viewer, table)
        return page(
            "table.html", viewer, f"/api/live/tables/{table}", table=table, sections=_html(sections)
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
        return page("hands.html", viewer, None, hands=found, query=query, error=error)

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
            hand=found,
            events=[event_view(e, viewer) for e in events],
        )

    # ------------------------------------------------------------------ alarms

    async def alarms_sections(viewer: Viewer) -> Sections:
        alarms = await reader.call(Store.alarms, limit=200)
        tables = await reader.call(Store.tables)
        faults = [
            {"table_id": name, "device": device, **body}
            for name, devices in sorted(board.devices.items())
            for device, body in sorted(devices.items())
            if tile({"table_id": name}, None, [], {device: body}, 0)["device_faults"]
        ]
        degraded = [t for t in tables if t["degraded"] or t["alarms"]]
        return {
            "alarm-list": (
                "_alarms.html",
                {"alarms": alarms, "faults": faults, "degraded": degraded, "viewer": viewer},
            )
        }

    @app.get("/alarms", response_class=HTMLResponse, include_in_schema=False)
    async def alarms(request: Request) -> HTMLResponse:
        viewer = await viewer_of(request)
        sections = await alarms_sections(viewer)
        return page("alarms.html", viewer, "/api/live/alarms", sections=_html(sections))

    # ------------------------------------------------------------------ live streams

    def live(request: Request, sections: Callable[[], Awaitable[Sections]]) -> StreamingResponse:
        return StreamingResponse(
            _stream(request, board, sections),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @app.get("/api/live/floor", tags=["live"], response_class=StreamingResponse)
    async def live_floor(request: Request, user: Authed) -> StreamingResponse:
        """The floor map's tiles as they change (Server-Sent Events: ``replace``)."""
        return live(request, lambda: floor.get(board.version))

    @app.get("/api/live/holds", tags=["live"], response_class=StreamingResponse)
    async def live_holds(request: Request, user: Authed) -> StreamingResponse:
        """The holds queue as it changes (Server-Sent Events: ``replace``)."""
        viewer = _viewer(request, user)
        return live(request, lambda: holds_sections(viewer))

    @app.get("/api/live/tables/{table}", tags=["live"], response_class=StreamingResponse)
    async def live_table(
        request: Request,
        table: str,
        user: Authed,
    ) -> StreamingResponse:
        """A table's state and events as they change (Server-Sent Events: ``replace``)."""
        viewer = _viewer(request, user)
        await table_sections(viewer, table)  # 404 before the stream starts
        return live(request, lambda: table_sections(viewer, table))

    @app.get("/api/live/alarms", tags=["live"], response_class=StreamingResponse)
    async def live_alarms(request: Request, user: Authed) -> StreamingResponse:
        """The alarms as they change (Server-Sent Events: ``replace``)."""
        viewer = _viewer(request, user)
        return live(request, lambda: alarms_sections(viewer))


def _viewer(request: Request, user: User) -> Viewer:
    token: str | None = getattr(request.state, "session_token", None)
    return Viewer(user.username, frozenset(user.roles), csrf_token(token) if token else None)


def _html(sections: Sections) -> dict[str, str]:
    return {target: render(template, **context) for target, (template, context) in sections.items()}


async def _stream(
    request: Request, board: LiveBoard, sections: Callable[[], Awaitable[Sections]]
) -> AsyncIterator[str]:
    """Server-Sent Events: each section whose content changed, as ``replace`` {target, html}.

    A section is rendered again only when its data changed (the floor map has a tile per table),
    and sent only when its HTML did. The first pass sends everything: what changed between the
    page and its stream is not lost.
    """
    sent: dict[str, str] = {}  # target → the data it was rendered from
    yield "retry: 1000\n\n"
    version = board.version
    while not board.closed:
        try:
            current = await sections()
        except HTTPException as exc:
            yield f"event: gone\ndata: {json.dumps(str(exc.detail))}\n\n"
            return
        for target, (template, context) in current.items():
            key = json.dumps(context, sort_keys=True, default=_key)
            if sent.get(target) == key:
                continue
            sent[target] = key
            html = _rendered(template, key, context)
            yield f"event: replace\ndata: {json.dumps({'target': target, 'html': html})}\n\n"
        while (moved := await board.wait(version, KEEPALIVE)) == version and not board.closed:
            if await request.is_disconnected():
                return
            yield ": still here\n\n"
        version = moved


class Shared:
    """Sections that are the same for every viewer, computed once per change of the board."""

    def __init__(self, compute: Callable[[], Awaitable[Sections]]) -> None:
        self.compute = compute
        self.version = -1
        self.sections: Sections = {}
        self.lock = asyncio.Lock()

    async def get(self, version: int) -> Sections:
        """The sections as of board ``version`` (or later)."""
        async with self.lock:
            if self.version != version:
                self.sections = await self.compute()
                self.version = version
            return self.sections


#: A section rendered for one stream is the same for another watching the same thing.
_RENDERED: OrderedDict[tuple[str, str], str] = OrderedDict()
RENDERED_KEPT = 4000


def _rendered(template: str, key: str, context: dict[str, Any]) -> str:
    found = _RENDERED.get((template, key))
    if found is None:
        found = _RENDERED[(template, key)] = render(template, **context)
        if len(_RENDERED) > RENDERED_KEPT:
            _RENDERED.popitem(last=False)
    return found


def _key(value: Any) -> Any:
    if isinstance(value, Viewer):
        return [value.username, sorted(value.roles), value.csrf]
    return str(value)
