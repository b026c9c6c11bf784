"""The pit's web app: the routers of each area over the state they share (:mod:`.deps`),
described at /openapi.json."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import tzinfo

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from controller import __version__
from controller.pit.approved_builds import ApprovedBuilds
from controller.pit.config import ReportsSection
from controller.pit.console.render import render_unavailable
from controller.pit.health import PitHealth
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.lockout import LockOut
from controller.pit.metrics import PitMetrics
from controller.pit.rulings import Rulings
from controller.pit.web import api, auth, live, pages, reports
from controller.pit.web.deps import LoginRequiredError, PitWeb, pit_web, rfc3339, to_login
from controller.pit.worker import StoreLostError, StoreWorker


def create_app(
    reader: StoreWorker,
    metrics: PitMetrics,
    *,
    pit_id: str,
    health: PitHealth | None = None,
    session_hours: float = 12.0,
    secure_cookie: bool = False,
    lockout: LockOut | None = None,
    rulings: Rulings | None = None,
    board: LiveBoard | None = None,
    console: bool = True,
    streams: StreamLimits | None = None,
    clock: Callable[[], float] = time.time,
    approved: ApprovedBuilds | None = None,
    time_zone: tzinfo | None = None,
    report_settings: ReportsSection | None = None,
) -> FastAPI:
    """The API of one pit process, reading through ``reader``; the console's pages unless
    ``console`` is false. ``health`` is what the process has lost (None: an app that reads no
    broker, whose store is the reader's); ``rulings`` sends the floor's rulings (none: they are
    refused); ``board`` wakes the live pages (none: they poll); ``streams`` bounds the live
    pages' streams; ``clock`` is the time the lock-out counts in; ``approved``: the builds the
    tables may run (None: no build is judged); ``time_zone``: the floor's, the console's times
    are written in (None: the host's); ``report_settings``: the reports' ``[reports]``."""
    app = FastAPI(
        title="tablectl pit",
        version=__version__,
        description="Every table's events, hands, holds and alarms, as the pit stored them "
        "(docs/pit.md).",
        # no Swagger or ReDoc pages: they load their scripts from a CDN a floor network does
        # not reach; /openapi.json describes everything
        docs_url=None,
        redoc_url=None,
    )
    if health is None:
        health = PitHealth(broker_connected=True)
    if reader.health is None:
        reader.report_to(health)
    web = app.state.pit = PitWeb(
        reader,
        metrics,
        health,
        pit_id=pit_id,
        session_hours=session_hours,
        secure_cookie=secure_cookie,
        lockout=lockout or LockOut(),
        rulings=rulings,
        board=board or LiveBoard(),
        streams=streams or StreamLimits(),
        clock=clock,
        approved=approved,
        console=console,
        time_zone=time_zone,
    )
    # by name too, for whoever holds the app: the board to close, the streams and their sources
    app.state.board = web.board
    app.state.stream_registry = web.registry
    app.state.live_sources = web.pages.sources
    app.exception_handler(StoreLostError)(store_lost)
    for router in (api.service, auth.router, api.router):
        app.include_router(router)
    reports.install(app, report_settings, console)
    if console:
        app.exception_handler(LoginRequiredError)(to_login)
        app.mount(
            "/static",
            StaticFiles(packages=[("controller.pit.console", "static")]),
            name="static",
        )
        app.include_router(pages.router)
        app.include_router(live.router)
    return app


async def store_lost(request: Request, exc: StoreLostError) -> Response:
    """A request the store did not answer: 503 naming it and since when (a console page:
    a page that says so)."""
    web = pit_web(request)
    if web.console and not request.url.path.startswith(("/api/", "/openapi")):
        return render_unavailable(web.health_view())
    lost = [p for p in web.health.lost() if p.part == "store"]
    since = f" since {rfc3339(lost[0].since)}" if lost else ""
    return JSONResponse(
        {"detail": f"the pit's store does not answer{since}: {exc}"},
        status_code=503,
        headers={"Retry-After": "5"},
    )
