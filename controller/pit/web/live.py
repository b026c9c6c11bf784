"""The console's live streams (Server-Sent Events, ``/api/live/…``): each sends its page's
sections as they change (:mod:`controller.pit.console.streams`: shared, paced, bounded) and
the pit's own health, and ends when the login it was opened with no longer stands."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request

from controller.pit.console.render import health_event
from controller.pit.console.streams import LiveResponse, LiveSource, Watch, stream_events
from controller.pit.users import token_digest
from controller.pit.web.deps import Authed, PitWeb, Web, login_stands, viewer_of
from controller.pit.web.models import User
from controller.pit.worker import StoreLostError

router = APIRouter(
    tags=["live"],
    default_response_class=LiveResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"},
        429: {"description": "the pit serves all the streams it may: try again (Retry-After)"},
    },
)


async def live(
    request: Request, user: User, web: PitWeb, shown: LiveSource, follows: Callable[[], int]
) -> LiveResponse:
    """A stream of ``shown`` for ``user``, counted against their session's and their own
    streams (429 when the process serves all it may)."""
    registry, limits = web.registry, web.streams
    token: str | None = getattr(request.state, "session_token", None)
    session = token_digest(token) if token else f"basic:{user.username}"
    stream = registry.open(session, user.username)
    try:
        await web.board.caught_up()
        first = await shown.get(follows())
    except BaseException:
        registry.close(stream)
        raise
    viewer = viewer_of(request, user)

    async def still_logged_in() -> bool:
        # the user removed, their session ended, their password changed or their roles (what
        # the stream shows depends on them): the stream ends, and a reload asks for a login
        try:
            return await login_stands(request, web, user)
        except StoreLostError:
            return True  # cannot tell: the health event says the store is lost

    watch = Watch(
        web.health, lambda: health_event(web.health_view()), still_logged_in, limits.recheck
    )
    events = stream_events(stream, shown, web.board, follows, first, viewer.csrf, watch)
    return LiveResponse(events, stream, registry, limits.write_timeout)


@router.get("/api/live/floor", status_code=200)
async def live_floor(request: Request, user: Authed, web: Web) -> LiveResponse:
    """The floor map's tiles as they change (Server-Sent Events: ``replace``)."""
    return await live(request, user, web, web.pages.floor, lambda: web.board.version)


@router.get("/api/live/holds", status_code=200)
async def live_holds(request: Request, user: Authed, web: Web) -> LiveResponse:
    """The holds queue as it changes (Server-Sent Events: ``replace``)."""
    shown = web.pages.holds(viewer_of(request, user))
    return await live(request, user, web, shown, lambda: web.board.version)


@router.get("/api/live/tables/{table}", status_code=200)
async def live_table(request: Request, table: str, user: Authed, web: Web) -> LiveResponse:
    """A table's state and events as they change (Server-Sent Events: ``replace``)."""
    shown = web.pages.table(viewer_of(request, user), table)
    return await live(request, user, web, shown, lambda: web.board.table_version(table))


@router.get("/api/live/alarms", status_code=200)
async def live_alarms(request: Request, user: Authed, web: Web) -> LiveResponse:
    """The alarms as they change (Server-Sent Events: ``replace``)."""
    shown = web.pages.alarms(viewer_of(request, user))
    return await live(request, user, web, shown, lambda: web.board.version)
