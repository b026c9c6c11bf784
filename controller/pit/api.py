"""The pit's HTTP API: JSON for the web console and other systems, described at /openapi.json.

Everything under ``/api`` needs a user (``tablectl pit user add``): the session cookie that
``POST /login`` sets, or HTTP Basic credentials. ``/healthz`` and ``/metrics`` (Prometheus) are
open, for the supervisor and the scraper. The secure view of the events (hole cards) is for the
surveillance role only. A request that changes something and comes with the session cookie must
carry the session's CSRF token. Wrong passwords are counted per user and client address, in the
store: after ``[web] lockout_attempts`` of them from one address, each further try from that
address waits, longer each time up to ``lockout_minutes`` (:mod:`controller.pit.lockout`); the
same user from another address is not slowed. The console's pages are in
:mod:`controller.pit.console`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import hmac
import math
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Form, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from pydantic import BaseModel, Field

from controller import __version__, strict_json
from controller.pit.health import PROBE_TIMEOUT, PitHealth
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.lockout import LockOut
from controller.pit.metrics import PitMetrics
from controller.pit.phh import NoHistoryError, phh_from_events
from controller.pit.rulings import RulingError, Rulings
from controller.pit.store import Store
from controller.pit.users import SESSION_COOKIE, csrf_token, new_session, token_digest, verify
from controller.pit.worker import StoreLostError, StoreWorker

BASIC_CACHE_SECONDS = 60.0


class User(BaseModel):
    """Who is asking, and their roles."""

    username: str
    roles: list[str]


class TableNow(BaseModel):
    """A table as the pit knows it now."""

    table_id: str
    online: bool | None = Field(description="the last birth (true) or death (false) heard")
    bdseq: int
    status_ts: str | None
    version: str | None
    epoch: str | None = Field(description="the journal epoch the table publishes in")
    last_seq: int = Field(description="the highest seq stored of that epoch")
    hand_id: str | None = Field(description="the hand in progress (retained state)")
    phase: str | None
    state_seq: int | None = Field(description="the seq the retained state reflects")
    open_holds: int
    open_gaps: int = Field(description="ranges of seqs missing, not yet repaired")
    degraded: bool = Field(
        description="its status says it is up but takes no input (a full journal disk, or an "
        "integrity alarm holding it): see alarms"
    )
    alarms: list[dict[str, Any]] = Field(
        description="the alarms on its status topic (alarm, detail, since, …), as it published them"
    )
    stored_seq: int = Field(
        description="every event of the epoch numbered 1 to this is stored (the watermark the "
        "pit confirms to the table)"
    )


class Resolution(BaseModel):
    """How a hold was decided."""

    ts: str | None
    seq: int
    decision: str | None
    by: str | None = Field(description="confirm, reject, override, or what settled it")
    person: str | None
    role: str | None


class Hold(BaseModel):
    """A ruling the dealer or the floor must confirm or reject."""

    table_id: str
    epoch: str
    hold: str
    hand_id: str | None
    rule: str | None
    reason: str | None
    ruling: str | None = Field(description="what confirming it does")
    seat: int | None
    evidence: dict[str, Any]
    raised_ts: str | None
    raised_seq: int | None
    resolution: Resolution | None


class Ruling(BaseModel):
    """A ruling event of a hand."""

    seq: int
    ts: str
    type: str
    rule: str | None
    hold: str | None
    decision: str | None
    person: str | None
    role: str | None


class Hand(BaseModel):
    """One hand: how it started, how it ended, its rule IDs and rulings."""

    table_id: str
    epoch: str
    hand_id: str
    started_ts: str | None
    ended_ts: str | None
    outcome: Literal["completed", "misdeal", "void"] | None
    button: int | None
    seats: list[int] | None
    blinds: list[int] | None
    ante: int | None
    stacks_before: dict[str, int] | None
    stacks_after: dict[str, int] | None
    payouts: dict[str, int] | None
    pot: int | None
    rake: int | None = Field(
        description="the rake from the pots, HOUSE-RAKE (null: the table takes none from the pots)"
    )
    rake_pots: list[int] | None = Field(description="the rake from each pot, main pot first")
    jackpot: int | None = Field(description="the jackpot or promotion drop, HOUSE-DROP-JACKPOT")
    rake_waived: str | None = Field(
        description="why nothing was taken: no flop, a pot below the minimum or the threshold"
    )
    time_collected: int | None = Field(
        description="the time collected before this hand, HOUSE-TIME (null: none)"
    )
    straddles: dict[str, int] | None = Field(description="each straddler's straddle, STRADDLE")
    ante_seat: int | None = Field(
        description="the seat that posted the table's ante, ANTE-TABLE (null: every seat antes)"
    )
    runouts: int | None = Field(description="how many times the board was run, RUN-TWICE")
    first_seq: int
    last_seq: int
    rules: list[str]
    rulings: list[Ruling]


class Alarm(BaseModel):
    """An integrity alarm or a critical event."""

    table_id: str
    epoch: str
    seq: int
    ts: str
    hand_id: str | None
    type: str
    severity: str
    rule: str | None
    reason: str | None
    acked_by: str | None = Field(description="the person who acknowledged it (null: nobody yet)")
    acked_at: float | None = Field(description="when (Unix time)")


class RulingAnswer(BaseModel):
    """A table's answer to a ruling the console sent."""

    table_id: str
    hold: str
    command: str
    person: str
    status: Literal["ok", "error"]
    error: str | None
    data: Any = None


class GapOut(BaseModel):
    """A range of seqs the pit did not receive."""

    id: int
    table_id: str
    epoch: str
    stream: str
    from_seq: int
    to_seq: int
    first_seen: float
    state: Literal["open", "asked", "lost", "repaired"]
    attempts: int
    asked_at: float | None
    reason: str | None = Field(description="why the table could not replay it (lost)")
    closed_at: float | None


class RejectOut(BaseModel):
    """A message refused from a table (or an event stored with a field left out)."""

    id: int
    table_id: str | None = Field(description="the table it came from (null: none named)")
    topic: str
    size: int
    sha256: str
    head: str = Field(description="its first 200 characters")
    reason: str
    received_at: float


class LostPart(BaseModel):
    """A part the pit process has lost."""

    part: Literal["broker", "store"]
    since: str = Field(
        description="when it was lost (RFC 3339 UTC); for a broker never reached, "
        "when the process started"
    )
    seconds: float = Field(description="how long ago")
    reason: str


class Health(BaseModel):
    """Whether this pit process works."""

    status: Literal["ok", "degraded"]
    pit: str
    version: str
    broker_connected: bool
    store: bool
    lost: list[LostPart] = Field(
        description="what is lost and since when, as the console's banner says it"
    )


async def current_user(request: Request) -> User:
    """The user of the session cookie or of the HTTP Basic credentials (401: none)."""
    reader: StoreWorker = request.app.state.reader
    basic_cache: dict[tuple[str, str], tuple[float, str]] = request.app.state.basic_cache
    token = request.cookies.get(SESSION_COOKIE)
    request.state.session_token = None
    if token:
        name = await reader.call(Store.session_user, token_digest(token), time.time())
        if name is not None:
            found = await reader.call(Store.user, name)
            if found is not None:
                request.state.session_token = token
                return User(username=name, roles=found[1])
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic "):
        try:
            decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        name, sep, password = decoded.partition(":")
        if sep:
            key = (name, hashlib.sha256(password.encode()).hexdigest())
            cached = basic_cache.get(key)
            if cached is not None and cached[0] > time.monotonic():
                # The cache spares argon2, not the store: a user removed (or whose password or
                # roles changed) since is known at once, whichever process changed it.
                found = await reader.call(Store.user, name)
                if found is not None and hmac.compare_digest(found[0], cached[1]):
                    return User(username=name, roles=found[1])
                basic_cache.pop(key, None)
            checked = await authenticate(request, name, password)
            if checked is not None:
                stored_hash, roles = checked
                basic_cache[key] = (time.monotonic() + BASIC_CACHE_SECONDS, stored_hash)
                return User(username=name, roles=roles)
    raise HTTPException(
        status_code=401,
        detail="log in (POST /login) or give HTTP Basic credentials",
        headers={"WWW-Authenticate": 'Basic realm="tablectl pit"'},
    )


Authed = Annotated[User, Depends(current_user)]


class LockedOutError(HTTPException):
    """Too many wrong passwords for a user from this address: it waits (429)."""

    def __init__(self, name: str, seconds: float) -> None:
        wait = max(1, math.ceil(seconds))
        when = f"{wait} s" if wait < 120 else f"{round(seconds / 60)} min"
        super().__init__(
            status_code=429,
            detail=f"{name}: too many wrong passwords from this address, try again in {when}",
            headers={"Retry-After": str(wait)},
        )


def client_address(request: Request) -> str:
    """The client's address: the peer's, or the one a trusted proxy names (uvicorn reads
    X-Forwarded-For only from ``[web] trusted_proxies``)."""
    return request.client.host if request.client is not None else "unknown"


async def authenticate(request: Request, name: str, password: str) -> tuple[str, list[str]] | None:
    """The user's stored password hash and roles when the password is theirs (the hash checked
    on a thread of its own: argon2 is slow on purpose, and the store's thread serves the other
    requests meanwhile). LockedOutError: this address must wait before it tries this user's
    password again, whatever the password."""
    state = request.app.state
    reader: StoreWorker = state.reader
    address = client_address(request)
    wait = await reader.call(Store.login_attempt, name, address, state.clock(), state.lockout)
    if wait > 0:
        raise LockedOutError(name, wait)
    found = await reader.call(Store.user, name)
    if not await asyncio.to_thread(verify, found[0] if found else None, password):
        return None  # counted already: login_attempt counts before the check
    await reader.call(Store.login_succeeded, name, address, state.clock())
    assert found is not None
    return found


async def check_csrf(request: Request, user: Annotated[User, Depends(current_user)]) -> None:
    """A request authenticated by the session cookie must carry the session's CSRF token (the
    ``X-CSRF-Token`` header or the form's ``csrf`` field); 403 otherwise. HTTP Basic requests
    carry no cookie a page of another site could borrow, and need none."""
    token: str | None = getattr(request.state, "session_token", None)
    if token is None:
        return
    given = request.headers.get("x-csrf-token")
    if given is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        value = (await request.form()).get("csrf")
        given = value if isinstance(value, str) else None
    if given is None or not hmac.compare_digest(given, csrf_token(token)):
        raise HTTPException(status_code=403, detail="missing or wrong CSRF token: reload the page")


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
) -> FastAPI:
    """The API of one pit process, reading through ``reader``; the console's pages unless
    ``console`` is false. ``health`` is what the process has lost (None: an app that reads no
    broker, whose store is the reader's); ``rulings`` sends the floor's rulings (none: they are
    refused);
    ``board`` wakes the live pages (none: they poll); ``streams`` bounds the live pages'
    streams; ``clock`` is the time the lock-out counts in."""
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
    app.state.reader = reader
    app.state.health = health
    app.state.store_name = "SQLite" if reader.dialect == "sqlite" else "PostgreSQL"
    app.state.basic_cache = {}
    app.state.lockout = lockout or LockOut()
    app.state.rulings = rulings
    app.state.board = board or LiveBoard()
    app.state.session_hours = session_hours
    app.state.streams = streams or StreamLimits()
    app.state.clock = clock

    @app.exception_handler(StoreLostError)
    async def store_lost(request: Request, exc: StoreLostError) -> Response:
        """A request the store did not answer: 503 naming it and since when (a console page:
        a page that says so)."""
        path = request.url.path
        if console and not path.startswith(("/api/", "/openapi")):
            from controller.pit.console import render_unavailable  # noqa: PLC0415

            return render_unavailable(request)
        lost = [p for p in health.lost() if p.part == "store"] if health is not None else []
        since = f" since {_rfc3339(lost[0].since)}" if lost else ""
        return JSONResponse(
            {"detail": f"the pit's store does not answer{since}: {exc}"},
            status_code=503,
            headers={"Retry-After": "5"},
        )

    @app.get("/healthz", response_model=Health, tags=["service"])
    async def healthz(response: Response) -> Health:
        """Whether the broker is connected and the store answers (503 when not), and what is
        lost since when: the account the console's banner reads too."""
        # asked now, not only as last seen: the worker tells the health what the store said
        with contextlib.suppress(StoreLostError, TimeoutError):
            async with asyncio.timeout(PROBE_TIMEOUT):
                await reader.call(Store.schema_version)
        now = time.time()
        assert health is not None
        ok = health.live
        if not ok:
            response.status_code = 503
        return Health(
            status="ok" if ok else "degraded",
            pit=pit_id,
            version=__version__,
            broker_connected=health.ok("broker"),
            store=health.ok("store"),
            lost=[
                LostPart(
                    part=p.part,
                    since=_rfc3339(p.since),
                    seconds=round(now - p.since, 3),
                    reason=p.reason,
                )
                for p in health.lost()
            ],
        )

    @app.get("/metrics", response_class=PlainTextResponse, tags=["service"])
    async def prometheus() -> PlainTextResponse:
        """Prometheus metrics of this pit process."""
        return PlainTextResponse(
            metrics.text(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    @app.post(
        "/login",
        response_model=User,
        tags=["session"],
        responses={
            303: {"description": "the console's form (with next): to that page"},
            401: {"description": "unknown user or wrong password"},
            429: {"description": "too many wrong passwords from this address: wait (Retry-After)"},
        },
    )
    async def login(
        request: Request,
        username: Annotated[str, Form()],
        password: Annotated[str, Form()],
        next: Annotated[str | None, Form(description="the console's page to go to")] = None,
    ) -> Any:
        """Check a user's password and set the session cookie (HttpOnly, SameSite=Strict)."""
        try:
            checked = await authenticate(request, username, password)
        except LockedOutError as exc:
            if next is None:
                raise
            return login_page(request, str(exc.detail), next, status=429)
        if checked is None:
            if next is None:
                raise HTTPException(status_code=401, detail="unknown user or wrong password")
            return login_page(request, "Unknown user or wrong password.", next, status=401)
        roles = checked[1]
        expires = time.time() + session_hours * 3600
        token = await reader.call(new_session, username, expires)
        response: Response
        if next is None:
            response = Response(
                User(username=username, roles=roles).model_dump_json(),
                media_type="application/json",
            )
        else:
            response = RedirectResponse(_local(next), status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            token,
            max_age=int(session_hours * 3600),
            httponly=True,
            samesite="strict",
            secure=secure_cookie,
        )
        return response

    @app.post("/logout", tags=["session"], status_code=303, dependencies=[Depends(check_csrf)])
    async def logout(request: Request, user: Authed) -> RedirectResponse:
        """End the session; to the login page."""
        token = request.state.session_token
        if token is not None:
            await reader.call(Store.end_session, token_digest(token))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="strict")
        return response

    @app.get("/api/me", response_model=User, tags=["session"])
    async def me(user: Authed) -> User:
        """Who the credentials are."""
        return user

    @app.get("/api/tables", response_model=list[TableNow], tags=["tables"])
    async def tables(user: Authed) -> list[dict[str, Any]]:
        """Every table: online or not, degraded and its alarms, its epoch, the last seq stored
        and the contiguous watermark, the hand in progress, open holds and gaps."""
        return await reader.call(Store.tables)

    @app.get("/api/tables/{table}", tags=["tables"])
    async def table(table: str, user: Authed) -> dict[str, Any]:
        """One table: as in the list, with its retained state, its epochs and its births and
        deaths."""
        rows = [t for t in await reader.call(Store.tables) if t["table_id"] == table]
        if not rows:
            raise HTTPException(status_code=404, detail=f"no table {table!r}")
        return {
            **rows[0],
            "state": await reader.call(Store.table_state, table),
            "epochs": await reader.call(Store.epochs, table),
            "births": await reader.call(Store.births, table),
        }

    @app.get("/api/tables/{table}/events", tags=["tables"])
    async def events(
        table: str,
        user: Authed,
        epoch: Annotated[str | None, Query(description="default: the table's epoch")] = None,
        since_seq: Annotated[int, Query(ge=0, description="events after this seq")] = 0,
        limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
        stream: Annotated[
            Literal["public", "secure"], Query(description="secure: surveillance only")
        ] = "public",
    ) -> Response:
        """The stored envelopes after ``since_seq``, in seq order (a JSON array)."""
        if stream == "secure" and "surveillance" not in user.roles:
            raise HTTPException(status_code=403, detail="the secure stream is surveillance's")
        if epoch is None:
            epoch = await reader.call(Store.current_epoch, table)
            if epoch is None:
                raise HTTPException(status_code=404, detail=f"no table {table!r}")
        texts = await reader.call(Store.events, table, epoch, since_seq, limit, stream)
        return Response("[" + ",".join(texts) + "]", media_type="application/json")

    @app.get("/api/holds", response_model=list[Hold], tags=["holds"])
    async def holds(
        user: Authed,
        all: Annotated[bool, Query(description="resolved holds too")] = False,
        table: str | None = None,
    ) -> list[dict[str, Any]]:
        """Holds waiting for a ruling, oldest first (``all``: resolved ones too)."""
        return await reader.call(Store.holds, open_only=not all, table=table)

    for action in ("confirm", "reject", "override"):
        _hold_action(app, action)

    @app.get("/api/hands", response_model=list[Hand], tags=["hands"])
    async def hands(
        user: Authed,
        table: str | None = None,
        rule: Annotated[str | None, Query(description="a rule ID the hand's events cite")] = None,
        since: Annotated[str | None, Query(description="started at or after (RFC 3339)")] = None,
        until: Annotated[str | None, Query(description="started before (RFC 3339)")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> list[dict[str, Any]]:
        """Hands, newest first."""
        return await reader.call(
            Store.hands,
            table=table,
            rule=rule,
            since=utc_time(since),
            until=utc_time(until),
            limit=limit,
        )

    @app.get("/api/hands/{hand_id}", response_model=Hand, tags=["hands"])
    async def hand(hand_id: str, user: Authed) -> dict[str, Any]:
        """One hand."""
        found = await reader.call(Store.hand, hand_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no hand {hand_id!r}")
        return found

    @app.get(
        "/api/hands/{hand_id}/phh",
        response_class=PlainTextResponse,
        tags=["hands"],
        responses={
            404: {"description": "no such hand, or not completed"},
            422: {"description": "its stored events do not make a hand history (malformed)"},
        },
    )
    async def hand_phh(hand_id: str, user: Authed) -> PlainTextResponse:
        """The hand as a PHH hand history (TOML); hole cards for the surveillance role."""
        found = await reader.call(Store.hand, hand_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no hand {hand_id!r}")
        stream: Literal["public", "secure"] = "secure" if "surveillance" in user.roles else "public"
        bodies = await reader.call(
            Store.hand_events, found["table_id"], found["epoch"], hand_id, stream
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

    @app.get("/api/alarms", response_model=list[Alarm], tags=["alarms"])
    async def alarms(
        user: Authed,
        since: Annotated[str | None, Query(description="at or after (RFC 3339)")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
        unacknowledged: bool = False,
    ) -> list[dict[str, Any]]:
        """Integrity alarms and critical events, newest first, with who acknowledged each."""
        return await reader.call(
            Store.alarms, since=utc_time(since), limit=limit, unacknowledged=unacknowledged
        )

    @app.post(
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
    async def ack_alarm(request: Request, table: str, epoch: str, seq: int, user: Authed) -> Any:
        """A person acknowledges an alarm (floor, surveillance or maintenance): stored with who
        and when; the first acknowledgement stands."""
        if not set(user.roles) & ACKNOWLEDGERS:
            raise HTTPException(
                status_code=403,
                detail="alarms are acknowledged by the floor, surveillance or maintenance",
            )
        acked = await reader.call(
            Store.ack_alarm, table, epoch, seq, user.username, user.roles, time.time()
        )
        if acked == "unknown":
            raise HTTPException(status_code=404, detail="no such alarm")
        if acked == "already":
            raise HTTPException(status_code=409, detail="acknowledged already")
        app.state.board.touch()
        if _wants_page(request):
            return RedirectResponse("/alarms", status_code=303)
        return {"table_id": table, "epoch": epoch, "seq": seq, "acked_by": user.username}

    @app.get("/api/rejects", response_model=list[RejectOut], tags=["tables"])
    async def rejects(
        user: Authed,
        table: str | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> list[dict[str, Any]]:
        """Messages refused from the tables, newest first (of one table): what was wrong, and a
        bounded record of each (size, SHA-256, the first 200 characters)."""
        return await reader.call(Store.rejects, table=table, limit=limit)

    @app.get("/api/gaps", response_model=list[GapOut], tags=["tables"])
    async def gaps(
        user: Authed,
        all: Annotated[bool, Query(description="repaired gaps too")] = False,
    ) -> list[dict[str, Any]]:
        """Ranges of seqs not received: open ones (asked, or lost with the table's reason)."""
        return await reader.call(Store.gaps, open_only=not all)

    if console:
        from controller.pit.console import add_pages  # noqa: PLC0415

        add_pages(app)
    return app


#: Who may acknowledge an alarm.
ACKNOWLEDGERS = frozenset({"floor", "surveillance", "maintenance"})


def login_page(request: Request, error: str, next: str, status: int) -> Response:
    """The console's login page again, with why (the console renders it)."""
    from controller.pit.console import render_login  # noqa: PLC0415

    return render_login(request, error=error, next=_local(next), status=status)


def _local(path: str) -> str:
    """A path of this site to go to after logging in (anything else: the floor map)."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path


def _wants_page(request: Request) -> bool:
    """Whether the request is a console form posted without script (it gets a page back)."""
    return "application/json" not in request.headers.get("accept", "") and request.headers.get(
        "content-type", ""
    ).startswith("application/x-www-form-urlencoded")


def _hold_action(app: FastAPI, action: str) -> None:
    """``POST /api/holds/{hold}/{action}``: the floor's ruling, sent to the hold's table."""

    async def act(
        request: Request,
        hold: str,
        user: Authed,
        table: Annotated[
            str | None, Query(description="the hold's table (needed when two tables share it)")
        ] = None,
    ) -> Any:
        if "floor" not in user.roles:
            raise HTTPException(status_code=403, detail="rulings are the floor's")
        form = await request.form() if _is_form(request) else None
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
        open_holds = [
            h
            for h in await app.state.reader.call(Store.holds, open_only=True)
            if h["hold"] == hold and (table is None or h["table_id"] == table)
        ]
        if not open_holds:
            raise HTTPException(status_code=404, detail=f"no open hold {hold!r}")
        if len(open_holds) > 1:
            raise HTTPException(
                status_code=409, detail=f"{hold!r} is open at several tables: give table"
            )
        found = open_holds[0]
        fields: dict[str, Any] = {"hold": hold}
        if action == "override":
            rule = _str(body.get("rule")) or found["rule"]
            decision = _str(body.get("decision"))
            if not decision:
                raise HTTPException(status_code=422, detail="an override needs a decision")
            fields = {"rule": rule, "decision": decision}
        rulings: Rulings | None = app.state.rulings
        if rulings is None:
            raise HTTPException(status_code=503, detail="this pit process sends no rulings")
        try:
            answer = await rulings.send(found["table_id"], action, fields, user.username)
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

    app.post(
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


def _is_form(request: Request) -> bool:
    return request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _rfc3339(stamp: float) -> str:
    """A Unix time as RFC 3339 UTC, to the millisecond."""
    from datetime import UTC, datetime  # noqa: PLC0415

    text = datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def utc_time(value: str | None) -> str | None:
    """An RFC 3339 time as the tables write it (UTC, ``Z``), for comparing with ``ts``."""
    if value is None:
        return None
    from datetime import UTC, datetime  # noqa: PLC0415

    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise HTTPException(status_code=422, detail=f"{value!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    text = parsed.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
