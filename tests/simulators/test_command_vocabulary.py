"""The simulators' vocabularies: each command's key is its model's first field, so the keys on
the wire (control channel and scenario files) are pinned here, device by device."""

from __future__ import annotations

from typing import Any

import pytest

from simulators.command_vocabulary import (
    CommandedDevice,
    CommandError,
    CommandModel,
    StatusCommand,
    Vocabulary,
)
from simulators.errors import RefusedError, ScenarioError
from simulators.feig.commands import COMMANDS as FEIG
from simulators.pn532.commands import COMMANDS as PN532
from simulators.rfid.commands import COMMANDS as RFID
from simulators.shuffler.commands import COMMANDS as SHUFFLER

READER = ["place", "remove", "tags"]
SHUFFLER_KEYS = ["fault", "deck_check", "deck", "press", "clear", "burst", "dispense", "tray"]
SHUFFLER_KEYS += ["deliver", "reshuffle", "status", "groups"]


@pytest.mark.parametrize(
    ("vocabulary", "keys", "scenario"),
    [
        (SHUFFLER, SHUFFLER_KEYS, ()),
        (RFID, [*READER, "fault", "clear", "status"], ("seed", "tags")),
        (PN532, [*READER, "fault", "clear", "status"], ("seed", "tags")),
        (FEIG, [*READER, "slide", "fault", "clear", "setup", "status"], ("seed",)),
    ],
)
def test_each_simulator_has_its_keys(
    vocabulary: Vocabulary[Any], keys: list[str], scenario: tuple[str, ...]
) -> None:
    assert list(vocabulary.by_key) == keys
    assert vocabulary.scenario_keys == scenario
    with pytest.raises(CommandError, match=f"exactly one of the keys {', '.join(keys)};"):
        vocabulary.parse({})


class Ping(CommandModel):
    ping: int


class Echo(CommandModel):
    ping: str


def test_a_vocabulary_of_one_command_and_one_with_a_key_twice() -> None:
    assert Vocabulary[Ping](Ping).parse({"ping": 3}) == Ping(ping=3)
    with pytest.raises(ValueError, match="two commands have the same key"):
        Vocabulary[Ping | Echo](Ping | Echo)


def test_a_scenario_document_takes_only_its_declared_top_level_keys() -> None:
    vocabulary = Vocabulary[Ping | StatusCommand](Ping | StatusCommand, scenario=("ping",))
    scenario = vocabulary.parse_scenario({"ping": 1, "step": [{"at": 2, "status": True}]})
    assert (scenario.seed, scenario.initial, scenario.steps) == (
        None,
        (Ping(ping=1),),
        ((2.0, StatusCommand()),),
    )
    with pytest.raises(ScenarioError, match=r"unknown key\(s\) seed"):
        vocabulary.parse_scenario({"seed": 1})
    with pytest.raises(ScenarioError, match="ping: Input should be a valid integer"):
        vocabulary.parse_scenario({"ping": "x"})


class Counter(CommandedDevice):
    COMMANDS = Vocabulary[Ping | StatusCommand](Ping | StatusCommand)

    def apply(self, command: Ping | StatusCommand) -> dict[str, Any]:
        if isinstance(command, Ping) and command.ping < 0:
            raise RefusedError(None, "not below zero")
        return {"seen": command.model_dump()}


def test_a_commanded_device_replies_refuses_and_leaves_bad_commands_to_its_channel() -> None:
    device = Counter()
    assert device.handle({"ping": 2}) == {"ok": True, "seen": {"ping": 2}}
    assert device.handle({"ping": -1}) == {"ok": False, "error": "not below zero"}
    assert device.reply(StatusCommand()) == {"ok": True, "seen": {"status": True}}
    with pytest.raises(CommandError, match="ping: Input should be a valid integer"):
        device.handle({"ping": "two"})
