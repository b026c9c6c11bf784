"""The offline archive (``make dist``, scripts/make_dist.py) installs a table PC and a pit where
there is no network at all: inside a network namespace with no route (``ip netns``; the test
makes and removes it), ``install.sh`` makes the venv from the archive's wheels alone, and the
installed ``tablectl`` checks the shipped configs and plays a hand of a shipped scenario.

The archive is built for this machine only: its other platforms' wheels are the same pins
downloaded again, which ``make dist`` does and the suite's time does not need.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller import __version__
from tests.netns import Namespace
from tests.packaging.venv import Dists

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow(weight=2),
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]


def run(*command: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, check=False, timeout=300
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{command} failed:\n{done.stdout}{done.stderr}")
    return done


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory, dists: Dists) -> Path:
    """The archive for this machine, of the run's wheel (tests/packaging/conftest.py), unpacked."""
    out = tmp_path_factory.mktemp("dist")
    machine = platform.machine()
    run(
        sys.executable, REPO / "scripts" / "make_dist.py",
        "--platforms", machine, "--out", out, "--wheel", dists.wheel,
    )  # fmt: skip
    (packed,) = out.glob("tablectl-*-offline.tar.gz")
    digest = (out / f"{packed.name}.sha256").read_text().split()[0]
    assert run("sha256sum", packed).stdout.split()[0] == digest
    with tarfile.open(packed) as tar:
        tar.extractall(out, filter="data")
    root = out / f"tablectl-{__version__}-offline"
    assert (root / "wheels" / machine).is_dir()
    return root


@pytest.fixture
def namespace() -> Iterator[str]:
    """A network namespace with no route anywhere (loopback down too)."""
    with Namespace("offline") as made:
        yield made.name


def test_the_archive_installs_a_table_and_a_pit_with_no_network(
    archive: Path, namespace: str, tmp_path: Path
) -> None:
    inside = ("ip", "netns", "exec", namespace)
    unreachable = run(*inside, sys.executable, "-c", _CONNECT, check=False)
    assert unreachable.returncode != 0, "the namespace reaches the network"
    prefix, etc = tmp_path / "opt", tmp_path / "etc"
    installed = run(
        *inside, "env", f"PYTHON={sys.executable}", "PIP_DISABLE_PIP_VERSION_CHECK=1",
        "sh", archive / "install.sh", "--pit", "--no-system", "--prefix", prefix, "--etc", etc,
    )  # fmt: skip
    assert f"tablectl {__version__} build " in installed.stdout
    tablectl = prefix / "venv" / "bin" / "tablectl"
    identity = run(tablectl, "version").stdout.strip()
    shipped = run(tablectl, "version", "--wheel", *archive.glob("tablectl-*.whl")).stdout.strip()
    assert identity == shipped
    assert run(*inside, tablectl, "version", "--verify").returncode == 0
    state = tmp_path / "state"
    env = (
        "env",
        f"TABLECTL_JOURNAL__PATH={state / 'journal.sqlite'}",
        f"TABLECTL_DEVICES__SHUFFLER__STATE_FILE={state / 'shuffler.json'}",
    )
    table = run(*inside, *env, tablectl, "config", "check", "--config", etc / "table.toml")
    assert table.stdout.strip().endswith("ok (table T7, devices: shuffler (virtual))")
    pit = run(*inside, tablectl, "config", "check", "--config", etc / "pit.toml")
    assert "ok" in pit.stdout
    scenario = prefix / "venv" / "share" / "tablectl" / "scenarios" / "normal-hand-4-seats.toml"
    played = run(*inside, tablectl, "scenario", "run", "--core", scenario)
    assert re.fullmatch(
        rf"PASS {re.escape(str(scenario))} \(\d+ events\)", played.stdout.strip().splitlines()[-1]
    )


def test_an_archive_whose_files_were_changed_is_refused(archive: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    run("cp", "-a", archive, copy)
    wheel = next((copy / "wheels" / platform.machine()).glob("*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    refused = run(
        "sh", copy / "install.sh", "--no-system", "--prefix", tmp_path / "opt",
        "--etc", tmp_path / "etc", check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "do not match SHA256SUMS" in refused.stderr
    assert not (tmp_path / "opt").exists()


_CONNECT = "import socket\nsocket.create_connection(('pypi.org', 443), timeout=3)\n"
