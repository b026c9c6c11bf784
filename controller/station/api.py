"""The station's JSON API: what its pages call (docs/station.md, "The API").

Every answer is JSON; a refusal is ``{"error": "…"}`` with a status that says what kind: 400 not
JSON, 401 nobody logged in (or a wrong PIN), 403 not the dealer's to do, 404 no such thing, 409
not now (the table's or the station's reason), 413 too big, 415 not JSON, 422 a field that is
wrong, 429 wait (``Retry-After``), 503 the table is out of reach. Every request that changes
something is a POST (or PUT) of a JSON object (``Content-Type: application/json``); the session
is the cookie ``tablectl_station_session`` (HttpOnly, SameSite=Strict), so another site's page
can neither send it nor post JSON here without the browser asking first.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from controller import strict_json
from controller.station.desk import COOKIE, Session
from controller.station.station import Station, StationError

#: Seconds between two heartbeats of a live stream (a comment line: proxies keep it open).
HEARTBEAT = 15.0
#: Live streams served at once (the kiosk's page, a spare).
MAX_STREAMS = 8
#: The longest name of a player at a seat, and of the dealer's words to the floor.
MAX_TEXT = 200

Handler = Callable[[Request], Awaitable[Response]]


def station_of(request: Request) -> Station:
    """The app's station."""
    station: Station = request.app.state.station
    return station


def error(reason: str, status: int, retry: float | None = None) -> JSONResponse:
    """A refusal."""
    headers = {"Retry-After": str(max(1, round(retry)))} if retry is not None else None
    return JSONResponse({"error": reason}, status_code=status, headers=headers)


def refusals(handler: Handler) -> Handler:
    """``handler`` with its :class:`StationError` answered as JSON."""

    async def answered(request: Request) -> Response:
        try:
            return await handler(request)
        except StationError as exc:
            return error(exc.reason, exc.status, exc.retry)

    return answered


async def fields(request: Request, allowed: dict[str, type]) -> dict[str, Any]:
    """The request's JSON object, each field of the type ``allowed`` says (StationError)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise StationError("send a JSON object (Content-Type: application/json)", 415)
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = strict_json.loads(raw)
    except ValueError as exc:
        raise StationError(f"not JSON: {exc}", 400) from None
    if not isinstance(body, dict):
        raise StationError("send a JSON object", 400)
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        takes = ", ".join(sorted(allowed)) or "nothing"
        raise StationError(f"unknown field {unknown[0]!r} (this takes {takes})", 422)
    for name, value in body.items():
        if value is None:
            continue
        want = allowed[name]
        # strict: true is not a seat, "3" is not a number
        if want is int and (not isinstance(value, int) or isinstance(value, bool)):
            raise StationError(f"{name}: a whole number", 422)
        if want is int and not 0 <= value <= 10**12:
            raise StationError(f"{name}: out of range", 422)
        if want is str and (not isinstance(value, str) or len(value) > MAX_TEXT):
            raise StationError(f"{name}: a text of at most {MAX_TEXT} characters", 422)
        if want is list and not _seats(value):
            raise StationError(f"{name}: a list of at most 10 seats (whole numbers 1 to 10)", 422)
    return body


def _seats(value: Any) -> bool:
    """Whether ``value`` is a list of seats (``[4, 5]``: the straddlers, in order)."""
    return (
        isinstance(value, list)
        and len(value) <= 10
        and all(isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= 10 for s in value)
    )


def logged_in(request: Request) -> Session:
    """The session of the request's cookie, used: the dealer asked for something (StationError
    401: none)."""
    return station_of(request).session(request.cookies.get(COOKIE))


def reading(request: Request) -> Session:
    """The session of the request's cookie for a read, which does not keep it from going idle
    (StationError 401: none)."""
    return station_of(request).session(request.cookies.get(COOKIE), use=False)


def seat_of(request: Request) -> int:
    """The seat in the path (StationError 422: not one)."""
    text = request.path_params["seat"]
    if not text.isdigit() or not 1 <= int(text) <= 10:
        raise StationError(f"seat {text!r}: a seat is 1 to 10", 422)
    return int(text)


# ------------------------------------------------------------------ the routes


async def healthz(request: Request) -> Response:
    """The station serves; whether it reaches the table, and how many live streams are open
    (the kiosk's screen holds one while it shows the station: 0 says no screen follows it)."""
    station = station_of(request)
    return JSONResponse(
        {
            "status": "ok",
            "table": station.settings.table,
            "daemon": "connected" if station.link.connected else "unreachable",
            "live": len(request.app.state.streams),
        }
    )


@refusals
async def login(request: Request) -> Response:
    """Log in: ``{"dealer": id or badge (absent: the badge just read), "pin"}``."""
    body = await fields(request, {"dealer": str, "pin": str})
    pin = body.get("pin")
    if not isinstance(pin, str) or not pin:
        raise StationError("PIN: required", 422)
    station = station_of(request)
    session, token = await station.login(body.get("dealer"), pin)
    response = JSONResponse(station.state(session))
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
    return response


@refusals
async def logout(request: Request) -> Response:
    """Log out (between hands)."""
    await fields(request, {})
    station = station_of(request)
    station.logout(logged_in(request))
    response = JSONResponse(station.state(None))
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


@refusals
async def state(request: Request) -> Response:
    """Who is logged in and, to them, the table (a badge waiting for its PIN to anyone)."""
    station = station_of(request)
    try:
        session: Session | None = reading(request)
    except StationError:
        session = None
    return JSONResponse(station.state(session))


@refusals
async def view(request: Request) -> Response:
    """The table, for the dealer logged in."""
    session = reading(request)
    station = station_of(request)
    station.table()
    return JSONResponse(station.state(session)["view"])


@refusals
async def start_hand(request: Request) -> Response:
    """``Start hand`` (``button``: where the button goes, if not the rules' own choice;
    ``straddles``: the seats that straddle, in order, STRADDLE; ``seats``: the seats dealt in,
    the others sitting out, MISSED-BLINDS)."""
    body = await fields(request, {"button": int, "straddles": list, "seats": list})
    session = logged_in(request)
    station = station_of(request)
    return JSONResponse(
        await station.start_hand(
            session, body.get("button"), body.get("straddles"), body.get("seats")
        )
    )


@refusals
async def post_blinds(request: Request) -> Response:
    """A seat posts the blinds it owes to play the next hand (``seat``, MISSED-BLINDS)."""
    body = await fields(request, {"seat": int})
    session = logged_in(request)
    seat = body.get("seat")
    if seat is None:
        raise StationError("seat: required", 422)
    return JSONResponse(await station_of(request).post_blinds(session, seat))


@refusals
async def run_it_twice(request: Request) -> Response:
    """The players all in agree to run the rest of the board twice (RUN-TWICE)."""
    await fields(request, {})
    session = logged_in(request)
    return JSONResponse(await station_of(request).run_it_twice(session))


@refusals
async def action(request: Request) -> Response:
    """``Fold``, ``Check``, ``Call``, ``Bet``, ``Raise``, ``All in`` (``seat``: the seat to act
    unless given; ``amount``: the seat's total in the round, for a bet or raise)."""
    body = await fields(request, {"seat": int, "amount": int})
    session = logged_in(request)
    station = station_of(request)
    return JSONResponse(
        await station.action(
            session, request.path_params["action"], body.get("seat"), body.get("amount")
        )
    )


@refusals
async def rule(request: Request) -> Response:
    """``Confirm`` or ``Reject`` a hold the house lets the dealer rule on."""
    await fields(request, {})
    session = logged_in(request)
    verb = request.path_params["verb"]
    if verb not in ("confirm", "reject"):
        raise StationError(f"{verb!r}: confirm or reject", 404)
    return JSONResponse(await station_of(request).rule(session, request.path_params["hold"], verb))


@refusals
async def call_floor(request: Request) -> Response:
    """``Call the floor`` (``hold``: the hold it is about; ``reason``: the dealer's words)."""
    body = await fields(request, {"hold": str, "seat": int, "reason": str})
    session = logged_in(request)
    return JSONResponse(
        await station_of(request).call_floor(
            session, body.get("hold"), body.get("seat"), body.get("reason") or ""
        )
    )


@refusals
async def award(request: Request) -> Response:
    """Push the award proposal."""
    await fields(request, {})
    session = logged_in(request)
    return JSONResponse(await station_of(request).award(session))


@refusals
async def showdown(request: Request) -> Response:
    """A seat's hand tabled or mucked at showdown."""
    body = await fields(request, {"seat": int})
    session = logged_in(request)
    verb = request.path_params["verb"]
    if verb not in ("table", "muck"):
        raise StationError(f"{verb!r}: table or muck", 404)
    seat = body.get("seat")
    if seat is None:
        raise StationError("seat: required", 422)
    return JSONResponse(await station_of(request).showdown(session, verb, seat))


@refusals
async def name_seat(request: Request) -> Response:
    """The name of the player at a seat (``{"name": …}``; empty: none)."""
    body = await fields(request, {"name": str})
    session = logged_in(request)
    station = station_of(request)
    station.name_seat(seat_of(request), body.get("name") or "")
    return JSONResponse(station.state(session)["view"])


def event_stream(request: Request, frame: Callable[[Session | None], bytes]) -> Response:
    """A live stream of Server-Sent Events: ``frame`` of the session the request's cookie holds
    now, at once and at every change of the station, a heartbeat comment between (every
    ``HEARTBEAT`` seconds); at most ``MAX_STREAMS`` at once, the next refused (429)."""
    station = station_of(request)
    streams: set[object] = request.app.state.streams
    if len(streams) >= MAX_STREAMS:
        return error("the station serves all the live streams it may", 429, retry=5)
    token = request.cookies.get(COOKIE)
    marker = object()
    streams.add(marker)

    async def events() -> AsyncIterator[bytes]:
        try:
            sent = -1
            while True:
                version = station.version
                if version != sent:
                    yield frame(station.desk.holder(token, station.clock()))
                    sent = version
                else:
                    yield b": heartbeat\n\n"
                await station.wait_change(sent, HEARTBEAT)
        finally:
            streams.discard(marker)

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def stream(request: Request) -> Response:
    """The station's state as it changes (Server-Sent Events ``state``; the table only to the
    dealer logged in: after a log-out the same stream goes on without it)."""
    station = station_of(request)

    def frame(session: Session | None) -> bytes:
        body = json.dumps(station.state(session), separators=(",", ":"))
        return f"event: state\ndata: {body}\n\n".encode()

    return event_stream(request, frame)


async def not_found(request: Request, exc: Exception) -> Response:
    """A path or method the API does not have, said in JSON."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return error(str(detail), status)


ROUTES = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/api/login", login, methods=["POST"]),
    Route("/api/logout", logout, methods=["POST"]),
    Route("/api/state", state, methods=["GET"]),
    Route("/api/view", view, methods=["GET"]),
    Route("/api/stream", stream, methods=["GET"]),
    Route("/api/hand/start", start_hand, methods=["POST"]),
    Route("/api/post", post_blinds, methods=["POST"]),
    Route("/api/run_it_twice", run_it_twice, methods=["POST"]),
    Route("/api/actions/{action}", action, methods=["POST"]),
    Route("/api/holds/{hold}/{verb}", rule, methods=["POST"]),
    Route("/api/floor", call_floor, methods=["POST"]),
    Route("/api/award", award, methods=["POST"]),
    Route("/api/showdown/{verb}", showdown, methods=["POST"]),
    Route("/api/seats/{seat}/name", name_seat, methods=["PUT"]),
]
