"""``tablectl demo`` as a process: hands through the real devices, mistakes handled, clean exit."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker import free_port
from tests.rig.conftest import alive, stop_leftovers

# The demo runs the daemon, the simulators and a dealer as processes: some 8 s for ten hands on
# an idle 2-core machine, seven to ten times that with every core busy. The bounds only catch a
# demo that hangs.
pytestmark = [pytest.mark.slow(weight=2), pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]


def demo(*args: str, timeout: float = 400.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        check=False,
    )


def descendants_of(pid: int) -> list[int]:
    """Every process started by ``pid``, or by one of those (the rig's launcher forks the
    daemon and the simulators)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, of in parents.items() if of == parent]
        found += children
        frontier += children
    return found


def resolved_holds(events: list[dict[str, Any]]) -> list[str]:
    """The holds that were later resolved: resumed, or ended by a misdeal or a void."""
    out = []
    for index, event in enumerate(events):
        if event["type"] != "hand.hold":
            continue
        hold, hand = event["data"]["hold"], event["hand_id"]
        later = events[index + 1 :]
        if any(
            (e["type"] == "hand.resume" and e["data"].get("hold") == hold)
            or (e["type"] in ("hand.misdeal", "hand.void") and e["hand_id"] == hand)
            for e in later
        ):
            out.append(f"{event['rules']} {hold}")
    return out


def parse_line(line: str) -> dict[str, Any]:
    """A pretty event line, "seq hand type rules data", back into its parts."""
    seq, hand, kind, *_ = line.split()
    head, brace, data = line.partition("{")
    rules = head.split()[3:]
    return {
        "seq": int(seq),
        "hand_id": None if hand == "-" else hand,
        "type": kind,
        "rules": rules[0].split(",") if rules else [],
        "data": json.loads(brace + data),
    }


def test_ten_hands_through_the_devices_with_a_mistake_handled(broker_url: str) -> None:
    proc = demo("--hands", "10", "--seed", "1", "--broker", broker_url)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Not a terminal: one line per event.
    events = [parse_line(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [e["type"] for e in events].count("hand.completed") == 10
    irregular = [e for e in events if e["type"] == "irregularity.detected" and e["rules"]]
    assert resolved_holds(events) or irregular
    assert "# 10 hands completed" in proc.stderr


def test_on_the_journal_alone_every_envelope_as_json(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    proc = demo("--hands", "3", "--seed", "1", "--broker", "none", "--json", "--keep", str(kept))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # each device is asked where it is once it is up: a normal start warns of nothing
    log = next(kept.glob("table-*/daemon.log")).read_text(errors="replace")
    assert '"device.queried"' in log
    assert "device.query_failed" not in log
    assert "the events stay in the journal" in proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["type"] for e in events].count("hand.completed") == 3
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    # the surveillance view: hole cards are in the delivered groups
    delivered = [e for e in events if e["type"] == "deal.group.delivered"]
    assert delivered
    assert all(len(e["data"]["cards"]) >= 1 for e in delivered)


def test_on_the_feig_reader_crosstalk_makes_no_irregularity() -> None:
    """``--reader feig``: the FEIG simulator's antennas hear their neighbours' cards one sweep in
    ten; the driver's arbitration keeps that from the core."""
    proc = demo(
        "--reader", "feig", "--hands", "5", "--seed", "2", "--irregularities", "0",
        "--broker", "none", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["type"] for e in events].count("hand.completed") == 5
    irregular = [e for e in events if e["type"] == "irregularity.detected"]
    assert [(e["hand_id"], e["data"]) for e in irregular] == []
    online = [e for e in events if e["type"] == "device.status" and "ID ISC" in str(e["data"])]
    assert online, "the reader is the FEIG simulator"


def test_mistakes_are_held_and_resolved_end_to_end(broker_url: str) -> None:
    proc = demo(
        "--hands", "8", "--seed", "11", "--irregularities", "0.7", "--json",
        "--broker", broker_url,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["type"] for e in events].count("hand.completed") == 8
    cited = {rule for e in events if e["type"] == "irregularity.detected" for rule in e["rules"]}
    assert resolved_holds(events) or cited, "no mistake was caught"


def test_an_unreachable_broker_is_named_and_nothing_starts() -> None:
    url = f"mqtt://127.0.0.1:{free_port()}"
    proc = demo("--hands", "1", "--broker", url, timeout=120)
    assert proc.returncode == 2
    assert f"cannot reach the broker at {url}" in proc.stderr
    assert proc.stdout == ""


@contextlib.contextmanager
def ctrl_c_reaches_children() -> Iterator[None]:
    """A process started meanwhile takes Ctrl-C, even if this one ignores it (a test run started
    in the background, ``make test &``, ignores SIGINT, and so would every child it starts: the
    demo would never hear the Ctrl-C and play on)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_demo(proc: subprocess.Popen[Any], children: list[int]) -> None:
    """Whatever a failed test left running: the demo, its pipes, the processes it started."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    stop_leftovers(children)


def test_ctrl_c_stops_every_process(broker_url: str) -> None:
    with ctrl_c_reaches_children():
        proc = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "demo", "--seed", "3", "--broker", broker_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
    children: list[int] = []
    try:
        assert proc.stdout is not None
        # a hand was completed at the table (the devices and the daemon are up); however long
        # that takes on a busy machine, the test's own timeout is the bound
        while True:
            line = proc.stdout.readline()
            assert line, f"the demo ended early: {proc.stderr.read() if proc.stderr else ''}"
            if parse_line(line)["type"] == "hand.completed":
                break
        children = [pid for pid in descendants_of(proc.pid) if alive(pid)]
        # the daemon, the two simulators, the launcher that forked them (and a broker)
        assert len(children) >= 4
        proc.send_signal(signal.SIGINT)
        # the rig stops each child with SIGTERM, then SIGKILL after ten seconds: bounded
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
        # the hands completed before the Ctrl-C are counted, not only those of full tables
        summary = re.search(r"# (\d+) hands completed", err)
        assert summary is not None, err[-3000:]
        assert int(summary[1]) >= 1
        assert not [pid for pid in children if alive(pid)]
    finally:
        stop_demo(proc, children)


@pytest.mark.parametrize(
    ("through", "signalled"),
    [("broker", None), ("journal", signal.SIGHUP)],
    ids=["pipe-closed", "hangup"],
)
def test_a_reader_that_goes_away_or_a_closed_terminal_stops_it_and_leaves_nothing(
    through: str, signalled: signal.Signals | None, broker_url: str
) -> None:
    """``tablectl demo --json | head -1``: once the pipe is closed (or the terminal hangs up)
    the demo stops every process and removes its temporary directory, which holds the table's
    private keys and journal."""
    # the demo's temporary directory holds its Unix sockets, whose paths have room for 107
    # bytes: a short directory of the test's own, not one under tmp_path
    temporary = Path(tempfile.mkdtemp(prefix="demo-", dir="/tmp"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "demo",
            "--json",
            "--broker",
            broker_url if through == "broker" else "none",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(temporary)},
    )
    children: list[int] = []
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        first = proc.stdout.readline()
        assert first, f"the demo ended early: {proc.stderr.read().decode(errors='replace')}"
        assert json.loads(first)["schema"] == "tablectl.event/1"
        assert any(temporary.iterdir())  # its directory, while it runs
        children = [pid for pid in descendants_of(proc.pid) if alive(pid)]
        assert len(children) >= 3  # the daemon and the two simulators, at least
        if signalled is None:
            proc.stdout.close()  # the reader goes away: the next line written breaks the pipe
        else:
            proc.send_signal(signalled)
        err = proc.stderr.read().decode(errors="replace")
        assert proc.wait(timeout=120) == 0, err[-3000:]
        assert "Traceback" not in err
        assert "BrokenPipeError" not in err
        assert list(temporary.iterdir()) == []
        assert not [pid for pid in children if alive(pid)]
    finally:
        stop_demo(proc, children)
        shutil.rmtree(temporary, ignore_errors=True)
