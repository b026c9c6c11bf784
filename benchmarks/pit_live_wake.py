"""How soon a commit by one pit process shows on the live pages of another, on each store.

Two processes on one store, as a floor with several pits runs them:

* **pit A** (this process) commits events as the ingest does (``apply_batch`` on its writer's
  connection, announcing what it changed in the transaction: docs/pit.md, "Live pages across
  processes"), one a commit, a hold at table T1 each, every 0.30-0.40 s (slower than
  ``[web] live_interval``, so the page's pacing does not add to what is measured);
* **pit B** (a process of its own) serves the console's app with its change feed, as
  ``tablectl pit run`` does, and ingests nothing: what it shows of A's commits, it shows because
  A announced them. A live stream of T1's page (``/api/live/tables/T1``) is open on it.

Reported for PostgreSQL (LISTEN/NOTIFY) and SQLite (the change log polled every 200 ms), over
``--commits`` commits: from the end of A's commit to B's pages woken (B's feed, its clock is the
same host's) and to the stream's event naming the hold read by the client, p50 / p99 / max, and
how many B never showed (none, or the figures are wrong). A commit's time is when A sent its
COMMIT (just after the announcement, the transaction's last statement). The PostgreSQL server
is the tests' own (tests/postgres.py: fsync and synchronous_commit off), so the commit itself
is quick and what is measured is the announcement's way to the other process.

    .venv/bin/python benchmarks/pit_live_wake.py [--commits 200] [--only sqlite|postgresql]
                                                 [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.pit.batches import Batch  # noqa: E402
from controller.pit.changes import Announcer  # noqa: E402
from controller.pit.db import Db  # noqa: E402
from controller.pit.ingest import apply_batch  # noqa: E402
from controller.pit.store import Store  # noqa: E402
from controller.pit.users import add_user  # noqa: E402
from controller.pit.worker import StoreWorker  # noqa: E402
from tests.integration.broker import free_port, wait_port  # noqa: E402
from tests.pit.test_store import envelope, event_in  # noqa: E402
from tests.postgres import PostgresServer, binaries  # noqa: E402

PASSWORD = "a long enough benchmark password"
AUTH = "Basic " + base64.b64encode(f"ann:{PASSWORD}".encode()).decode()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# ---------------------------------------------------------------------- pit B


async def serve_b(url: str, port: int) -> None:
    """Pit B: the app and its change feed; prints each wake (its time) on stdout."""
    from controller.pit.changes import ChangeFeed  # noqa: PLC0415
    from controller.pit.http import listen, web_server  # noqa: PLC0415
    from controller.pit.live import LiveBoard  # noqa: PLC0415
    from controller.pit.metrics import PitMetrics  # noqa: PLC0415
    from controller.pit.web.app import create_app  # noqa: PLC0415

    reader = StoreWorker(url, "api")
    await reader.open()
    board = LiveBoard()
    app = create_app(reader, PitMetrics("b"), pit_id="b", board=board)
    feed = ChangeFeed(url, board, reread=3600.0)

    def woken(tables: frozenset[str] | None) -> None:
        print(json.dumps({"wake": time.time(), "tables": sorted(tables or ())}), flush=True)

    feed.on_wake = woken
    server = web_server(app, header_timeout=10.0, keepalive_timeout=5, trusted_proxies=[])
    listener = listen("127.0.0.1", port)
    tasks = [
        asyncio.create_task(server.serve(sockets=[listener])),
        asyncio.create_task(feed.run()),
    ]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_reader(sys.stdin.fileno(), stop.set)
    await stop.wait()
    board.close()
    server.should_exit = True
    tasks[1].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await reader.close()


# ---------------------------------------------------------------------- pit A and the client


class LiveClient:
    """A live stream of T1's page on B: when each hold first showed."""

    def __init__(self) -> None:
        self.shown: dict[str, float] = {}
        self.data = b""

    async def run(self, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        writer.write(
            f"GET /api/live/tables/T1 HTTP/1.1\r\nHost: b\r\nAuthorization: {AUTH}\r\n\r\n".encode()
        )
        await writer.drain()
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                now = time.time()
                self.data = (self.data + chunk)[-200_000:]
                for hold in set(_holds(chunk)) - self.shown.keys():
                    self.shown[hold] = now
        finally:
            writer.close()


def _holds(chunk: bytes) -> list[str]:
    text = chunk.decode(errors="replace")
    found = []
    start = 0
    while (at := text.find("BENCH-h", start)) >= 0:
        end = at + len("BENCH-h")
        while end < len(text) and text[end].isdigit():
            end += 1
        found.append(text[at:end])
        start = end
    return found


class TimedAnnouncer(Announcer):
    """A's announcer, noting when it announced: just before the transaction's COMMIT."""

    def __init__(self) -> None:
        super().__init__()
        self.last = 0.0

    def __call__(self, db: Db, tables: frozenset[str] | None) -> None:
        super().__call__(db, tables)
        self.last = time.time()


def _commit(store: Store, batch: Batch, announcer: TimedAnnouncer) -> float:
    """On A's writer thread: the batch committed, and when its COMMIT was sent."""
    apply_batch(store, batch, False)
    return announcer.last


async def run_one(url: str, commits: int) -> dict[str, Any]:
    store = Store(url)
    store.migrate()
    add_user(store, "ann", ["floor"], PASSWORD)
    store.ingest([event_in(envelope(1, "hand.started", data=_STARTED))])
    store.close()
    port = free_port()
    b = subprocess.Popen(
        [sys.executable, __file__, "--serve", url, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=REPO,
    )
    assert b.stdout is not None
    assert b.stdin is not None
    wakes: list[float] = []
    loop = asyncio.get_running_loop()
    stdout = b.stdout

    def read_wakes() -> None:
        for line in stdout:
            with contextlib.suppress(ValueError, KeyError):
                wakes.append(float(json.loads(line)["wake"]))

    reading = loop.run_in_executor(None, read_wakes)
    announcer = TimedAnnouncer()
    writer = StoreWorker(url, "ingest", announcer=announcer)
    await writer.open()
    client = LiveClient()
    try:
        await loop.run_in_executor(None, wait_port, port, 30.0)
        watching = asyncio.create_task(client.run(port))
        deadline = loop.time() + 30
        while b"table-events" not in client.data:
            assert loop.time() < deadline, "B's stream did not open"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # B's first wake (its feed connecting) is not a commit's
        committed: dict[str, float] = {}
        wake_latency: list[float] = []
        for n in range(commits):
            hold = f"BENCH-h{n}"
            body = envelope(
                n + 2,
                "hand.hold",
                data={"hold": hold, "rule": "SEAT-COUNT", "reason": "r", "ruling": "misdeal"},
                severity="hold",
            )
            before = len(wakes)
            batch = Batch(events=[event_in(body)])
            committed[hold] = await writer.call(_commit, batch, announcer)
            await asyncio.sleep(random.uniform(0.30, 0.40))
            after = [w for w in wakes[before:] if w >= committed[hold]]
            if after:
                wake_latency.append(after[0] - committed[hold])
        await asyncio.sleep(1.0)
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        shown = [client.shown[h] - t for h, t in committed.items() if h in client.shown]
        return {
            "commits": commits,
            "wake": wake_latency,
            "shown": shown,
            "missed": commits - len(shown),
        }
    finally:
        await writer.close()
        b.stdin.close()
        try:
            b.wait(20)
        except subprocess.TimeoutExpired:
            b.kill()
            b.wait()
        await reading


_STARTED = {"button": 1, "seats": [1, 2], "blinds": [1, 2], "ante": 0, "stacks": {"1": 100}}


def row(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"{name:<40} {len(ms):>5} {percentile(ms, 0.5):>8.1f} {percentile(ms, 0.99):>8.1f}"
        f" {max(ms) if ms else float('nan'):>8.1f}"
    )


async def main(args: argparse.Namespace) -> None:
    lines = [
        f"pit_live_wake: {args.commits} commits by pit A, one every 0.30-0.40 s; pit B's feed and "
        "a live stream of T1's page on B",
        f"{'':<40} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}",
    ]
    dialects = [args.only] if args.only else ["postgresql", "sqlite"]
    for dialect in dialects:
        directory = Path(tempfile.mkdtemp(prefix="pit-live-wake-"))
        server: PostgresServer | None = None
        try:
            if dialect == "postgresql":
                if binaries() is None:
                    lines.append("postgresql: not installed, skipped")
                    continue
                server = PostgresServer()
                server.start()
                url = server.new_database()
            else:
                url = f"sqlite:///{directory / 'pit.sqlite'}"
            result = await run_one(url, args.commits)
            lines.append(row(f"{dialect}: commit → B woken", result["wake"]))
            lines.append(row(f"{dialect}: commit → B's stream shows it", result["shown"]))
            lines.append(f"{dialect}: holds B never showed: {result['missed']}")
        finally:
            if server is not None:
                server.stop()
            shutil.rmtree(directory, ignore_errors=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--out")
    parser.add_argument("--serve", nargs=2, metavar=("URL", "PORT"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        asyncio.run(serve_b(arguments.serve[0], int(arguments.serve[1])))
    else:
        asyncio.run(main(arguments))
