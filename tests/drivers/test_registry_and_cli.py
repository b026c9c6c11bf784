"""The driver is registered, third-party drivers come in by entry point, the simulator by verb."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from controller.cli import build_parser
from drivers.registry import BUILTIN_DRIVERS, load_driver
from drivers.shuffler.driver import ShufflerDriver
from simulators.cli import SIMULATORS


def test_builtin_shuffler_driver() -> None:
    assert BUILTIN_DRIVERS["tsp-shuffler"] == "drivers.shuffler.driver:ShufflerDriver"
    assert load_driver("tsp-shuffler") is ShufflerDriver


def test_third_party_driver_by_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real installed distribution (a dist-info directory on sys.path) declaring the group.
    dist = tmp_path / "acme_shuffler-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-shuffler\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[tablectl.drivers]\nacme-shuffler = acme_shuffler_plugin:AcmeShuffler\n"
    )
    (tmp_path / "acme_shuffler_plugin.py").write_text(
        "from drivers.contract import Device\n\nclass AcmeShuffler(Device):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    driver = load_driver("acme-shuffler")
    assert driver.__name__ == "AcmeShuffler"
    sys.modules.pop("acme_shuffler_plugin", None)


def test_sim_shuffler_verb() -> None:
    assert SIMULATORS["shuffler"] == "simulators.shuffler"
    args = build_parser().parse_args(
        ["sim", "shuffler", "--link", "/tmp/x", "--order", "As,Kd", "--baud", "0"]
    )
    assert (args.link, args.order, args.baud) == (Path("/tmp/x"), "As,Kd", 0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sim", "shuffler", "--seed", "1", "--order", "As"])
