"""An insider's flood beside a signed dealer: the dealer's answers, and every request answered.

``tablectl run`` (virtual shuffler, signed requests required) on a mosquitto of its own, set up
with the queue limits ``tablectl broker setup`` writes. At one moment several clients, each a
``mosquitto_pub`` process of its own, publish as fast as they can:

* ``--garbage`` requests, unsigned, malformed or too big, in turn (two clients);
* ``--replays`` copies of one dealer request signed ten minutes ago (a request captured on the
  wire and replayed: its signature holds, its time and nonce do not; three clients);
* ``--forged`` requests naming the dealer's key with a fresh time and nonce and a signature that
  does not hold (one client).

The flood goes to ``request/action``. Meanwhile a signed dealer sends ``round_closed`` every 100 ms
whatever the answers do, through the broker (a console reading the answers to its command,
matched by its own MQTT v5 correlation data) or through the daemon's console socket (the
dealer's station, design §3.14); ``--via`` picks one or both. Printed: the dealer's answer
times (median, p95, worst), how many went unanswered and how they were answered, how long the
flood took to publish, how many of the flood's requests were answered (every answer the table
published is counted by a ``mosquitto_sub``) and the daemon's RSS.

    .venv/bin/python benchmarks/flood.py [--garbage 10000] [--replays 15000] [--forged 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiomqtt

from controller.authority import Role
from controller.signing import Signer, load_private_key, sign_request
from tests.integration.broker import Broker, mosquitto_available
from tests.integration.conftest import DaemonProcess
from tests.integration.requester import Requester

#: The limits of ``tablectl broker setup``'s mosquitto.conf (controller/broker_setup.py).
BROKER_LIMITS = (
    "persistence false\nmax_packet_size 65536\nmax_queued_messages 20000\n"
    "max_inflight_messages 100\nset_tcp_nodelay true\n"
)

GARBAGE = [
    b'{"transaction": "g", "seat": 1, "action": "call"}',  # unsigned
    b"\x01\xff not json",
    b'{"transaction": "g", "seat": ' + b"[" * 200 + b"]" * 200 + b"}",
    b'{"transaction": "g", "x": "' + b"a" * 20_000 + b'"}',
]

DEALER_EVERY = 0.1


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def flood_files(directory: Path, table: DaemonProcess, counts: dict[str, int]) -> list[Path]:
    """One file of lines per flooding client (mosquitto_pub -l sends each line)."""
    private = load_private_key(table.keys.key_file(Role.DEALER))
    captured = sign_request(
        private,
        "rig-dealer",
        "action",
        table.table,
        {"transaction": "captured", "seat": 3, "action": "call"},
        now=datetime.now(UTC) - timedelta(minutes=10),
    )
    replay = json.dumps(captured).encode()
    files: list[Path] = []

    def write(name: str, lines: list[bytes], clients: int) -> None:
        for n in range(clients):
            path = directory / f"{name}-{n}.lines"
            path.write_bytes(b"".join(line + b"\n" for line in lines[n::clients]))
            files.append(path)

    write("garbage", [GARBAGE[n % len(GARBAGE)] for n in range(counts["garbage"])], 2)
    write("replays", [replay] * counts["replays"], 3)
    forged = []
    for n in range(counts["forged"]):
        body = sign_request(
            private,
            "rig-dealer",
            "action",
            table.table,
            {"transaction": f"f{n}", "seat": 3, "action": "fold"},
        )
        body["auth"]["sig"] = base64.b64encode(secrets.token_bytes(64)).decode()
        forged.append(json.dumps(body).encode())
    write("forged", forged, 1)
    return files


def _topic(table: DaemonProcess, path: Path) -> str:
    return table.topics.request("action")


def _ended(process: subprocess.Popen[bytes]) -> float:
    process.wait(120)
    return time.monotonic()


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


class BrokerDealer:
    """The dealer's console on the broker: requests and answers matched by correlation data."""

    def __init__(self, requester: Requester) -> None:
        self.requester = requester
        self.sent: list[bytes] = []

    async def send(self, body: dict[str, Any]) -> None:
        self.sent.append(await self.requester.send("round_closed", json.dumps(body).encode()))

    async def answers(self, timeout: float) -> list[tuple[float, dict[str, Any]]]:
        """(answer time, answer) of each request answered, in the order sent."""
        with contextlib.suppress(AssertionError):  # the unanswered are counted by the caller
            await self.requester.wait(self.sent, timeout)
        r = self.requester
        return [
            (r.answered_at[c] - r.sent_at[c], r.answers[c]) for c in self.sent if c in r.answers
        ]


class ConsoleDealer:
    """The dealer's station on the daemon's console socket (design §3.14): one line a request."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.sent_at: dict[str, float] = {}
        self.got: dict[str, tuple[float, dict[str, Any]]] = {}
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while line := await self.reader.readline():
            answer = json.loads(line)
            transaction = str(answer.get("transaction"))
            if transaction in self.sent_at:
                self.got[transaction] = (time.monotonic() - self.sent_at[transaction], answer)

    async def send(self, body: dict[str, Any]) -> None:
        self.sent_at[body["transaction"]] = time.monotonic()
        self.writer.write(json.dumps({"command": "round_closed", **body}).encode() + b"\n")
        await self.writer.drain()

    async def answers(self, timeout: float) -> list[tuple[float, dict[str, Any]]]:
        deadline = time.monotonic() + timeout
        while len(self.got) < len(self.sent_at) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        self.task.cancel()
        self.writer.close()
        return [self.got[t] for t in self.sent_at if t in self.got]


async def run(counts: dict[str, int], dealer_commands: int, via: str) -> int:
    directory = Path(tempfile.mkdtemp(prefix="flood-"))
    (directory / "broker").mkdir()
    broker = Broker(directory / "broker", extra=BROKER_LIMITS)
    broker.start()
    console = Path(tempfile.mkdtemp(prefix="fc")) / "console.sock"
    table = DaemonProcess(
        directory / "table", broker, sections=f'[daemon]\nconsole = "{console}"\n'
    )
    table.start()
    assert table.proc is not None
    signer = Signer(load_private_key(table.keys.key_file(Role.DEALER)), "rig-dealer", table.table)
    files = flood_files(directory, table, counts)
    answers_file = directory / "answers.lines"
    port = str(broker.port)
    counter = subprocess.Popen(
        [
            "mosquitto_sub",
            "-V",
            "5",
            "-q",
            "1",
            "-p",
            port,
            "-t",
            f"{table.topics.base}/response/#",
        ],
        stdout=answers_file.open("wb"),
    )
    rss_before = rss_kib(table.proc.pid)
    flooders: list[subprocess.Popen[bytes]] = []
    try:
        async with (
            aiomqtt.Client("127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5) as dc,
            # the dealer's console reads the answers to its own command: the flood's (on
            # action) would otherwise keep its client busy and count in its answer times
            Requester(dc, table.topics, "round_closed") as requester,
        ):
            dealer: BrokerDealer | ConsoleDealer
            if via == "console":
                dealer = ConsoleDealer(*await asyncio.open_unix_connection(str(console)))
            else:
                dealer = BrokerDealer(requester)
            started = time.monotonic()
            for path in files:
                command = ["mosquitto_pub", "-p", port, "-V", "5", "-q", "1", "-l"]
                flooders.append(
                    subprocess.Popen([*command, "-t", _topic(table, path)], stdin=path.open("rb"))
                )
            ending = [asyncio.create_task(asyncio.to_thread(_ended, f)) for f in flooders]
            # The dealer keeps to its pace whatever the answers do: a command every 100 ms,
            # each answer timed from its own send (a dealer waiting for each answer would send
            # one command while a backlog drains, and hide it).
            for n in range(dealer_commands):
                await dealer.send(signer.sign("round_closed", {"transaction": f"d{n}"}))
                await asyncio.sleep(max(0.0, started + (n + 1) * DEALER_EVERY - time.monotonic()))
            answered_dealer = await dealer.answers(60)
            times = [seconds for seconds, _ in answered_dealer]
            unanswered = dealer_commands - len(times)
            dealer_how: Counter[str] = Counter()
            for _, answer in answered_dealer:
                error = str(answer.get("error"))
                served = "no betting round" in error or "no hand" in error  # the core's answer
                reason = "run by the table" if served else error.split(":", maxsplit=1)[0][:60]
                dealer_how[reason] += 1
            published = max(await asyncio.gather(*ending)) - started
            expected = sum(counts.values()) + (dealer_commands if via == "broker" else 0)
            deadline = time.monotonic() + 120
            answered, moved = count_lines(answers_file), time.monotonic()
            while answered < expected and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                now = count_lines(answers_file)
                if now != answered:
                    answered, moved = now, time.monotonic()
                elif time.monotonic() - moved > 3.0:
                    break  # nothing new for three seconds: the rest will not come
            drained = time.monotonic() - started
    finally:
        rss_after = rss_kib(table.proc.pid)
        for process in (*flooders, counter):
            process.kill()
        table.close()
        broker.stop()
    how: Counter[str] = Counter()
    for line in answers_file.read_bytes().splitlines():
        try:
            error = json.loads(line).get("error")
        except ValueError:
            error = "unreadable answer"
        how[str(error or "ok").split(":")[0][:60]] += 1
    shutil.rmtree(directory, ignore_errors=True)
    ms = sorted(t * 1000 for t in times) or [float("nan")]
    print(f"Flood benchmark (linux, Python {sys.version.split()[0]}, {os.cpu_count()} cores)")
    print(
        f"flood                        {counts['garbage']} garbage, {counts['replays']} stale "
        f"replays, {counts['forged']} forged ({len(files)} mosquitto_pub clients)"
    )
    print(f"flood published in           {published:.1f} s")
    print(
        f"signed dealer commands       {dealer_commands} through the {via}, "
        "one every 100 ms, not waiting for answers"
    )
    print(
        f"dealer answer                p50 {statistics.median(ms):.1f} ms, "
        f"p95 {ms[max(0, int(len(ms) * 0.95) - 1)]:.1f} ms, worst {ms[-1]:.1f} ms"
    )
    print(f"dealer unanswered            {unanswered}")
    for reason, count in dealer_how.most_common():
        print(f"  {count:>6}  {reason}")
    print(f"flood answers published      {answered} of {expected} requests")
    for reason, count in how.most_common(8):
        print(f"  {count:>6}  {reason}")
    print(f"last answer                  {drained:.1f} s after the flood began")
    print(f"daemon RSS                   {rss_before / 1024:.1f} -> {rss_after / 1024:.1f} MiB")
    return 1 if unanswered or set(dealer_how) != {"run by the table"} else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--garbage", type=int, default=10_000)
    parser.add_argument("--replays", type=int, default=15_000)
    parser.add_argument("--forged", type=int, default=5_000)
    parser.add_argument("--dealer", type=int, default=60)
    parser.add_argument(
        "--via",
        nargs="+",
        choices=("broker", "console"),
        default=["broker", "console"],
        help="the dealer's path: a console on the broker, the station's console socket",
    )
    args = parser.parse_args()
    if not mosquitto_available() or shutil.which("mosquitto_pub") is None:
        print("mosquitto and mosquitto-clients must be installed", file=sys.stderr)
        return 2
    counts = {"garbage": args.garbage, "replays": args.replays, "forged": args.forged}
    status = 0
    for via in args.via:
        status |= asyncio.run(run(counts, args.dealer, via))
        print()
    return status


if __name__ == "__main__":
    sys.exit(main())
