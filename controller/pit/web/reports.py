"""The reports over HTTP (docs/reports.md): ``/api/reports`` (those the user may read),
``/api/reports/{name}`` as JSON (its model in the OpenAPI) or CSV (``?format=csv`` or ``Accept:
text/csv``; ``part`` picks the table), and the console's pages ``/reports`` and
``/reports/{name}`` (a period form, the charts drawn on the server, the tables; no script).

Parameters are checked before roles (a malformed request is a 422 whoever sends it), then the
report's roles (403). A report runs on a connection of its own, opened for it on a thread, one
report at a time in a pit process: the API's reader keeps answering the console meanwhile, and
a floor asking for several months at once queues rather than loading the store with them all.

(No ``from __future__ import annotations`` here: a report's route is made in a function, and
FastAPI reads its parameters' annotations, which name that function's variables, at once.)
"""

import asyncio
from datetime import time, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from pydantic import BaseModel, Field

from controller.pit.config import ReportsSection
from controller.pit.console.render import page
from controller.pit.db import Db, StoreError, unavailable
from controller.pit.reports.catalogue import BY_NAME, REPORTS
from controller.pit.reports.csvfile import MEDIA_TYPE, csv_text, disposition, wants_csv
from controller.pit.reports.params import ParamError, ReportQuery, parse_query
from controller.pit.reports.periods import Calendar
from controller.pit.reports.registry import Report, ReportOut, run
from controller.pit.store import Store
from controller.pit.web.deps import Authed, PageViewer, PitWeb, Web, require_role
from controller.pit.worker import StoreLostError

api = APIRouter(tags=["reports"])
pages = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)


class ReportInfo(BaseModel):
    """A report the user may read."""

    name: str
    title: str
    summary: str
    groups: list[str] = Field(description="the periods it groups by (first: the default)")
    parts: list[str] = Field(description="its CSV tables (first: the default)")
    href: str = Field(description="its JSON")
    page: str = Field(description="its console page")


def install(app: FastAPI, settings: ReportsSection | None, console: bool) -> None:
    """The reports' routes on ``app`` (its pages with the console), with the floor's
    ``[reports]`` settings."""
    app.state.reports_settings = settings or ReportsSection()
    app.state.reports_gate = asyncio.Semaphore(1)
    app.include_router(api)
    if console:
        app.include_router(pages)


def _settings(request: Request) -> ReportsSection:
    found: ReportsSection = request.app.state.reports_settings
    return found


def calendar(web: PitWeb, settings: ReportsSection) -> Calendar:
    """The floor's calendar: ``[web] time_zone`` and ``[reports]`` day start and shifts."""
    return Calendar(
        zone=web.time_zone,
        day_start=time.fromisoformat(settings.day_start),
        shifts=tuple((s.name, time.fromisoformat(s.start)) for s in settings.shifts),
    )


def _query(
    request: Request, web: PitWeb, report: Report[Any], given: dict[str, str | None]
) -> ReportQuery:
    settings = _settings(request)
    return parse_query(
        since=given.get("since"),
        until=given.get("until"),
        tables=given.get("tables"),
        group=given.get("group"),
        groups=report.groups,
        calendar=calendar(web, settings),
        max_days=settings.max_days,
        report=f"the {report.name} report",
    )


def _compute_on_own_connection(
    url: str, report: Report[Any], query: ReportQuery, roles: frozenset[str]
) -> ReportOut:
    """On a thread: the report on a connection opened for it (StoreLostError: the store does
    not answer)."""
    try:
        db = Db(url)
    except StoreError as exc:
        raise StoreLostError(str(exc)) from exc
    try:
        result: ReportOut = run(report, db, query, roles)
        return result
    except Exception as exc:
        if unavailable(exc):
            raise StoreLostError(str(exc)) from exc
        if getattr(exc, "sqlstate", None) == "57014":  # PostgreSQL: the statement timeout
            raise HTTPException(
                status_code=503,
                detail=f"the {report.name} report did not finish in time: ask for a shorter "
                "period or fewer tables",
            ) from None
        raise
    finally:
        db.close()


def _store_url(store: Store) -> str:
    return store.db.url


async def compute(
    request: Request, web: PitWeb, report: Report[Any], query: ReportQuery, roles: frozenset[str]
) -> ReportOut:
    """The report, for a reader with ``roles``, one report at a time in this process."""
    gate: asyncio.Semaphore = request.app.state.reports_gate
    url = await web.reader.call(_store_url)
    async with gate:
        return await asyncio.to_thread(_compute_on_own_connection, url, report, query, roles)


def _csv(
    report: Report[Any], result: ReportOut, query: ReportQuery, part_name: str | None
) -> Response:
    part = report.part(part_name)
    first, last = local_days(query)
    return Response(
        csv_text(part.columns, part.rows(result)),
        media_type=MEDIA_TYPE,
        headers={"Content-Disposition": disposition(report.name, part.name, first, last)},
    )


def local_days(query: ReportQuery) -> tuple[str, str]:
    """The floor's first and last day the span covers (``YYYY-MM-DD``)."""
    calendar = query.calendar
    last = query.until - timedelta(microseconds=1)
    return calendar.gaming_date(query.since).isoformat(), calendar.gaming_date(last).isoformat()


# ------------------------------------------------------------------ the API


@api.get("/api/reports", response_model=list[ReportInfo])
async def reports(user: Authed) -> list[ReportInfo]:
    """The reports the user's roles read."""
    roles = frozenset(user.roles)
    return [_info(r) for r in REPORTS if r.roles & roles]


def _info(report: Report[Any]) -> ReportInfo:
    return ReportInfo(
        name=report.name,
        title=report.title,
        summary=report.summary,
        groups=list(report.groups),
        parts=[p.name for p in report.parts],
        href=f"/api/reports/{report.name}",
        page=f"/reports/{report.name}",
    )


def _api_route(report: Report[Any]) -> None:
    """``GET /api/reports/{report.name}``."""

    async def answer(
        request: Request,
        user: Authed,
        web: Web,
        since: Annotated[
            str | None,
            Query(
                description="a date (the floor's day: [reports] day_start) or an RFC 3339 "
                "time; default: six days before today"
            ),
        ] = None,
        until: Annotated[
            str | None,
            Query(
                description="a date (through the end of that day) or an RFC 3339 time "
                "(exclusive); default: the end of today"
            ),
        ] = None,
        tables: Annotated[
            str | None, Query(description="table ids separated by commas (none: every table)")
        ] = None,
        group: Annotated[
            str | None,
            Query(description="day, shift or month, for a report grouped by period"),
        ] = None,
        format: Annotated[
            str | None, Query(description="json or csv (default: by the Accept header)")
        ] = None,
        part: Annotated[
            str | None,
            Query(description="the CSV table: " + ", ".join(p.name for p in report.parts)),
        ] = None,
    ) -> Any:
        try:
            csv = wants_csv(format, request.headers.get("accept"))
            query = _query(
                request,
                web,
                report,
                {"since": since, "until": until, "tables": tables, "group": group},
            )
            if csv:
                report.part(part)
        except (ParamError, ValueError, KeyError) as exc:
            raise HTTPException(status_code=422, detail=_message(exc)) from None
        require_role(
            user,
            report.roles,
            f"the {report.name} report is for {_words(report.roles)}",
        )
        result = await compute(request, web, report, query, frozenset(user.roles))
        if csv:
            return _csv(report, result, query, part)
        return result

    api.get(
        f"/api/reports/{report.name}",
        response_model=report.model,
        summary=report.title,
        description=report.summary
        + " As CSV with `?format=csv` or `Accept: text/csv` (`part`: which table). Readers: "
        + ", ".join(sorted(report.roles))
        + ".",
        responses={
            200: {"content": {"text/csv": {"schema": {"type": "string"}}}},
            403: {"description": "not a role that reads this report"},
            422: {"description": "a parameter that cannot be used (the detail says which)"},
        },
    )(answer)


def _words(roles: frozenset[str]) -> str:
    """``floor, pit and surveillance``."""
    names = sorted(roles)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _message(exc: Exception) -> str:
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


for _report in REPORTS:
    _api_route(_report)


# ------------------------------------------------------------------ the console's pages


@pages.get("/reports")
async def reports_page(viewer: PageViewer, web: Web) -> HTMLResponse:
    readable = [_info(r) for r in REPORTS if r.roles & viewer.roles]
    status = 200 if readable else 403
    return page(
        "reports.html",
        web.health_view(),
        viewer=viewer,
        status_code=status,
        reports=readable,
        nav="reports",
    )


@pages.get("/reports/{name}")
async def report_page(
    name: str,
    request: Request,
    viewer: PageViewer,
    web: Web,
    since: str | None = None,
    until: str | None = None,
    tables: str | None = None,
    group: str | None = None,
) -> HTMLResponse:
    report = BY_NAME.get(name)
    if report is None:
        return page(
            "report_missing.html", web.health_view(), viewer=viewer, status_code=404, name=name
        )
    given = {"since": since, "until": until, "tables": tables, "group": group}
    form = {k: v or "" for k, v in given.items()}
    context: dict[str, Any] = {
        "report": report,
        "form": form,
        "error": "",
        "result": None,
        "charts": [],
        "csv": [],
        "nav": "reports",
    }
    status = 200
    try:
        query = _query(request, web, report, given)
    except ParamError as exc:
        context["error"] = str(exc)
        status = 422
    else:
        if not report.roles & viewer.roles:
            context["error"] = f"The {report.title.lower()} report is for {_words(report.roles)}."
            status = 403
        else:
            result = await compute(request, web, report, query, viewer.roles)
            context.update(_page_context(report, result, query))
    template = report.template if context["result"] is not None else "report.html"
    return page(template, web.health_view(), viewer=viewer, status_code=status, **context)


def _page_context(report: Report[Any], result: ReportOut, query: ReportQuery) -> dict[str, Any]:
    shown = {
        "since": result.since,
        "until": result.until,
        "tables": ",".join(query.tables),
        "group": query.group or "",
    }
    base = {k: v for k, v in shown.items() if v}
    return {
        "result": result,
        "charts": [
            {"chart": chart, "svg": Markup(chart.svg)}  # noqa: S704 (every text in it escaped)
            for chart in report.charts(result)
        ],
        "csv": [
            {
                "title": p.title,
                "href": f"/api/reports/{report.name}?"
                + urlencode({**base, "format": "csv", "part": p.name}),
            }
            for p in report.parts
        ],
        "json": f"/api/reports/{report.name}?" + urlencode(base),
        "local": dict(zip(("since", "until"), local_days(query), strict=True)),
    }
