"""The console's live streams on a real uvicorn: bounded per session, per user and in total,
computed once per change for every stream of a page, held back when their reader does not read."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path

import httpx

from controller.pit.console.streams import LiveSource, Section
from controller.pit.devices import DeviceIn
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.store import Store
from controller.pit.users import csrf_token
from tests.pit.test_store import envelope, event_in
from tests.pit.web import PASSWORD, basic, new_store, serve
from tests.waiting import until


class Stream:
    """One live stream read over a raw socket (what a browser's EventSource does)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.data = b""
        self.status = 0
        self.head = b""

    @classmethod
    async def open(
        cls, port: int, path: str, auth: str, *, receive_buffer: int | None = None
    ) -> Stream:
        sock = socket.socket()
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=16384)
        header = f"Cookie: {auth}" if auth.startswith("tablectl") else f"Authorization: {auth}"
        writer.write(f"GET {path} HTTP/1.1\r\nHost: pit\r\n{header}\r\n\r\n".encode())
        stream = cls(reader, writer)
        stream.head = await reader.readuntil(b"\r\n\r\n")
        stream.status = int(stream.head.split()[1])
        return stream

    async def read_until(self, text: bytes, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while text not in self.data:
                chunk = await self.reader.read(65536)
                if not chunk:
                    raise ConnectionError(f"closed before {text!r}: {self.data[-300:]!r}")
                self.data += chunk

    async def read_to_end(self, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    chunk = await self.reader.read(65536)
                except ConnectionResetError:
                    return
                if not chunk:
                    return
                self.data += chunk

    def close(self) -> None:
        self.writer.close()


async def session(url: str, name: str) -> str:
    """A login's cookie header value."""
    async with httpx.AsyncClient(base_url=url) as client:
        answer = await client.post("/login", data={"username": name, "password": PASSWORD})
        assert answer.status_code == 200, answer.text
        return f"tablectl_pit_session={answer.cookies['tablectl_pit_session']}"


async def test_streams_beyond_a_session_or_a_user_end_their_oldest_and_beyond_the_pit_are_refused(
    tmp_path: Path,
) -> None:
    url = new_store(tmp_path, {"ann": ["floor"], "sam": ["surveillance"], "dan": ["dealer"]})
    limits = StreamLimits(per_session=2, per_user=3, total=5, interval=0.01)
    async with serve(url, streams=limits) as pit:
        ann1, ann2, sam = [await session(pit.url, n) for n in ("ann", "ann", "sam")]
        opened = []
        for path, auth in [
            ("/api/live/floor", ann1),
            ("/api/live/holds", ann1),
            ("/api/live/alarms", ann1),  # a third in ann's first session: her oldest ends
            ("/api/live/floor", ann2),
            ("/api/live/holds", ann2),  # a fourth of ann's: her oldest left ends
            ("/api/live/floor", sam),
            ("/api/live/alarms", sam),
        ]:
            stream = await Stream.open(pit.port, path, auth)
            assert stream.status == 200
            await stream.read_until(b"event: replace")
            opened.append(stream)
        for ended in (opened[0], opened[1]):
            await ended.read_until(b"event: gone")
            assert b"newer page of yours" in ended.data
        registry = pit.app.state.stream_registry
        assert len(registry.streams) == 5
        assert sorted(s.user for s in registry.streams) == ["ann"] * 3 + ["sam"] * 2
        # the pit serves five: a sixth of someone with none is refused, and told when to retry
        refused = await Stream.open(pit.port, "/api/live/floor", basic("dan"))
        assert refused.status == 429
        assert b"retry-after: 10" in refused.head.lower()
        # those still open were not touched
        pit.board.touch()
        for alive in opened[2:]:
            assert b"event: gone" not in alive.data
        for stream in [*opened, refused]:
            stream.close()
        await until(lambda: not registry.streams, what="the streams to end")


async def test_every_stream_of_a_page_shares_one_read_of_the_store_per_change(
    tmp_path: Path,
) -> None:
    url = new_store(tmp_path, {"ann": ["floor"], "bob": ["floor"]})
    limits = StreamLimits(per_session=10, per_user=10, total=50, interval=0.01)
    async with serve(url, streams=limits) as pit:
        cookies = [await session(pit.url, n) for n in ("ann", "bob")]
        streams = [await Stream.open(pit.port, "/api/live/holds", cookies[i % 2]) for i in range(8)]
        for stream in streams:
            await stream.read_until(b"holds-open")
        sources = pit.app.state.live_sources.all()
        assert len(sources) == 1  # two floor users, eight streams: one page to compute
        writer = Store(url)
        for n in range(1, 6):
            hold = envelope(
                n,
                "hand.hold",
                data={"hold": f"h{n}", "rule": "SEAT-COUNT", "reason": "r", "ruling": "misdeal"},
            )
            writer.ingest([event_in(hold)])
            pit.board.touch()
            for stream in streams:
                await stream.read_until(f"hold <code>h{n}</code>".encode())
        writer.close()
        assert sources[0].computes == 6  # the first, then once per change
        # each stream's forms carry its own session's token, never another's
        for i, stream in enumerate(streams):
            token = cookies[i % 2].split("=", 1)[1]
            other = cookies[1 - i % 2].split("=", 1)[1]
            assert csrf_token(token).encode() in stream.data
            assert csrf_token(other).encode() not in stream.data
            stream.close()


async def test_a_stream_whose_reader_stops_is_held_back_gets_the_page_as_it_is_then_is_closed(
    tmp_path: Path,
) -> None:
    url = new_store(tmp_path, {"ann": ["floor"]})
    writer = Store(url)
    writer.record_statuses([(f"T{i:02d}", {"state": "online", "bdseq": 1}) for i in range(30)], 1.0)
    limits = StreamLimits(interval=0.0, write_timeout=2.0)
    async with serve(url, streams=limits) as pit:
        auth = basic("ann")
        slow = await Stream.open(pit.port, "/api/live/floor", auth, receive_buffer=4096)
        gone = await Stream.open(pit.port, "/api/live/floor", auth, receive_buffer=4096)
        registry = pit.app.state.stream_registry
        versions = 50
        for version in range(versions):
            detail = f"v{version:03d}-" + "x" * 2000  # every tile changes: 30 × 2 KB a version
            body = json.dumps({"health": "online", "detail": detail})
            writer.record_devices(
                [DeviceIn(f"T{i:02d}", "reader", "", body) for i in range(30)], 1.0
            )
            pit.board.touch()
            await until(
                lambda: all(s.blocked or s.version == pit.board.version for s in registry.streams)
            )
        produced = versions * 30 * 2000
        for stream in registry.streams:
            assert stream.sent < produced / 3  # held back by the server's flow control
            assert stream.passes < 12
        # the slow reader reads again: it gets what was waiting, then the page as it is now
        await slow.read_until(f"v{versions - 1:03d}-".encode())
        seen = {int(v) for v in re.findall(rb"v(\d{3})-", slow.data)}
        assert len(seen) < 12  # not every version it missed: what was waiting, and the last
        # the other never reads: its connection is closed after the write timeout
        await until(lambda: len(registry.streams) == 1, timeout=15, what="the stalled stream")
        await gone.read_to_end()
        assert f"v{versions - 1:03d}-".encode() not in gone.data
        for stream in (slow, gone):
            stream.close()
    writer.close()


async def test_a_source_computes_once_for_readers_behind_and_paces_its_computations() -> None:
    board = LiveBoard()
    computed: list[int] = []

    async def compute() -> dict[str, tuple[str, dict[str, object]]]:
        computed.append(board.version)
        return {"s": ("t", {"version": board.version})}

    def render(target: str, template: str, context: dict[str, object]) -> str:
        return f"<p id={target}>{context['version']}</p>"

    source = LiveSource(compute, lambda: board.version, render, interval=0.05)
    first = await source.get(0)
    for _ in range(20):
        board.touch()
    behind = await asyncio.gather(*(source.get(board.version, paced=True) for _ in range(10)))
    assert computed == [0, 20]  # twenty versions, ten readers: computed once
    assert all(s is behind[0] for s in behind)
    assert behind[0].version == 20
    section = behind[0].sections["s"]
    assert isinstance(section, Section)
    assert section.html == "<p id=s>20</p>"
    assert first.sections["s"].html == "<p id=s>0</p>"
    unchanged = await source.get(0)
    assert unchanged is behind[0]
