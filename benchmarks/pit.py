"""The pit at floor scale: many tables on one mosquitto, two pit processes in one share group.

One run per store (PostgreSQL, then SQLite), each on a fresh mosquitto:

* **the floor**: ``--tables`` simulated tables (load generator processes) publishing real
  envelopes, made by the daemon's own envelope code from hands the core played (a realistic
  mix: deals, actions, board, showdown, award), a hand every ``--hand-seconds`` divided by the
  speed-up ``--speed``; each keeps what it published (its journal) and answers the pit's replay
  requests from it; plus ``--daemons`` real ``tablectl run`` daemons with virtual shufflers played
  by an automatic dealer;
* **two pit processes** (``tablectl pit run``) in one share group, one store;
* **disturbances**: one pit process killed (SIGKILL) and restarted; the broker restarted once
  (its persistence keeps the pits' sessions); ``--dropping`` of the simulated tables lose a run
  of their messages (the broker never gets them), so only a replay can fill the gap;
* **the baseline, in the same run**: ``mosquitto_sub`` piped into a bulk insert (the raw rate
  from the broker into the same kind of database, no de-duplication, no acknowledgement after
  commit, no gap repair).

Reported: events published, stored, lost (must be 0), stored twice (must be 0), publish→committed
p50/p99 (the envelope's ``ts`` is the publish time; the store's ``committed_at`` the commit),
events/s per pit core (events stored per CPU second of the pit processes), replays asked and
answered, and the baseline's rows, lost, latency and events per CPU second.

    .venv/bin/python benchmarks/pit.py [--tables 500] [--speed 10] [--duration 30]
                                       [--stores postgresql,sqlite] [--out FILE]

``--console`` measures the web console instead: ``--tables`` synthetic tables (one MQTT client
publishing each table's birth and retained state, as a table does) on a fresh mosquitto, one pit
process (SQLite), and Debian's chromium (Playwright) logged in on the floor map. Each state
carries its publish time and its seq; a MutationObserver in the page records when each table's
tile changed to a new seq. Reported: updates published and seen on the map, the publish→DOM
latency p50/p95/p99/max, the pit's CPU, the load average::

    .venv/bin/python benchmarks/pit.py --console [--tables 500] [--rate 250] [--duration 20]

``--failover SECONDS`` measures a pit process's failure instead: the same floor and two pit
processes, no other disturbance (no broker restart; ``--dropping`` 0 unless given), pit-2
SIGKILLed after ``--warmup`` seconds and started again ``SECONDS`` later, the floor publishing on
for ``--after`` seconds more. Reported per window of publish time (before the kill, the outage,
after the restart): publish→committed p50/p95/p99/max over every event, live or replayed (a
committed event is in the next answer of either pit's API: one store), plus what pit-1 did (it
heard pit-2's Will, took over, asked replays), the duplicates pit-2 dropped once back, and the
CPU an event: events stored per CPU second of the two pit processes, beside the baseline's in the
same run::

    .venv/bin/python benchmarks/pit.py --failover 60 [--tables 200] [--speed 1] [--warmup 15]
                                       [--after 30] [--stores postgresql]

``PIT_BENCH_SPY=DIR`` records where each pit process spends its CPU (py-spy, installed in the venv
for the measurement: ``pip install py-spy``), one file of raw stacks per process start in DIR.

With the defaults both runs take under two minutes of wall time. The machine's load average
(1 minute) at the start and the end of each run is reported with its figures: on a shared
machine the same code measures slower when others are busy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pickle
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt

from controller.envelope import envelope
from controller.mqtt import Client, MqttError
from controller.table.events import TableEvent
from tests.integration.broker import Broker, free_port, mosquitto_available, wait_port

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
PREFIX = "tables"


# --------------------------------------------------------------------------- hand templates


def templates(count: int, seed: int = 7) -> list[list[TableEvent]]:
    """Hands the core played (each a list of events), to replay at the simulated tables."""
    from simulators.autoplay import AutoDealer, Style, random_table  # noqa: PLC0415

    hands = []
    for index in range(count):
        rng = random.Random(seed + index)
        dealer = AutoDealer(random_table(rng), rng, Style(fold=0.15, aggressive=0.3, all_in=0.1))
        if dealer.play_hand():
            hands.append([e for e in dealer.run.events if e.hand_id is not None])
    return hands


# --------------------------------------------------------------------------- a simulated table


class SimTable:
    """One simulated table: publishes envelopes in order, keeps them, answers replays."""

    def __init__(self, table: str, port: int, hands: list[list[TableEvent]], args: Any) -> None:
        self.table = table
        self.port = port
        self.hands = hands
        self.args = args
        self.epoch = uuid.uuid4().hex[:12]
        self.journal: list[bytes] = []  # envelope of seq n at n - 1
        self.rng = random.Random(table)
        self.published = asyncio.Event()  # every event of the run journaled and sent
        self.stopped = False  # past the deadline: journal nothing more
        self.dropped = 0
        self.hand_id: str | None = None

    def _envelope(self, event: TableEvent, seq: int, historical: bool = False) -> bytes:
        body = envelope(
            event._replace(ts=datetime.now(UTC), hand_id=self.hand_id),
            table_id=self.table,
            epoch=self.epoch,
            seq=seq,
            historical=historical,
        )
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()

    async def run(self, start: float, end: float, drop_at: float | None) -> None:
        """Publish until ``end`` (monotonic), then answer replays until cancelled; reconnect
        whenever the broker goes."""
        pending: list[tuple[str, bytes]] = []  # published but not acknowledged: sent again
        events = self._events(start, end, drop_at)
        while True:
            try:
                async with aiomqtt.Client(
                    "127.0.0.1",
                    self.port,
                    identifier=f"sim-{self.table}",
                    protocol=aiomqtt.ProtocolVersion.V5,
                    keepalive=30,
                ) as client:
                    await client.subscribe(f"{PREFIX}/{self.table}/request/replay", qos=1)
                    replies = asyncio.create_task(self._replies(client))
                    try:
                        while pending:
                            await client.publish(pending[0][0], pending[0][1], qos=1)
                            pending.pop(0)
                        if not self.published.is_set():
                            async for topic, payload in events:
                                pending.append((topic, payload))
                                await client.publish(topic, payload, qos=1)
                                pending.pop()
                            self.published.set()
                        await replies  # the journal stays readable until the run ends
                    finally:
                        replies.cancel()
                        with contextlib.suppress(BaseException):
                            await replies
            except aiomqtt.MqttError:
                await asyncio.sleep(0.2 + self.rng.random())

    async def _events(self, start: float, end: float, drop_at: float | None) -> Any:
        """Each event's topic and envelope, paced like a hand at a real table, sped up."""
        per_hand = self.args.hand_seconds / self.args.speed
        await asyncio.sleep(self.rng.random() * per_hand)  # tables are not in step
        hand_number = 0
        dropping = 0
        while time.monotonic() < end and not self.stopped:
            hand = self.hands[self.rng.randrange(len(self.hands))]
            hand_number += 1
            self.hand_id = f"{self.table}-{hand_number:05d}"
            gap = per_hand / (len(hand) + 1)
            for event in hand:
                await asyncio.sleep(gap * self.rng.uniform(0.5, 1.5))
                if self.stopped:
                    break
                if drop_at is not None and time.monotonic() >= drop_at:
                    dropping, drop_at = self.args.drop_events, None
                seq = len(self.journal) + 1
                payload = self._envelope(event, seq)
                self.journal.append(payload)
                if dropping:  # journaled, never reaches the broker: only a replay brings it
                    dropping -= 1
                    self.dropped += 1
                    continue
                yield f"{PREFIX}/{self.table}/events", payload
            state = {"epoch": self.epoch, "seq": len(self.journal), "hand": None}
            yield f"{PREFIX}/{self.table}/state", json.dumps(state).encode()

    async def _replies(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes) else b"{}"
            request = json.loads(payload)
            first, last = int(request["from_seq"]), int(request["to_seq"])
            pit = str(request["pit"])
            sent = 0
            for seq in range(first, min(last, len(self.journal)) + 1):
                body = json.loads(self.journal[seq - 1])
                body["historical"] = True
                await client.publish(
                    f"{PREFIX}/{self.table}/replay/{pit}", json.dumps(body).encode(), qos=1
                )
                sent += 1
            answer = {
                "transaction": request.get("transaction"),
                "status": "ok",
                "command": "replay",
                "data": {"sent": sent, "missing": [], "last_seq": len(self.journal)},
                "error": None,
            }
            await client.publish(
                f"{PREFIX}/{self.table}/response/replay", json.dumps(answer).encode(), qos=1
            )


async def generate(args: Any) -> None:
    """One load generator process: its share of the simulated tables."""
    hands = pickle.loads(Path(args.templates).read_bytes())
    names = args.names.split(",")
    tables = [SimTable(name, args.port, hands, args) for name in names]
    start = time.monotonic()
    end = start + args.duration
    drop = set(args.drop.split(",")) if args.drop else set()
    drop_at = start + args.duration * 0.4
    runs = [
        asyncio.create_task(t.run(start, end, drop_at if t.table in drop else None)) for t in tables
    ]
    # Every table publishes until the end (and a hand in progress to its end); one that the
    # broker keeps from sending in time stops journaling, and the pits replay what it has.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(args.duration + 2 * args.hand_seconds / args.speed + 60):
            await asyncio.gather(*(t.published.wait() for t in tables))
    for table in tables:
        table.stopped = True
    result = {
        t.table: {"epoch": t.epoch, "last": len(t.journal), "dropped": t.dropped} for t in tables
    }
    Path(args.result + ".part").write_text(json.dumps(result))
    Path(args.result + ".part").rename(args.result)
    await asyncio.gather(*runs)  # answer replays until the benchmark ends this process


# --------------------------------------------------------------------------- processes


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def batch_wait_line(seconds: float | None) -> str:
    """The ``[pit]`` line setting ``batch_wait`` (none: the pit's default)."""
    return "" if seconds is None else f"batch_wait = {seconds}\n"


class Pit:
    """A ``tablectl pit run`` process."""

    def __init__(
        self,
        directory: Path,
        pit_id: str,
        port: int,
        url: str,
        key: Path,
        batch_wait: float | None = None,
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.pit_id = pit_id
        self.web = free_port()
        self.config = directory / "pit.toml"
        self.config.write_text(
            f'[pit]\nid = "{pit_id}"\nshare_group = "floor"\n{batch_wait_line(batch_wait)}'
            f'[broker]\nhost = "127.0.0.1"\nport = {port}\nkeepalive = 10\n'
            f"reconnect_min = 0.1\nreconnect_max = 1.0\n"
            f'[store]\nurl = "{url}"\n[web]\nlisten = "127.0.0.1:{self.web}"\n'
            f'[repair]\nafter = 3.0\nretry = 5.0\n[security]\nkey = "{key}"\n'
            f'[log]\nformat = "json"\nlevel = "warning"\n'
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.cpu = 0.0  # of the processes that ended, after their start-up
        self.ready_cpu = 0.0
        self.starts = 0
        self.spies: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        # a new port at every start: a port freed by a killed process may be taken meanwhile
        self.web = free_port()
        text = self.config.read_text()
        start = text.index('listen = "127.0.0.1:')
        end = text.index('"', start + len('listen = "'))
        self.config.write_text(f'{text[:start]}listen = "127.0.0.1:{self.web}{text[end:]}')
        log = (self.directory / "pit.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "pit", "run", "--config", str(self.config)],
            stdout=log,
            stderr=log,
            cwd=REPO,
        )
        log.close()
        wait_port(self.web, 180)  # a busy machine starts Python slowly
        self.ready_cpu = cpu_seconds(self.proc.pid)  # start-up is not per-event work
        self.starts += 1
        spy = os.environ.get("PIT_BENCH_SPY")  # a directory: py-spy's samples of each process
        if spy:
            # --nonblocking: the process is never paused, so its CPU is what it would be; --gil:
            # only the thread running Python is sampled (a wait for the database or the
            # network is not CPU)
            out = Path(spy) / f"{self.directory.parent.name}-{self.pit_id}-{self.starts}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            spying = subprocess.Popen(
                [
                    shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy")),
                    *("record", "--nonblocking", "--gil", "-r", "200", "-f", "raw"),
                    *("-o", str(out), "-p", str(self.proc.pid)),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.spies.append(spying)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.proc is not None
        self.cpu += cpu_seconds(self.proc.pid) - self.ready_cpu
        self.proc.send_signal(sig)
        self.proc.wait(30)

    def metrics(self) -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.web}/metrics", timeout=10) as r:
            text = r.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("tablectl_pit") and " " in line:
                name, value = line.rsplit(" ", 1)
                out[name] = out.get(name, 0.0) + float(value)
        return out

    def end(self) -> None:
        if self.proc is not None:
            _end(self.proc)
        for spying in self.spies:  # each ends with its process, writing its samples
            with contextlib.suppress(subprocess.TimeoutExpired):
                spying.wait(60)

    def total_cpu(self) -> float:
        assert self.proc is not None
        running = self.proc.poll() is None
        return self.cpu + (cpu_seconds(self.proc.pid) - self.ready_cpu if running else 0.0)


BASELINE_DDL = (
    "CREATE TABLE baseline (event_id TEXT NOT NULL, ts TEXT NOT NULL, body TEXT NOT NULL, "
    "inserted_at DOUBLE PRECISION NOT NULL)"
)


def baseline_insert(url: str) -> None:
    """Read envelopes, one per line, from stdin; insert them in bulk (the baseline's consumer)."""
    if url.startswith("sqlite"):
        conn: Any = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None, timeout=60)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        placeholder = "?"
    else:
        import psycopg  # noqa: PLC0415

        conn = psycopg.connect(url, autocommit=True)
        placeholder = "%s"
    sql = f"INSERT INTO baseline VALUES ({', '.join([placeholder] * 4)})"
    rows: list[tuple[str, str, str, float]] = []
    last = time.monotonic()
    for line in sys.stdin:
        try:
            body = json.loads(line)
            rows.append((body["event_id"], body["ts"], line.strip(), 0.0))
        except (ValueError, KeyError):
            continue
        if len(rows) >= 1000 or time.monotonic() - last > 0.05:
            _flush(conn, sql, rows, url)
            rows, last = [], time.monotonic()
    _flush(conn, sql, rows, url)


def _flush(conn: Any, sql: str, rows: list[tuple[str, str, str, float]], url: str) -> None:
    if not rows:
        return
    now = time.time()
    stamped = [(a, b, c, now) for a, b, c, _ in rows]
    if url.startswith("sqlite"):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, stamped)
        conn.execute("COMMIT")
    else:
        with conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(sql, stamped)


# --------------------------------------------------------------------------- one run


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def query(url: str, sql: str) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            return list(conn.execute(sql).fetchall())
        finally:
            conn.close()
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url) as pg:
        return list(pg.execute(sql).fetchall())


def ts_seconds(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


async def one_run(kind: str, args: Any, hands_file: Path, work: Path) -> dict[str, Any]:
    """One floor on a fresh broker and store; its figures (everything stopped however it ends)."""
    cleanup: list[Any] = []
    try:
        return await _floor(kind, args, hands_file, work, cleanup)
    finally:
        for stop in reversed(cleanup):
            with contextlib.suppress(Exception):
                stop()


def _wait_results(paths: list[Path]) -> None:
    """Wait until every generator wrote its result (it then only answers replays)."""
    while not all(path.exists() for path in paths):
        time.sleep(0.5)


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


async def _floor(
    kind: str, args: Any, hands_file: Path, work: Path, cleanup: list[Any]
) -> dict[str, Any]:
    from controller.authority import Role  # noqa: PLC0415
    from controller.pit.store import Store  # noqa: PLC0415
    from simulators.rig.keys import RigKeys  # noqa: PLC0415
    from tests.postgres import PostgresServer  # noqa: PLC0415

    run_dir = work / kind
    run_dir.mkdir()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, _stacks)
    broker_dir = run_dir / "broker"
    broker_dir.mkdir()
    broker = Broker(
        broker_dir,
        extra=f"persistence true\npersistence_location {broker_dir}/\nautosave_interval 0\n"
        "max_queued_messages 0\nmax_inflight_messages 0\nset_tcp_nodelay true\n"
        "max_connections -1",
    )
    broker.start()
    cleanup.append(broker.stop)
    postgres = None
    if kind == "postgresql":
        postgres = PostgresServer()
        postgres.start()
        cleanup.append(postgres.stop)
        url = postgres.new_database()
        baseline_url = postgres.new_database()
    else:
        url = f"sqlite:///{run_dir / 'pit.sqlite'}"
        baseline_url = f"sqlite:///{run_dir / 'baseline.sqlite'}"
    store = Store(url)
    store.migrate()
    store.close()
    query_setup(baseline_url)
    load_start = os.getloadavg()[0]
    keys = RigKeys.create(run_dir / "keys")
    pits = [
        Pit(
            run_dir / f"pit-{n}",
            f"pit-{n}",
            broker.port,
            url,
            keys.key_file(Role.PIT),
            args.batch_wait,
        )
        for n in (1, 2)
    ]
    for pit in pits:
        pit.start()
        cleanup.append(pit.end)
    daemons = start_daemons(run_dir, broker, keys, args.daemons, cleanup)
    baseline_log = (run_dir / "baseline.log").open("ab")
    sub = subprocess.Popen(
        [
            "mosquitto_sub",
            "-h",
            "127.0.0.1",
            "-p",
            str(broker.port),
            "-V",
            "mqttv5",
            "-q",
            "1",
            "-c",
            "-i",
            "baseline",
            "-x",
            "3600",
            "-t",
            f"{PREFIX}/+/events",
            "-F",
            "%p",
        ],
        stdout=subprocess.PIPE,
        stderr=baseline_log,
    )
    inserter = subprocess.Popen(
        [sys.executable, __file__, "--baseline-insert", baseline_url],
        stdin=sub.stdout,
        stderr=baseline_log,
        cwd=REPO,
    )
    cleanup += [lambda: _end(sub), lambda: _end(inserter)]
    assert sub.stdout is not None
    sub.stdout.close()
    time.sleep(0.5)

    names = [f"S{n:03d}" for n in range(args.tables)]
    count = max(1, int(len(names) * args.dropping)) if args.dropping > 0 else 0
    dropping = set(random.Random(1).sample(names, count))
    workers = []
    chunk = (len(names) + args.generators - 1) // args.generators
    for index in range(args.generators):
        part = names[index * chunk : (index + 1) * chunk]
        if not part:
            continue
        result = run_dir / f"gen-{index}.json"
        workers.append(
            (
                result,
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--generator",
                        "--names",
                        ",".join(part),
                        "--port",
                        str(broker.port),
                        "--templates",
                        str(hands_file),
                        "--result",
                        str(result),
                        "--duration",
                        str(args.duration),
                        "--speed",
                        str(args.speed),
                        "--hand-seconds",
                        str(args.hand_seconds),
                        "--drop",
                        ",".join(sorted(dropping & set(part))),
                        "--drop-events",
                        str(args.drop_events),
                    ],
                    cwd=REPO,
                    stderr=(run_dir / f"gen-{index}.log").open("ab"),
                ),
            )
        )
    for _, proc in workers:
        cleanup.append(lambda proc=proc: _end(proc))
    dealers = asyncio.create_task(deal(daemons, broker.port, args.duration))
    started = time.monotonic()

    async def at(fraction: float) -> None:
        await asyncio.sleep(max(0.0, started + args.duration * fraction - time.monotonic()))

    marks = {"start": time.time()}
    if args.failover:
        await asyncio.sleep(max(0.0, started + args.warmup - time.monotonic()))
        calm_until = time.time()
        pits[1].kill(signal.SIGKILL)  # what it took and did not commit waits in its session
        marks["killed"] = time.time()
        await asyncio.sleep(max(0.0, marks["killed"] + args.failover - time.time()))
        await asyncio.to_thread(pits[1].start)
        marks["restarted"] = time.time()
    else:
        await at(0.3)
        calm_until = time.time()  # the latency before any disturbance
        pits[1].kill(signal.SIGKILL)
        marks["killed"] = time.time()
        await asyncio.sleep(2.0)
        await asyncio.to_thread(pits[1].start)
        marks["restarted"] = time.time()
        await at(0.55)
        await asyncio.to_thread(broker.stop)
        marks["broker stopped"] = time.time()
        await asyncio.sleep(1.0)
        await asyncio.to_thread(broker.start)
        marks["broker started"] = time.time()
    await asyncio.to_thread(_wait_results, [result for result, _ in workers])
    published_end = time.monotonic()
    await dealers
    await asyncio.sleep(1.0)  # the real tables' last events on their way
    expected: dict[tuple[str, str], int] = {}
    dropped = 0
    for result, _ in workers:
        for table, info in json.loads(result.read_text()).items():
            expected[(table, info["epoch"])] = info["last"]
            dropped += info["dropped"]
    for daemon in daemons:
        epoch, last = journal_last(daemon)
        expected[(daemon.table, epoch)] = last
    published = sum(expected.values())

    # wait for the pits (and the baseline) to settle: repair what was dropped
    deadline = time.monotonic() + args.wait
    stored = 0
    while time.monotonic() < deadline:
        stored = count_expected(url, expected)
        if stored >= published:
            break
        await asyncio.sleep(1.0)
    settle_seconds = time.monotonic() - published_end
    metrics = [pit.metrics() for pit in pits]
    pit_cpu = [pit.total_cpu() for pit in pits]
    cpu = sum(pit_cpu)
    twice = query(
        url,
        "SELECT COUNT(*) FROM (SELECT table_id, epoch, seq FROM events "
        "GROUP BY table_id, epoch, seq HAVING COUNT(*) > 1) AS twice",
    )[0][0]
    # the failover's windows count every event, however it came (the slow ones are replayed)
    live_only = "" if args.failover else "source = 'live' AND "
    timed = [
        (ts_seconds(ts), committed)
        for ts, committed in query(
            url, f"SELECT ts, committed_at FROM events WHERE {live_only}public IS NOT NULL"
        )
    ]
    if os.environ.get("PIT_BENCH_KEEP") is not None:  # publish and commit times, to study
        (run_dir / "latency.json").write_text(json.dumps({"marks": marks, "timed": timed}))
    load_end = os.getloadavg()[0]
    latencies = [committed - sent for sent, committed in timed]
    calm = [committed - sent for sent, committed in timed if sent < calm_until]
    for daemon in daemons:
        daemon.kill(signal.SIGTERM)
    for pit in pits:
        pit.kill(signal.SIGTERM)
    sub_cpu = cpu_seconds(sub.pid) + cpu_seconds(inserter.pid)
    sub.terminate()
    inserter.wait(30)
    base_rows = query(baseline_url, "SELECT ts, inserted_at, event_id FROM baseline")
    # the events of the run (a real table may journal more after it: the pits' requests)
    base_unique = len({r[2] for r in base_rows if _in_run(r[2], expected)})
    base_lat = [r[1] - ts_seconds(r[0]) for r in base_rows]
    broker.stop()
    if postgres is not None:
        postgres.stop()

    def total(name: str) -> float:
        return sum(m.get(name, 0.0) for m in metrics)

    windows: dict[str, list[float]] = {}
    if args.failover:
        killed, restarted = marks["killed"], marks["restarted"]
        for sent, committed in timed:
            name = "before" if sent < killed else "outage" if sent < restarted else "after"
            windows.setdefault(name, []).append(committed - sent)

    return {
        "windows": {name: summary(values) for name, values in windows.items()},
        "outage_s": marks.get("restarted", 0.0) - marks.get("killed", 0.0),
        "survivor": {
            name: metrics[0].get(name, 0.0)
            for name in (
                "tablectl_pit_members_lost_total",
                "tablectl_pit_gaps_released_total",
                "tablectl_pit_replays_asked_total",
                "tablectl_pit_duplicates_total",
            )
        },
        "returned_duplicates": int(metrics[1].get("tablectl_pit_duplicates_total", 0.0)),
        "store": kind,
        "tables": args.tables + len(daemons),
        "published": published,
        "dropped": dropped,
        "stored": stored,
        "lost": published - stored,
        "twice": twice,
        "duplicates": int(total("tablectl_pit_duplicates_total")),
        "p50": percentile(latencies, 0.5) * 1000,
        "p99": percentile(latencies, 0.99) * 1000,
        "calm_p50": percentile(calm, 0.5) * 1000,
        "calm_p99": percentile(calm, 0.99) * 1000,
        "rate": published / args.duration,
        "per_core": stored / cpu if cpu else float("nan"),
        "pit_cpu": pit_cpu,
        "asked": int(total("tablectl_pit_replays_asked_total")),
        "answered": int(total('tablectl_pit_replays_answered_total{status="ok"}')),
        "replayed": int(total("tablectl_pit_replayed_events_total")),
        "settle": settle_seconds,
        "load": f"{load_start:.1f} → {load_end:.1f}",
        "base_rows": len(base_rows),
        "base_lost": published - dropped - base_unique,
        "base_p50": percentile(base_lat, 0.5) * 1000,
        "base_p99": percentile(base_lat, 0.99) * 1000,
        "base_per_core": len(base_rows) / sub_cpu if sub_cpu else float("nan"),
    }


def summary(values: list[float]) -> dict[str, float]:
    """Count, p50, p95, p99 and max of latencies in seconds, in ms."""
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50": percentile(ordered, 0.5) * 1000,
        "p95": percentile(ordered, 0.95) * 1000,
        "p99": percentile(ordered, 0.99) * 1000,
        "max": (ordered[-1] if ordered else float("nan")) * 1000,
    }


def _in_run(event_id: str, expected: dict[tuple[str, str], int]) -> bool:
    table, epoch, seq = event_id.rsplit(":", 2)
    return int(seq) <= expected.get((table, epoch), 0)


def _stacks() -> None:
    """Print where every task waits (``kill -USR1`` the benchmark when it seems stuck)."""
    for task in asyncio.all_tasks():
        task.print_stack(file=sys.stderr)


def query_setup(url: str) -> None:
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url[len("sqlite:///") :])
        conn.execute(BASELINE_DDL)
        conn.commit()
        conn.close()
        return
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute(BASELINE_DDL)


def count_expected(url: str, expected: dict[tuple[str, str], int]) -> int:
    rows = query(
        url,
        "SELECT table_id, epoch, COUNT(*), MAX(seq) FROM events WHERE public IS NOT NULL "
        "GROUP BY table_id, epoch",
    )
    return sum(
        min(int(count), expected[(table, epoch)])
        for table, epoch, count, _ in rows
        if (table, epoch) in expected
    )


# --------------------------------------------------------------------------- real daemons


def start_daemons(
    run_dir: Path, broker: Broker, keys: Any, count: int, cleanup: list[Any]
) -> list[Any]:
    from tests.integration.conftest import DaemonProcess  # noqa: PLC0415

    daemons = []
    for n in range(count):
        daemon = DaemonProcess(run_dir / f"daemon-{n}", broker, table=f"D{n}", seed=n + 1)
        # every table trusts the same pit key (and the dealer's): one keyring for the floor
        for path in keys.directory.iterdir():
            shutil.copy(path, daemon.keys.directory / path.name)
        daemon.keys = keys
        cleanup.append(daemon.close)
        daemon.start(timeout=90)
        daemons.append(daemon)
    return daemons


async def deal(daemons: list[Any], port: int, duration: float) -> None:
    """An automatic dealer at each real table, hands until ``duration`` is over."""
    from simulators.dealer_console import AutoConsole  # noqa: PLC0415

    async def one(daemon: Any) -> None:
        end = time.monotonic() + duration
        while time.monotonic() < end:
            try:
                async with Client("127.0.0.1", port) as client:
                    console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
                    await console.start()
                    try:
                        while time.monotonic() < end:
                            await console.play(hands=1, timeout=30)
                    finally:
                        with contextlib.suppress(MqttError):
                            await console.stop()
            except (MqttError, TimeoutError):
                await asyncio.sleep(0.5)

    await asyncio.gather(*(one(d) for d in daemons))


def journal_last(daemon: Any) -> tuple[str, int]:
    from controller.shell.journal import Journal  # noqa: PLC0415

    journal = Journal.open_existing(daemon.journal)
    try:
        return journal.epoch, journal.last_seq()
    finally:
        journal.close()


# --------------------------------------------------------------------------- report


def failover_report(results: list[dict[str, Any]], args: Any) -> str:
    """The failover runs' tables."""
    lines = [
        f"pit failover: {args.tables} simulated tables + {args.daemons} real daemons, a hand every "
        f"{args.hand_seconds:g} s sped up {args.speed:g}x; two pit processes in one share group, "
        f"pit-2 SIGKILLed after {args.warmup:g} s for {args.failover:g} s, then {args.after:g} s "
        "more; publish→committed (readable on either pit's API) of every event, live or "
        "replayed, by when it was published; the pits' batch_wait: "
        + ("their default" if args.batch_wait is None else f"{args.batch_wait:g} s"),
        "",
        "| store | published | ev/s | stored | lost | stored twice | before the kill p50 / p95 / "
        "p99 ms | outage p50 / p95 / p99 / max ms | after the restart p50 / p95 / p99 / max ms "
        "| pit-1: members lost, gaps released, replays asked, duplicates | pit-2 duplicates once "
        "back | pit-1 + pit-2 CPU s | ev/s per pit core | baseline ev/s per core | pit CPU an "
        "event ÷ baseline's | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        w = r["windows"]
        nan = {"p50": float("nan"), "p95": float("nan"), "p99": float("nan"), "max": float("nan")}
        before, outage, after = (w.get(k, nan) for k in ("before", "outage", "after"))
        s = r["survivor"]
        lines.append(
            f"| {r['store']} | {r['published']} | {r['rate']:.0f} | {r['stored']} | "
            f"{r['lost']} | {r['twice']} | "
            f"{before['p50']:.0f} / {before['p95']:.0f} / {before['p99']:.0f} | "
            f"{outage['p50']:.0f} / {outage['p95']:.0f} / {outage['p99']:.0f} / "
            f"{outage['max']:.0f} | "
            f"{after['p50']:.0f} / {after['p95']:.0f} / {after['p99']:.0f} / {after['max']:.0f} | "
            f"{s['tablectl_pit_members_lost_total']:.0f}, "
            f"{s['tablectl_pit_gaps_released_total']:.0f}, "
            f"{s['tablectl_pit_replays_asked_total']:.0f}, "
            f"{s['tablectl_pit_duplicates_total']:.0f} | {r['returned_duplicates']} | "
            f"{' + '.join(f'{c:.1f}' for c in r['pit_cpu'])} | {r['per_core']:.0f} | "
            f"{r['base_per_core']:.0f} | {r['base_per_core'] / r['per_core']:.2f} | "
            f"{r['load']} |"
        )
    lines += [
        "",
        "ev/s per pit core: events stored per CPU second of the two pit processes from each "
        "start (once serving) to the end; the baseline's: rows per CPU second of mosquitto_sub "
        "and its bulk insert, in the same run (no de-duplication, no ack after commit, no "
        "repair)",
    ]
    return "\n".join(lines) + "\n"


def report(results: list[dict[str, Any]], args: Any) -> str:
    lines = [
        f"pit floor: {args.tables} simulated tables + {args.daemons} real daemons, a hand every "
        f"{args.hand_seconds:g} s sped up {args.speed:g}x, {args.duration:g} s; two pit "
        "processes in one share group; one pit SIGKILLed and restarted, the broker restarted, "
        f"{args.dropping:.0%} of the tables losing {args.drop_events} messages each",
        "",
        "| store | published | ev/s | dropped | stored | lost | stored twice | dup. dropped "
        "| p50 / p99 ms | before the kill p50 / p99 ms | ev/s per pit core (after start-up) "
        "| replays asked/answered | replayed | settle s | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['store']} | {r['published']} | {r['rate']:.0f} | {r['dropped']} | "
            f"{r['stored']} | {r['lost']} | {r['twice']} | {r['duplicates']} | "
            f"{r['p50']:.0f} / {r['p99']:.0f} | {r['calm_p50']:.0f} / {r['calm_p99']:.0f} | "
            f"{r['per_core']:.0f} | {r['asked']}/{r['answered']} | "
            f"{r['replayed']} | {r['settle']:.1f} | {r['load']} |"
        )
    lines += [
        "",
        "baseline in the same run: mosquitto_sub -q 1 piped into a bulk insert (no de-duplication,"
        " no ack after commit, no repair)",
        "",
        "| store | rows | lost | p50 ms | p99 ms | ev/s per core |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['store']} | {r['base_rows']} | {r['base_lost']} | {r['base_p50']:.1f} | "
            f"{r['base_p99']:.1f} | {r['base_per_core']:.0f} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the web console

#: Records, in the page, when each tile was replaced by one of a newer seq (the browser's clock
#: is the machine's: performance.timeOrigin + now() is Unix time in ms).
OBSERVER = """
window.__seen = [];
new MutationObserver((mutations) => {
  const now = performance.timeOrigin + performance.now();
  for (const m of mutations) for (const node of m.addedNodes) {
    if (node.dataset && node.dataset.table && node.dataset.seq)
      window.__seen.push([node.dataset.table, Number(node.dataset.seq), now]);
  }
}).observe(document.getElementById("floor-grid"), {childList: true});
"""


async def console_run(args: Any) -> dict[str, Any]:
    """One console latency run (see the module's docstring)."""
    from playwright.async_api import async_playwright  # noqa: PLC0415

    from tests.integration.pit import PASSWORD, USER, PitProcess  # noqa: PLC0415

    work = Path(tempfile.mkdtemp(prefix="pit-console-bench-"))
    (work / "broker").mkdir()
    broker = Broker(work / "broker")
    broker.start()
    pit = PitProcess(work / "pit", broker)
    names = [f"C{i:03d}" for i in range(args.tables)]
    published: dict[tuple[str, int], float] = {}
    load_start = os.getloadavg()[0]
    try:
        pit.add_user()
        pit.start()
        async with Client("127.0.0.1", broker.port) as client:
            epoch = uuid.uuid4().hex[:12]
            for name in names:
                status = {"state": "online", "bdseq": 1, "ts": _now_ts(), "version": "bench"}
                await client.publish(
                    f"{PREFIX}/{name}/status", json.dumps(status).encode(), 1, True
                )
                await client.publish(
                    f"{PREFIX}/{name}/state", json.dumps(_state(name, epoch, 1)).encode(), 1, True
                )
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", args=["--no-sandbox"]
                )
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                await page.goto(f"{pit.url}/login?next=/")
                await page.fill("#username", USER)
                await page.fill("#password", PASSWORD)
                await page.click("button[type=submit]")
                await page.wait_for_url(f"{pit.url}/")
                await page.wait_for_function(
                    f"document.querySelectorAll('#floor-grid .tile').length >= {len(names)}",
                    timeout=120_000,
                )
                await page.wait_for_function(
                    "document.getElementById('live-state').textContent.includes('live')"
                )
                await page.evaluate(OBSERVER)
                cpu_before = cpu_seconds(pit.proc.pid) if pit.proc else 0.0
                seqs = dict.fromkeys(names, 1)
                interval = 0.02
                per_tick = max(1, round(args.rate * interval))
                started = time.monotonic()
                turn = 0
                while time.monotonic() - started < args.duration:
                    tick = time.monotonic()
                    for _ in range(per_tick):
                        name = names[turn % len(names)]
                        turn += 1
                        seqs[name] += 1
                        body = _state(name, epoch, seqs[name])
                        published[(name, seqs[name])] = body["published"]
                        await client.publish(
                            f"{PREFIX}/{name}/state", json.dumps(body).encode(), 0, True
                        )
                    await asyncio.sleep(max(0.0, interval - (time.monotonic() - tick)))
                elapsed = time.monotonic() - started
                await asyncio.sleep(3.0)  # the last updates reach the page
                cpu = (cpu_seconds(pit.proc.pid) if pit.proc else 0.0) - cpu_before
                seen = await page.evaluate("window.__seen")
                await browser.close()
    finally:
        pit.close()
        broker.stop()
        if os.environ.get("PIT_BENCH_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
    latencies = sorted(
        (when / 1000 - published[(name, seq)]) * 1000
        for name, seq, when in seen
        if (name, seq) in published
    )
    return {
        "tables": len(names),
        "published": len(published),
        "rate": len(published) / elapsed,
        "seen": len(latencies),
        "p50": percentile(latencies, 0.50),
        "p95": percentile(latencies, 0.95),
        "p99": percentile(latencies, 0.99),
        "max": latencies[-1] if latencies else float("nan"),
        "pit_cpu": cpu / elapsed,
        "load": f"{load_start:.1f} → {os.getloadavg()[0]:.1f}",
    }


def _state(name: str, epoch: str, seq: int) -> dict[str, Any]:
    """A table's retained state, as a table publishes it, with its publish time."""
    return {
        "schema": "tablectl.state/1",
        "table_id": name,
        "epoch": epoch,
        "seq": seq,
        "button": 1,
        "blinds": [1, 2],
        "ante": 0,
        "hands_started": seq // 20,
        "deck": {"shuffle_id": seq // 20, "ready": True},
        "seats": {"1": {"stack": 100}, "2": {"stack": 100}},
        "hand": {"hand_id": f"{name}-{seq // 20:05d}", "phase": "betting", "pot": seq % 97},
        "last_hand": None,
        "published": time.time(),
    }


def _now_ts() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def console_report(result: dict[str, Any]) -> str:
    """The console run's table."""
    r = result
    return (
        f"pit console: {r['tables']} synthetic tables on the floor map, one pit process (SQLite), "
        "chromium\n\n"
        "| tables | updates published | /s | tile updates seen | publish→DOM p50 / p95 / p99 / max "
        "ms | pit CPU (cores) | load avg |\n"
        "|---:|---:|---:|---:|---:|---:|---|\n"
        f"| {r['tables']} | {r['published']} | {r['rate']:.0f} | {r['seen']} | "
        f"{r['p50']:.0f} / {r['p95']:.0f} / {r['p99']:.0f} / {r['max']:.0f} | "
        f"{r['pit_cpu']:.2f} | {r['load']} |\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--daemons", type=int, default=1)
    parser.add_argument("--speed", type=float, default=10.0)
    parser.add_argument("--hand-seconds", type=float, default=120.0)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--dropping", type=float, default=0.05)
    parser.add_argument("--drop-events", type=int, default=8)
    parser.add_argument("--generators", type=int, default=4)
    parser.add_argument("--wait", type=float, default=60.0)
    parser.add_argument("--stores", default="postgresql,sqlite")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--batch-wait", type=float, default=None, help="the pits' batch_wait (default: theirs)"
    )
    parser.add_argument("--console", action="store_true", help="measure the web console")
    parser.add_argument("--rate", type=float, default=250.0, help="--console: updates/s")
    parser.add_argument(
        "--failover", type=float, default=0.0, help="seconds pit-2 stays SIGKILLed (0: no)"
    )
    parser.add_argument("--warmup", type=float, default=15.0, help="--failover: before the kill")
    parser.add_argument("--after", type=float, default=30.0, help="--failover: after the restart")
    # the child processes
    parser.add_argument("--generator", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline-insert", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--names", default="", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--templates", default="", help=argparse.SUPPRESS)
    parser.add_argument("--result", default="", help=argparse.SUPPRESS)
    parser.add_argument("--drop", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generator:
        asyncio.run(generate(args))
        return 0
    if args.baseline_insert:
        baseline_insert(args.baseline_insert)
        return 0
    if args.console:
        if not mosquitto_available() or not Path("/usr/bin/chromium").exists():
            print("mosquitto and chromium are needed (apt-get install mosquitto chromium)")
            return 2
        if args.duration == parser.get_default("duration"):
            args.duration = 20.0
        text = console_report(asyncio.run(console_run(args)))
        print(text, flush=True)
        if args.out is not None:
            args.out.write_text(text)
        return 0
    if not mosquitto_available() or shutil.which("mosquitto_sub") is None:
        print(
            "mosquitto and mosquitto_sub are needed (apt-get install mosquitto mosquitto-clients)"
        )
        return 2
    if args.failover:
        if args.duration == parser.get_default("duration"):
            args.duration = args.warmup + args.failover + args.after
        if "--dropping" not in sys.argv:
            args.dropping = 0.0
    write = failover_report if args.failover else report
    work = Path(tempfile.mkdtemp(prefix="pit-bench-"))
    hands_file = work / "hands.pickle"
    hands_file.write_bytes(pickle.dumps(templates(40)))
    results = []
    try:
        for kind in args.stores.split(","):
            results.append(asyncio.run(one_run(kind, args, hands_file, work)))
            print(write(results, args), flush=True)
    finally:
        if os.environ.get("PIT_BENCH_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
    text = write(results, args)
    if args.out is not None:
        args.out.write_text(text)
    return 0 if all(r["lost"] == 0 and r["twice"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
