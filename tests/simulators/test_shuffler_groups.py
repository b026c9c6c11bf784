"""The shuffler simulator's ``groups`` command: what left the tray of the deck in it.

``tablectl sim rfid deal`` reads it to know which cards the dealer holds and where they go; it
changes nothing, shows the faces whatever the identity policy on the wire, and forgets a deck
once another is shuffled.
"""

from __future__ import annotations

import random

import pytest

from drivers.shuffler.codes import MsgType
from drivers.shuffler.messages import DispenseGroup
from simulators.command_vocabulary import CommandError
from simulators.pty import PtyCable
from simulators.shuffler.commands import GroupsCommand, parse_command
from simulators.shuffler.model import DeviceConfig, ShufflerModel
from simulators.shuffler.server import SimulatorServer

ORDER = ("As", "Kd", "Qh", "7c", "2d", "9s")


def shuffled() -> ShufflerModel:
    config = DeviceConfig(firmware=b"fw", order=ORDER)  # type: ignore[arg-type]
    model = ShufflerModel(config, random.Random(1), 0.0)
    model.press(1, 0.0)
    model.tick(10.0)
    return model


async def test_groups_lists_what_left_the_tray_host_and_keypad_alike() -> None:
    model = shuffled()
    server = SimulatorServer(model, PtyCable(None))
    assert server.handle({"groups": True}) == {
        "ok": True,
        "shuffle_id": model.shuffle_id,
        "groups": [],
    }
    host = DispenseGroup(model.shuffle_id, 1, 2, 1, 3).encode()  # hole, seat 3, faces withheld
    assert model.handle(MsgType.DISPENSE_GROUP, host, 11.0)[0] == MsgType.DISPENSE_GROUP
    server.handle({"dispense": {"purpose": "flop", "count": 3}})
    deck = model.deck
    assert deck is not None
    taken = deck.position
    reply = server.handle({"groups": True})
    assert reply["groups"] == [
        {"group": 1, "purpose": "hole", "seat": 3, "cards": ["As", "Kd"]},
        {"group": 2, "purpose": "flop", "seat": None, "cards": ["Qh", "7c", "2d"]},
    ]
    assert (model.deck, deck.position, taken) == (deck, 5, 5)  # nothing dealt by looking
    # a new shuffle: the groups of the retired deck are not the dealer's to deal any more
    model.press(1, 20.0)
    model.tick(30.0)
    assert server.handle({"groups": True})["groups"] == []


def test_a_model_without_a_deck_has_no_groups() -> None:
    model = ShufflerModel(DeviceConfig(firmware=b"fw"), random.Random(1), 0.0)
    assert model.delivered() == (None, [])


def test_the_groups_command_takes_no_options() -> None:
    assert isinstance(parse_command({"groups": True}), GroupsCommand)
    for bad in ({"groups": False}, {"groups": True, "seat": 1}, {"groups": "all"}):
        with pytest.raises(CommandError):
            parse_command(bad)
