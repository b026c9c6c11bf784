"""The control client keeps each reply with its command, even when one is cancelled midway."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from simulators.control_client import ControlClient


async def test_a_command_cancelled_before_its_reply_does_not_shift_the_next_replies(
    tmp_path: Path,
) -> None:
    release = asyncio.Event()
    served: list[asyncio.Task[None]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            while line := await reader.readline():
                command = json.loads(line)
                if command.get("slow"):
                    await release.wait()  # answers late: after its sender gave up
                writer.write(json.dumps({"ok": True, "echo": command}).encode() + b"\n")
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    path = tmp_path / "ctl.sock"
    server = await asyncio.start_unix_server(serve, path=str(path))
    client = ControlClient(path)
    try:
        await client.connect()
        slow = asyncio.create_task(client.send({"slow": 1}))
        await asyncio.sleep(0.05)
        slow.cancel()
        release.set()
        await asyncio.gather(slow, return_exceptions=True)
        reply = await client.send({"status": True})
        assert reply["echo"] == {"status": True}
        assert (await client.send({"n": 2}))["echo"] == {"n": 2}
    finally:
        await client.close()
        await asyncio.gather(*served, return_exceptions=True)
        server.close()
        await server.wait_closed()
