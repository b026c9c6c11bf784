"""A flood of garbage beside a signed dealer: the dealer's answers, and every request answered.

``tablectl run`` (virtual shuffler, signed requests required) on a mosquitto of its own. A
flooder publishes ``--garbage`` requests as fast as it can (unsigned, malformed, or too big, in
turn) while a signed dealer sends a command every 50 ms; each request carries its own MQTT v5
correlation data so that every answer is matched with its request. Printed: the dealer's answer
times (median, p95, worst), how the garbage was answered (refused and journaled, rate limited,
overloaded), whether any request the broker delivered went unanswered, and the daemon's RSS.

    .venv/bin/python benchmarks/flood.py [--garbage 10000] [--dealer 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiomqtt

from controller.authority import Role
from controller.signing import Signer, load_private_key
from tests.integration.broker import Broker, mosquitto_available
from tests.integration.conftest import DaemonProcess
from tests.integration.requester import Requester

GARBAGE = [
    b'{"transaction": "g", "seat": 1, "action": "call"}',  # unsigned
    b"\x00\xff not json",
    b'{"transaction": "g", "seat": ' + b"[" * 200 + b"]" * 200 + b"}",
    b'{"transaction": "g", "x": "' + b"a" * 20_000 + b'"}',
]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def run(garbage: int, dealer_commands: int) -> int:
    directory = Path(tempfile.mkdtemp(prefix="flood-"))
    (directory / "broker").mkdir()
    broker = Broker(directory / "broker", extra="persistence false\nmax_queued_messages 50000")
    broker.start()
    table = DaemonProcess(directory / "table", broker)
    table.start()
    assert table.proc is not None
    signer = Signer(load_private_key(table.keys.key_file(Role.DEALER)), "rig-dealer", table.table)
    rss_before = rss_kib(table.proc.pid)
    try:
        async with (
            aiomqtt.Client("127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5) as fc,
            aiomqtt.Client("127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5) as dc,
            Requester(fc, table.topics) as flood,
            Requester(dc, table.topics) as dealer,
        ):

            async def flooding() -> list[bytes]:
                sent = []
                for n in range(garbage):
                    sent.append(await flood.send("action", GARBAGE[n % len(GARBAGE)]))
                return sent

            async def dealing() -> list[float]:
                times = []
                for n in range(dealer_commands):
                    body = signer.sign("round_closed", {"transaction": f"d{n}"})
                    started = time.monotonic()
                    answer = await dealer.request_raw("round_closed", json.dumps(body).encode())
                    times.append(time.monotonic() - started)
                    assert "no betting round" in str(answer.get("error")) or "no hand" in str(
                        answer.get("error")
                    ), answer
                    await asyncio.sleep(0.05)
                return times

            flooding_task = asyncio.create_task(flooding())
            times = await dealing()
            sent = await flooding_task
            started = time.monotonic()
            try:
                answered = await flood.wait(sent, 300)
                missing = 0
            except AssertionError:
                answered = {c: flood.answers[c] for c in sent if c in flood.answers}
                missing = len(sent) - len(answered)
            drained = time.monotonic() - started
    finally:
        rss_after = rss_kib(table.proc.pid)
        table.close()
        broker.stop()
    how = Counter(str(a.get("error", "")).split(":")[0] for a in answered.values())
    ms = sorted(t * 1000 for t in times)
    print(f"Flood benchmark (linux, Python {sys.version.split()[0]})")
    print(f"garbage requests sent        {garbage}")
    print(f"signed dealer commands       {len(ms)} (one every 50 ms, during the flood)")
    print(
        f"dealer answer                p50 {statistics.median(ms):.1f} ms, "
        f"p95 {ms[int(len(ms) * 0.95) - 1]:.1f} ms, worst {ms[-1]:.1f} ms"
    )
    for reason, count in how.most_common():
        print(f"garbage answered             {count:>6}  {reason}")
    print(f"garbage unanswered           {missing}")
    print(f"last garbage answer          {drained:.1f} s after the dealer's last")
    print(f"daemon RSS                   {rss_before / 1024:.1f} -> {rss_after / 1024:.1f} MiB")
    return 1 if missing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--garbage", type=int, default=10_000)
    parser.add_argument("--dealer", type=int, default=60)
    args = parser.parse_args()
    if not mosquitto_available():
        print("mosquitto is not installed", file=sys.stderr)
        return 2
    return asyncio.run(run(args.garbage, args.dealer))


if __name__ == "__main__":
    sys.exit(main())
