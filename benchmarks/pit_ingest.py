"""What one pit process costs per event, without the floor around it.

A floor's worth of envelopes (hands the core played, at ``--tables`` tables, interleaved as a
floor publishes them), measured two ways per store:

* **the commit path alone** (in this process, no broker): what the ingest does with each batch,
  parse each message (:func:`controller.pit.ingest.parse_event`), then
  :func:`controller.pit.ingest.apply_batch` (one commit, the derived rows, the tables' retained
  states); CPU of this process (not the database server's) and wall time per event;
* **through a broker** (``--through-broker``): a real ``tablectl pit run`` process drains a
  backlog the broker kept for its session (the events published while it was stopped): its CPU
  seconds from its start-up to the last event stored, start-up excluded, and the wall time.

* **at a floor's pace** (``--rate EVENTS_PER_S``): a real ``tablectl pit run`` process with a
  signing key (it confirms what it stored to each table, as on a floor) takes the events as they
  are published, at that rate, each table's retained state after its hands: its CPU seconds
  from the first event published to the last stored, per event, and its CPU while idle after
  (the tables known). A floor of 500 tables at a real table's pace gives each of two pit
  processes about 130 events a second: one message at a time, not a backlog.

``--profile`` prints where the commit path's CPU goes; ``PIT_INGEST_SPY=FILE`` records where the
pit process spends it (py-spy's raw stacks, by thread) through a broker or at a floor's pace.

    .venv/bin/python benchmarks/pit_ingest.py [--tables 500] [--events 40000] [--batch 500]
                                              [--stores sqlite,postgresql] [--through-broker]
                                              [--profile] [--rate 130 --seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.pit import batch_wait_line, cpu_seconds, templates  # noqa: E402
from controller.envelope import envelope  # noqa: E402
from controller.mqtt import Message, Topic  # noqa: E402
from controller.pit.batches import Batch  # noqa: E402
from controller.pit.ingest import Route, apply_batch, parse_event  # noqa: E402
from controller.pit.store import Store  # noqa: E402


def floor_messages(tables: int, count: int) -> list[tuple[str, bytes]]:
    """``count`` event messages of ``tables`` tables, in the order a floor publishes them; a
    retained state after each hand."""
    hands = templates(20)
    rng = random.Random(3)
    cursors = [
        {"table": f"S{n:03d}", "epoch": f"e{n}", "seq": 0, "hand": 0, "events": []}
        for n in range(tables)
    ]
    out: list[tuple[str, bytes]] = []
    now = datetime.now(UTC)
    while len(out) < count:
        table: dict[str, Any] = rng.choice(cursors)
        if not table["events"]:
            table["hand"] += 1
            table["events"] = list(rng.choice(hands))
            if table["hand"] > 1:
                state = {"epoch": table["epoch"], "seq": table["seq"], "hand": None}
                out.append((f"{table['table']}/state", json.dumps(state).encode()))
        event = table["events"].pop(0)
        table["seq"] += 1
        body = envelope(
            event._replace(ts=now, hand_id=f"{table['table']}-{table['hand']:05d}"),
            table_id=table["table"],
            epoch=table["epoch"],
            seq=table["seq"],
        )
        out.append((table["table"], json.dumps(body, separators=(",", ":")).encode()))
    return out


def run(url: str, messages: list[tuple[str, bytes]], batch_size: int) -> dict[str, float]:
    store = Store(url)
    store.migrate()
    events = 0
    batches = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for start in range(0, len(messages), batch_size):
        batch = Batch()
        for where, payload in messages[start : start + batch_size]:
            batch.acks.append(Message(Topic(where), payload, 1, False, 0, None))
            if where.endswith("/state"):
                batch.states.append((where.split("/")[0], json.loads(payload)))
            else:
                batch.events.append(parse_event(payload, Route("event", where)))
                events += 1
        apply_batch(store, batch, secure=False)
        batches += 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stored = store.counts()["events"]
    store.close()
    assert stored == events, (stored, events)
    return {"events": events, "batches": batches, "cpu": cpu, "wall": wall}


def through_broker(
    url: str,
    messages: list[tuple[str, bytes]],
    work: Path,
    batch: int,
    batch_wait: float | None = None,
) -> dict[str, float]:
    """A pit process drains the backlog its session kept: its CPU and wall seconds."""
    import aiomqtt  # noqa: PLC0415

    from tests.integration.broker import Broker, free_port, wait_port  # noqa: PLC0415

    directory = work / f"broker-{len(list(work.iterdir()))}"
    directory.mkdir()
    broker = Broker(directory, extra="persistence false\nmax_queued_messages 0")
    broker.start()
    web = free_port()
    config = directory / "pit.toml"
    config.write_text(
        f'[pit]\nid = "bench"\nbatch = {batch}\nconfirm = false\nreceive_maximum = 2000\n'
        f"{batch_wait_line(batch_wait)}"
        f'[broker]\nhost = "127.0.0.1"\nport = {broker.port}\n[store]\nurl = "{url}"\n'
        f'[web]\nlisten = "127.0.0.1:{web}"\n[repair]\nafter = 600\n'
        '[log]\nformat = "json"\nlevel = "warning"\n'
    )
    command = [sys.executable, "-m", "controller.cli", "pit", "run", "--config", str(config)]
    log = (directory / "pit.log").open("ab")
    pit: subprocess.Popen[bytes] | None = None
    spying: subprocess.Popen[bytes] | None = None
    try:
        pit = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=log)
        wait_port(web, 120)  # its session and subscriptions exist from now on
        pit.send_signal(signal.SIGTERM)
        pit.wait(60)

        async def publish() -> None:
            async with aiomqtt.Client(
                "127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5
            ) as client:
                for where, payload in messages:
                    if where.endswith("/state"):
                        await client.publish(f"tables/{where}", payload, qos=0)
                    else:
                        await client.publish(f"tables/{where}/events", payload, qos=1)

        asyncio.run(publish())
        events = sum(1 for where, _ in messages if not where.endswith("/state"))
        started = time.perf_counter()
        pit = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=log)
        spy = os.environ.get("PIT_INGEST_SPY")  # a file: where py-spy writes its samples
        if spy:
            record = ["py-spy", "record", "-r", "250", "-f", "raw", "--threads", "-o", spy]
            spying = subprocess.Popen([*record, "-p", str(pit.pid)], stdout=log, stderr=log)
        wait_port(web, 120)
        ready_cpu = cpu_seconds(pit.pid)
        ready = time.perf_counter()
        store = Store(url)
        try:
            while store.counts()["events"] < events:
                if time.perf_counter() - started > 600:
                    raise RuntimeError("the pit did not drain the backlog in 10 minutes")
                time.sleep(0.1)
        finally:
            store.close()
        wall = time.perf_counter() - ready
        cpu = cpu_seconds(pit.pid) - ready_cpu
        pit.send_signal(signal.SIGTERM)
        pit.wait(60)
        if spying is not None:
            spying.wait(60)
    finally:
        for process in (pit, spying):  # whatever still runs when the run failed
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(30)
        log.close()
        broker.stop()
    return {"events": events, "batches": float("nan"), "cpu": cpu, "wall": wall}


def at_rate(
    url: str,
    messages: list[tuple[str, bytes]],
    work: Path,
    rate: float,
    batch_wait: float | None = None,
) -> dict[str, float]:
    """A pit process takes the messages as published at ``rate`` events a second: its CPU
    seconds from the first published to the last stored, and its CPU a second while idle after."""
    from controller.authority import Role  # noqa: PLC0415
    from controller.mqtt import Client  # noqa: PLC0415
    from simulators.rig.keys import RigKeys  # noqa: PLC0415
    from tests.integration.broker import Broker, free_port, wait_port  # noqa: PLC0415

    directory = work / f"rate-{len(list(work.iterdir()))}"
    directory.mkdir()
    broker = Broker(directory, extra="max_queued_messages 0\nmax_inflight_messages 0")
    broker.start()
    keys = RigKeys.create(directory / "keys")
    web = free_port()
    config = directory / "pit.toml"
    config.write_text(
        f'[pit]\nid = "bench"\n{batch_wait_line(batch_wait)}'
        f'[broker]\nhost = "127.0.0.1"\nport = {broker.port}\n'
        f'[store]\nurl = "{url}"\n[web]\nlisten = "127.0.0.1:{web}"\n'
        f'[repair]\nafter = 3.0\n[security]\nkey = "{keys.key_file(Role.PIT)}"\n'
        '[log]\nformat = "json"\nlevel = "warning"\n'
    )
    command = [sys.executable, "-m", "controller.cli", "pit", "run", "--config", str(config)]
    log = (directory / "pit.log").open("ab")
    pit: subprocess.Popen[bytes] | None = None
    events = sum(1 for where, _ in messages if not where.endswith("/state"))
    try:
        pit = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=log)
        wait_port(web, 120)
        time.sleep(2.0)  # connected and subscribed: its start-up is not measured

        async def publish() -> None:
            async with Client("127.0.0.1", broker.port) as client:
                start = time.monotonic()
                sent = 0
                for where, payload in messages:
                    if where.endswith("/state"):
                        client.hand_over(f"tables/{where}", payload, 0, True)
                        continue
                    await asyncio.sleep(max(0.0, start + sent / rate - time.monotonic()))
                    client.hand_over(f"tables/{where}/events", payload, 1)
                    sent += 1

        spy = os.environ.get("PIT_INGEST_SPY")  # a file: where py-spy writes its samples
        spying = None
        if spy:
            record = ["py-spy", "record", "-r", "250", "-f", "raw", "--threads", "-o", spy]
            spying = subprocess.Popen([*record, "-p", str(pit.pid)], stdout=log, stderr=log)
        cpu0 = cpu_seconds(pit.pid)
        asyncio.run(publish())
        store = Store(url)
        try:
            deadline = time.monotonic() + 120
            while store.counts()["events"] < events and time.monotonic() < deadline:
                time.sleep(0.1)
            stored = store.counts()["events"]
        finally:
            store.close()
        cpu = cpu_seconds(pit.pid) - cpu0
        time.sleep(3.0)  # its last commits' aftermath
        idle0 = cpu_seconds(pit.pid)
        time.sleep(10.0)
        idle = (cpu_seconds(pit.pid) - idle0) / 10.0
        assert stored == events, (stored, events)
        pit.send_signal(signal.SIGTERM)
        pit.wait(60)
        if spying is not None:
            spying.wait(60)
    finally:
        if pit is not None and pit.poll() is None:
            pit.kill()
            pit.wait(30)
        log.close()
        broker.stop()
    return {
        "events": events,
        "batches": float("nan"),
        "cpu": cpu,
        "wall": float("nan"),
        "idle": idle,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--through-broker", action="store_true")
    parser.add_argument("--rate", type=float, default=0.0, help="events/s: at a floor's pace")
    parser.add_argument(
        "--batch-wait", type=float, default=None, help="the pit's [pit] batch_wait (default: its)"
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="--rate: for how long")
    args = parser.parse_args()
    if args.rate:
        args.events = int(args.rate * args.seconds)
    messages = floor_messages(args.tables, args.events)
    rows = []
    postgres = None
    work = Path(tempfile.mkdtemp(prefix="pit-ingest-"))
    try:
        for kind in args.stores.split(","):
            if kind == "postgresql":
                from tests.postgres import PostgresServer  # noqa: PLC0415

                postgres = PostgresServer()
                postgres.start()
                url = postgres.new_database()
            else:
                url = f"sqlite:///{work / 'pit.sqlite'}"
            if args.rate:
                result = at_rate(url, messages, work, args.rate, args.batch_wait)
            elif args.through_broker:
                result = through_broker(url, messages, work, args.batch, args.batch_wait)
            elif args.profile:
                profile = cProfile.Profile()
                result = profile.runcall(run, url, messages, args.batch)
                pstats.Stats(profile).sort_stats("tottime").print_stats(25)
            else:
                result = run(url, messages, args.batch)
            rows.append((kind, result))
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    if args.rate:
        print(
            f"one pit process taking {args.rate:g} events/s of {args.tables} tables as they are "
            f"published, {args.seconds:g} s, batch_wait "
            + ("the default" if args.batch_wait is None else f"{args.batch_wait:g} s")
            + f" (load average {load:.1f})"
        )
        print()
        print("| store | events | CPU µs/event | idle after (% of a core) |")
        print("|---|---:|---:|---:|")
        for kind, r in rows:
            print(
                f"| {kind} | {r['events']:.0f} | {r['cpu'] / r['events'] * 1e6:.0f} | "
                f"{r['idle'] * 100:.1f} |"
            )
        return 0
    if args.through_broker:
        print(
            f"one pit process draining a backlog of {args.events} messages through mosquitto, "
            f"{args.tables} tables, batches of at most {args.batch} (load average {load:.1f})"
        )
    else:
        print(
            f"the pit's commit path alone: {args.tables} tables, batches of {args.batch}, "
            f"CPU of this process only (load average {load:.1f})"
        )
    print()
    print("| store | events | batches | CPU µs/event | wall µs/event | events per CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, r in rows:
        print(
            f"| {kind} | {r['events']:.0f} | {r['batches']:.0f} | "
            f"{r['cpu'] / r['events'] * 1e6:.0f} | {r['wall'] / r['events'] * 1e6:.0f} | "
            f"{r['events'] / r['cpu']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
