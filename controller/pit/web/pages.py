"""The console's pages (``docs/console.md``): the login form, the floor map ``/``, the holds
queue, a table, hands and a hand's timeline, alarms. Each needs a login (without one, to the
login page); a live page opens with its sections as its stream (:mod:`.live`) sends them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse

from controller.pit.console.render import page, render_login, sections_html
from controller.pit.console.views import event_view, hand_view
from controller.pit.query_rows import HandRow
from controller.pit.store import Store, Stream
from controller.pit.web.deps import PageViewer, Web, utc_time

router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)


@router.get("/login")
async def login_form(web: Web, next: str = "/") -> HTMLResponse:
    return render_login(web.health_view(), error="", next=next, status=200)


@router.get("/")
async def floor_page(viewer: PageViewer, web: Web) -> HTMLResponse:
    await web.board.caught_up()
    snapshot = await web.pages.floor.get(web.board.version)
    sections = sections_html(snapshot, viewer)
    return page(
        "floor.html", web.health_view(), viewer=viewer, live="/api/live/floor", sections=sections
    )


@router.get("/holds")
async def holds(
    viewer: PageViewer, web: Web, answered: str | None = None, status: str | None = None
) -> HTMLResponse:
    await web.board.caught_up()
    snapshot = await web.pages.holds(viewer).get(web.board.version)
    return page(
        "holds.html",
        web.health_view(),
        viewer=viewer,
        live="/api/live/holds",
        sections=sections_html(snapshot, viewer),
        answered=answered,
        status=status,
    )


@router.get("/tables/{table}")
async def table_page(table: str, viewer: PageViewer, web: Web) -> HTMLResponse:
    await web.board.caught_up()
    snapshot = await web.pages.table(viewer, table).get(web.board.table_version(table))
    return page(
        "table.html",
        web.health_view(),
        viewer=viewer,
        live=f"/api/live/tables/{table}",
        table=table,
        sections=sections_html(snapshot, viewer),
        zone=web.pages.clock.name,
    )


@router.get("/hands")
async def hands(
    viewer: PageViewer,
    web: Web,
    table: str = "",
    hand: str = "",
    rule: str = "",
    since: str = "",
    until: str = "",
) -> HTMLResponse:
    error = ""
    found: list[HandRow] = []
    try:
        found = await web.reader.call(
            Store.hands,
            table=table.strip() or None,
            rule=rule.strip() or None,
            since=utc_time(since.strip() or None),
            until=utc_time(until.strip() or None),
            hand_id=hand.strip() or None,
            limit=200,
        )
    except HTTPException as exc:
        error = str(exc.detail)
    query = {"table": table, "hand": hand, "rule": rule, "since": since, "until": until}
    rows = [hand_view(h, web.pages.clock) for h in found]
    return page(
        "hands.html",
        web.health_view(),
        viewer=viewer,
        hands=rows,
        query=query,
        error=error,
        several="",
        archived=await _archived_hands(web),
        zone=web.pages.clock.name,
    )


async def _archived_hands(web: Web) -> dict[str, Any] | None:
    """Where the hands older than those online are (None: none archived)."""
    state = await web.reader.call(Store.archive_state)
    (hands,) = [k for k in state["kinds"] if k["kind"] == "hands"]
    if not hands["archived"] and not hands["restored"]:
        return None
    return {
        "months": hands["archived"],
        "restored": hands["restored"],
        "online_from": hands["online_from"],
    }


@router.get("/hands/{hand_id}")
async def hand_page(
    hand_id: str,
    viewer: PageViewer,
    web: Web,
    table: str | None = None,
    epoch: str | None = None,
) -> HTMLResponse:
    found = await web.reader.call(Store.hands_named, hand_id, table=table, epoch=epoch)
    if not found:
        raise HTTPException(status_code=404, detail=f"no hand {hand_id!r}")
    if len(found) > 1:
        # a link without its table and epoch, and a table whose journal started again: each
        # hand of the id, each with its own link
        query = {"table": table or "", "hand": hand_id, "rule": "", "since": "", "until": ""}
        return page(
            "hands.html",
            web.health_view(),
            viewer=viewer,
            hands=[hand_view(h, web.pages.clock) for h in found],
            query=query,
            error="",
            several=hand_id,
            archived=None,
            zone=web.pages.clock.name,
        )
    stream: Stream = "secure" if viewer.sees_cards else "public"
    one = found[0]
    events = await web.reader.call(
        Store.hand_events, one["table_id"], one["epoch"], hand_id, stream, one["started_ts"]
    )
    return page(
        "hand.html",
        web.health_view(),
        viewer=viewer,
        hand=hand_view(one, web.pages.clock),
        events=[event_view(e, viewer, web.pages.clock) for e in events],
        zone=web.pages.clock.name,
    )


@router.get("/alarms")
async def alarms(viewer: PageViewer, web: Web) -> HTMLResponse:
    await web.board.caught_up()
    snapshot = await web.pages.alarms(viewer).get(web.board.version)
    sections = sections_html(snapshot, viewer)
    return page(
        "alarms.html", web.health_view(), viewer=viewer, live="/api/live/alarms", sections=sections
    )
