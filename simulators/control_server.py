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


def handle_line(handle: Handler, line: bytes) -> bytes:
    """One request line in, one reply line out; never raises on bad input."""
    try:
        reply = handle(json.loads(line))
    except json.JSONDecodeError as exc:
        reply = {"ok": False, "error": f"not JSON: {exc}"}
    except ValueError as exc:
        reply = {"ok": False, "error": str(exc)}
    return json.dumps(reply).encode() + b"\n"


async def serve_control(handle: Handler, path: Path) -> asyncio.Server:
    """Listen on a Unix socket at ``path`` for JSON-line commands."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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

    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return await asyncio.start_unix_server(client, path=str(path), limit=MAX_LINE)


@contextlib.asynccontextmanager
async def control_channel(handle: Handler, path: Path | None) -> AsyncIterator[None]:
    """Serve the control channel at ``path`` (none if it is None) while the block runs; then
    stop listening and remove the socket."""
    server = await serve_control(handle, path) if path is not None else None
    try:
        yield
    finally:
        if server is not None:
            server.close()
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
