"""A damaged journal (truncated, a garbage header, flipped bytes) is named in one line with what
to do by ``run``, ``verify`` and ``export``, never with a traceback; ``salvage`` keeps every
intact row in a new journal and says what it could not keep."""

from __future__ import annotations

import asyncio
import contextlib
import io
import random
import sqlite3
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.cli import main
from controller.config import TableConfig
from controller.shell.cli import journal_failure
from controller.shell.daemon import Daemon
from controller.shell.journal import Journal
from controller.table.state import Phase
from tests.integration.conftest import REPO
from tests.shell.inprocess import Running, config_for, now, phase, request
from tests.waiting import until

Corruption = Callable[[bytes], bytes]


@cache
def played_journal() -> bytes:
    """A journal of a hand being played, folded into one file (no WAL), as bytes."""
    with tempfile.TemporaryDirectory() as directory:
        config = config_for(Path(directory))

        async def play() -> None:
            async with Running(config) as daemon:
                answer = await daemon.commands.handle("start_hand", request(transaction="s"), now())
                assert answer["status"] == "ok"
                await until(lambda: phase(daemon) is Phase.BETTING)
                hand = daemon.runner.state.hand
                assert hand is not None
                assert hand.chips.round is not None
                seat = hand.chips.round.to_act
                body = request(transaction="c", seat=seat, action="call")
                assert (await daemon.commands.handle("action", body, now()))["status"] == "ok"

        asyncio.run(play())
        return config.journal.path.read_bytes()


def truncated(fraction: float) -> Corruption:
    return lambda data: data[: int(len(data) * fraction)]


def garbage_header(data: bytes) -> bytes:
    return random.Random(5).randbytes(100) + data[100:]


def flipped(flips: list[tuple[float, int]]) -> Corruption:
    def corrupt(data: bytes) -> bytes:
        out = bytearray(data)
        for where, mask in flips:
            out[int(where * (len(out) - 1))] ^= mask
        return bytes(out)

    return corrupt


def damaged_config(directory: Path, corrupt: Corruption) -> TableConfig:
    directory.mkdir(parents=True, exist_ok=True)
    config = config_for(directory)
    config.journal.path.write_bytes(corrupt(played_journal()))
    return config


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def start(config: TableConfig) -> str | None:
    """What ``tablectl run`` does at start, up to READY or the hold: None when it gets there,
    else its one line (any other exception fails the test with its traceback)."""
    try:
        daemon = Daemon(config)
        try:
            daemon.prepare()
            daemon._preload_nonces()
        finally:
            daemon.writer.journal.close()
    except Exception as exc:
        line = journal_failure(exc, config.journal.path)
        if line is None:
            pytest.fail("".join(traceback.format_exception(exc)))
        return line
    return None


def check_everything(directory: Path, corrupt: Corruption) -> dict[str, object]:
    """Run, verify, export and salvage on a damaged copy: never a traceback, and a failure is
    one line naming the file and what to do."""
    config = damaged_config(directory, corrupt)
    path = str(config.journal.path)
    seen: dict[str, object] = {"run": start(config)}
    if seen["run"] is not None:
        line = str(seen["run"])
        assert "\n" not in line
        assert path in line
    for verb in (["verify"], ["export"], ["export", "--phh"], ["export", "--rulings"]):
        code, _, err = cli("journal", *verb, "--journal", path)
        assert "Traceback" not in err
        if verb != ["verify"] and code != 0:
            assert len(err.strip().splitlines()) == 1, err
            assert path in err
        seen[" ".join(verb)] = code
    out_path = directory / "salvaged.sqlite"
    code, out, err = cli("journal", "salvage", "--journal", path, "--out", str(out_path))
    assert "Traceback" not in err
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
    else:
        salvaged = Journal.open_existing(out_path)
        report = salvaged.verify()
        assert report.damaged is None
        assert (code == 0) == report.ok, (out, report.problems)
        salvaged.close()
    seen["salvage"] = code
    return seen


def test_a_journal_whole_is_verified_exported_and_salvaged_whole(tmp_path: Path) -> None:
    seen = check_everything(tmp_path, lambda data: data)
    assert seen == {
        "run": None,
        "verify": 0,
        "export": 0,
        "export --phh": 0,
        "export --rulings": 0,
        "salvage": 0,
    }


@pytest.mark.parametrize(
    "corrupt",
    [truncated(0.6), truncated(0.05), truncated(0), garbage_header],
    ids=["truncated", "truncated-to-its-header", "emptied", "garbage-header"],
)
def test_a_damaged_file_is_named_in_one_line_with_what_to_do(
    tmp_path: Path, corrupt: Corruption
) -> None:
    config = damaged_config(tmp_path, corrupt)
    line = start(config)
    if corrupt is not truncated(0) and line is not None:
        assert "salvage" in line or "not a journal" in line
    seen = check_everything(tmp_path / "again", corrupt)
    assert seen["verify"] != 0 or seen["run"] is None


def test_salvage_keeps_the_intact_rows_and_names_the_others(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    path.write_bytes(played_journal())
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        conn.execute("UPDATE events SET body = 'damaged' WHERE seq IN (3, 4, 9)")
        conn.execute("DELETE FROM inputs WHERE id = 5")
    code, out, _ = cli("journal", "salvage", "--journal", str(path), "--out", str(tmp_path / "n"))
    assert code == 1
    assert "could not keep events 3-4: content does not match its hash" in out
    assert "could not keep events 9: content does not match its hash" in out
    assert "could not keep inputs 5: missing" in out
    assert "journal_accept" in out
    salvaged = Journal.open_existing(tmp_path / "n")
    assert salvaged.counts()["events"] == rows - 3
    assert salvaged.last_seq() >= rows  # no event number is given twice
    report = salvaged.verify()
    assert any("missing" in p for p in report.problems)  # the gaps stay visible
    salvaged.close()
    again, _, err = cli("journal", "salvage", "--journal", str(path), "--out", str(tmp_path / "n"))
    assert again == 2
    assert "exists" in err


def test_a_journal_salvaged_with_gaps_holds_the_table_until_accepted(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(played_journal())
    with sqlite3.connect(damaged) as conn:
        conn.execute("UPDATE events SET body = 'damaged' WHERE seq = 3")
    assert (
        cli("journal", "salvage", "--journal", str(damaged), "--out", str(config.journal.path))[0]
        == 1
    )
    assert start(config) is None
    daemon = Daemon(config)
    daemon.prepare()
    assert [a.kind for a in daemon.integrity.alarms] == ["chain", "replay"]  # event 3 is gone
    daemon.writer.journal.close()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), min_size=1, max_size=12))
@example(flips=[(0.890625, 128)])  # an input's body reads back NULL (a record header's type)
@example(flips=[(0.025, 60)])  # the schema's text damaged: SQLite quotes it back, newline and all
def test_random_byte_flips_never_give_a_traceback(flips: list[tuple[float, int]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        check_everything(Path(directory), flipped(flips))


@pytest.mark.parametrize(
    "corrupt",
    [truncated(0.6), garbage_header, flipped([(0.03, 255), (0.04, 255), (0.05, 255)])],
    ids=["truncated", "garbage-header", "byte-flips"],
)
def test_tablectl_run_names_a_damaged_journal_in_one_line_and_exits_3(
    tmp_path: Path, corrupt: Corruption
) -> None:
    """The real command, as systemd starts it: one line on stderr, no traceback, and the
    status the unit does not restart on (RestartPreventExitStatus=3)."""
    config = damaged_config(tmp_path, corrupt)
    assert start(config) is not None  # the start reads the damaged part
    text = config_text(config)
    (tmp_path / "table.toml").write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "run", "--config", str(tmp_path / "table.toml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"tablectl run: {config.journal.path}")
    assert "tablectl journal salvage" in lines[0]


def config_text(config: TableConfig) -> str:
    """The TOML of a config made by ``config_for``."""
    return (
        '[table]\nid = "T1"\nstacks = { 1 = 50, 2 = 50, 3 = 50 }\nbutton = 3\nblinds = [1, 2]\n'
        f'[devices.shuffler]\ndriver = "virtual"\nseed = 3\n'
        f'state_file = "{config.devices["shuffler"].options["state_file"]}"\n'
        "[security]\nrequire_signed = false\n"
        f'[broker]\nhost = "127.0.0.1"\nport = {config.broker.port}\n'
        f'[journal]\npath = "{config.journal.path}"\n'
    )
