"""The pty helper, the command vocabulary and scenario files."""

from __future__ import annotations

import errno
import os
import select
from pathlib import Path

import pytest

from simulators.command_vocabulary import CommandError
from simulators.errors import ScenarioError
from simulators.pty import PtyCable
from simulators.shuffler.commands import (
    COMMANDS,
    DeckCommand,
    FaultCommand,
    parse_command,
)


def test_pty_is_raw_both_ways_and_symlinked(tmp_path: Path) -> None:
    port = PtyCable(tmp_path / "dev")
    path = port.plug()
    assert os.readlink(tmp_path / "dev") == path
    slave = os.open(path, os.O_RDWR | os.O_NOCTTY)
    try:
        every_byte = bytes(range(256))
        assert port.write(every_byte) == 256
        received = b""
        while len(received) < 256 and select.select([slave], [], [], 2)[0]:
            received += os.read(slave, 512)
        assert received == every_byte  # no echo, no CR/LF or control-character processing
        os.write(slave, every_byte)
        echoed = b""
        while len(echoed) < 256 and select.select([port.master_fd], [], [], 2)[0]:
            echoed += port.read()
        assert echoed == every_byte
    finally:
        os.close(slave)
    port.unplug()
    assert not port.plugged


def test_unplug_hangs_up_and_replug_repoints_the_link(tmp_path: Path) -> None:
    port = PtyCable(tmp_path / "dev")
    first = port.plug()
    slave = os.open(first, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    port.unplug()
    # The driver's end sees a hang-up: EIO, or end of file.
    try:
        outcome: bytes | int = os.read(slave, 10)
    except OSError as exc:
        outcome = exc.errno or 0
    assert outcome in (b"", errno.EIO)
    os.close(slave)
    second = port.replug()
    assert os.readlink(tmp_path / "dev") == second
    port.unplug()
    assert not (tmp_path / "dev").exists()


def test_commands_parse_and_errors_name_the_key() -> None:
    assert parse_command({"fault": "crc", "rate": 0.01}) == FaultCommand(fault="crc", rate=0.01)
    deck = parse_command({"deck": {"order": ["as", "10d"]}})
    assert isinstance(deck, DeckCommand)
    assert deck.deck.order == ["As", "Td"]
    with pytest.raises(CommandError, match="rate: Input should be less than or equal to 1"):
        parse_command({"fault": "crc", "rate": 2})
    with pytest.raises(CommandError, match="code: Value error, unknown fault 'JAM'"):
        parse_command({"fault": "jam", "code": "JAM"})
    with pytest.raises(CommandError, match="colour: Extra inputs are not permitted"):
        parse_command({"fault": "jam", "colour": 1})
    with pytest.raises(CommandError, match="exactly one of the keys"):
        parse_command({"fault": "jam", "burst": 3})
    with pytest.raises(CommandError, match="JSON object"):
        parse_command([1])


def test_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "faults.toml"
    path.write_text(
        '[[step]]\nat = 2\nfault = "jam"\ncode = "JAM_INPUT"\n\n'
        '[[step]]\nat = 0.5\nfault = "crc"\nrate = 0.01\n',
        encoding="utf-8",
    )
    steps = COMMANDS.load_scenario(path).steps
    assert [(at, type(cmd).__name__) for at, cmd in steps] == [
        (0.5, "FaultCommand"),
        (2.0, "FaultCommand"),
    ]
    path.write_text('[[step]]\nat = 1\nfault = "melt"\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match="step 1: fault: Input should be"):
        COMMANDS.load_scenario(path)
    path.write_text('[[step]]\nfault = "jam"\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match="step 1: 'at' must be seconds"):
        COMMANDS.load_scenario(path)
    path.write_text("[device]\nseed = 1\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"unknown key\(s\) device"):
        COMMANDS.load_scenario(path)
    path.write_text("seed = 1\n", encoding="utf-8")  # the shuffler's seeds are options
    with pytest.raises(ScenarioError, match=r"unknown key\(s\) seed"):
        COMMANDS.load_scenario(path)
