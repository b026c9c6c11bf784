"""The station's pages: the log-in screen and the table screen, rendered on the server and kept
live by one Server-Sent Events stream (docs/station.md, "The pages").

* ``GET /``: the table screen to the dealer logged in (the drawing, the hand's numbers, the
  holds, the action panel, the amount pad), else the log-in screen (Dealer, PIN, the PIN pad,
  **Log in**; the table drawn beside it, as anyone at the table sees it, and nothing to tap).
* ``GET /live``: ``event: sections`` with the page's sections that changed, as HTML to put in
  place (``{"page", "seq", "sections": {id: html}}``) at once and on every change of the
  station; the page loads itself again when it is another page's turn (a log-in, a log-out,
  the idle log-out). A heartbeat comment every 15 s.
* ``/static/``: the one script and the one style sheet, from this package: no build step,
  nothing from another site, and the station's Content-Security-Policy (no inline script or
  style) holds for every page.

Every button sends the JSON API's request (controller/station/api.py) with the page's script:
the pages add no way of doing anything the API does not check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from controller import __version__
from controller.station.api import event_stream, station_of
from controller.station.desk import COOKIE, Session
from controller.station.picture import drawing_of
from controller.station.screens import facts, holds, pad, status
from controller.station.station import Station
from controller.view.svg import table_svg
from controller.view.templates import environment

_env = environment("controller.station")
_env.filters["tojson_attr"] = lambda v: json.dumps(v, separators=(",", ":"), sort_keys=True)

#: The sections of each page, in the order they are sent.
SECTIONS = {
    "login": ("status", "badge", "table"),
    "table": ("status", "table", "facts", "holds", "pad"),
}


def render(template: str, **context: Any) -> str:
    """A template of the station, rendered."""
    return _env.get_template(template).render(version=__version__, **context)


def screen(station: Station, session: Session | None) -> tuple[str, dict[str, Any]]:
    """Which page ``session`` sees (``login`` or ``table``) and what it shows."""
    state = station.state(session)
    public = station.link.view if station.link.connected else None
    view = state.get("view") if session is not None else None
    shown = view or public
    drawing = table_svg(drawing_of(shown, station.names), id_prefix="station") if shown else ""
    context: dict[str, Any] = {
        "state": state,
        "status": status({**state, "public": public}),
        "drawing": drawing,
        "problem": station.link.problem,
    }
    if session is None:
        return "login", context
    context.update(
        facts=facts(view),
        holds=holds(view),
        pad=pad(view if station.link.connected else None, station.link.problem),
    )
    return "table", context


def sections(page: str, context: Mapping[str, Any]) -> dict[str, str]:
    """Each section of ``page``, rendered."""
    return {name: render(f"_{name}.html", **context) for name in SECTIONS[page]}


def seq_of(context: Mapping[str, Any]) -> int | None:
    """The event the view last changed at (the page's script waits for it after a tap)."""
    view = context["state"].get("view")
    seq = view.get("seq") if isinstance(view, Mapping) else None
    return seq if isinstance(seq, int) else None


def session_of(request: Request) -> Session | None:
    """The session of the request's cookie, read without using it (None: nobody)."""
    station = station_of(request)
    return station.desk.holder(request.cookies.get(COOKIE), station.clock())


async def index(request: Request) -> Response:
    """The log-in screen, or the table screen to the dealer logged in."""
    station = station_of(request)
    page, context = screen(station, session_of(request))
    body = render(
        f"{page}.html", page=page, seq=seq_of(context), parts=sections(page, context), **context
    )
    return HTMLResponse(body)


async def live(request: Request) -> Response:
    """The page's sections as they change (Server-Sent Events ``sections``: only those whose
    text changed since the last frame, all of them when the page changed)."""
    station = station_of(request)
    sent: dict[str, str] = {}
    page_sent: str | None = None

    def frame(session: Session | None) -> bytes:
        nonlocal sent, page_sent
        page, context = screen(station, session)
        fresh = sections(page, context)
        if page != page_sent:
            sent = {}
        changed = {k: v for k, v in fresh.items() if sent.get(k) != v}
        sent, page_sent = fresh, page
        data = {"page": page, "seq": seq_of(context), "sections": changed}
        return f"event: sections\ndata: {json.dumps(data)}\n\n".encode()

    return event_stream(request, frame)


ROUTES: list[BaseRoute] = [
    Route("/", index, methods=["GET"]),
    Route("/live", live, methods=["GET"]),
    Mount("/static", StaticFiles(packages=[("controller.station", "static")]), name="static"),
]
