"""The pit's JSON API, for the web console and other systems: ``/healthz`` and ``/metrics``
(Prometheus) open, for the supervisor and the scraper (:data:`service`); everything under
``/api`` for users (:data:`router`). The secure view of the events (hole cards) is for the
surveillance role only."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.responses import PlainTextResponse, RedirectResponse

from controller import __version__, strict_json
from controller.pit.approved_builds import judged
from controller.pit.gaps import Gap
from controller.pit.health import PROBE_TIMEOUT
from controller.pit.phh import NoHistoryError, phh_from_events
from controller.pit.query_rows import AlarmRow, ArchiveRow, HandRow, HoldRow, TableRow
from controller.pit.rulings import RulingError
from controller.pit.store import Store
from controller.pit.web.deps import (
    Authed,
    Reader,
    Web,
    check_csrf,
    is_form,
    require_role,
    rfc3339,
    utc_time,
)
from controller.pit.web.models import (
    Alarm,
    ArchiveOut,
    GapOut,
    Hand,
    Health,
    Hold,
    LostPart,
    RejectOut,
    RulingAnswer,
    TableNow,
)
from controller.pit.worker import StoreLostError

#: Who may acknowledge an alarm.
ACKNOWLEDGERS = frozenset({"floor", "surveillance", "maintenance"})

service = APIRouter(tags=["service"])
router = APIRouter()


@service.get("/healthz", response_model=Health)
async def healthz(response: Response, web: Web) -> Health:
    """Whether the broker is connected, the store answers and the other pit processes' commits
    are heard (503 when not), and what is lost since when: the account the console's banner
    reads too."""
    # asked now, not only as last seen: the worker tells the health what the store said
    with contextlib.suppress(StoreLostError, TimeoutError):
        async with asyncio.timeout(PROBE_TIMEOUT):
            await web.reader.call(Store.schema_version)
    now = time.time()
    health = web.health
    ok = health.live
    if not ok:
        response.status_code = 503
    return Health(
        status="ok" if ok else "degraded",
        pit=web.pit_id,
        version=__version__,
        broker_connected=health.ok("broker"),
        store=health.ok("store"),
        changes=health.ok("changes"),
        lost=[
            LostPart(
                part=p.part,
                since=rfc3339(p.since),
                seconds=round(now - p.since, 3),
                reason=p.reason,
            )
            for p in health.lost()
        ],
    )


@service.get("/metrics", response_class=PlainTextResponse)
async def prometheus(web: Web) -> PlainTextResponse:
    """Prometheus metrics of this pit process."""
    return PlainTextResponse(
        web.metrics.text(), media_type="text/plain; version=0.0.4; charset=utf-8"
    )


@router.get("/api/tables", response_model=list[TableNow], tags=["tables"])
async def tables(user: Authed, reader: Reader, web: Web) -> list[TableRow]:
    """Every table: online or not, degraded and its alarms (``build.unapproved`` among them when
    it runs a build not on the approved list), its epoch, the last seq stored and the
    contiguous watermark, the hand in progress, open holds and gaps, its build."""
    return judged(web.approved, await reader.call(Store.tables))


@router.get("/api/tables/{table}", tags=["tables"])
async def table(table: str, user: Authed, reader: Reader, web: Web) -> dict[str, Any]:
    """One table: as in the list, with its retained state, its devices' health (each device's
    retained message, by name), its epochs and its births and deaths."""
    every = judged(web.approved, await reader.call(Store.tables))
    rows = [t for t in every if t["table_id"] == table]
    if not rows:
        raise HTTPException(status_code=404, detail=f"no table {table!r}")
    return {
        **rows[0],
        "state": await reader.call(Store.table_state, table),
        "devices": (await reader.call(Store.devices, table)).get(table, {}),
        "epochs": await reader.call(Store.epochs, table),
        "births": await reader.call(Store.births, table),
    }


@router.get("/api/tables/{table}/events", tags=["tables"])
async def events(
    table: str,
    user: Authed,
    reader: Reader,
    epoch: Annotated[str | None, Query(description="default: the table's epoch")] = None,
    since_seq: Annotated[int, Query(ge=0, description="events after this seq")] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    stream: Annotated[
        Literal["public", "secure"], Query(description="secure: surveillance only")
    ] = "public",
) -> Response:
    """The stored envelopes after ``since_seq``, in seq order (a JSON array)."""
    if stream == "secure":
        require_role(user, frozenset({"surveillance"}), "the secure stream is surveillance's")
    if epoch is None:
        epoch = await reader.call(Store.current_epoch, table)
        if epoch is None:
            raise HTTPException(status_code=404, detail=f"no table {table!r}")
    texts = await reader.call(Store.events, table, epoch, since_seq, limit, stream)
    return Response("[" + ",".join(texts) + "]", media_type="application/json")


@router.get("/api/holds", response_model=list[Hold], tags=["holds"])
async def holds(
    user: Authed,
    reader: Reader,
    all: Annotated[bool, Query(description="resolved holds too")] = False,
    table: str | None = None,
) -> list[HoldRow]:
    """Holds waiting for a ruling, oldest first (``all``: resolved ones too)."""
    return await reader.call(Store.holds, open_only=not all, table=table)


def _hold_action(action: str) -> None:
    """``POST /api/holds/{hold}/{action}``: the floor's ruling, sent to the hold's table."""

    async def act(
        request: Request,
        hold: str,
        user: Authed,
        web: Web,
        table: Annotated[
            str | None, Query(description="the hold's table (needed when two tables share it)")
        ] = None,
        epoch: Annotated[
            str | None,
            Query(
                description="the hold's epoch (needed when a table whose journal started "
                "again raised a hold of the same id in each)"
            ),
        ] = None,
    ) -> Any:
        require_role(user, frozenset({"floor"}), "rulings are the floor's")
        form = await request.form() if is_form(request) else None
        body: dict[str, Any] = {}
        if form is None and request.headers.get("content-type", "").startswith("application/json"):
            try:  # JSON as RFC 8259 has it: NaN, Infinity and 1e999999 are not numbers
                loaded = strict_json.loads(await request.body())
            except (ValueError, RecursionError):
                raise HTTPException(status_code=422, detail="the body is not JSON") from None
            body = loaded if isinstance(loaded, dict) else {}
        elif form is not None:
            body = {k: v for k, v in form.items() if isinstance(v, str)}
        table = table or _str(body.get("table"))
        epoch = epoch or _str(body.get("epoch"))
        open_holds = [
            h
            for h in await web.reader.call(Store.holds, open_only=True)
            if h["hold"] == hold
            and (table is None or h["table_id"] == table)
            and (epoch is None or h["epoch"] == epoch)
        ]
        if not open_holds:
            raise HTTPException(status_code=404, detail=f"no open hold {hold!r}")
        if len({h["table_id"] for h in open_holds}) > 1:
            raise HTTPException(
                status_code=409, detail=f"{hold!r} is open at several tables: give table"
            )
        if len(open_holds) > 1:
            raise HTTPException(
                status_code=409,
                detail=f"{hold!r} is open in several epochs of table {open_holds[0]['table_id']} "
                "(its journal started again): give epoch",
            )
        found = open_holds[0]
        left = await web.reader.call(Store.journal_left, found["table_id"], found["epoch"])
        if left is not None:
            # the table rules on the hold of that id in the journal it runs now: never on
            # behalf of a hold of a journal it has left
            raise HTTPException(status_code=409, detail=f"{hold!r} was raised in {left}")
        fields: dict[str, Any] = {"hold": hold}
        if action == "override":
            rule = _str(body.get("rule")) or found["rule"]
            decision = _str(body.get("decision"))
            if not decision:
                raise HTTPException(status_code=422, detail="an override needs a decision")
            fields = {"rule": rule, "decision": decision}
        if web.rulings is None:
            raise HTTPException(status_code=503, detail="this pit process sends no rulings")
        try:
            answer = await web.rulings.send(found["table_id"], action, fields, user.username)
        except RulingError as exc:
            raise HTTPException(status_code=504, detail=str(exc)) from None
        out = RulingAnswer(
            table_id=found["table_id"],
            hold=hold,
            command=action,
            person=user.username,
            status="ok" if answer.get("status") == "ok" else "error",
            error=_str(answer.get("error")),
            data=answer.get("data"),
        )
        if _wants_page(request):
            return RedirectResponse(f"/holds?answered={hold}&status={out.status}", status_code=303)
        return out

    router.post(
        f"/api/holds/{{hold}}/{action}",
        tags=["holds"],
        response_model=RulingAnswer,
        summary=f"{action.capitalize()} a hold (floor)",
        description=f"Sends the table a `{'floor_override' if action == 'override' else action}` "
        "request signed with the pit's key on behalf of the logged-in person (§3.10) and answers "
        "the table's response. "
        + (
            "Fields (JSON or form): `decision`, and `rule` (default: the hold's). "
            if action == "override"
            else ""
        )
        + "With the session cookie: the CSRF token (`X-CSRF-Token` or the form's `csrf`).",
        dependencies=[Depends(check_csrf)],
        responses={
            403: {"description": "not the floor, or no CSRF token"},
            404: {"description": "no such open hold"},
            504: {"description": "the table did not answer"},
        },
    )(act)


# here, between the holds and the hands: the routes (and /openapi.json) keep their order
for _action in ("confirm", "reject", "override"):
    _hold_action(_action)


@router.get("/api/hands", response_model=list[Hand], tags=["hands"])
async def hands(
    user: Authed,
    reader: Reader,
    table: str | None = None,
    rule: Annotated[str | None, Query(description="a rule ID the hand's events cite")] = None,
    since: Annotated[str | None, Query(description="started at or after (RFC 3339)")] = None,
    until: Annotated[str | None, Query(description="started before (RFC 3339)")] = None,
    hand: Annotated[str | None, Query(description="a hand id (each hand that has it)")] = None,
    epoch: Annotated[str | None, Query(description="the hands of one epoch")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> list[HandRow]:
    """Hands, newest first. A hand is its table, epoch and id: a table whose journal started
    again numbers its hands from 1 again, so two hands may share an id."""
    return await reader.call(
        Store.hands,
        table=table,
        rule=rule,
        since=utc_time(since),
        until=utc_time(until),
        hand_id=hand,
        epoch=epoch,
        limit=limit,
    )


#: Which hand of its id: a table whose journal starts again numbers its hands from 1 again.
HandTable = Annotated[
    str | None, Query(description="the hand's table (needed when two hands share its id)")
]
HandEpoch = Annotated[
    str | None,
    Query(
        description="the hand's epoch (needed when two hands share its id: a table whose "
        "journal started again numbers its hands from 1 again)"
    ),
]
#: The answers of a route naming one hand by its id.
HAND_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"description": "no such hand"},
    409: {"description": "several hands have the id: give table and epoch (the detail names each)"},
}


async def the_hand(reader: Reader, hand_id: str, table: str | None, epoch: str | None) -> HandRow:
    """The one hand of id ``hand_id`` (of ``table``, in ``epoch``): 404 when none is, 409 naming
    each when several are."""
    found = await reader.call(Store.hands_named, hand_id, table=table, epoch=epoch)
    if not found:
        raise HTTPException(status_code=404, detail=f"no hand {hand_id!r}")
    if len(found) > 1:
        each = ", ".join(f"table={h['table_id']}&epoch={h['epoch']}" for h in found)
        raise HTTPException(
            status_code=409,
            detail=f"{len(found)} hands have the id {hand_id!r} (a table's journal started "
            f"again): give table and epoch ({each})",
        )
    return found[0]


@router.get("/api/hands/{hand_id}", response_model=Hand, tags=["hands"], responses=HAND_RESPONSES)
async def hand(
    hand_id: str,
    user: Authed,
    reader: Reader,
    table: HandTable = None,
    epoch: HandEpoch = None,
) -> HandRow:
    """One hand."""
    return await the_hand(reader, hand_id, table, epoch)


@router.get(
    "/api/hands/{hand_id}/phh",
    response_class=PlainTextResponse,
    tags=["hands"],
    responses={
        **HAND_RESPONSES,
        404: {"description": "no such hand, or not completed"},
        422: {"description": "its stored events do not make a hand history (malformed)"},
    },
)
async def hand_phh(
    hand_id: str,
    user: Authed,
    reader: Reader,
    table: HandTable = None,
    epoch: HandEpoch = None,
) -> PlainTextResponse:
    """The hand as a PHH hand history (TOML); hole cards for the surveillance role."""
    found = await the_hand(reader, hand_id, table, epoch)
    stream: Literal["public", "secure"] = "secure" if "surveillance" in user.roles else "public"
    bodies = await reader.call(
        Store.hand_events, found["table_id"], found["epoch"], hand_id, stream, found["started_ts"]
    )
    try:
        text = phh_from_events(bodies)
    except NoHistoryError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        # a table's events of another shape than a hand's history has
        raise HTTPException(
            status_code=422,
            detail=f"the hand's stored events do not make a hand history: {str(exc)[:200]}",
        ) from None
    return PlainTextResponse(
        text,
        media_type="application/toml",
        headers={"Content-Disposition": f'attachment; filename="{hand_id}.phh"'},
    )


@router.get("/api/alarms", response_model=list[Alarm], tags=["alarms"])
async def alarms(
    user: Authed,
    reader: Reader,
    since: Annotated[str | None, Query(description="at or after (RFC 3339)")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    unacknowledged: bool = False,
) -> list[AlarmRow]:
    """Integrity alarms and critical events, newest first, with who acknowledged each."""
    return await reader.call(
        Store.alarms, since=utc_time(since), limit=limit, unacknowledged=unacknowledged
    )


@router.post(
    "/api/alarms/{table}/{epoch}/{seq}/ack",
    tags=["alarms"],
    dependencies=[Depends(check_csrf)],
    responses={
        303: {"description": "from the console's form: back to the alarms page"},
        403: {"description": "a dealer or the pit role, or no CSRF token"},
        404: {"description": "no such alarm"},
        409: {"description": "acknowledged already"},
    },
)
async def ack_alarm(
    request: Request, table: str, epoch: str, seq: int, user: Authed, web: Web
) -> Any:
    """A person acknowledges an alarm (floor, surveillance or maintenance): stored with who
    and when; the first acknowledgement stands."""
    require_role(
        user, ACKNOWLEDGERS, "alarms are acknowledged by the floor, surveillance or maintenance"
    )
    acked = await web.reader.call(
        _ack_alarm, table, epoch, seq, user.username, user.roles, time.time()
    )
    if acked == "unknown":
        raise HTTPException(status_code=404, detail="no such alarm")
    if acked == "already":
        raise HTTPException(status_code=409, detail="acknowledged already")
    web.board.touch()
    if _wants_page(request):
        return RedirectResponse("/alarms", status_code=303)
    return {"table_id": table, "epoch": epoch, "seq": seq, "acked_by": user.username}


def _ack_alarm(
    store: Store, table: str, epoch: str, seq: int, person: str, roles: list[str], now: float
) -> Literal["acked", "unknown", "already"]:
    """Acknowledge an alarm and, once acknowledged, tell every pit process's live pages."""
    acked = store.ack_alarm(table, epoch, seq, person, roles, now)
    if acked == "acked":
        store.db.changed((table,))  # after its commit: at once
    return acked


@router.get("/api/rejects", response_model=list[RejectOut], tags=["tables"])
async def rejects(
    user: Authed,
    reader: Reader,
    table: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """Messages refused from the tables, newest first (of one table): what was wrong, and a
    bounded record of each (size, SHA-256, the first 200 characters)."""
    return await reader.call(Store.rejects, table=table, limit=limit)


@router.get("/api/archive", response_model=ArchiveOut, tags=["store"])
async def archive(user: Authed, reader: Reader) -> ArchiveRow:
    """Where the store's older data is: for each data kind (events, hands, rulings, holds,
    alarms) the oldest month online and the months archived, which the API and the pages do
    not read (docs/pit.md, "The store for years")."""
    return await reader.call(Store.archive_state)


@router.get("/api/gaps", response_model=list[GapOut], tags=["tables"])
async def gaps(
    user: Authed,
    reader: Reader,
    all: Annotated[bool, Query(description="repaired gaps too")] = False,
) -> list[Gap]:
    """Ranges of seqs not received: open ones (asked, or lost with the table's reason)."""
    return await reader.call(Store.gaps, open_only=not all)


def _wants_page(request: Request) -> bool:
    """Whether the request is a console form posted without script (it gets a page back)."""
    return "application/json" not in request.headers.get("accept", "") and request.headers.get(
        "content-type", ""
    ).startswith("application/x-www-form-urlencoded")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
