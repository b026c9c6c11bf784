"""A local dealer console: requests as JSON lines on a Unix socket (``[daemon] console``).

A keypad wired to the table PC, or a bench table that runs without a broker, sends the requests
the MQTT request topics carry, one JSON object per line: the command's name under ``command``,
its fields and a ``transaction``::

    {"command": "action", "transaction": "k-17", "seat": 3, "action": "call"}

Each line gets one JSON line back: the body the MQTT response would carry (``transaction``,
``status``, ``command``, ``data``, ``error``). The requests go through the same handler as the
broker's, so they are validated, journaled and answered at most once per transaction in the same
way. A line that is not a JSON object with a ``command`` is answered with an error and changes
nothing.

``{"command": "watch", …}`` turns the connection into a stream of the table's view and its
changes (:mod:`controller.shell.watch`); open another connection for requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from controller import strict_json
from controller.shell.gate import Gate, RefusedError
from controller.shell.watch import WATCH, Watchers, authorize, stream

log = structlog.get_logger("tablectl.console")

Handler = Callable[[str, bytes], Awaitable[dict[str, Any]]]
MAX_LINE = 64 * 1024


def _error(command: str | None, message: str) -> dict[str, Any]:
    return {
        "transaction": None,
        "status": "error",
        "command": command,
        "data": {},
        "error": message,
    }


async def answer(line: bytes, handle: Handler, accepting: Callable[[], bool]) -> dict[str, Any]:
    """The response to one request line."""
    try:
        body = strict_json.loads(line)
    except ValueError as exc:
        return _error(None, f"not JSON: {exc}")
    if not isinstance(body, dict) or not isinstance(body.get("command"), str):
        return _error(None, 'a request is a JSON object with a "command"')
    command = body.pop("command")
    if not accepting():
        return _error(command, "the table is starting or stopping; try again")
    return await handle(command, json.dumps(body).encode())


def watch_request(line: bytes) -> bytes | None:
    """The body of a ``watch`` line without its ``command`` (None: another line)."""
    try:
        body = strict_json.loads(line)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("command") != WATCH:
        return None
    del body["command"]
    return json.dumps(body).encode()


async def serve_console(
    path: Path,
    handle: Handler,
    accepting: Callable[[], bool],
    *,
    watchers: Watchers | None = None,
    gate: Gate | None = None,
) -> asyncio.Server:
    """Listen on ``path``; answer each line with :func:`answer`, and stream the table to a
    ``watch`` (with ``watchers`` and the ``gate`` that authorizes it)."""

    async def follow(
        payload: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        assert watchers is not None
        assert gate is not None
        try:
            transaction, principal, events = authorize(gate, payload, datetime.now(UTC))
            try:
                watcher = watchers.follow(events=events)
            except RefusedError as full:
                full.transaction = transaction
                raise
        except RefusedError as refused:
            reply = {**_error(WATCH, refused.reason), "transaction": refused.transaction}
            writer.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
            await writer.drain()
            return
        log.info("console.watching", person=principal.person, key=principal.key)
        ok: dict[str, Any] = {
            "transaction": transaction,
            "status": "ok",
            "command": WATCH,
            "data": {},
            "error": None,
        }
        writer.write(json.dumps(ok, separators=(",", ":")).encode() + b"\n")
        await stream(watcher, reader, writer)

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                if not line.strip():
                    continue
                watch = watch_request(line) if watchers is not None else None
                if watch is not None:
                    await follow(watch, reader, writer)
                    return
                reply = await answer(line, handle, accepting)
                writer.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the console went away, or sent an endless line: drop the session
        finally:
            writer.close()

    # The directory is not made here: a missing one is a mistyped path or a missing
    # RuntimeDirectory= (tablectl config check names it), not something to paper over.
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server = await asyncio.start_unix_server(session, path=str(path), limit=MAX_LINE)
    log.info("console.listening", path=str(path))
    return server
