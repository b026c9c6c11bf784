"""The FEIG simulator's radio, command vocabulary and command line."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from simulators.command_vocabulary import CommandError
from simulators.errors import ScenarioError
from simulators.feig.commands import COMMANDS, FaultCommand, SlideCommand, parse_command
from simulators.feig.radio import AntennaFault, Radio

UIDS = [bytes.fromhex(f"e00401500000{n:04x}") for n in range(4)]


def sweeps(radio: Radio, count: int) -> list[list[tuple[bytes, int, int]]]:
    return [
        [(h.uid, h.antenna, h.rssi) for h in radio.inventory([1, 2, 3])[0]] for _ in range(count)
    ]


def test_crosstalk_is_heard_on_neighbours_weaker_at_its_rate() -> None:
    radio = Radio(3, random.Random(1), crosstalk=0.1)
    radio.place(UIDS[0], 2)
    own = radio.strength[UIDS[0]]
    reads = [r for sweep in sweeps(radio, 2000) for r in sweep]
    neighbours = [r for r in reads if r[1] != 2]
    assert {r[1] for r in neighbours} == {1, 3}
    assert 0.07 < len(neighbours) / 4000 < 0.13  # a read in ten, on each neighbour
    assert all(rssi <= own + 2 - 12 for _, _, rssi in neighbours)
    assert len([r for r in reads if r[1] == 2]) == 2000


def test_the_third_card_of_a_stack_reads_only_sometimes_unless_spread() -> None:
    radio = Radio(3, random.Random(2), stacked_miss=0.5)
    for uid in UIDS[:3]:
        radio.place(uid, 1)
    heard = [{uid for uid, _, _ in sweep} for sweep in sweeps(radio, 400)]
    assert all(set(UIDS[:2]) <= h for h in heard)
    assert 120 < sum(UIDS[2] in h for h in heard) < 280
    radio.spread = {1}
    assert all(UIDS[2] in {u for u, _, _ in sweep} for sweep in sweeps(radio, 50))


def test_a_slide_is_heard_on_both_antennas_then_on_the_new_one() -> None:
    radio = Radio(3, random.Random(3))
    radio.place(UIDS[0], 1)
    radio.slide(UIDS[0], 3, inventories=3)
    on_way = sweeps(radio, 3)
    assert all({a for _, a, _ in sweep} == {1, 3} for sweep in on_way)
    assert on_way[0][0][2] > on_way[2][0][2]  # fading on the antenna it leaves
    assert radio.where(UIDS[0]) == 3
    assert {a for _, a, _ in sweeps(radio, 1)[0]} == {3}


def test_broken_antennas_hear_nothing() -> None:
    radio = Radio(3, random.Random(4))
    radio.place(UIDS[0], 1)
    radio.faults[1] = AntennaFault.OPEN
    assert sweeps(radio, 1) == [[]]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ({"fault": "crosstalk"}, "crosstalk needs a rate"),
        ({"fault": "antenna", "code": "open"}, "antenna needs the antenna number"),
        ({"fault": "stall", "rate": 0.1}, "stall does not take rate"),
        ({"place": ["e004015000000001"], "antenna": 0}, "antenna"),
        ({"place": ["zz"]}, "place"),
        ({"slide": ["e004015000000001"]}, "antenna"),
        ({"clear": "everything"}, "clear"),
        ({"place": [], "remove": []}, "exactly one of the keys"),
    ],
)
def test_bad_commands_name_their_key(command: dict[str, object], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse_command(command)


def test_commands_and_scenarios_parse() -> None:
    slide = parse_command({"slide": ["E0:04:01:50:00:00:00:01"], "antenna": 13})
    assert isinstance(slide, SlideCommand)
    assert (slide.slide, slide.inventories) == (["e004015000000001"], 3)
    fault = parse_command({"fault": "antenna", "antenna": 2, "code": "short"})
    assert isinstance(fault, FaultCommand)
    scenario = COMMANDS.parse_scenario(
        {"seed": 4, "step": [{"at": 1, "fault": "crosstalk", "rate": 0.1}, {"at": 0, "tags": {}}]}
    )
    assert [at for at, _ in scenario.steps] == [0.0, 1.0]
    with pytest.raises(ScenarioError, match="step 1"):
        COMMANDS.parse_scenario({"step": [{"at": 1, "fault": "nope"}]})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--antennas", "14"], "--antennas 14 is not 1…8 (1 reader of 8 antennas: --readers 1,2"),
        (["--readers", "1,2", "--antennas", "17"], "--antennas 17 is not 1…16 (2 readers of 8"),
        (["--readers", "1,1"], "--readers needs distinct COM-ADRs, 0…254"),
        (["--readers", "255"], "--readers needs distinct COM-ADRs, 0…254"),
        (["--crosstalk", "2"], "--crosstalk must be from 0 to 1"),
        (["--scenario", "/nonexistent.toml"], "cannot read"),
    ],
)
def test_the_command_line_refuses_bad_options(
    args: list[str], message: str, tmp_path: Path
) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "sim",
            "feig",
            "--link",
            str(tmp_path / "l"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stderr.count("\n") == 1
