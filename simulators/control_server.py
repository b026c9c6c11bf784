"""The server side of a simulator's control channel: JSON lines over a Unix-domain socket.

One JSON object per line in, one JSON reply line out (``{"ok": true, …}`` or
``{"ok": false, "error": "…"}``). The simulator supplies ``handle``, which takes the decoded
object and returns the reply; a line that is not JSON, or a command ``handle`` refuses with
ValueError, gets an error reply and changes nothing. :mod:`simulators.control_client` is the
matching client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

Handler = Callable[[Any], dict[str, Any]]

MAX_LINE = 64 * 1024
CLOSE_TIMEOUT = 5.0  # seconds a stopping channel waits for its connections to close
# Loop turns from a socket accepted to its transport and handler set up: the accept's task, the
# transport's connection_made, the stream protocol's handler task, each a call_soon after the
# last (about five; no I/O between them, so the count does not grow with the machine's load).
ACCEPT_TURNS = 10


def handle_line(handle: Handler, line: bytes) -> bytes:
    """One request line in, one reply line out; never raises on bad input."""
    try:
        reply = handle(json.loads(line))
    except json.JSONDecodeError as exc:
        reply = {"ok": False, "error": f"not JSON: {exc}"}
    except ValueError as exc:
        reply = {"ok": False, "error": str(exc)}
    return json.dumps(reply).encode() + b"\n"


async def serve_control(
    handle: Handler, path: Path, connections: set[asyncio.StreamWriter] | None = None
) -> asyncio.Server:
    """Listen on a Unix socket at ``path`` for JSON-line commands; each open connection is in
    ``connections`` while it lasts (for whoever stops the server to close them)."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if connections is not None:
            connections.add(writer)
        try:
            while line := await reader.readline():
                writer.write(handle_line(handle, line))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except ValueError:
            pass  # an endless line: drop the session
        except asyncio.CancelledError:
            # The simulator is shutting down with a client still connected: end quietly
            # (the stream machinery would otherwise log the cancellation as an error).
            pass
        finally:
            writer.close()
            if connections is not None:
                connections.discard(writer)

    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return await asyncio.start_unix_server(client, path=str(path), limit=MAX_LINE)


@contextlib.asynccontextmanager
async def control_channel(handle: Handler, path: Path | None) -> AsyncIterator[None]:
    """Serve the control channel at ``path`` (none if it is None) while the block runs; then
    stop listening and remove the socket."""
    connections: set[asyncio.StreamWriter] = set()
    server = await serve_control(handle, path, connections) if path is not None else None
    try:
        yield
    finally:
        if server is not None:
            # A connection the loop has accepted but not yet set up must be set up before the
            # server closes: set up after, its transport fails on the closed server (Python
            # 3.11) and its socket is left to the garbage collector. So the loop gets its turns
            # first; then the server closes, and so does every connection still open (closing
            # the server stops new ones only).
            for _ in range(ACCEPT_TURNS):
                await asyncio.sleep(0)
            server.close()
            for writer in list(connections):
                writer.close()
            with contextlib.suppress(TimeoutError, ConnectionError):
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    for writer in list(connections):
                        await writer.wait_closed()
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
