"""An upgrade in place after the journal was pruned, and a rollback: the earlier build's wheel
(made from a fixed commit of this repository) plays a table until retention has pruned the
journal's start; the current wheel, installed over it, continues from the earlier build's last
snapshot (the same journal, chain and epoch; no event id given twice) and ``journal verify``
passes over the whole chain; the earlier build put back refuses the journal in one line
(it cannot read the new snapshots, and the start it would replay from is pruned) and leaves it
as it was, and the current build goes on again.

Each build runs tests/packaging/table_life.py with its venv's python, outside the checkout.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller import __version__
from controller.shell.checkpoint import FORMAT_NAME
from tests.packaging.venv import REPO, Dists, Venv

pytestmark = [pytest.mark.slow(weight=2), pytest.mark.timeout(600)]

#: The earlier build: the last commit before the snapshot format (its snapshots are pickles of
#: its own records, keyed by its core's fingerprint), with retention and pruning as shipped.
EARLIER = "0bf5edd90c942037e760cc31d9172740e678438f"
EARLIER_VERSION = "0.1.0"
LIFE = Path(__file__).with_name("table_life.py")
BUDGET = 200_000  # bytes of segments: the table's first hands are pruned within a few dozen


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, check=False, timeout=300,
        cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


def _wheel(source: Path, out: Path) -> Path:
    out.mkdir()
    _run(sys.executable, "-m", "build", "--wheel", "--outdir", out, source)
    (wheel,) = out.glob("tablectl-*-py3-none-any.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory, dists: Dists) -> tuple[Path, Path]:
    """The earlier build's wheel (from ``git archive`` of its commit) and the current one's (the
    run's, tests/packaging/conftest.py)."""
    root = tmp_path_factory.mktemp("wheels")
    full = _run("git", "-C", REPO, "rev-parse", "--verify", f"{EARLIER}^{{commit}}")
    assert full.stdout.strip() == EARLIER, "the earlier build's commit is not in this clone"
    source = root / "earlier"
    source.mkdir()
    archive = root / "earlier.tar"
    _run("git", "-C", REPO, "archive", "--format=tar", "--output", archive, EARLIER)
    with tarfile.open(archive) as tar:
        tar.extractall(source, filter="data")
    return _wheel(source, root / "earlier-dist"), dists.wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheels: tuple[Path, Path]) -> Iterator[Venv]:
    root = tmp_path_factory.mktemp("upgrade")
    env = Venv.create(root / "venv", root / "work")
    env.pip_install(wheels[0])
    yield env
    shutil.rmtree(env.path, ignore_errors=True)


def _life(venv: Venv, journal: Path, hands: int) -> dict[str, Any]:
    done = venv.run("python", LIFE, journal, str(hands), str(BUDGET), timeout=300)
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _chain_end(journal: Path) -> tuple[Any, ...]:
    """Where the chain ends, the last event key given, and how many snapshots there are."""
    with sqlite3.connect(journal) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        snapshots = conn.execute("SELECT input_id, core FROM snapshots").fetchall()
    return meta["head_pos"], meta["head_hash"], meta["epoch"], seq, snapshots


def _installed(venv: Venv) -> str:
    return venv.run("tablectl", "--version").stdout.split()[-1]


def test_an_upgrade_continues_a_pruned_journal_and_a_rollback_leaves_it_whole(
    venv: Venv, wheels: tuple[Path, Path]
) -> None:
    earlier, current = wheels
    journal = venv.workdir / "journal.sqlite"
    assert _installed(venv) == EARLIER_VERSION

    before = _life(venv, journal, 60)
    assert before["pruned_through"] > 0, "the earlier build's retention pruned nothing"
    assert before["last_seq"] > 0
    assert ": ok (" in venv.run("tablectl", "journal", "verify", "--journal", journal).stdout

    venv.pip_install(current)  # the upgrade, in place (its dependencies as it pins them)
    assert _installed(venv) == __version__ != EARLIER_VERSION
    shown = json.loads(venv.run("tablectl", "journal", "snapshot", "--journal", journal).stdout)
    assert shown["format"] == "pickled"  # what the earlier build left: its last hand's end

    after = _life(venv, journal, 20)
    assert after["start"]["snapshot"] > 0  # from the earlier build's snapshot, not the genesis
    assert after["start"]["snapshot_format"] == "pickled"
    assert after["start"]["diverged"] == []
    assert after["epochs"] == after["epochs_before"] == before["epochs"]  # no new epoch
    assert after["first_seq"] == before["last_seq"] + 1  # no event id given twice
    assert after["hands_started"] == before["hands_started"] + 20
    assert after["stacks"] == before["stacks"]  # no chip made or lost across the upgrade
    assert after["pruned_through"] > before["pruned_through"]  # and retention went on
    verified = venv.run("tablectl", "journal", "verify", "--journal", journal)
    assert ": ok (" in verified.stdout
    assert "pruned" in verified.stdout  # the whole chain, its pruned start named
    shown = json.loads(venv.run("tablectl", "journal", "snapshot", "--journal", journal).stdout)
    assert shown["format"] == FORMAT_NAME  # the current build's own, after its first hand
    assert shown["seq"] == after["last_seq"]
    assert shown["epoch"] == after["epochs"][-1]

    # the rollback: the earlier build refuses the journal in one line and changes nothing
    venv.pip_install("--no-deps", "--force-reinstall", earlier)
    assert _installed(venv) == EARLIER_VERSION
    end = _chain_end(journal)
    refused = venv.run("python", LIFE, journal, "5", str(BUDGET), check=False)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert "no snapshot of this software's core" in line
    assert "pruned" in line
    assert _chain_end(journal) == end  # not a row written
    assert ": ok (" in venv.run("tablectl", "journal", "verify", "--journal", journal).stdout

    # and the current build again: it goes on where it stopped
    venv.pip_install("--no-deps", "--force-reinstall", current)
    again = _life(venv, journal, 5)
    assert again["start"]["snapshot_format"] == FORMAT_NAME
    assert again["first_seq"] == after["last_seq"] + 1
    assert again["epochs"] == before["epochs"]
    assert ": ok (" in venv.run("tablectl", "journal", "verify", "--journal", journal).stdout
