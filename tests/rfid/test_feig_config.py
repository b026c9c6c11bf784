"""The ``feig-isc`` options: the example config checks, and every mistake is one line naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.config import load_config
from drivers.registry import load_driver, option_problems
from drivers.rfid.feig.driver import FeigReader

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "table-feig.example.toml"


def test_the_example_config_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(EXAMPLE)
    rfid = config.devices["rfid"]
    assert rfid.driver == "feig-isc"
    assert load_driver("feig-isc") is FeigReader
    assert option_problems("rfid", rfid.driver, rfid.options) == []
    reader = FeigReader.from_options("rfid", rfid.options)
    assert len(reader.zones) == 14
    assert {address: len(r.antennas) for address, r in reader.readers.items()} == {1: 8, 2: 6}
    monkeypatch.setenv("TABLECTL_JOURNAL__PATH", str(tmp_path / "journal.sqlite"))
    assert main(["config", "check", "--config", str(EXAMPLE)]) == 0
    assert "ok (table T8" in capsys.readouterr().out


def antennas(*entries: tuple[Any, ...]) -> list[dict[str, Any]]:
    """(antenna, zone) or (reader, antenna, zone) each."""
    out = []
    for entry in entries:
        if len(entry) == 2:
            out.append({"antenna": entry[0], "zone": entry[1]})
        else:
            out.append({"reader": entry[0], "antenna": entry[1], "zone": entry[2]})
    return out


GOOD = {"port": "/dev/table/feig", "antennas": antennas((1, "seat:1"), (2, "board"))}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"antennas": antennas((1, "seat:1"), (2, "sofa"))},
            "antennas.1.zone: Value error, unknown zone 'sofa'",
        ),
        (
            {"antennas": antennas((1, "seat:1"), (1, "board"))},
            "two antennas share the antenna reader 255 antenna 1",
        ),
        (
            {"antennas": antennas((2, 3, "seat:1"), (2, 3, "board"))},
            "two antennas share the antenna reader 2 antenna 3",
        ),
        ({"antennas": antennas((1, "board"), (2, "board"))}, "two antennas share the zone board"),
        (
            {"antennas": antennas((0, "board"), (2, "seat:1"))},
            "antennas.0.antenna: Input should be greater than or equal to 1",
        ),
        (
            # ANT_SEL is one byte: eight antennas a reader (ID ISC.MU02 manual p. 76)
            {"antennas": antennas((9, "board"), (2, "seat:1"))},
            "antennas.0.antenna: Input should be less than or equal to 8",
        ),
        (
            {"antennas": antennas((1, 1, "board"), (2, "seat:1"))},
            "several readers share the line: every antenna must name its reader's COM-ADR",
        ),
        (
            {"antennas": antennas((256, 1, "board"), (2, 2, "seat:1"))},
            "antennas.0.reader: Input should be less than or equal to 255",
        ),
        ({"antennas": []}, "antennas: Tuple should have at least 1 item"),
        ({"vid": 0x1209, "pid": 1}, "give either port (serial) or vid and pid (USB), not both"),
        ({"port": None, "vid": 0x1209}, "a USB reader needs both vid and pid"),
        (
            {
                "port": None,
                "vid": 0x0AB1,
                "pid": 1,
                "antennas": antennas((1, 1, "board"), (2, 1, "seat:1")),
            },
            "a USB reader is one reader",
        ),
        ({"parity": "mark"}, "parity: Input should be 'none', 'even' or 'odd'"),
        ({"scan_period_ms": -1}, "scan_period_ms: Input should be greater than or equal to 0"),
        ({"antenas": []}, "antenas: Extra inputs are not permitted"),
    ],
)
def test_each_mistake_is_one_line(change: dict[str, Any], expected: str) -> None:
    options = {key: value for key, value in {**GOOD, **change}.items() if value is not None}
    problems = option_problems("rfid", "feig-isc", options)
    assert len(problems) == 1, problems
    assert problems[0].startswith("devices.rfid.")
    assert expected in problems[0]
    assert "\n" not in problems[0]


def test_config_check_names_the_feig_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "table.toml"
    text = EXAMPLE.read_text(encoding="utf-8").replace('zone = "burn"', 'zone = "seat:2"')
    config.write_text(text.replace('keyring = "keyring.example.toml"', "require_signed = false"))
    assert main(["config", "check", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert "devices.rfid.(options): Value error, two antennas share the zone seat:2" in err
