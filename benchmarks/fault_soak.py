"""Fault-injection soak: a real daemon on a small disk that fills and frees, killed at random.

Each cycle starts ``tablectl run`` (a real process, as ``tests/integration`` starts one: the
virtual shuffler, a mosquitto of the soak's own on a free port) on a journal that lives on a
small tmpfs mounted for the soak, with retention on and a tiny budget (every closed hand is
archived within a fraction of a second, copied to an archive directory off the tmpfs and
pruned). A dealer console plays hands through the broker the whole time, and a subscriber with a
persistent session collects every event the table publishes. Then, at a moment drawn at random,
the daemon gets SIGKILL or SIGTERM:

* ``playing``: at a random time while hands are played (the disk sometimes filled and freed
  meanwhile);
* ``start``: before READY, during the replay, the chain's check or the outage's record at start;
* ``disk full``: the tmpfs filled (to the last byte, or to a few KiB), once the table is
  degraded (``journal.sqlite.full`` made);
* ``outage record``: the disk freed while degraded, and the kill aimed at the ``recovered``
  record being written (a random delay within two disk polls, or the moment the log says
  ``journal.writable_again``);
* ``retention``: at a step of a retention round (a segment's temporary file appears, or the log
  says ``retention.archived``, ``retention.pruned``...), on a disk with room or a full one.

In most cycles ``tablectl journal verify`` also runs beside the daemon (on a connection of its
own, as the daemon's minute's verification does): it must pass, or fail only for want of room
to open the journal, whatever the daemon commits meanwhile.

After each kill (the daemon gone): the journal's files are copied aside (the evidence, kept for a
cycle that fails), ``tablectl journal verify`` must exit 0, and no row may be lost: every event
the subscriber received is in the journal (live, in a local segment, or in the archive's copy of
a pruned one) with the same content, the events' keys run from 1 to the last without a gap or a
key twice, and an event id never came with two contents. Then the next cycle starts the daemon
again on the same journal (the disk still full, or freed before or after the start): it must
reach READY with no integrity alarm (``journal.integrity_alarm`` or ``daemon.held`` in its log,
``journal.integrity`` in its status) and no rollback.

Run as root (the tmpfs is mounted for the soak and unmounted at its end, even on an error or
Ctrl-C)::

    .venv/bin/python benchmarks/fault_soak.py --cycles 1000 --seed 1 --size 16m

The figures go to ``benchmarks/fault_soak-results.txt`` (``--out``) with the command; a failing
cycle's evidence (the journal as the kill left it, both logs) is kept under ``--evidence``. Not
part of ``make test`` (docs/testing.md, "Fault-injection soak").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import platform
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

from controller.envelope import envelope  # noqa: E402
from controller.mqtt import Client  # noqa: E402
from controller.shell.journal import Journal  # noqa: E402
from controller.shell.segments import (  # noqa: E402
    PRUNED,
    SegmentError,
    directory_of,
    read_header,
    read_rows,
)
from controller.table.codec import event_from_json  # noqa: E402
from simulators.dealer_console import AutoConsole  # noqa: E402
from simulators.rig.launcher import SpawnedProcess, spawn  # noqa: E402
from tests.disk import fill  # noqa: E402
from tests.integration.broker import Broker, mosquitto_available  # noqa: E402
from tests.integration.conftest import Collector, DaemonProcess  # noqa: E402

RESULTS = ROOT / "benchmarks" / "fault_soak-results.txt"
TABLE = "TS"
DISK_POLL = 0.05  # seconds between the daemon's looks at its disk
#: What the view of an event holds (controller/table/events.py, public_view): compared between
#: the message received and the journal's row.
VIEW = ("ts", "hand_id", "type", "rules", "severity", "needs_confirm", "data", "by")
#: Log events that are an integrity alarm, or hold the table, whatever their cause.
ALARMS = ("journal.integrity_alarm", "daemon.held", "journal.rolled_back")
#: Error lines a full disk or a kill explains: anything else at error level is reported.
EXPECTED_ERRORS = frozenset(
    {
        "journal.full",
        "journal.full_at_start",
        "journal.rollback_waits_for_room",
        "mqtt.offline_not_published",
    }
)
#: Cycles in a row without a hand completed that make the table stuck (a failure of its own).
STUCK = 30
#: The moments a cycle's kill is aimed at, and how often each is drawn.
MOMENTS = {
    "playing": 2.0,
    "start": 1.0,
    "disk full": 1.5,
    "outage record": 2.0,
    "retention": 2.0,
    "retention, disk full": 1.5,
}
RETENTION_STEPS = (
    "retention.archived",
    "retention.pruned",
    "retention.compacted",
    "retention.readopted",
    "retention.orphan_removed",
    "retention.archive_waits",
    "journal.reserve_released",
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=1000, help="kills and restarts (1000)")
    parser.add_argument("--seed", type=int, default=1, help="the random moments' seed (1)")
    parser.add_argument("--size", default="16m", help="the tmpfs's size, as mount takes it (16m)")
    parser.add_argument(
        "--budget", type=int, default=1024 * 1024, help="[journal] max_bytes (1 MiB, the least)"
    )
    parser.add_argument(
        "--sigkill", type=float, default=0.5, help="the share of kills that are SIGKILL (0.5)"
    )
    parser.add_argument(
        "--play",
        type=float,
        default=1.5,
        help="the longest a cycle plays before the moment it aims at, in seconds (1.5)",
    )
    parser.add_argument(
        "--warm-up",
        type=float,
        default=900.0,
        help="the longest the first hands may take before retention archives one, in s (900)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the figures go")
    parser.add_argument(
        "--evidence",
        type=Path,
        default=Path(tempfile.gettempdir()) / "fault_soak-evidence",
        help="where a failing cycle's journal and logs are kept",
    )
    parser.add_argument(
        "--stop-on-failure", action="store_true", help="stop at the first failing cycle"
    )
    parser.add_argument("--verbose", action="store_true", help="a line per cycle")
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------- the small disk


@contextlib.contextmanager
def mounted(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` on a directory of its own, unmounted (and removed) at the end."""
    if os.geteuid() != 0:
        raise SystemExit("fault_soak: mounting the small tmpfs needs root")
    mount = Path(tempfile.mkdtemp(prefix="fault-soak-disk-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        mount.rmdir()
        raise SystemExit(f"fault_soak: cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], check=False)
        with contextlib.suppress(OSError):
            mount.rmdir()


# ---------------------------------------------------------------------------- the daemon's log


class LogTail:
    """The daemon's JSON log lines as they come (``<priority>{json}`` each)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.lines: list[dict[str, Any]] = []  # since the last start

    def restart(self) -> None:
        """The daemon starts again: its log so far becomes ``daemon.prev.log``."""
        with contextlib.suppress(FileNotFoundError):
            self.path.replace(self.path.with_name("daemon.prev.log"))
        self.offset = 0
        self.partial = b""
        self.lines = []

    def read(self) -> list[dict[str, Any]]:
        """The lines written since the last read."""
        try:
            with self.path.open("rb") as log:
                log.seek(self.offset)
                data = log.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        *complete, self.partial = (self.partial + data).split(b"\n")
        new = []
        for raw in complete:
            text = raw.decode(errors="replace")
            start = text.find("{")
            if start < 0:
                continue
            with contextlib.suppress(ValueError):
                line = json.loads(text[start:])
                if isinstance(line, dict):
                    new.append(line)
        self.lines.extend(new)
        return new

    def events(self) -> list[str]:
        """The events logged since the last start."""
        self.read()
        return [str(line.get("event")) for line in self.lines]


# ---------------------------------------------------------------------------- the figures


@dataclass
class Figures:
    """What the soak counted."""

    cycles: int = 0
    kills: Counter[str] = field(default_factory=Counter)  # by signal
    moments: Counter[str] = field(default_factory=Counter)  # by the moment aimed at
    triggers: Counter[str] = field(default_factory=Counter)  # by what set the kill off
    starts: int = 0
    ready: int = 0
    starts_on_full_disk: int = 0
    starts_with_marker: int = 0  # an outage not yet recorded when the daemon stopped
    fills: int = 0
    alarms: int = 0
    rows_lost: int = 0
    ids_reused: int = 0
    key_gaps: int = 0
    verify_failures: int = 0
    live_verifies: int = 0  # journal verify run beside the daemon, passed
    live_no_room: int = 0  # ... that could not open the journal on the full disk
    live_failures: int = 0  # ... that reported a break: a false alarm
    unclean_stops: int = 0  # SIGTERM that did not end with status 0
    term_before_handler: int = 0  # SIGTERM at start, before the daemon handles it
    start_failures: int = 0  # no READY (an exit, a timeout) other than an alarm's hold
    stuck: int = 0  # the table played no hand for STUCK cycles in a row
    unexpected_errors: Counter[str] = field(default_factory=Counter)
    events_checked: int = 0
    segments_archived: int = 0
    hands: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def table(self, command: str) -> str:
        """The results, as printed and written to the results file."""
        kills = ", ".join(f"{n} {name}" for name, n in sorted(self.kills.items())) or "0"
        moments = "; ".join(f"{name} {n}" for name, n in self.moments.most_common())
        triggers = "; ".join(f"{name} {n}" for name, n in self.triggers.most_common())
        errors = "; ".join(f"{name} {n}" for name, n in self.unexpected_errors.most_common())
        per = self.seconds / self.cycles if self.cycles else 0.0
        rows = [
            ("cycles", f"{self.cycles}"),
            ("kills by signal", kills),
            ("kills by moment", moments or "-"),
            ("what set each kill off", triggers or "-"),
            ("starts (READY)", f"{self.starts} ({self.ready})"),
            ("starts on a full disk", f"{self.starts_on_full_disk}"),
            ("starts with an outage", f"{self.starts_with_marker} (its record still to write)"),
            ("disk filled", f"{self.fills} times"),
            ("hands completed", f"{self.hands}"),
            ("segments archived", f"{self.segments_archived} (copied, then pruned)"),
            ("events checked", f"{self.events_checked}"),
            ("integrity alarms", f"{self.alarms}"),
            ("rows lost", f"{self.rows_lost}"),
            ("event ids reused", f"{self.ids_reused}"),
            ("gaps in the keys", f"{self.key_gaps}"),
            ("verify failures", f"{self.verify_failures}"),
            (
                "verify beside daemon",
                f"{self.live_verifies} ok, {self.live_failures} failed, "
                f"{self.live_no_room} could not open on the full disk",
            ),
            ("SIGTERM not exit 0", f"{self.unclean_stops}"),
            ("SIGTERM before handler", f"{self.term_before_handler} (ended by the signal itself)"),
            ("starts not READY", f"{self.start_failures}"),
            ("table stuck", f"{self.stuck} (no hand in {STUCK} cycles)"),
            ("unexpected error lines", errors or "0"),
            ("time", f"{self.seconds:.0f} s ({per:.2f} s a cycle)"),
        ]
        head = (
            f"Fault-injection soak ({sys.platform}, Python {platform.python_version()}, "
            f"SQLite {sqlite_version()})\n$ {command}\n"
        )
        body = "\n".join(f"{name:<24} {value}" for name, value in rows)
        failures = "\n".join(f"  {line}" for line in self.failures[:50])
        return head + body + ("\nfailures:\n" + failures if failures else "") + "\n"


def sqlite_version() -> str:
    import sqlite3  # noqa: PLC0415

    return sqlite3.sqlite_version


# ---------------------------------------------------------------------------- the rows


@dataclass
class Seen:
    """Every event the subscriber received, by id: the digest of its view."""

    digests: dict[str, str] = field(default_factory=dict)
    unchecked: set[str] = field(default_factory=set)
    ignored_epochs: set[str] = field(default_factory=set)  # a journal the soak started over
    reused: list[str] = field(default_factory=list)

    def take(self, messages: list[dict[str, Any]]) -> None:
        for body in messages:
            if body.get("epoch") in self.ignored_epochs:
                continue
            event_id = str(body["event_id"])
            digest = view_digest(body)
            known = self.digests.get(event_id)
            if known is None:
                self.digests[event_id] = digest
                self.unchecked.add(event_id)
            elif known != digest:
                self.reused.append(f"{event_id} came with two contents")


def view_digest(body: dict[str, Any]) -> str:
    view = {key: body[key] for key in VIEW if key in body}
    text = json.dumps(view, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def journal_digest(body: str, epoch: str, seq: int) -> str:
    """The digest of the view the table publishes for the journal's event ``body``."""
    event = event_from_json(body)
    published = envelope(event, table_id=TABLE, epoch=epoch, seq=seq)
    text = json.dumps(published, separators=(",", ":"), ensure_ascii=False)
    return view_digest(json.loads(text))


@dataclass
class RowCheck:
    lost: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    checked: int = 0
    pruned: int = 0


class Archive:
    """The events of the segment files the archive directory holds (a pruned segment's rows
    are there only: its record, compacted with its neighbours', names no file), found by the
    event keys in each file's header."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.ranges: dict[str, tuple[int, int]] = {}  # file name: its events' first and last key
        self.cache: dict[str, dict[int, str]] = {}

    def event(self, seq: int) -> str | None:
        for name, (first, last) in self.ranges.items():
            if first <= seq <= last:
                return self._events(name).get(seq)
        self._index()
        for name, (first, last) in self.ranges.items():
            if first <= seq <= last:
                return self._events(name).get(seq)
        return None

    def _index(self) -> None:
        for path in self.directory.glob("*.seg"):
            if path.name not in self.ranges:
                try:
                    keys = read_header(path).get("keys", {}).get("events")
                except SegmentError:
                    continue
                if keys:
                    self.ranges[path.name] = (int(keys[0]), int(keys[1]))

    def _events(self, name: str) -> dict[int, str]:
        if name not in self.cache:
            if len(self.cache) > 64:
                self.cache.clear()
            self.cache[name] = segment_events(self.directory / name)
        return self.cache[name]


def segment_events(path: Path) -> dict[int, str]:
    """The events of one segment file, by key."""
    try:
        _, rows = read_rows(path)
        return {int(r.content[0]): str(r.content[4]) for r in rows if r.table == "events"}
    except (SegmentError, OSError):
        return {}


def check_rows(path: Path, archive: Archive, seen: Seen, *, everything: bool) -> RowCheck:
    """Every event received (the unchecked ones, or ``everything``) is in the journal, its live
    rows or its segments (local, or the archive's copy of a pruned one), with the content
    received; and the events' keys run from 1 to the last, each once."""
    result = RowCheck()
    journal = Journal.open_existing(path)
    try:
        with journal.reading():
            last = journal.last_seq()
            live: dict[int, str] = dict(journal.read("SELECT seq, body FROM events ORDER BY seq"))
            segments = journal.segments()
            epochs = list(journal.epochs)
        result.pruned = sum(1 for s in segments if s.state == PRUNED)
        expected = 1
        for segment in segments:
            keys = segment.keys.get("events")
            if not keys:
                continue
            if int(keys[0]) != expected:
                result.gaps.append(
                    f"segment {segment.name} holds events {keys[0]}-{keys[1]}, after {expected - 1}"
                )
            expected = int(keys[1]) + 1
        for seq in live:
            if seq != expected:
                result.gaps.append(f"live event {seq} where {expected} was next")
            expected = seq + 1
        if expected - 1 != last:
            result.gaps.append(f"the events end at {expected - 1}, the last key issued is {last}")

        names = {e.name: e.first_seq for e in epochs}
        local = {s.name: s for s in segments if s.state != PRUNED}

        def archived(seq: int) -> str | None:
            for segment in local.values():
                keys = segment.keys.get("events")
                if keys and int(keys[0]) <= seq <= int(keys[1]):
                    found = segment_events(journal.segments_dir / segment.name).get(seq)
                    if found is not None:
                        return found
            return archive.event(seq)

        wanted = set(seen.digests) if everything else set(seen.unchecked)
        for event_id in sorted(wanted):
            _, epoch, number = event_id.rsplit(":", 2)
            if epoch not in names:
                result.lost.append(f"{event_id}: the journal has no epoch {epoch}")
                continue
            seq = names[epoch] + int(number) - 1
            body = live.get(seq) or archived(seq)
            if body is None:
                result.lost.append(
                    f"{event_id} (key {seq}) is in neither the journal nor a segment"
                )
            elif journal_digest(body, epoch, int(number)) != seen.digests[event_id]:
                result.lost.append(f"{event_id} (key {seq}) holds another event than was published")
            result.checked += 1
        seen.unchecked -= wanted
    finally:
        journal.close()
    return result


# ---------------------------------------------------------------------------- the soak


class Soak:
    """One soak run: its disk, broker, daemon, console and subscriber, and its cycles."""

    def __init__(self, args: argparse.Namespace, disk: Path, work: Path) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.disk = disk
        self.work = work
        self.filler = disk / "filler"
        self.archive = work / "archive"
        self.archive.mkdir()
        self.archived = Archive(self.archive)
        self.figures = Figures()
        self.seen = Seen()
        self.journal = disk / "journal.sqlite"
        self.broker = Broker(self._mkdir("broker"))
        self.daemon: DaemonProcess | None = None
        self.log: LogTail | None = None
        self.collector: Collector | None = None
        self.failed = False
        self.generation = 0
        self.hands_seen = 0
        self.live: tuple[SpawnedProcess, Path] | None = None  # a verify beside the daemon
        self.progress_at = 0  # the last cycle a hand was completed in

    def _mkdir(self, name: str) -> Path:
        path = self.work / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def make_daemon(self) -> DaemonProcess:
        extra = (
            f"live_hands = 0\nmax_bytes = {self.args.budget}\n"
            f'archive_dir = "{self.archive}"\nretention_interval = 0.25\ninbox_seconds = 2\n'
            f"disk_poll = {DISK_POLL}\nlow_disk_bytes = {2 * 1024 * 1024}\n"
        )
        daemon = DaemonProcess(
            self.work / f"daemon{self.generation}",
            self.broker,
            table=TABLE,
            seed=self.args.seed,
            stacks="{ 1 = 1000000, 2 = 1000000, 3 = 1000000 }",
            journal=self.journal,
            journal_extra=extra,
            sections="[daemon]\nshutdown_step = 2.0\n",
        )
        text = daemon.config.read_text().replace(
            "[security]\n",
            "[security]\nclock_skew = 1\nrate_per_key = 1000\nrate_per_key_burst = 1000\n",
        )
        daemon.config.write_text(text)
        self.log = LogTail(daemon.directory / "daemon.log")
        return daemon

    # ------------------------------------------------------------------ the run

    async def run(self) -> None:
        started = time.monotonic()
        self.broker.start()
        try:
            self.daemon = self.make_daemon()
            async with Collector(self.broker, self.daemon.topics, "soak-collector") as collector:
                self.collector = collector
                console = asyncio.create_task(self.deal(), name="console")
                try:
                    await self.warm_up()
                    for n in range(1, self.args.cycles + 1):
                        await self.cycle(n)
                        self.figures.seconds = time.monotonic() - started
                        if n % 10 == 0 or self.args.verbose:
                            self.progress(n)
                        if self.failed and self.args.stop_on_failure:
                            break
                    await self.final_start()
                finally:
                    console.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await console
        finally:
            if self.daemon is not None:
                self.daemon.close()
            self.broker.stop()
            self.figures.seconds = time.monotonic() - started

    async def warm_up(self) -> None:
        """Play until retention has a closed hand to archive: a start keeps the inputs of the
        last hands live (RECENT_INPUTS before the newest snapshot), so a new journal archives
        nothing for its first fifty hands or so. No kill meanwhile."""
        assert self.daemon is not None
        assert self.log is not None
        started = time.monotonic()
        self.log.restart()
        self.daemon.start(60.0)
        while not any(line.get("event") == "retention.archived" for line in self.log.read()):
            await asyncio.sleep(0.5)
            if time.monotonic() - started > self.args.warm_up:
                raise SystemExit(f"fault_soak: nothing archived in {self.args.warm_up:g} s")
            assert self.daemon.proc is not None
            if self.daemon.proc.poll() is not None:
                raise SystemExit(f"fault_soak: the daemon exited:\n{self.daemon.log()}")
        await self.kill(signal.SIGTERM)
        print(
            f"warm-up: {self.figures.hands} hands in {time.monotonic() - started:.0f} s, "
            "the first segment archived",
            flush=True,
        )
        self.figures.hands = 0

    def progress(self, n: int) -> None:
        f = self.figures
        print(
            f"cycle {n}: {f.seconds:.0f} s, {f.hands} hands, {f.events_checked} events checked, "
            f"alarms {f.alarms}, lost {f.rows_lost}, verify failures {f.verify_failures}, "
            f"start failures {f.start_failures}, unclean stops {f.unclean_stops}",
            flush=True,
        )

    async def deal(self) -> None:
        """The dealer console: plays hands for ever, through every stop and start."""
        assert self.daemon is not None
        daemon = self.daemon
        while True:
            try:
                async with Client("127.0.0.1", self.broker.port) as client:
                    auto = AutoConsole(client, daemon.topics, retry=0.3, sign=daemon.sign)
                    await auto.start()
                    last_hand: Any = None
                    while True:
                        daemon = self.daemon or daemon
                        auto.sign = daemon.sign
                        snap = auto.snapshot
                        if snap is None:
                            await auto.wait_snapshot(0, 1.0)
                            continue
                        if snap.get("last_hand") != last_hand:
                            last_hand = snap.get("last_hand")
                            self.figures.hands += 1
                        step = auto.decide(snap, 1 << 30, 0)
                        if step is None:
                            await auto.wait_snapshot(snap["seq"] + 1, 0.5)
                            continue
                        body = await auto.send(*step)
                        del auto.responses[:]
                        if body.get("status") != "ok":
                            await asyncio.sleep(0.05)  # refused (a full disk): not at once again
                            continue
                        target = (body.get("data") or {}).get("last_seq") or snap["seq"] + 1
                        await auto.wait_snapshot(target, 1.0)
            except asyncio.CancelledError:
                raise
            except Exception:  # the broker connection or a console hiccup: play on
                await asyncio.sleep(0.2)

    # ------------------------------------------------------------------ one cycle

    async def cycle(self, n: int) -> None:
        rng = self.rng
        moment = rng.choices(list(MOMENTS), weights=list(MOMENTS.values()))[0]
        sig = signal.SIGKILL if rng.random() < self.args.sigkill else signal.SIGTERM
        self.figures.cycles = n
        outcome = await self.start(n, early=moment == "start")
        if outcome == "reset":
            return
        trigger = "before READY" if moment == "start" else await self.drive(moment)
        self.figures.moments[moment] += 1
        self.figures.triggers[trigger] += 1
        name = "SIGKILL" if sig == signal.SIGKILL else "SIGTERM"
        self.figures.kills[name] += 1
        code = await self.kill(sig)
        if self.args.verbose:
            print(f"  cycle {n}: {moment} / {trigger} / {name} -> {code}", flush=True)
        self.keep_evidence()
        self.scan_log(n, f"{moment} / {trigger} / {name}")
        assert self.log is not None
        if (
            sig == signal.SIGTERM
            and code == -signal.SIGTERM
            and "journal.recovered" not in self.log.events()
        ):
            # before the daemon's run installs its handler, SIGTERM ends it as SIGKILL would
            self.figures.term_before_handler += 1
        elif sig == signal.SIGTERM and code != 0:
            self.figures.unclean_stops += 1
            self.fail(n, f"SIGTERM ({moment} / {trigger}) ended with status {code}")
        await self.live_verify(n)
        await self.verify(n)
        await self.check(n, everything=n % 50 == 0)
        if self.figures.hands != self.hands_seen:
            self.hands_seen, self.progress_at = self.figures.hands, n
        elif n - self.progress_at >= STUCK:
            self.figures.stuck += 1
            self.fail(n, f"the table played no hand in {STUCK} cycles: {self.log_tail()}")
            await self.start_over(n)
            self.progress_at = n

    async def start(self, n: int, *, early: bool) -> str:
        """Start the daemon (the disk freed before, after or not at all); wait for READY (or,
        ``early``, for a random moment before it). "reset" when the journal had to be set aside."""
        assert self.daemon is not None
        assert self.log is not None
        rng = self.rng
        full = self.filler.exists()
        free_after: float | None = None
        if full:
            if rng.random() < 0.4:
                self.free()
                full = False
            else:
                free_after = rng.uniform(0.0, 1.5)
        self.figures.starts += 1
        self.figures.starts_on_full_disk += full
        self.figures.starts_with_marker += self.marker.exists()
        self.log.restart()
        self.daemon.launch()
        launched = time.monotonic()
        deadline = launched + (rng.uniform(0.05, 1.5) if early else 60.0)
        while time.monotonic() < deadline:
            if free_after is not None and time.monotonic() - launched > free_after:
                self.free()
                free_after = None
            if "READY=1" in self.daemon.notified():
                self.figures.ready += 1
                break
            events = self.log.events()
            if any(e in ALARMS for e in events):
                await asyncio.sleep(0.3)  # the rest of what it says
                break
            assert self.daemon.proc is not None
            if self.daemon.proc.poll() is not None:
                break
            await asyncio.sleep(0.005)
        alarms = self.alarms()
        if alarms:
            self.figures.alarms += 1
            self.fail(n, f"start: {alarms}")
            await self.start_over(n)
            return "reset"
        if early:
            return "early"
        assert self.daemon.proc is not None
        if "READY=1" not in self.daemon.notified():
            self.figures.start_failures += 1
            code = self.daemon.proc.poll()
            self.fail(n, f"start: no READY in 60 s (exit {code}): {self.log.events()[-5:]}")
            await self.start_over(n)
            return "reset"
        return "ready"

    def alarms(self) -> str:
        """The integrity alarms this start raised: in its log, or on its status topic."""
        assert self.log is not None
        assert self.collector is not None
        found = [
            f"{line.get('event')}: {line.get('reason') or line.get('alarm') or ''}"
            for line in self.log.lines
            if line.get("event") in ALARMS
        ]
        for status in self.collector.status:
            for alarm in status.get("alarms", []):
                if alarm.get("alarm") == "journal.integrity":
                    found.append(f"status: {alarm.get('detail')}")
        del self.collector.status[:]
        return "; ".join(dict.fromkeys(found))

    async def drive(self, moment: str) -> str:
        """Play until the moment to kill at; what set the kill off."""
        rng = self.rng
        await self.sleep(rng.uniform(0.1, self.args.play))
        if rng.random() < 0.6:  # a verify beside the daemon (a tool's, or its own minute's)
            self.live = self.spawn_verify("live.out")
        if moment == "playing":
            if rng.random() < 0.35:
                self.fill()
                await self.sleep(rng.uniform(0.0, 1.0))
                if rng.random() < 0.5:
                    self.free()
                    await self.sleep(rng.uniform(0.0, 0.5))
            return "random time"
        if moment in ("disk full", "outage record"):
            self.fill()
            if not await self.wait_for(self.marker.exists, 10.0):
                return "disk full, not degraded in 10 s"
            if moment == "disk full":
                await self.sleep(rng.uniform(0.0, 0.6))
                return "degraded"
            await self.sleep(rng.uniform(0.0, 0.3))
            self.free()
            if rng.random() < 0.5:
                await self.sleep(rng.uniform(0.0, 2.5 * DISK_POLL))
                return "within 2.5 polls of the room"
            if await self.wait_log(("journal.writable_again",), 5.0):
                return "journal.writable_again"
            return "room, no record in 5 s"
        step = await self.wait_retention(3.0)
        if step is None:
            return "no retention step in 3 s"
        if moment == "retention, disk full":
            # the disk fills in the middle of the round: its next write (the segment's record,
            # a prune's mark, the archive's state) finds no room
            self.fill()
            later = await self.wait_retention(rng.uniform(0.0, 0.5))
            step = f"{step}, disk filled, then {later or 'a random time'}"
        await asyncio.sleep(rng.uniform(0.0, 0.02))
        return step

    @property
    def marker(self) -> Path:
        return self.journal.with_name(self.journal.name + ".full")

    async def wait_retention(self, timeout: float) -> str | None:
        """The next retention step: a segment's temporary file, or a retention log line."""
        assert self.log is not None
        self.log.read()
        segments = directory_of(self.journal)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if any(p.name.endswith(".tmp") for p in segments.iterdir()):
                    return "a segment file being written"
            for line in self.log.read():
                if line.get("event") in RETENTION_STEPS:
                    return str(line["event"])
            await asyncio.sleep(0.002)
        return None

    async def wait_log(self, events: tuple[str, ...], timeout: float) -> bool:
        assert self.log is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(line.get("event") in events for line in self.log.read()):
                return True
            await asyncio.sleep(0.002)
        return False

    async def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            await asyncio.sleep(0.005)
        return False

    async def sleep(self, seconds: float) -> None:
        """Let the table play for ``seconds`` (or until the daemon ends)."""
        assert self.daemon is not None
        assert self.daemon.proc is not None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.daemon.proc.poll() is None:
            await asyncio.sleep(min(0.02, max(0.0, deadline - time.monotonic())))

    def fill(self) -> None:
        leave = 0 if self.rng.random() < 0.6 else self.rng.randint(4096, 256 * 1024)
        fill(self.filler, leave)
        self.figures.fills += 1

    def free(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()

    async def kill(self, sig: int) -> int:
        assert self.daemon is not None
        return await asyncio.to_thread(self.daemon.kill, sig)

    # ------------------------------------------------------------------ the checks

    def scan_log(self, n: int, what: str) -> None:
        assert self.log is not None
        self.log.read()
        for line in self.log.lines:
            level = line.get("level")
            event = str(line.get("event"))
            if level in ("error", "critical") and event not in EXPECTED_ERRORS:
                if event in ALARMS:
                    self.figures.alarms += 1
                    self.fail(n, f"while running ({what}): {event}: {line.get('reason')}")
                else:
                    self.figures.unexpected_errors[event] += 1
                    if self.figures.unexpected_errors[event] <= 3:
                        detail = line.get("error") or line.get("exception") or ""
                        print(f"  cycle {n}: error line {event} ({what}): {str(detail)[-300:]}")

    def spawn_verify(self, name: str) -> tuple[SpawnedProcess, Path]:
        """``tablectl journal verify`` started, its output in the work directory's ``name``."""
        output = self.work / name
        with output.open("wb") as out:
            process = spawn(
                ["journal", "verify", "--journal", str(self.journal)],
                dict(os.environ),
                stdout=out.fileno(),
                stderr=out.fileno(),
                cwd=str(ROOT),
            )
        return process, output

    async def live_verify(self, n: int) -> None:
        """The verify that ran beside the daemon: ok, or unable to open the journal for want
        of room; a break it names is a false alarm (the journal verifies once the daemon is
        gone)."""
        if self.live is None:
            return
        process, output = self.live
        self.live = None
        code = await asyncio.to_thread(process.wait, 60)
        text = output.read_text(errors="replace")
        if code == 0:
            self.figures.live_verifies += 1
        elif "cannot be opened" in text and ("full" in text or "disk I/O" in text):
            self.figures.live_no_room += 1
        else:
            self.figures.live_failures += 1
            self.fail(n, f"journal verify beside the daemon exit {code}: {text.strip()[-500:]}")

    async def verify(self, n: int) -> None:
        """``tablectl journal verify`` on the journal the kill left."""
        for attempt in (1, 2):
            process, output = self.spawn_verify("verify.out")
            code = await asyncio.to_thread(process.wait, 60)
            text = output.read_text(errors="replace")
            if code == 0:
                return
            if attempt == 1 and self.filler.exists() and "full" in text:
                self.figures.triggers["verify needed room"] += 1
                self.free()  # no room even to read: the next start begins with room
                continue
            self.figures.verify_failures += 1
            self.fail(n, f"journal verify exit {code}: {text.strip()[-500:]}")
            return

    async def check(self, n: int, *, everything: bool) -> None:
        assert self.collector is not None
        await asyncio.sleep(0.05)  # what the broker still had in flight to the subscriber
        self.seen.take(self.collector.public)
        del self.collector.public[:]
        del self.collector.secure[:]
        if self.seen.reused:
            self.figures.ids_reused += len(self.seen.reused)
            self.fail(n, "; ".join(self.seen.reused[:3]))
            self.seen.reused = []
        try:
            result = await asyncio.to_thread(
                check_rows, self.journal, self.archived, self.seen, everything=everything
            )
        except Exception as exc:  # the journal could not be read: a failure of its own
            self.fail(n, f"rows: the journal could not be read ({exc!r})")
            return
        self.figures.events_checked += result.checked
        self.figures.segments_archived = sum(1 for _ in self.archive.glob("*.seg"))
        if result.lost:
            self.figures.rows_lost += len(result.lost)
            self.fail(n, f"rows lost: {result.lost[:3]}")
        if result.gaps:
            self.figures.key_gaps += len(result.gaps)
            self.fail(n, f"keys: {result.gaps[:3]}")

    async def final_start(self) -> None:
        """A last start after the last kill: READY, with no alarm."""
        n = self.figures.cycles + 1
        if await self.start(n, early=False) == "ready":
            await self.kill(signal.SIGTERM)

    # ------------------------------------------------------------------ failures

    def fail(self, n: int, what: str) -> None:
        self.failed = True
        line = f"cycle {n}: {what}"
        self.figures.failures.append(line)
        print(line, flush=True)
        kept = self.args.evidence / f"cycle-{n:04d}"
        if kept.exists():
            return
        kept.mkdir(parents=True)
        last = self.work / "last-kill"
        if last.exists():
            shutil.copytree(last, kept / "journal-as-killed")
        assert self.daemon is not None
        for name in ("daemon.log", "daemon.prev.log", "table.toml"):
            with contextlib.suppress(OSError):
                shutil.copy2(self.daemon.directory / name, kept / name)
        print(f"  evidence in {kept}", flush=True)

    def log_tail(self) -> str:
        assert self.log is not None
        events = [str(line.get("event")) for line in self.log.lines[-8:]]
        return ", ".join(events)

    def keep_evidence(self) -> None:
        """The journal's files as the kill left them (kept for a cycle that fails)."""
        last = self.work / "last-kill"
        shutil.rmtree(last, ignore_errors=True)
        last.mkdir()
        for path in self.disk.iterdir():
            if path.name in ("filler", "journal.sqlite.reserve"):
                continue
            with contextlib.suppress(OSError):
                if path.is_dir():
                    shutil.copytree(path, last / path.name)
                else:
                    shutil.copy2(path, last / path.name)

    async def start_over(self, n: int) -> None:
        """A journal held by an alarm (or not starting): set it aside, go on with a new one."""
        assert self.daemon is not None
        await self.kill(signal.SIGKILL)
        with contextlib.suppress(Exception):
            journal = Journal.open_existing(self.journal)
            self.seen.ignored_epochs.update(e.name for e in journal.epochs)
            journal.close()
        for path in self.disk.iterdir():
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        self.seen.digests.clear()
        self.seen.unchecked.clear()
        # the archive's copies go with the journal they are of (into the cycle's evidence)
        kept = self.args.evidence / f"cycle-{n:04d}" / "archive"
        if kept.parent.is_dir() and not kept.exists():
            shutil.move(self.archive, kept)
        else:
            shutil.rmtree(self.archive)
        self.archive.mkdir()
        self.archived = Archive(self.archive)
        state = self.daemon.directory / "shuffler.json"
        state.unlink(missing_ok=True)
        print(f"  cycle {n}: the soak goes on with a new journal", flush=True)


async def main_async(args: argparse.Namespace, command: str) -> Figures:
    # Ctrl-C or SIGTERM (even where a background job's SIGINT is ignored): the soak is
    # cancelled where it waits, and stops its processes, unmounts and writes its figures
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    assert main_task is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, main_task.cancel)
    with mounted(args.size) as disk:
        work = Path(tempfile.mkdtemp(prefix="fault-soak-"))
        soak = Soak(args, disk, work)
        try:
            await soak.run()
        finally:
            figures = soak.figures
            text = figures.table(command)
            print(text)
            args.out.write_text(text)
            if not soak.failed:
                shutil.rmtree(work, ignore_errors=True)
            else:
                print(f"the soak's work directory is kept: {work}")
        return figures


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not mosquitto_available():
        raise SystemExit("fault_soak: mosquitto is not installed")
    command = shlex.join(["python", "benchmarks/fault_soak.py", *sys.argv[1:]])
    try:
        figures = asyncio.run(main_async(args, command))
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 130
    return 1 if figures.failures else 0


if __name__ == "__main__":
    sys.exit(main())
