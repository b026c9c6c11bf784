"""``docs/bench.md``, run: every command of the page in order, and its output checked.

The page's ```` ```sh ```` blocks are run from the top of the checkout with ``tablectl`` and
mosquitto on ``PATH``, ``BENCH`` (a fresh temporary directory) and ``PORT`` (a free port) in the
environment: the page's ``export`` line must define exactly those two, which the test gives its
own values. A command the page ends with ``&`` is started in the background, in a session of its
own, and waited for before the next command: mosquitto until it listens, a simulator until its
control socket answers, the daemon until its journal has both devices online. Everything else in
a block runs as one ``bash -e`` script.

The page's ```` ```text ```` blocks are what the reader will see: lines in ``tablectl tail``'s
format (and ``# status`` lines) must appear in that order in the tail's log, waited for; any
other block must match lines the block of commands before it printed. ``…`` in a shown line
stands for whatever the run gave (a transaction id, a commitment). After the page, the test
checks what matters for itself: each seat got the group ``deal`` put there, the deal completed,
and the card of another deck was a FOUL-FOREIGN alarm and hold, then a void.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import tempfile
import tomllib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.table.inputs import DeviceHealthChanged, Health, Input
from simulators.rig.mirror import Mirror, open_reader
from tests.integration.broker import free_port, mosquitto_available
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "bench.md"
#: The variables the page defines and the test sets.
VARIABLES = {"BENCH", "PORT"}
#: A bound for anything the bench does (a loaded 2-core machine).
TIMEOUT = 30.0

_FENCE = re.compile(r"^```(\w*)")
_TAIL_LINE = re.compile(r"^\s*\d+ \S+ +\S+")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
#: What ``tablectl sim rfid deal`` prints for a hole group.
_DEALT = re.compile(r"group \d+ \(hole, seat (?P<seat>\d+)\): (\S+) (\S+) on seat:(?P=seat) .*")


@dataclass
class Block:
    """A fenced block of the page: its language, its lines, where it starts."""

    kind: str
    lines: list[str]
    line: int


def blocks(text: str) -> list[Block]:
    """The ``sh`` and ``text`` blocks of a Markdown page, in order."""
    found: list[Block] = []
    current: Block | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if current is None:
            match = _FENCE.match(line)
            if match:
                current = Block(match.group(1), [], number)
        elif line.startswith("```"):
            if current.kind in ("sh", "text"):
                found.append(current)
            current = None
        else:
            current.lines.append(line)
    assert current is None, f"{DOC}: a block opened at line {current.line} is not closed"
    return found


@dataclass
class Step:
    """Part of a ``sh`` block: a script run to its end, or one command left running."""

    background: bool
    script: str


def steps(block: Block) -> list[Step]:
    """A block's scripts and background commands, in order (``export`` lines apart)."""
    out: list[Step] = []
    script: list[str] = []
    pending: list[str] = []
    heredoc: str | None = None
    for line in block.lines:
        if heredoc is not None:
            script.append(line)
            if line.strip() == heredoc:
                heredoc = None
            continue
        pending.append(line)
        if line.endswith("\\"):
            continue
        command, pending = "\n".join(pending), []
        stripped = command.rstrip()
        if stripped.startswith("export "):
            names = {word.partition("=")[0] for word in shlex.split(stripped)[1:]}
            assert names == VARIABLES, f"{DOC}:{block.line}: the page exports {names}"
            continue
        match = _HEREDOC.search(command)
        if match:
            heredoc = match.group(1)
        if stripped.endswith("&") and not stripped.endswith("&&"):
            if script:
                out.append(Step(False, "\n".join(script)))
                script = []
            out.append(Step(True, stripped[:-1].rstrip()))
        else:
            script.append(command)
    if script:
        out.append(Step(False, "\n".join(script)))
    return out


def shown(line: str) -> re.Pattern[str]:
    """A line as the page shows it, ``…`` standing for anything."""
    return re.compile(".*".join(re.escape(part) for part in line.strip().split("…")))


def event_line(line: str) -> tuple[str, str, str, Any]:
    """A ``tablectl tail`` line: hand, type, rules, data (the seq left out)."""
    _, hand, kind, rest = line.split(maxsplit=3)
    rules, data = ("", rest) if rest.startswith(("{", "null")) else rest.split(maxsplit=1)
    # ``…`` for a number or a string the run decides: a wildcard in the page's JSON
    data = re.sub(r"(?<=[:\[,])…", '"…"', data)
    return hand, kind, rules, json.loads(data)


def same(expected: Any, actual: Any) -> bool:
    """Whether an event's data is what the page shows (``"…"`` matching any value)."""
    if expected == "…":
        return True
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            same(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(same, expected, actual))
    return bool(expected == actual)


def matches(wanted: str, line: str) -> bool:
    """Whether a line of the tail's log is the one the page shows."""
    if wanted.startswith("#"):
        return bool(shown(wanted).fullmatch(line.strip()))
    if not _TAIL_LINE.match(line):
        return False
    hand, kind, rules, data = event_line(wanted)
    got = event_line(line)
    return got[:3] == (hand, kind, rules) and same(data, got[3])


def in_order(expected: list[str], actual: list[str]) -> bool:
    """Whether the page's tail lines appear in ``actual``, in that order."""
    position = 0
    for wanted in expected:
        while position < len(actual) and not matches(wanted, actual[position]):
            position += 1
        if position == len(actual):
            return False
        position += 1
    return True


@dataclass
class Bench:
    """The page's environment and what it left running."""

    env: dict[str, str]
    running: list[tuple[str, asyncio.subprocess.Process]] = field(default_factory=list)
    printed: list[str] = field(default_factory=list)  # by the current block's commands
    history: list[str] = field(default_factory=list)  # by every command so far
    tail_log: Path | None = None

    @property
    def directory(self) -> Path:
        return Path(self.env["BENCH"])

    def logs(self) -> str:
        """Every log the bench wrote, for a failure."""
        parts = []
        for path in sorted(self.directory.glob("*.log")):
            text = path.read_text(errors="replace")
            parts.append(f"--- {path.name}\n{text[-4000:]}")
        return "\n".join(parts)

    def check_running(self) -> None:
        for command, proc in self.running:
            assert proc.returncode is None, f"{command!r} exited {proc.returncode}\n{self.logs()}"

    async def run(self, step: Step) -> None:
        if step.background:
            await self.start(step.script)
            return
        proc = await asyncio.create_subprocess_exec(
            "bash", "-e", "-u", "-o", "pipefail", "-c", step.script,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL, cwd=REPO, env=self.env,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT * 2)
        assert proc.returncode == 0, (
            f"{step.script}\nexited {proc.returncode}: {err.decode()}{out.decode()}\n{self.logs()}"
        )
        self.printed += out.decode().splitlines()
        self.history += out.decode().splitlines()

    async def start(self, command: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", command, cwd=REPO, env=self.env,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self.running.append((command, proc))
        words = [_expand(word, self.env) for word in shlex.split(command)]
        if words[0] == "mosquitto":
            await self.wait(lambda: _listens(int(self.env["PORT"])), "mosquitto listening")
        elif words[:2] == ["tablectl", "sim"]:
            control = Path(words[words.index("--control") + 1])
            await self.wait(lambda: _answers(control), f"{control} answering")
        elif words[:2] == ["tablectl", "run"]:
            config = tomllib.loads(Path(words[words.index("--config") + 1]).read_text())
            await self.devices_online(Path(config["journal"]["path"]), set(config["devices"]))
        elif words[:2] == ["tablectl", "tail"]:
            self.tail_log = Path(words[words.index(">") + 1])

    async def wait(self, condition: Any, what: str) -> None:
        def met() -> bool:
            self.check_running()
            return bool(condition())

        try:
            await until(met, TIMEOUT, what, every=0.02)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    async def devices_online(self, journal: Path, devices: set[str]) -> None:
        mirror = Mirror(await open_reader(journal, TIMEOUT))
        try:
            for device in sorted(devices):

                def online(item: Input, device: str = device) -> bool:
                    return (
                        isinstance(item, DeviceHealthChanged)
                        and item.device == device
                        and item.health is Health.ONLINE
                    )

                await mirror.wait_for(online, f"the {device} online", 0, TIMEOUT)
        finally:
            mirror.close()

    def tail(self) -> list[str]:
        assert self.tail_log is not None, "the page shows tail output before starting a tail"
        return self.tail_log.read_text().splitlines() if self.tail_log.exists() else []

    async def expect(self, block: Block) -> None:
        lines = [line for line in block.lines if line.strip()]
        if all(_TAIL_LINE.match(line) or line.startswith("# ") for line in lines):
            try:
                await self.wait(lambda: in_order(lines, self.tail()), f"line {block.line}")
            except AssertionError as exc:
                tail = "\n".join(self.tail())
                place = f"{DOC}:{block.line}"
                raise AssertionError(f"{place}: not in the tail\n{tail}\n{exc}") from None
            return
        printed = self.printed
        for line in lines:
            pattern = shown(line)
            found = next((i for i, p in enumerate(printed) if pattern.fullmatch(p.strip())), None)
            assert found is not None, f"{DOC}:{block.line}: {line!r} not printed: {self.printed}"
            printed = printed[found + 1 :]

    async def close(self) -> None:
        """Stop what the page left running, the last started first (SIGTERM, then SIGKILL)."""
        for _, proc in reversed(self.running):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()


def _expand(word: str, env: dict[str, str]) -> str:
    return re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: env[m.group(1) or m.group(2)], word)


def _listens(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as sock:
        return sock.connect_ex(str(path)) == 0


@pytest.fixture
async def bench() -> AsyncIterator[Bench]:
    # Unix socket paths must be short: not under pytest's temporary directory
    directory = Path(tempfile.mkdtemp(prefix="bench"))
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"], "/usr/sbin"])
    env = {**os.environ, "PATH": path, "BENCH": str(directory), "PORT": str(free_port())}
    env.pop("TABLECTL_CONFIG", None)  # the page names its config; nothing of the caller's
    made = Bench(env)
    try:
        yield made
    finally:
        await made.close()
        shutil.rmtree(directory, ignore_errors=True)


def test_the_page_parses_into_commands_and_shown_output() -> None:
    page = blocks(DOC.read_text())
    commands = [step for block in page if block.kind == "sh" for step in steps(block)]
    background = [step.script.split()[:2] for step in commands if step.background]
    assert background == [
        ["mosquitto", "-c"],
        ["tablectl", "sim"],
        ["tablectl", "sim"],
        ["tablectl", "tail"],
        ["tablectl", "run"],
    ]
    assert any("tablectl sim rfid deal" in step.script for step in commands)
    assert any("tablectl sim rfid place" in step.script for step in commands)
    # the matching the page's output relies on: a wildcard, and a seq that is not compared
    assert same({"a": "…", "b": [1]}, {"a": 7, "b": [1]})
    assert not same({"a": "…", "b": [1]}, {"a": 7, "b": [2]})
    assert in_order(
        ['     9 H   deal.complete   DEAL-DONE   {"seats":…}'],
        ["# status online", '    12 H   deal.complete   DEAL-DONE   {"seats":[1,2]}'],
    )
    assert not in_order(
        ['     9 H   deal.complete   SEAT-SEQ   {"seats":…}'],
        ['    12 H   deal.complete   DEAL-DONE   {"seats":[1,2]}'],
    )


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")
async def test_the_bench_page_runs_as_written(bench: Bench) -> None:
    for block in blocks(DOC.read_text()):
        if block.kind == "sh":
            bench.printed = []
            for step in steps(block):
                await bench.run(step)
        else:
            await bench.expect(block)
    # What the page is about, whatever it shows: the table dealt each group where ``deal`` put
    # it and saw the deal complete; the card of another deck was FOUL-FOREIGN, then voided.
    events = [event_line(line) for line in bench.tail() if _TAIL_LINE.match(line)]
    delivered = {
        e[3]["seat"]: sorted(e[3]["cards"]) for e in events if e[1] == "deal.group.delivered"
    }
    dealt = [_DEALT.fullmatch(line) for line in bench.history]
    assert delivered == {int(m["seat"]): sorted(m.group(2, 3)) for m in dealt if m}
    assert delivered.keys() == {1, 2, 3}
    kinds = [(e[1], e[2]) for e in events]
    assert ("deal.complete", "DEAL-DONE") in kinds
    alarm = kinds.index(("integrity.alarm", "FOUL-FOREIGN"))
    assert kinds.index(("hand.hold", "FOUL-FOREIGN")) > alarm
    assert ("hand.void", "FOUL-FOREIGN") in kinds
