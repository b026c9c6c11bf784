"""One pit process against a user holding many live streams, and against slow clients.

A real ``tablectl pit run`` (SQLite store) on a fresh mosquitto, a floor of ``--tables``
synthetic tables (births, retained states, a hold and an alarm each) whose states change at
``--rate`` a second, and two people:

* **user A** (another process) opens N live streams (``/api/live/floor``, ``holds``, ``alarms``,
  ``tables/{table}`` in turn, over several login sessions) and reads them;
* **user B** loads the floor map ``/`` every 100 ms and times each answer.

Runs: N = 0, N = the per-user cap, N = 200 with the default caps, N = 200 with the caps raised
to 200 (what the render path itself does with 200 streams). Reported per run: B's floor map
p50 / p95 / max, the streams A holds at the end (ended by the pit: its oldest beyond the caps),
the bytes A received, the pit's CPU, its RSS before A and after A closed everything.

Then **slow clients**: 50 sockets, half sending a request head a byte at a time, half nothing,
while B loads the floor map; reported: how many the pit closed within ``header_timeout`` (and a
few seconds of grace), the time each took to close, B's floor map meanwhile.

    .venv/bin/python benchmarks/pit_streams.py [--tables 40] [--rate 40] [--duration 15]
                                               [--out FILE] [--code DIR]

``--code DIR`` runs the pit of another checkout; with ``--before-caps`` (a checkout from before
the streams' caps: ``git archive`` of an older commit, say) its config has no ``[web]`` stream
keys and the runs are N = 0, 8 and 200: the same measurements of the code before.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.integration.broker import Broker, free_port, mosquitto_available, wait_port  # noqa: E402

PREFIX = "tables"
PASSWORD = "a long enough benchmark password"
TICK = os.sysconf("SC_CLK_TCK")
SLOW = 50


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def now_ts() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- the pit process


class Pit:
    """A ``tablectl pit run`` process of ``code`` (a checkout), with its own store."""

    def __init__(self, work: Path, broker: Broker, code: Path, web: str) -> None:
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.code = code
        self.port = free_port()
        self.config = work / "pit.toml"
        self.config.write_text(
            f'[pit]\nid = "bench"\nconfirm = false\n'
            f'[broker]\nhost = "127.0.0.1"\nport = {broker.port}\n'
            f'[store]\nurl = "sqlite:///{work / "pit.sqlite"}"\n'
            f'[web]\nlisten = "127.0.0.1:{self.port}"\n{web}'
            f'[log]\nformat = "json"\nlevel = "warning"\n'
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self, *args: str, stdin: bytes | None = None) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "controller.cli", *args],
            input=stdin,
            capture_output=True,
            cwd=self.code,
            env={**os.environ, "PYTHONPATH": str(self.code)},
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()

    def add_user(self, name: str, role: str) -> None:
        self._run(
            "pit", "user", "add", name, "--role", role, "--password-stdin",
            "--config", str(self.config),
            stdin=PASSWORD.encode() + b"\n",
        )  # fmt: skip

    def start(self) -> None:
        log = (self.work / "pit.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "pit", "run", "--config", str(self.config)],
            stdout=log,
            stderr=log,
            cwd=self.code,
            env={**os.environ, "PYTHONPATH": str(self.code)},
        )
        log.close()
        wait_port(self.port, 60)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --------------------------------------------------------------------------- the floor


def state(name: str, epoch: str, seq: int) -> dict[str, Any]:
    return {
        "schema": "tablectl.state/1",
        "table_id": name,
        "epoch": epoch,
        "seq": seq,
        "button": 1,
        "blinds": [1, 2],
        "ante": 0,
        "hands_started": 1,
        "deck": {"shuffle_id": 1, "ready": True},
        "seats": {str(s): {"stack": 100 + seq % 50, "in_hand": True} for s in range(1, 9)},
        "hand": {"hand_id": f"{name}-00001", "phase": "betting", "pot": seq % 97},
        "last_hand": None,
    }


def event(name: str, epoch: str, seq: int, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": "tablectl.event/1",
        "table_id": name,
        "epoch": epoch,
        "seq": seq,
        "event_id": f"{name}:{epoch}:{seq}",
        "historical": False,
        "ts": now_ts(),
        "hand_id": f"{name}-00001",
        "type": kind,
        "rules": ["SEAT-COUNT"],
        "severity": "critical" if kind == "integrity.alarm" else "info",
        "needs_confirm": False,
        "data": data,
    }


class Floor:
    """The synthetic tables: their births, states, a hold and an alarm each; states changing."""

    def __init__(self, port: int, tables: int) -> None:
        self.port = port
        self.names = [f"C{i:03d}" for i in range(tables)]
        self.epoch = uuid.uuid4().hex[:12]
        self.seqs = dict.fromkeys(self.names, 3)

    async def seed(self, client: aiomqtt.Client) -> None:
        for name in self.names:
            status = {"state": "online", "bdseq": 1, "ts": now_ts(), "version": "bench"}
            await client.publish(f"{PREFIX}/{name}/status", json.dumps(status), 1, True)
            for seq, kind, data in (
                (1, "hand.started", {"button": 1, "seats": list(range(1, 9))}),
                (2, "hand.hold", {"hold": "h1", "rule": "SEAT-COUNT", "reason": "a seat short"}),
                (3, "integrity.alarm", {"reason": "a foreign card", "rule": "SEAT-COUNT"}),
            ):
                body = event(name, self.epoch, seq, kind, data)
                await client.publish(f"{PREFIX}/{name}/events", json.dumps(body), 1)
            await client.publish(
                f"{PREFIX}/{name}/state", json.dumps(state(name, self.epoch, 3)), 1, True
            )

    async def change(self, rate: float, stop: asyncio.Event) -> int:
        """Publish state changes at ``rate`` a second until ``stop``; how many."""
        count = 0
        async with aiomqtt.Client("127.0.0.1", self.port, protocol=aiomqtt.ProtocolVersion.V5) as c:
            interval = 0.05
            per_tick = max(1, round(rate * interval))
            while not stop.is_set():
                tick = time.monotonic()
                for _ in range(per_tick):
                    name = self.names[count % len(self.names)]
                    count += 1
                    self.seqs[name] += 1
                    body = state(name, self.epoch, self.seqs[name])
                    await c.publish(f"{PREFIX}/{name}/state", json.dumps(body), 0, True)
                await asyncio.sleep(max(0.0, interval - (time.monotonic() - tick)))
        return count


# --------------------------------------------------------------------------- the users


async def login(url: str, name: str) -> str:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        answer = await client.post("/login", data={"username": name, "password": PASSWORD})
        assert answer.status_code == 200, answer.text
        return answer.cookies["tablectl_pit_session"]


async def floor_map_times(url: str, cookie: str, seconds: float) -> list[float]:
    """User B: the floor map every 100 ms for ``seconds``; each answer's time (ms)."""
    times: list[float] = []
    cookies = {"tablectl_pit_session": cookie}
    async with httpx.AsyncClient(base_url=url, cookies=cookies, timeout=120) as client:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.monotonic()
            answer = await client.get("/")
            assert answer.status_code == 200, answer.status_code
            times.append((time.monotonic() - started) * 1000)
            await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - started)))
    return times


async def hold_streams(port: int, count: int, tables: list[str], seconds: float) -> dict[str, Any]:
    """User A (run in a process of its own): ``count`` streams for ``seconds``, read as fast as
    they come; bytes received, streams ended by the pit, refused, held at the end."""
    url = f"http://127.0.0.1:{port}"
    sessions = [await login(url, "user-a") for _ in range(max(1, min(10, count // 4)))]
    paths = ["/api/live/floor", "/api/live/holds", "/api/live/alarms"]
    paths += [f"/api/live/tables/{t}" for t in tables[:5]]
    received = [0]
    ended = [0]
    refused = [0]
    held: set[int] = set()

    async def one(index: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        cookie = sessions[index % len(sessions)]
        path = paths[index % len(paths)]
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: pit\r\n"
            f"Cookie: tablectl_pit_session={cookie}\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 429 " in head.split(b"\r\n")[0]:
            refused[0] += 1
            writer.close()
            return
        held.add(index)
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                received[0] += len(chunk)
                if b"event: gone" in chunk:
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if index in held:
                held.discard(index)
                ended[0] += 1
            writer.close()

    tasks = []
    for index in range(count):
        tasks.append(asyncio.create_task(one(index)))
        await asyncio.sleep(0.005)  # opened one after another, as tabs are
    await asyncio.sleep(seconds)
    holding = len(held)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "bytes": received[0],
        "held": holding,
        "ended_by_pit": ended[0] - holding,
        "refused": refused[0],
    }


async def slow_clients(port: int, url: str, cookie: str, wait: float) -> dict[str, Any]:
    """50 sockets: 25 sending a head a byte at a time, 25 nothing; B meanwhile."""
    opened = []
    for _ in range(SLOW):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        opened.append((reader, writer, time.monotonic()))
    trickling = [w for _, w, _ in opened[: SLOW // 2]]
    for writer in trickling:
        writer.write(b"GET / HTTP/1.1\r\nHost: pit\r\nX-Slow: ")

    async def trickle() -> None:
        while True:
            for writer in trickling:
                if not writer.is_closing():
                    writer.write(b"a")
            await asyncio.sleep(1.0)

    async def closed(reader: asyncio.StreamReader, at: float) -> float | None:
        try:
            async with asyncio.timeout(wait):
                while await reader.read(4096):
                    pass
        except ConnectionError:
            pass
        except TimeoutError:
            return None
        return time.monotonic() - at

    pacing = asyncio.create_task(trickle())
    watching = [asyncio.create_task(closed(r, t)) for r, _, t in opened]
    times = await floor_map_times(url, cookie, 5.0)
    waited = await asyncio.gather(*watching)
    pacing.cancel()
    for _, writer, _ in opened:
        writer.close()
    done = [w for w in waited if w is not None]
    return {
        "opened": SLOW,
        "closed": len(done),
        "close_p50": percentile(done, 0.5),
        "close_max": max(done) if done else float("nan"),
        "b_p50": percentile(times, 0.5),
        "b_p95": percentile(times, 0.95),
        "b_max": max(times),
    }


# --------------------------------------------------------------------------- a run


async def one_run(args: Any, broker: Broker, streams: int, web: str, label: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="pit-streams-"))
    pit = Pit(work / "pit", broker, args.code, web)
    floor = Floor(broker.port, args.tables)
    try:
        pit.add_user("user-a", "floor")
        pit.add_user("user-b", "floor")
        pit.start()
        assert pit.proc is not None
        async with aiomqtt.Client(
            "127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5
        ) as c:
            await floor.seed(c)
        cookie = await login(pit.url, "user-b")
        async with httpx.AsyncClient(base_url=pit.url, timeout=60) as client:
            while len((await client.get("/api/tables", auth=("user-b", PASSWORD))).json()) < len(
                floor.names
            ):
                await asyncio.sleep(0.2)
        stop = asyncio.Event()
        changing = asyncio.create_task(floor.change(args.rate, stop))
        await floor_map_times(pit.url, cookie, 2.0)  # warm
        rss_before = rss_mb(pit.proc.pid)
        cpu_before = cpu_seconds(pit.proc.pid)
        child = None
        if streams:
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--streams-child",
                str(pit.port),
                str(streams),
                ",".join(floor.names),
                str(args.duration + 3),
                stdout=asyncio.subprocess.PIPE,
            )
            await asyncio.sleep(3.0)  # A's streams open
        times = await floor_map_times(pit.url, cookie, args.duration)
        a: dict[str, Any] = {"bytes": 0, "held": 0, "ended_by_pit": 0, "refused": 0}
        if child is not None:
            out, _ = await child.communicate()
            a = json.loads(out.decode().strip().splitlines()[-1])
        cpu = cpu_seconds(pit.proc.pid) - cpu_before
        stop.set()
        await changing
        await asyncio.sleep(3.0)  # A's connections closed: what the pit keeps
        rss_after = rss_mb(pit.proc.pid)
        result = {
            "label": label,
            "streams": streams,
            "p50": percentile(times, 0.5),
            "p95": percentile(times, 0.95),
            "max": max(times),
            "cpu": cpu / (args.duration + 3),
            "rss_before": rss_before,
            "rss_after": rss_after,
            **a,
        }
        print(json.dumps(result), flush=True)
        return result
    finally:
        pit.stop()
        shutil.rmtree(work, ignore_errors=True)


async def slow_run(args: Any, broker: Broker, web: str, wait: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="pit-slow-"))
    pit = Pit(work / "pit", broker, args.code, web)
    try:
        pit.add_user("user-b", "floor")
        pit.start()
        cookie = await login(pit.url, "user-b")
        result = await slow_clients(pit.port, pit.url, cookie, wait)
        result["wait"] = wait
        print(json.dumps(result), flush=True)
        return result
    finally:
        pit.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(runs: list[dict[str, Any]], slow: dict[str, Any], args: Any, load: str) -> str:
    lines = [
        f"pit live streams: {args.tables} tables, {args.rate:g} state changes/s, user B loads the "
        f"floor map every 100 ms for {args.duration:g} s while user A holds N streams "
        f"(code: {args.code}; load avg {load})",
        "",
        "| run | N | B floor map p50 / p95 / max ms | A holds at the end | ended by the pit | "
        "refused | bytes to A | pit CPU (cores) | pit RSS before → after A (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(
            f"| {r['label']} | {r['streams']} | {r['p50']:.0f} / {r['p95']:.0f} / {r['max']:.0f} "
            f"| {r['held']} | {r['ended_by_pit']} | {r['refused']} | {r['bytes'] / 1e6:.1f} MB "
            f"| {r['cpu']:.2f} | {r['rss_before']:.0f} → {r['rss_after']:.0f} |"
        )
    lines += [
        "",
        f"slow clients: {slow['opened']} sockets (half a head byte a second, half nothing), "
        f"watched for {slow['wait']:g} s",
        "",
        "| opened | closed by the pit | time to close p50 / max s | B floor map p50 / p95 / max "
        "ms meanwhile |",
        "|---:|---:|---:|---:|",
        f"| {slow['opened']} | {slow['closed']} | {slow['close_p50']:.1f} / "
        f"{slow['close_max']:.1f} | {slow['b_p50']:.0f} / {slow['b_p95']:.0f} / "
        f"{slow['b_max']:.0f} |",
    ]
    return "\n".join(lines) + "\n"


async def main_async(args: Any) -> str:
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="pit-streams-broker-"))
    broker = Broker(work)
    broker.start()
    old = args.before_caps
    raised = (
        "streams_per_session = 200\nstreams_per_user = 200\nstreams_total = 400\n"
        if not old
        else ""
    )
    try:
        runs = [await one_run(args, broker, 0, "", "no streams")]
        if old:
            runs.append(await one_run(args, broker, 8, "", "8 streams"))
            runs.append(await one_run(args, broker, 200, "", "200 streams"))
        else:
            runs.append(await one_run(args, broker, 8, "", "the per-user cap (8)"))
            runs.append(await one_run(args, broker, 200, "", "200, default caps"))
            runs.append(await one_run(args, broker, 200, raised, "200, caps raised to 200"))
        slow = await slow_run(args, broker, "", 10.0 + 8.0)
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return report(runs, slow, args, f"{load_start:.1f} → {os.getloadavg()[0]:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--rate", type=float, default=40.0, help="state changes a second")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds B is measured")
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout the pit runs")
    parser.add_argument(
        "--before-caps", action="store_true", help="--code knows no [web] stream keys"
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--streams-child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.streams_child is not None:
        port, count, names, seconds = args.streams_child
        result = asyncio.run(hold_streams(int(port), int(count), names.split(","), float(seconds)))
        print(json.dumps(result), flush=True)
        return 0
    if not mosquitto_available():
        print("mosquitto is needed (apt-get install mosquitto)")
        return 2
    text = asyncio.run(main_async(args))
    print(text, flush=True)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
