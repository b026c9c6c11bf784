"""The shuffler simulator's gated tray: a host-paced table's groups leave when taken."""

from __future__ import annotations

import random

import pytest

from controller.cards import Card, card_code
from drivers.shuffler.codes import MsgType
from drivers.shuffler.events import EVENTS, GroupDispensedEvent
from drivers.shuffler.messages import DispenseGroup
from simulators.command_vocabulary import CommandError
from simulators.errors import RefusedError
from simulators.shuffler.commands import DeliverCommand, TrayCommand, parse_command
from simulators.shuffler.model import DeviceConfig, ShufflerModel


def gated(order: tuple[str, ...] = ("As", "Kd", "Qh", "7c", "2d")) -> tuple[ShufflerModel, int]:
    m = ShufflerModel(DeviceConfig(firmware=b"fw", order=order), random.Random(1), 0.0)  # type: ignore[arg-type]
    m.tray_gated = True
    m.press(1, 0.0)
    m.tick(10.0)
    m.take_events()
    return m, m.shuffle_id


def groups(m: ShufflerModel) -> list[GroupDispensedEvent]:
    seen = [EVENTS.decode(t, p) for t, p in m.take_events()]
    return [e for e in seen if isinstance(e, GroupDispensedEvent)]


def ask(m: ShufflerModel, sid: int, group: int, count: int, purpose: int = 3) -> int:
    """The host's DISPENSE_GROUP; the response type (ERROR when refused)."""
    request = DispenseGroup(sid, group, count, purpose, 0).encode()
    return m.handle(MsgType.DISPENSE_GROUP, request, 0.0)[0]


def test_a_host_group_waits_in_the_tray_until_the_dealer_takes_it() -> None:
    m, sid = gated()
    assert ask(m, sid, 1, 3) == MsgType.DISPENSE_GROUP
    assert groups(m) == []  # accepted, not delivered
    assert [(g.group, g.size) for g in m.queued] == [(1, 3)]
    assert m.deliver() == (sid, 1, bytes(card_code(Card(c)) for c in ("As", "Kd", "Qh")))
    assert groups(m) == [GroupDispensedEvent(sid, 1, 3, 0, b"\xfd\xfd\xfd", 49)]
    assert m.queued == []


def test_a_misfeed_delivers_another_count_and_the_number_stays_taken() -> None:
    m, sid = gated()
    ask(m, sid, 1, 1, purpose=4)
    assert m.deliver(2)[2] == bytes(card_code(Card(c)) for c in ("As", "Kd"))
    [event] = groups(m)
    assert (event.group, len(event.cards), event.remaining) == (1, 2, 50)
    # a replayed or repeated group number is refused, delivered or waiting
    assert ask(m, sid, 1, 1) == MsgType.ERROR
    assert ask(m, sid, 2, 1) == MsgType.DISPENSE_GROUP
    assert ask(m, sid, 2, 1) == MsgType.ERROR
    assert [g.group for g in m.queued] == [2]


def test_nothing_to_take_is_refused_and_a_new_shuffle_drops_what_waited() -> None:
    m, sid = gated()
    with pytest.raises(RefusedError):
        m.deliver()
    ask(m, sid, 1, 2)
    m.press(1, 20.0)  # a new shuffle: the old deck and its waiting group are gone
    assert m.queued == []
    with pytest.raises(RefusedError):
        m.deliver()


def test_tray_and_deliver_commands_are_validated() -> None:
    assert isinstance(parse_command({"tray": "gated"}), TrayCommand)
    deliver = parse_command({"deliver": {"count": 4}})
    assert isinstance(deliver, DeliverCommand)
    assert deliver.deliver.count == 4
    for bad in ({"tray": "ajar"}, {"deliver": {"count": 0}}, {"deliver": {"cards": 2}}):
        with pytest.raises(CommandError):
            parse_command(bad)
