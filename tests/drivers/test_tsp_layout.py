"""A FlatMessage's payload is its fields in order: each one of both message sets round-trips,
a short payload names the message and the field, and unknown enum values are kept as numbers."""

from __future__ import annotations

import contextlib
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import drivers.rfid.tsp_reader.messages
import drivers.shuffler.messages  # noqa: F401 (loads every message class of both sets)
from drivers.rfid.tsp_reader.codes import ScanMode
from drivers.rfid.tsp_reader.events import EVENTS as READER_EVENTS
from drivers.rfid.tsp_reader.messages import SetScan
from drivers.shuffler.events import EVENTS as SHUFFLER_EVENTS
from drivers.shuffler.events import DeckMoved
from drivers.shuffler.messages import Counters
from drivers.tsp.common import ErrorCode, ErrorResponse
from drivers.tsp.events import UnknownEvent
from drivers.tsp.layout import FlatMessage
from drivers.tsp.payload import PayloadError


def _subclasses(cls: type[FlatMessage]) -> set[type[FlatMessage]]:
    found = set()
    for sub in cls.__subclasses__():
        # a slotted dataclass replaces the class it was made from: keep the one its module holds
        if getattr(sys.modules[sub.__module__], sub.__name__, None) is sub:
            found.add(sub)
        found |= _subclasses(sub)
    return found


MESSAGES = sorted(_subclasses(FlatMessage), key=lambda cls: cls.__qualname__)


def test_both_message_sets_use_the_one_codec() -> None:
    names = {cls.__name__ for cls in MESSAGES}
    assert {"StateChanged", "TagArrivedEvent", "FaultRaised", "Identity", "ReaderStatus"} <= names


@pytest.mark.parametrize("cls", MESSAGES, ids=lambda cls: cls.__name__)
@given(payload=st.binary(max_size=96))
def test_a_decoded_message_round_trips(cls: type[FlatMessage], payload: bytes) -> None:
    with contextlib.suppress(PayloadError):
        message = cls.decode(payload)
        assert cls.decode(message.encode()) == message


def test_a_short_payload_names_the_message_and_the_field() -> None:
    with pytest.raises(PayloadError, match=r"DECK_MOVED: field 'what' needs 1 bytes at offset 4"):
        DeckMoved.decode(b"\x01\x00\x00\x00")


def test_an_unknown_enum_value_is_kept_as_its_number() -> None:
    assert SetScan.decode(bytes([9, 0, 1, 2, 1, 1, 0, 0])).mode == 9
    assert SetScan.decode(bytes([1, 0, 1, 2, 1, 1, 0, 0])).mode is ScanMode.TRIGGERED
    assert ErrorResponse.decode(b"\x63").code == 0x63
    assert ErrorResponse.decode(b"\x09").code is ErrorCode.ALREADY_DONE


def test_a_meter_wraps_round_rather_than_overflow() -> None:
    assert Counters.decode(Counters(shuffles=2**32 + 5).encode()).shuffles == 5


def test_an_event_type_a_set_does_not_list_is_kept_unknown() -> None:
    assert SHUFFLER_EVENTS.decode(0x60, b"\x01") == UnknownEvent(0x60, b"\x01")
    assert type(READER_EVENTS.decode(0x60, bytes(20))).__name__ == "TagArrivedEvent"
