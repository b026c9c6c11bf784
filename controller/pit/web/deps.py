"""What every route of the pit shares, as FastAPI dependencies: the process's state, the user
asking and their roles, the CSRF check, and the viewer a console page is rendered for.

A user is the session cookie that ``POST /login`` sets, or HTTP Basic credentials. A request
that changes something and comes with the session cookie must carry the session's CSRF token.
Wrong passwords are counted per user and client address, in the store: after ``[web]
lockout_attempts`` of them from one address, each further try from that address waits, longer
each time up to ``lockout_minutes`` (:mod:`controller.pit.lockout`); the same user from another
address is not slowed.

Every answer is the store's at the time of the request, whichever pit process serves it: the
session, the user's roles, their stored password hash and the lock-out of the client's address
are read for each request. A process keeps only the proof that a password matched a hash
(:class:`~controller.pit.users.PasswordProofs`), which spares argon2 and nothing else.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from controller.pit.approved_builds import ApprovedBuilds
from controller.pit.console.local_time import LocalTime
from controller.pit.console.sections import LivePages
from controller.pit.console.streams import StreamRegistry
from controller.pit.console.views import Viewer, health_view
from controller.pit.health import PitHealth
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.lockout import LockOut
from controller.pit.metrics import PitMetrics
from controller.pit.rulings import Rulings
from controller.pit.store import Store
from controller.pit.users import (
    SESSION_COOKIE,
    PasswordProofs,
    csrf_token,
    token_digest,
    verify,
)
from controller.pit.web.models import User
from controller.pit.worker import StoreWorker

#: Seconds between two records of a user's last login by HTTP Basic credentials already known
#: (each request of an API client would otherwise be a write).
LAST_LOGIN_EVERY = 60.0


@dataclass
class PitWeb:
    """What the routes of one pit process share (``app.state.pit``, made by ``create_app``)."""

    reader: StoreWorker
    metrics: PitMetrics
    health: PitHealth
    pit_id: str
    session_hours: float
    secure_cookie: bool
    lockout: LockOut
    rulings: Rulings | None
    board: LiveBoard
    streams: StreamLimits
    clock: Callable[[], float]
    console: bool
    approved: ApprovedBuilds | None = None
    #: the floor's time zone, the console's times are written in (None: the host's)
    time_zone: tzinfo | None = None
    #: which password each stored hash was seen to match (spares argon2, decides nothing)
    proofs: PasswordProofs = field(default_factory=PasswordProofs)
    registry: StreamRegistry = field(init=False)
    pages: LivePages = field(init=False)

    def __post_init__(self) -> None:
        self.registry = StreamRegistry(self.streams, self.board)
        self.pages = LivePages(
            self.reader, self.board, self.streams, self.approved, LocalTime(self.time_zone)
        )

    @property
    def store_name(self) -> str:
        return "SQLite" if self.reader.dialect == "sqlite" else "PostgreSQL"

    def health_view(self) -> dict[str, Any]:
        """What the pages say of the pit's own health now (:func:`.views.health_view`)."""
        return health_view(self.health.lost(), time.time(), self.store_name)


def pit_web(request: Request) -> PitWeb:
    web: PitWeb = request.app.state.pit
    return web


def store_reader(request: Request) -> StoreWorker:
    return pit_web(request).reader


Web = Annotated[PitWeb, Depends(pit_web)]
Reader = Annotated[StoreWorker, Depends(store_reader)]


# ------------------------------------------------------------------ the user


async def current_user(request: Request, web: Web) -> User:
    """The user of the session cookie or of the HTTP Basic credentials (401: none)."""
    token = request.cookies.get(SESSION_COOKIE)
    request.state.session_token = None
    request.state.password_hash = None
    if token:
        found = await web.reader.call(Store.session_login, token_digest(token), time.time())
        if found is not None:
            request.state.session_token = token
            return User(username=found[0], roles=found[1])
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic "):
        try:
            decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        name, sep, password = decoded.partition(":")
        if sep:
            user = await basic_user(request, web, name, password)
            if user is not None:
                return user
    raise HTTPException(
        status_code=401,
        detail="log in (POST /login) or give HTTP Basic credentials",
        headers={"WWW-Authenticate": 'Basic realm="tablectl pit"'},
    )


async def basic_user(request: Request, web: PitWeb, name: str, password: str) -> User | None:
    """The user of HTTP Basic credentials (None: not theirs; LockedOutError: the address must
    wait). Decided by what the store holds now, read in one statement: the user's hash and
    roles and the lock-out of the address; a password this process saw match that very hash is
    not checked again (no argon2), anything else is, and counted as :func:`authenticate` does."""
    address = client_address(request)
    now = web.clock()
    known = await web.reader.call(Store.credentials, name, address, now)
    if known is not None:
        if known.wait > 0:
            raise LockedOutError(name, known.wait)
        if web.proofs.matches(name, known.password_hash, password):
            last = known.last_login_at
            stale = last is None or not 0 <= now - last < LAST_LOGIN_EVERY
            if known.counted or stale:
                wait = await web.reader.call(
                    Store.password_known, name, address, now, record_login=stale
                )
                if wait > 0:
                    raise LockedOutError(name, wait)
            request.state.password_hash = known.password_hash
            return User(username=name, roles=known.roles)
    checked = await authenticate(request, web, name, password)
    if checked is None:
        return None
    stored_hash, roles = checked
    web.proofs.remember(name, stored_hash, password)
    request.state.password_hash = stored_hash
    return User(username=name, roles=roles)


async def login_stands(request: Request, web: PitWeb, user: User) -> bool:
    """Whether the login a request was made with still stands, as the store says now: its
    session not ended, or its HTTP Basic password still the user's and its address not locked
    out; the user there with the same roles (a live stream asks this every few seconds)."""
    reader = web.reader
    token: str | None = getattr(request.state, "session_token", None)
    if token is not None:
        found = await reader.call(Store.session_login, token_digest(token), time.time())
        return found is not None and found[0] == user.username and _same(found[1], user.roles)
    stored: str | None = getattr(request.state, "password_hash", None)
    address = client_address(request)
    known = await reader.call(Store.credentials, user.username, address, web.clock())
    return (
        known is not None
        and known.wait <= 0
        and (stored is None or hmac.compare_digest(known.password_hash, stored))
        and _same(known.roles, user.roles)
    )


def _same(roles: list[str], other: list[str]) -> bool:
    return sorted(roles) == sorted(other)


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


async def authenticate(
    request: Request, web: PitWeb, name: str, password: str
) -> tuple[str, list[str]] | None:
    """The user's stored password hash and roles when the password is theirs (the hash checked
    on a thread of its own: argon2 is slow on purpose, and the store's thread serves the other
    requests meanwhile). LockedOutError: this address must wait before it tries this user's
    password again, whatever the password."""
    reader = web.reader
    address = client_address(request)
    wait = await reader.call(Store.login_attempt, name, address, web.clock(), web.lockout)
    if wait > 0:
        raise LockedOutError(name, wait)
    found = await reader.call(Store.user, name)
    if not await asyncio.to_thread(verify, found[0] if found else None, password):
        return None  # counted already: login_attempt counts before the check
    await reader.call(Store.login_succeeded, name, address, web.clock())
    assert found is not None
    return found


def require_role(user: User, roles: frozenset[str], detail: str) -> None:
    """403 with ``detail`` unless the user has one of ``roles``. Called in the route, after its
    parameters are read: a malformed request is a 422 whoever sends it."""
    if not roles & set(user.roles):
        raise HTTPException(status_code=403, detail=detail)


def is_form(request: Request) -> bool:
    return request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    )


async def check_csrf(request: Request, user: Authed) -> None:
    """A request authenticated by the session cookie must carry the session's CSRF token (the
    ``X-CSRF-Token`` header or the form's ``csrf`` field); 403 otherwise. HTTP Basic requests
    carry no cookie a page of another site could borrow, and need none."""
    token: str | None = getattr(request.state, "session_token", None)
    if token is None:
        return
    given = request.headers.get("x-csrf-token")
    if given is None and is_form(request):
        value = (await request.form()).get("csrf")
        given = value if isinstance(value, str) else None
    if given is None or not hmac.compare_digest(given, csrf_token(token)):
        raise HTTPException(status_code=403, detail="missing or wrong CSRF token: reload the page")


# ------------------------------------------------------------------ the console's viewer


def viewer_of(request: Request, user: User) -> Viewer:
    """Who looks at a page or a stream: the user, and their session's CSRF token for its forms."""
    token: str | None = getattr(request.state, "session_token", None)
    return Viewer(user.username, frozenset(user.roles), csrf_token(token) if token else None)


class LoginRequiredError(Exception):
    """A page asked for without a login: to the login page, then back."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


async def page_viewer(request: Request, web: Web) -> Viewer:
    """A console page's viewer; without a login, to the login page (not a 401)."""
    try:
        user = await current_user(request, web)
    except HTTPException as exc:
        if exc.status_code == 401:
            raise LoginRequiredError(request.url.path) from None
        raise
    return viewer_of(request, user)


PageViewer = Annotated[Viewer, Depends(page_viewer)]


async def to_login(request: Request, exc: LoginRequiredError) -> Response:
    """The handler of :class:`LoginRequiredError`."""
    return RedirectResponse(f"/login?next={quote(exc.path)}", status_code=303)


# ------------------------------------------------------------------ times


def rfc3339(stamp: float) -> str:
    """A Unix time as RFC 3339 UTC, to the millisecond."""
    text = datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def utc_time(value: str | None) -> str | None:
    """An RFC 3339 time as the tables write it (UTC, ``Z``), for comparing with ``ts``."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise HTTPException(status_code=422, detail=f"{value!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    text = parsed.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
