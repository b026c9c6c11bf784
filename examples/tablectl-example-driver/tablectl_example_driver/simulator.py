"""A simulated vendor bridge: a TCP server that speaks the tag-bridge protocol for a fake reader.

It holds what a real bridge would (the tags on each antenna, the reader's active faults) and
sends exactly the lines a real one does: ``hello``, a ``present`` per antenna to every new
connection, then edges, faults and optional pings as they happen. Tests drive it in-process
(:class:`BridgeSimulator`); as a process, ``tablectl-tag-bridge-sim`` takes commands on standard
input, one per line::

    place ANTENNA UID      a tag put down            lift ANTENNA UID    a tag lifted
    fault CODE [DETAIL]    the reader raises a fault  clear CODE          the fault is over
    raw TEXT               send TEXT as a line as is (garbage, unknown antennas…)
    drop                   close every connection (the bridge restarted)
    quit                   stop

It first prints ``listening HOST PORT``, then ``ok CLIENTS`` (or ``error: …``) after each command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterable, Sequence

from controller.uids import normalize_uid

from tablectl_example_driver.protocol import (
    Arrive,
    Clear,
    Depart,
    Fault,
    Hello,
    Message,
    Ping,
    Present,
    format_message,
)


class BridgeSimulator:
    """A bridge with a fake reader behind it."""

    def __init__(
        self,
        antennas: Iterable[str] = (),
        *,
        model: str = "SIM-READER",
        firmware: str = "1.0",
        ping_interval: float = 0.0,
    ) -> None:
        self.tags: dict[str, list[str]] = {name: [] for name in antennas}
        self.faults: dict[str, str] = {}
        self.hello = Hello(model, firmware)
        self.ping_interval = ping_interval
        self.connections = 0  # accepted so far
        self.pings = 0  # sent so far, to every client
        self.port = 0
        self._clients: set[asyncio.StreamWriter] = set()
        self._changed = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._pinger: asyncio.Task[None] | None = None

    @property
    def clients(self) -> int:
        """Connections open now."""
        return len(self._clients)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen; return the port (``port = 0`` picks a free one)."""
        self._server = await asyncio.start_server(self._serve, host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        if self.ping_interval:
            self._pinger = asyncio.create_task(self._ping_loop())
        return self.port

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._pinger is not None:
            self._pinger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pinger
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def wait_connections(self, count: int, timeout: float = 10.0) -> None:
        """Until ``count`` connections were accepted in all (and greeted)."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.connections >= count)

    # ------------------------------------------------------------------ the reader

    def place(self, antenna: str, uid: str) -> None:
        """A tag is put down on an antenna."""
        uid = normalize_uid(uid)
        held = self.tags.setdefault(antenna, [])
        if uid not in held:
            held.append(uid)
            self._send(Arrive(antenna, uid))

    def lift(self, antenna: str, uid: str) -> None:
        """A tag is lifted off an antenna."""
        uid = normalize_uid(uid)
        held = self.tags.setdefault(antenna, [])
        if uid in held:
            held.remove(uid)
            self._send(Depart(antenna, uid))

    def fault(self, code: str, detail: str = "") -> None:
        """The reader raises a fault."""
        self.faults[code] = detail
        self._send(Fault(code, detail))

    def clear(self, code: str) -> None:
        """A fault of the reader is over."""
        if self.faults.pop(code, None) is not None:
            self._send(Clear(code))

    def raw(self, data: bytes) -> None:
        """Send bytes as they are (a broken bridge, a wrong antenna name, a partial line)."""
        for writer in self._clients:
            writer.write(data)

    def drop(self) -> None:
        """Close every connection, as a bridge that restarts does (the tags stay where they are)."""
        for writer in list(self._clients):
            writer.close()
        self._clients.clear()

    async def drain(self) -> None:
        """Until everything sent so far is handed to the kernel."""
        for writer in list(self._clients):
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    # ------------------------------------------------------------------ the connections

    def _send(self, message: Message) -> None:
        self.raw(format_message(message))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        greeting: list[Message] = [self.hello]
        greeting += [Present(a, tuple(u)) for a, u in self.tags.items()]
        greeting += [Fault(code, detail) for code, detail in self.faults.items()]
        writer.write(b"".join(format_message(m) for m in greeting))
        self._clients.add(writer)
        async with self._changed:
            self.connections += 1
            self._changed.notify_all()
        try:
            # The driver sends nothing; reading tells us when it goes away.
            while await reader.read(4096):
                pass
        except ConnectionError:
            pass
        finally:
            self._clients.discard(writer)
            writer.close()

    async def _ping_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ping_interval)  # the bridge's own pace, not a test's wait
            if self._clients:
                self._send(Ping())
                self.pings += 1


# --------------------------------------------------------------------------- as a process


def apply_command(sim: BridgeSimulator, line: str) -> bool:
    """Carry out one command line; False on ``quit``. Raises ValueError for a bad command."""
    verb, _, rest = line.strip().partition(" ")
    args = rest.split()
    match verb, len(args):
        case (("place" | "lift"), 2):
            (sim.place if verb == "place" else sim.lift)(args[0], args[1])
        case "fault", n if n >= 1:
            sim.fault(args[0], " ".join(args[1:]))
        case "clear", 1:
            sim.clear(args[0])
        case "raw", _:
            sim.raw(rest.encode() + b"\n")
        case "drop", 0:
            sim.drop()
        case "quit", 0:
            return False
        case _:
            raise ValueError(f"not a command: {line.strip()!r}")
    return True


async def _commands() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:
        # a regular file (``< commands.txt``) cannot be watched: it is all there, read it
        reader.feed_data(await asyncio.to_thread(sys.stdin.buffer.read))
        reader.feed_eof()
    return reader


async def serve(args: argparse.Namespace) -> int:
    """Run the simulator until ``quit`` or the end of standard input."""
    sim = BridgeSimulator(
        args.antenna, model=args.model, firmware=args.firmware, ping_interval=args.ping
    )
    port = await sim.start(args.host, args.port)
    print(f"listening {args.host} {port}", flush=True)
    commands = await _commands()
    try:
        while line := (await commands.readline()).decode():
            if not line.strip():
                continue
            try:
                if not apply_command(sim, line):
                    break
            except ValueError as exc:
                print(f"error: {exc}", flush=True)
                continue
            await sim.drain()
            print(f"ok {sim.clients}", flush=True)
    finally:
        await sim.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``tablectl-tag-bridge-sim``."""
    parser = argparse.ArgumentParser(
        prog="tablectl-tag-bridge-sim", description="A simulated tag bridge (TCP)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument(
        "--antenna", action="append", default=[], help="an antenna the reader has (repeatable)"
    )
    parser.add_argument("--model", default="SIM-READER")
    parser.add_argument("--firmware", default="1.0")
    parser.add_argument("--ping", type=float, default=0.0, help="seconds between pings; 0: none")
    return asyncio.run(serve(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
