"""``tablectl demo``: the whole table on this machine, dealt by an automatic dealer.

The rig starts the broker (or uses the one given, or none), the shuffler and reader simulators
and the daemon; :class:`~simulators.rig.dealer.TableDealer` plays random hands on them and now and
then makes one of the catalogue's mistakes. The table is shown as the pit's surveillance screen
would build it from the secure event stream (or from the journal, without a broker): the live
rich view on a terminal, one line per event otherwise (``--json``: every envelope).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live

from controller.aio import cancel_and_wait, stop_tasks
from controller.view.model import TableView
from controller.view.render import render
from simulators.autoplay import Style
from simulators.errors import ScenarioError
from simulators.rig.broker import BrokerError
from simulators.rig.dealer import TableDealer
from simulators.rig.errors import RigError
from simulators.rig.mirror import Mirror, open_reader
from simulators.rig.rig import OpenTable, Rig, RigOptions
from simulators.rig.setup import ReaderKind, TableSetup
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec

SEATS = {1: 200, 2: 200, 3: 200, 4: 200, 5: 200, 6: 200}
STYLE = Style(fold=0.25, aggressive=0.2, all_in=0.1)
SETTLE = 1.0  # the readers' settle time at the demo table: a missed card is noticed quickly
# The FEIG reader sweeps 14 antennas in 90-180 ms and places a card after 3 sweeps and one more
# for crosstalk: about 0.7 s on an idle machine, several times that on a loaded one.
SETTLE_FEIG = 3.0
# Ctrl-C, a stop, and the terminal closing: each stops every process and tidies up
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RECANCEL = 10.0  # seconds the demo has to wind down after Ctrl-C before it is cancelled again


@dataclass(frozen=True)
class DemoOptions:
    """What ``tablectl demo`` was asked for."""

    hands: int = 0  # 0: until Ctrl-C
    seed: int | None = None
    profile: str = "rrop-cash"
    irregularities: float = 0.2
    broker: str = "auto"
    json: bool = False
    keep: Path | None = None
    pace: float = 0.0  # seconds between the dealer's acts
    reader: ReaderKind = "tsp"  # feig: the FEIG reader simulator, crosstalk on


def line(env: dict[str, Any]) -> str:
    """One event as a line: seq, hand, type, rules and the interesting data."""
    rules = ",".join(env["rules"])
    data = json.dumps(env["data"], separators=(",", ":"))
    return f"{env['seq']:>6} {env['hand_id'] or '-':<10} {env['type']:<24} {rules:<18} {data}"


class Screen:
    """Where the events go: the live view on a terminal, lines or JSON otherwise.

    When the reader of the lines goes away (``tablectl demo --json | head -1``), ``gone`` is
    called: the demo stops as on Ctrl-C, so every process is stopped and the temporary
    directory (keys, journal) removed, rather than playing on for no one.
    """

    def __init__(self, live: bool, as_json: bool, gone: Callable[[], None] = lambda: None) -> None:
        self.view = TableView()
        self.as_json = as_json
        self.live: Live | None = None
        self.gone = gone
        self.closed = False  # the reader went away
        self._drawn = 0.0
        if live:
            self.live = Live(render(self.view), console=Console(), auto_refresh=False)
            self.live.start()

    def show(self, env: dict[str, Any]) -> None:
        """Fold one event in and show it."""
        self.view.apply(env)
        if self.live is None:
            if self.closed:
                return
            try:
                print(json.dumps(env) if self.as_json else line(env), flush=True)
            except BrokenPipeError:
                self._reader_gone()
            return
        now = time.monotonic()
        if now - self._drawn > 0.05:
            self._drawn = now
            self.live.update(render(self.view), refresh=True)

    def _reader_gone(self) -> None:
        self.closed = True
        # What is still buffered for the closed pipe would fail again when Python flushes
        # stdout at exit ("Exception ignored … BrokenPipeError"): point it at /dev/null
        # (the Python documentation's note on SIGPIPE, in the signal module).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        self.gone()

    def new_table(self) -> None:
        """A new table (a fresh journal): start the picture afresh, keep the counters."""
        view = self.view
        self.view = TableView(
            dealt=view.dealt, hands=view.hands, irregularities=view.irregularities
        )

    def close(self) -> None:
        """Draw the last picture and leave the terminal as it was."""
        if self.live is not None:
            self.live.update(render(self.view), refresh=True)
            self.live.stop()
            self.live = None


@dataclass
class Dealing:
    """What the demo deals, table after table, and the hands completed so far at every table
    (what it reports on the way out); the dealer's station it deals through (None: the rig's
    console, without the station)."""

    options: DemoOptions
    scenario: Scenario
    rng: random.Random
    screen: Screen
    hands: int = 0
    station: Any = None  # simulators.rig.station.DemoStation
    pin: str | None = None  # the demo's dealer's PIN at the station
    station_log: TextIO | None = None  # where the station's log lines go

    def wants_more(self, playing: int = 0) -> bool:
        """Whether another hand is to be dealt (``playing``: completed at the current table)."""
        return not self.options.hands or self.hands + playing < self.options.hands


class JournalFollower:
    """Shows a journal's events as the daemon commits them (a table without a broker)."""

    def __init__(self, path: Path, show: Callable[[dict[str, Any]], None]) -> None:
        self.path = path
        self.show = show
        self.mirror: Mirror | None = None
        self.shown = 0

    def flush(self) -> None:
        """Show what was committed since the last look."""
        if self.mirror is None:
            return
        self.mirror.catch_up()
        envs = self.mirror.envelopes()
        for env in envs[self.shown :]:
            self.show(env)
        self.shown = len(envs)

    async def follow(self) -> None:
        """Look again and again until cancelled (SQLite does not notify a reader)."""
        self.mirror = Mirror(await open_reader(self.path))
        while True:
            self.flush()
            await asyncio.sleep(0.05)

    def close(self) -> None:
        """Close the journal."""
        if self.mirror is not None:
            self.mirror.close()


def demo_scenario(profile: str, reader: ReaderKind = "tsp") -> Scenario:
    """The demo table: six seats of 200, blinds 1 and 2."""
    settle = SETTLE_FEIG if reader == "feig" else SETTLE
    return Scenario(
        scenario=ScenarioMeta(name="demo", profile=profile),
        table=TableSpec(id="DEMO", stacks=SEATS, button=6, blinds=(1, 2), settle=settle),
    )


async def run_demo(options: DemoOptions) -> int:
    """Play the demo; return the exit status (0 after ``hands`` hands, on Ctrl-C or SIGTERM)."""
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    stop = asyncio.Event()
    screen = Screen(sys.stdout.isatty() and not options.json, options.json, gone=stop.set)
    dealing = Dealing(
        options, demo_scenario(options.profile, options.reader), random.Random(seed), screen
    )
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    rig = Rig(RigOptions(broker=options.broker, directory=options.keep, reader=options.reader))
    dealing.pin = _station_keys(rig)
    try:
        await _until_stopped(rig.start(), stop)
        if not stop.is_set():
            print(
                f"# tablectl demo: seed {seed}, profile {options.profile}, {rig.broker_note}; "
                "Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            await _until_stopped(_play(rig, dealing), stop)
    except (BrokerError, RigError, ScenarioError) as exc:
        print(f"tablectl demo: {exc}", file=sys.stderr)
        return 2
    finally:
        # Not cancellable: a Ctrl-C from here on only sets ``stop`` again, and every process
        # the rig started is stopped (each bounded: SIGTERM, then SIGKILL).
        if dealing.station is not None:
            from simulators.rig.station import close_quietly  # noqa: PLC0415

            await close_quietly(dealing.station)
        if dealing.station_log is not None:
            from controller.shell.logging import configure  # noqa: PLC0415

            configure("warning", "json", stream=sys.stderr)
            dealing.station_log.close()
        await rig.close()
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        screen.close()
    irregular = screen.view.irregularities
    print(f"# {dealing.hands} hands completed, {irregular} irregularities", file=sys.stderr)
    return 0


async def _until_stopped(work: Coroutine[Any, Any, None], stop: asyncio.Event) -> None:
    """Run ``work`` until it ends or ``stop`` is set; then cancel it until it has ended.

    Once is not always enough (controller/aio.py, cancel_and_wait): a demo that lost its Ctrl-C
    would play on. It is cancelled again only after ``RECANCEL`` seconds, so the last events
    it still shows on the way out are not cut short on a busy machine.
    """
    task = asyncio.create_task(work, name="demo")
    stopping = asyncio.create_task(stop.wait(), name="demo:stop")
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        await cancel_and_wait([task], again_after=RECANCEL)
    finally:
        stopping.cancel()
    if not task.cancelled():
        task.result()  # its error, if it failed


async def _play(rig: Rig, dealing: Dealing) -> None:
    """Deal hands, table after table, until ``options.hands`` are complete (0: until
    stopped)."""
    tables = 0
    while dealing.wants_more():
        if tables:
            dealing.screen.new_table()  # the players went broke: a fresh table, a new journal
        table = await _open(rig, dealing.scenario)
        tables += 1
        await _station_for(rig, table, dealing)
        await _play_table(table, dealing)


def _station_keys(rig: Rig) -> str | None:
    """The dealer's station's key and roster beside the rig's keyring (before any table reads
    it); the demo's dealer's PIN, or None where the station cannot run (a table-only install:
    the station's web app needs the pit extra)."""
    try:
        from simulators.rig.station import prepare  # noqa: PLC0415
    except ImportError as exc:
        print(f"# the dealer's station cannot run here ({exc.name} is missing)", file=sys.stderr)
        return None
    return prepare(rig.keys)


async def _station_for(rig: Rig, table: OpenTable, dealing: Dealing) -> None:
    """The dealer's station of ``table``: started with the first table (its URL said), moved to
    each table after."""
    if dealing.pin is None:
        return
    if dealing.station is not None:
        dealing.station.follow(table)
        return
    from controller.shell.logging import configure  # noqa: PLC0415
    from simulators.rig.station import DEALER, DemoStation  # noqa: PLC0415

    # the station's log lines go to a file of the rig's: the screen is the table's
    dealing.station_log = (rig.directory / "station.log").open("a", encoding="utf-8")
    configure("info", "json", stream=dealing.station_log)
    dealing.station = await DemoStation.start(table)
    print(
        f"# the dealer's station: {dealing.station.url} (the automatic dealer plays through "
        f"it, logged in as {DEALER!r}; the page shows the table as it plays)",
        file=sys.stderr,
        flush=True,
    )


async def _open(rig: Rig, scenario: Scenario) -> OpenTable:
    table = scenario.table
    setup = TableSetup(
        id=table.id,
        stacks=table.stacks,
        button=table.button,
        blinds=table.blinds,
        profile=scenario.scenario.profile,
        settle=table.settle,
    )
    return await rig.open_table(setup)


async def _play_table(table: OpenTable, dealing: Dealing) -> None:
    """Play at one table until enough hands are complete or two seats have no chips left."""
    options, screen = dealing.options, dealing.screen
    link = table.rig.link
    follower: JournalFollower | None = None
    following: asyncio.Task[None] | None = None
    if link is not None:
        link.collect = False
        link.listeners = [screen.show]
    else:
        follower = JournalFollower(table.journal, screen.show)
        following = asyncio.create_task(follower.follow(), name="demo:journal")
    if dealing.station is not None and dealing.pin is not None:
        from simulators.rig.station import StationConsole  # noqa: PLC0415

        table.console = StationConsole(dealing.station, table.console, dealing.pin)
    dealer = TableDealer(dealing.scenario, dealing.rng, options.irregularities)
    dealer.style = STYLE
    dealer.pace = options.pace
    mirror: Mirror | None = None
    try:
        mirror = Mirror(await open_reader(table.journal))
        dealer.attach(table, mirror)
        await dealer.settle_at_start(unapproved=False)
        while dealing.wants_more(dealer.completed):
            if not await dealer.deal_hand():
                break
    finally:
        dealing.hands += dealer.completed
        if link is not None:
            await _drain(link, mirror)
            link.listeners = []
        try:
            if following is not None:
                await stop_tasks(following)  # a follower that failed fails the demo
        finally:
            if follower is not None:
                with contextlib.suppress(Exception):
                    follower.flush()  # the last events
                follower.close()
            if mirror is not None:
                mirror.close()


async def _drain(link: Any, mirror: Mirror | None) -> None:
    """Wait until the broker delivered what the journal holds (best effort)."""
    if mirror is None:
        return
    with contextlib.suppress(Exception):
        mirror.catch_up()
        await link.wait_events(mirror.epoch, mirror.last_seq, timeout=5.0)
    link.forget(mirror.epoch)
