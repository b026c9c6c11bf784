"""What following the table costs: the console socket's ``watch`` stream, counted per hand.

The daemon runs in this process on a virtual table (three seats, the readers reading every card
dealt), with its console socket; a dealer plays ``--hands`` whole hands through the socket
(start, call or check to the river, table every hand, confirm the award's RR-SD-4 hold, push
the award) while two watchers follow it: one as the dealer's station does (``events: false``:
the view's merge patches and nothing else), one asking for the events as well. Printed, per
hand: the lines each watcher read and their bytes, the largest line, and the size of the whole
view for comparison; the cost to the daemon of building the view (microseconds a commit).

    .venv/bin/python benchmarks/station_watch.py [--hands 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from controller.config import parse_config
from controller.shell.merge_patch import apply
from tests.shell.inprocess import Running, config_for


class Follower:
    """A watcher's connection: the view it rebuilt, and what it read."""

    def __init__(self, path: Path, events: bool) -> None:
        self.path = path
        self.events = events
        self.view: dict[str, Any] = {}
        self.lines = 0
        self.bytes = 0
        self.largest = 0
        self.changed = asyncio.Event()

    async def run(self) -> None:
        reader, writer = await asyncio.open_unix_connection(str(self.path), limit=1 << 20)
        try:
            line = {"command": "watch", "transaction": f"w-{self.events}", "events": self.events}
            writer.write(json.dumps(line).encode() + b"\n")
            assert json.loads(await reader.readline())["status"] == "ok"
            while raw := await reader.readline():
                self.lines += 1
                self.bytes += len(raw)
                self.largest = max(self.largest, len(raw))
                message = json.loads(raw)
                if message["watch"] == "view":
                    self.view = message["view"]
                elif message["watch"] == "change":
                    self.view = apply(self.view, message["view"])
                self.changed.set()
        finally:
            writer.close()


async def play(path: Path, station: Follower, hands: int) -> None:
    """Play ``hands`` hands through the console socket, deciding from the station's view."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    sent = 0

    async def send(command: str, **fields: Any) -> None:
        nonlocal sent
        sent += 1
        writer.write(json.dumps({"command": command, "transaction": f"t{sent}", **fields}).encode())
        writer.write(b"\n")
        answer = json.loads(await reader.readline())
        assert answer["status"] == "ok", answer
        # wait until the watch has told what the answer did (one epoch: seq = journal key);
        # every command of a hand changes the view, so its seq comes with the change
        last = answer["data"]["last_seq"] or 0
        async with asyncio.timeout(10):
            while station.view.get("seq", 0) < last:
                station.changed.clear()
                await station.changed.wait()

    played = 0
    last = None
    while played < hands:
        await station.changed.wait()
        station.changed.clear()
        table = station.view.get("table", {})
        hand = table.get("hand")
        if hand is None:
            if table.get("last_hand") != last:
                last = table.get("last_hand")
                played += last is not None
                if played >= hands:
                    break
            await send("start_hand")
            continue
        if hand["holds"]:
            await send("confirm", hold=hand["holds"][0]["id"])
        elif hand["phase"] == "betting" and "options" in hand:
            options = hand["options"]
            action = "check" if options["can_check"] else "call"
            await send("action", seat=options["seat"], action=action)
        elif hand["phase"] == "showdown":
            seats = table["seats"]
            seat = next(
                s
                for s in hand["showdown_order"]
                if seats[str(s)]["status"] in ("live", "all_in") and "shown" not in seats[str(s)]
            )
            await send("table", seat=seat)
        elif hand["phase"] == "award" and "proposal" in hand:
            await send("award")
        else:
            continue  # the devices are dealing
        station.changed.set()  # look again at the view the answer made
    writer.close()


async def main(hands: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="sw"))
    data = config_for(tmp).model_dump(mode="json")
    data["daemon"]["console"] = str(tmp / "console.sock")
    data["table"]["house_rules"] = {"dealer_may_confirm": ["RR-SD-4"]}
    data["table"]["stacks"] = {"1": 10_000, "2": 10_000, "3": 10_000}
    # unsigned requests (a bench table): as many a second as the dealer here sends
    data["security"].update(rate_anonymous=10_000, rate_anonymous_burst=10_000)
    data["security"].update(rate_total=10_000, rate_total_burst=10_000)
    config = parse_config(data)
    async with Running(config) as daemon:
        path = tmp / "console.sock"
        station, full = Follower(path, False), Follower(path, True)
        tasks = [asyncio.create_task(f.run()) for f in (station, full)]
        started = time.perf_counter()
        await play(path, station, hands)
        seconds = time.perf_counter() - started
        builds = 200
        clock = time.perf_counter()
        for _ in range(builds):
            daemon.watchers.touch()
            daemon.watchers.view  # noqa: B018 (built once per change)
        build_us = (time.perf_counter() - clock) / builds * 1e6
        view_bytes = len(json.dumps(daemon.watchers.view, separators=(",", ":")))
        for task in tasks:
            task.cancel()
    print(f"{hands} hands in {seconds:.1f} s, three seats, every card read (virtual table)")
    print(
        f"{'watcher':<28} {'lines/hand':>10} {'bytes/hand':>11} {'bytes/line':>11} {'largest':>8}"
    )
    for name, follower in (("station (events: false)", station), ("with events", full)):
        print(
            f"{name:<28} {follower.lines / hands:>10.1f} {follower.bytes / hands:>11.0f} "
            f"{follower.bytes / max(1, follower.lines):>11.0f} {follower.largest:>8}"
        )
    print(f"the whole view: {view_bytes} bytes; building it: {build_us:.0f} us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=20, help="hands to play")
    asyncio.run(main(parser.parse_args().hands))
