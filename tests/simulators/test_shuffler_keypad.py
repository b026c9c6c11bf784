"""The shuffler simulator on a dealer-paced table: groups from the keypad, stub reshuffles."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cards import STANDARD_DECK, Card, card_code, card_from_code
from drivers.shuffler.codes import DeckVerdict, DeviceState, MsgType
from drivers.shuffler.events import EVENTS, DeckCheck, GroupDispensedEvent, ShuffleComplete
from drivers.shuffler.messages import DispenseGroup, StartShuffle
from simulators.command_vocabulary import CommandError
from simulators.errors import RefusedError
from simulators.shuffler.commands import DispenseCommand, parse_command
from simulators.shuffler.deck import deck_check
from simulators.shuffler.model import DeviceConfig, ShufflerModel


def model(**config: object) -> ShufflerModel:
    return ShufflerModel(DeviceConfig(firmware=b"fw", **config), random.Random(1), 0.0)  # type: ignore[arg-type]


def shuffled(m: ShufflerModel) -> int:
    m.press(1, 0.0)  # the dealer's shuffle button
    m.tick(10.0)
    m.take_events()
    return m.shuffle_id


def groups(m: ShufflerModel) -> list[GroupDispensedEvent]:
    seen = [EVENTS.decode(t, p) for t, p in m.take_events()]
    return [e for e in seen if isinstance(e, GroupDispensedEvent)]


def test_the_keypad_delivers_the_next_cards_and_numbers_the_groups() -> None:
    m = model(order=("As", "Kd", "Qh", "7c"))
    sid = shuffled(m)
    assert m.dealer_dispense(1, 3, 2) == (
        sid,
        1,
        bytes([card_code(Card("As")), card_code(Card("Kd"))]),
    )
    assert m.dealer_dispense(2, 0, 1)[1:] == (2, bytes([card_code(Card("Qh"))]))
    sent = groups(m)
    # on the wire the identities are withheld (the default policy); the dealer holds the cards
    assert sent == [
        GroupDispensedEvent(sid, 1, 1, 3, b"\xfd\xfd", 50),
        GroupDispensedEvent(sid, 2, 2, 0, b"\xfd", 49),
    ]
    assert m.state is DeviceState.DISPENSING


def test_a_host_group_number_and_a_keypad_one_never_collide() -> None:
    m = model()
    sid = shuffled(m)
    m.handle(MsgType.DISPENSE_GROUP, DispenseGroup(sid, 5, 2, 1, 1).encode(), 0.0)
    assert m.dealer_dispense(1, 2, 2)[1] == 6


def test_the_keypad_is_refused_without_a_good_deck_or_with_the_lid_open() -> None:
    m = model()
    with pytest.raises(RefusedError, match="not in the tray"):
        m.dealer_dispense(1, 1, 2)
    m.next_check = "short"
    shuffled(m)
    with pytest.raises(RefusedError, match="state IDLE"):
        m.dealer_dispense(1, 1, 2)
    shuffled(m)
    m.lid(True)
    with pytest.raises(RefusedError, match="active fault"):
        m.dealer_dispense(1, 1, 2)
    m.lid(False)
    assert m.dealer_dispense(1, 1, 2)[1] == 1
    with pytest.raises(RefusedError, match="cards asked"):
        m.dealer_dispense(7, 1, 51)


def test_a_stub_reshuffle_counts_the_stub_and_the_cards_put_back() -> None:
    m = model(order=("As", "Kd", "Qh", "7c", "2d"))
    first = shuffled(m)
    m.dealer_dispense(1, 1, 2)
    m.dealer_dispense(1, 2, 2)
    stub = m.deck.order[4:] if m.deck is not None else b""
    back = bytes([card_code(Card("7c"))])
    sid = m.reshuffle_stub(back, seed=9, now=1.0)
    assert sid != first
    m.tick(10.0)
    seen = [EVENTS.decode(t, p) for t, p in m.take_events()]
    check = next(e for e in seen if isinstance(e, DeckCheck))
    complete = next(e for e in seen if isinstance(e, ShuffleComplete))
    assert (check.verdict, check.counted, complete.card_count) == (DeckVerdict.OK, 49, 49)
    expected = list(stub + back)
    random.Random(9).shuffle(expected)
    assert m.deck is not None
    assert m.deck.order == bytes(expected)
    # the same deck goes on: its group numbers continue
    assert m.dealer_dispense(3, 0, 3)[1] == 3


def test_after_a_power_cut_the_stub_of_the_retired_deck_is_reshuffled() -> None:
    m = model(seed=5)
    shuffled(m)
    m.dealer_dispense(1, 1, 2)
    m.power_loss(1.0)
    assert m.deck is None
    m.reshuffle_stub(b"", seed=1, now=2.0)
    m.tick(10.0)
    check = next(e for t, p in m.take_events() if isinstance(e := EVENTS.decode(t, p), DeckCheck))
    assert check.counted == 50


@given(
    st.sampled_from(["ok", "short", "extra", "duplicate", "foreign", "unreadable", "wrong_profile"])
)
def test_every_deck_check_problem_is_reported_as_itself(kind: str) -> None:
    order = bytes(card_code(c) for c in STANDARD_DECK)
    check = deck_check(7, order, kind, None)
    expected = {
        "ok": DeckVerdict.OK,
        "short": DeckVerdict.SHORT,
        "extra": DeckVerdict.EXTRA | DeckVerdict.DUPLICATE,
        "duplicate": DeckVerdict.DUPLICATE,
        "foreign": DeckVerdict.FOREIGN_BACK,
        "unreadable": DeckVerdict.UNREADABLE,
        "wrong_profile": DeckVerdict.WRONG_PROFILE,
    }[kind]
    assert check.verdict == expected
    assert all(card_from_code(c) for c in check.missing + check.duplicates)


def test_keypad_commands_are_validated_before_anything_happens() -> None:
    command = parse_command({"dispense": {"purpose": "flop", "count": 3}})
    assert isinstance(command, DispenseCommand)
    assert command.dispense.seat is None
    bad_commands: list[dict[str, object]] = [
        {"dispense": {"purpose": "hole", "seat": 11, "count": 2}},
        {"dispense": {"purpose": "river", "count": 0}},
        {"dispense": {"purpose": "sideways"}},
        {"reshuffle": {"add": ["Xx"], "seed": 1}},
        {"reshuffle": {"add": []}},
        {"deck_check": "bent"},
    ]
    for bad in bad_commands:
        with pytest.raises(CommandError):
            parse_command(bad)


def test_a_host_shuffle_and_the_keypad_share_the_deck() -> None:
    m = model()
    m.handle(MsgType.START_SHUFFLE, StartShuffle().encode(), 0.0)
    m.tick(10.0)
    assert m.dealer_dispense(1, 1, 2)[0] == m.shuffle_id
