"""Pipeline latency: a frame written on a pty to the event at a subscriber, daemon vs floors.

Three pipelines read the same pty and publish to the same mosquitto, one after the other:

* ``raw``      — a minimal relay: pty read → publish QoS 1;
* ``durable``  — a minimal relay: pty read → SQLite commit (WAL, synchronous=FULL) → publish
  QoS 1, the floor for any design that journals before it publishes;
* ``daemon``   — ``tablectl run`` with the ``jsonl`` driver on the pty: parse → core → journal
  (input, events, outbox in one synchronous=FULL transaction) → drainer → publish QoS 1.

The writer sends device-fault frames (each becomes one ``device.status`` event) at a fixed rate
and the subscriber times each one from just before the write to its arrival. Also measured: CPU
time of the pipeline's process per event, its peak RSS, and the daemon's start to READY=1 with
an empty journal and with the run's journal to replay.

    .venv/bin/python benchmarks/pipeline.py [--events 500] [--rate 100] [--broker-nodelay]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pty
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import termios
import time
import tty
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import aiomqtt

from controller.table.codec import input_to_json
from controller.table.inputs import DeviceFault
from tests.integration.broker import Broker, mosquitto_available

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- the two relays


async def relay(kind: str, port: str, mqtt_port: int, topic: str, db: str) -> None:
    """A minimal relay (run as its own process): lines from ``port`` to ``topic``."""
    fd = os.open(port, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes] = asyncio.Queue()
    buffer = b""

    def readable() -> None:
        nonlocal buffer
        with contextlib.suppress(BlockingIOError):
            buffer += os.read(fd, 65536)
            *complete, buffer = buffer.split(b"\n")
            for line in complete:
                lines.put_nowait(line)

    loop.add_reader(fd, readable)
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY AUTOINCREMENT, body)")
    executor = ThreadPoolExecutor(max_workers=1)

    def commit(line: bytes) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO log (body) VALUES (?)", (line,))
        conn.execute("COMMIT")

    async with aiomqtt.Client("127.0.0.1", mqtt_port, protocol=aiomqtt.ProtocolVersion.V5) as c:
        print("ready", flush=True)
        while True:
            line = await lines.get()
            if kind == "durable":
                await loop.run_in_executor(executor, commit, line)
            await c.publish(topic, line, qos=1)


# --------------------------------------------------------------------------- measuring


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Result:
    def __init__(self, name: str) -> None:
        self.name = name
        self.latencies_ms: list[float] = []
        self.cpu_us: float = float("nan")
        self.rss_mib: float = float("nan")
        self.lost = 0

    def row(self) -> str:
        lat = sorted(self.latencies_ms)
        p50 = statistics.median(lat) if lat else float("nan")
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
        return (
            f"| {self.name:<8} | {p50:8.2f} | {p99:8.2f} | {max(lat) if lat else 0:8.2f} "
            f"| {self.cpu_us:10.0f} | {self.rss_mib:8.1f} | {self.lost:4d} |"
        )


def frame(i: int) -> bytes:
    fault = DeviceFault(datetime.now(UTC), "bench", "BENCH", i, "info", "pipeline benchmark")
    return input_to_json(fault).encode() + b"\n"


def frame_id(payload: bytes) -> int | None:
    body = json.loads(payload)
    if "fields" in body:  # a relay passes the line through
        return int(body["fields"]["fault_id"])
    data = body.get("data", {})
    return int(data["fault_id"]) if "fault_id" in data and "fault" in data else None


async def measure(
    name: str, master: int, mqtt_port: int, topic: str, pid: int, events: int, rate: float
) -> Result:
    result = Result(name)
    sent: dict[int, int] = {}
    got: dict[int, int] = {}
    done = asyncio.Event()
    async with aiomqtt.Client("127.0.0.1", mqtt_port, protocol=aiomqtt.ProtocolVersion.V5) as c:
        await c.subscribe(topic, qos=1)

        async def receive() -> None:
            async for message in c.messages:
                now = time.perf_counter_ns()
                assert isinstance(message.payload, bytes)
                i = frame_id(message.payload)
                if i is not None and i in sent and i not in got:
                    got[i] = now
                    if len(got) == events:
                        done.set()

        reader = asyncio.create_task(receive())
        for i in range(50):  # warm up the pipeline: not measured
            os.write(master, frame(-1 - i))
        await asyncio.sleep(1.0)
        cpu0 = cpu_seconds(pid)
        start = time.perf_counter()
        for i in range(events):
            line = frame(i)
            sent[i] = time.perf_counter_ns()
            os.write(master, line)
            await asyncio.sleep(max(0.0, start + (i + 1) / rate - time.perf_counter()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 30)
        result.cpu_us = (cpu_seconds(pid) - cpu0) / events * 1e6
        result.rss_mib = peak_rss_mib(pid)
        reader.cancel()
    result.latencies_ms = [(got[i] - sent[i]) / 1e6 for i in got]
    result.lost = events - len(got)
    return result


async def run_relay(
    kind: str, slave: str, master: int, broker: Broker, tmp: Path, events: int, rate: float
) -> Result:
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--relay",
            kind,
            "--port",
            slave,
            "--mqtt-port",
            str(broker.port),
            "--topic",
            f"bench/{kind}",
            "--db",
            str(tmp / f"{kind}.sqlite"),
        ],
        stdout=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    try:
        return await measure(kind, master, broker.port, f"bench/{kind}", proc.pid, events, rate)
    finally:
        proc.terminate()
        proc.wait(10)


def start_daemon(config: Path, tmp: Path) -> tuple[subprocess.Popen[bytes], float]:
    sock_path = tmp / "notify"
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(sock_path))
    sock.settimeout(30)
    env = {**os.environ, "NOTIFY_SOCKET": str(sock_path), "PYTHONFAULTHANDLER": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "run", "--config", str(config)],
        env=env,
        cwd=REPO,
        stdout=(tmp / "daemon.log").open("ab"),
        stderr=subprocess.STDOUT,
    )
    while b"READY=1" not in sock.recv(4096).split(b"\n"):
        pass
    ready = time.perf_counter() - started
    sock.close()
    return proc, ready


async def run_daemon(
    slave: str, master: int, broker: Broker, tmp: Path, events: int, rate: float
) -> tuple[Result, float, float]:
    config = tmp / "table.toml"
    config.write_text(
        '[table]\nid = "B"\nstacks = { 1 = 100, 2 = 100 }\nbutton = 1\nblinds = [1, 2]\n'
        'dispense = "dealer"\n'  # the events come from a feed: no shuffler to command
        "[security]\nrequire_signed = false\n"  # it takes no requests
        f'[devices.bench]\ndriver = "jsonl"\nport = "{slave}"\n'
        f'[broker]\nhost = "127.0.0.1"\nport = {broker.port}\n'
        f'[journal]\npath = "{tmp / "journal.sqlite"}"\n[log]\nformat = "json"\nlevel = "warning"\n'
    )
    proc, ready = start_daemon(config, tmp)
    try:
        result = await measure(
            "daemon", master, broker.port, "tables/B/events", proc.pid, events, rate
        )
    finally:
        proc.terminate()
        proc.wait(20)
    proc, ready_replay = start_daemon(config, tmp)  # again, with the run's journal to replay
    proc.terminate()
    proc.wait(20)
    return result, ready, ready_replay


async def main(events: int, rate: float, broker_nodelay: bool) -> None:
    if not mosquitto_available():
        raise SystemExit("mosquitto is not installed")
    with tempfile.TemporaryDirectory(prefix="pipeline") as name:
        tmp = Path(name)
        (tmp / "broker").mkdir()
        broker = Broker(tmp / "broker", extra="set_tcp_nodelay true\n" if broker_nodelay else "")
        broker.start()
        master, slave_fd = pty.openpty()
        tty.setraw(slave_fd, termios.TCSANOW)
        slave = os.ttyname(slave_fd)
        try:
            raw = await run_relay("raw", slave, master, broker, tmp, events, rate)
            durable = await run_relay("durable", slave, master, broker, tmp, events, rate)
            daemon, ready, ready_replay = await run_daemon(slave, master, broker, tmp, events, rate)
        finally:
            broker.stop()
            os.close(master)
            os.close(slave_fd)
    print(
        f"pipeline: {events} frames at {rate:g}/s over one pty to one mosquitto "
        f"(set_tcp_nodelay {'true' if broker_nodelay else 'false'}; {os.cpu_count()} cores)\n"
    )
    print("| pipeline | p50 (ms) | p99 (ms) | max (ms) | CPU µs/event | RSS MiB | lost |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for result in (raw, durable, daemon):
        print(result.row())
    d99 = sorted(durable.latencies_ms)[int(len(durable.latencies_ms) * 0.99)]
    m99 = sorted(daemon.latencies_ms)[int(len(daemon.latencies_ms) * 0.99)]
    print(f"\ndaemon p99 / durable p99 = {m99 / d99:.2f} (target ≤ 2)")
    print(
        f"start to READY=1: {ready:.3f} s with an empty journal, "
        f"{ready_replay:.3f} s replaying {events + 50} inputs (target < 1.5 s)"
    )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--rate", type=float, default=100.0, help="frames per second")
    parser.add_argument(
        "--broker-nodelay", action="store_true", help="mosquitto with set_tcp_nodelay true"
    )
    parser.add_argument("--relay", choices=["raw", "durable"], help=argparse.SUPPRESS)
    parser.add_argument("--port", help=argparse.SUPPRESS)
    parser.add_argument("--mqtt-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.relay:
        asyncio.run(relay(args.relay, args.port, args.mqtt_port, args.topic, args.db))
    else:
        asyncio.run(main(args.events, args.rate, args.broker_nodelay))


if __name__ == "__main__":
    cli()
