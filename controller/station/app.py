"""The station's web app: the JSON API (controller/station/api.py) and the pages on it
(controller/station/pages.py), behind two limits.

* **Small bodies only.** A request body of more than :data:`MAX_BODY` bytes is refused with 413
  before the API sees it: by its ``Content-Length`` unread, and a chunked one as soon as it has
  sent too much.
* **Headers on every answer.** A Content-Security-Policy that lets a page load from the station
  only and be framed by nothing, no MIME sniffing, no referrer, and nothing cached.
"""

from __future__ import annotations

import json

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from controller.station.api import ROUTES, not_found
from controller.station.pages import ROUTES as PAGES
from controller.station.station import Station

#: The largest request body (bytes): the API's objects are a few dozen.
MAX_BODY = 8 * 1024

HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        b"form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class Limits:
    """ASGI middleware: the body limit and the headers."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *(header for header in HEADERS if header[0] not in names),
                ]
            await send(message)

        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await self._too_big(with_headers)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body:
                await self._too_big(with_headers)
                return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the disconnect, when it comes

        await self.app(scope, replay, with_headers)

    async def _too_big(self, send: Send) -> None:
        payload = json.dumps({"error": f"the request body is over {self.max_body} bytes"})
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": payload.encode()})


def create_app(station: Station, *, max_body: int = MAX_BODY) -> ASGIApp:
    """The station's app over ``station``."""
    app = Starlette(routes=[*ROUTES, *PAGES], exception_handlers={HTTPException: not_found})
    app.state.station = station
    app.state.streams = set()
    return Limits(app, max_body)
