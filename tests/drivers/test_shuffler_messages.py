"""Every shuffler payload round-trips; short ones give clear errors; trailing bytes are ignored."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.table.inputs import DeckFault, Purpose
from drivers.shuffler.codes import FAULTS, Capability
from drivers.shuffler.convert import deck_faults, to_input
from drivers.shuffler.events import (
    EVENTS,
    DeckCheck,
    DeckMoved,
    GroupDispensedEvent,
    OperatorInput,
    ShuffleComplete,
    ShuffleStarted,
    StateChanged,
)
from drivers.shuffler.messages import (
    ChallengeResult,
    ClearFault,
    Counters,
    DeckReveal,
    DispenseGroup,
    FaultList,
    FwChallenge,
    Identity,
    PlanStep,
    RevealDeck,
    SetConfig,
    StartShuffle,
    StartShuffleResult,
    Status,
    TimeSync,
    TimeSyncResult,
)
from drivers.tsp.common import ErrorResponse, FaultCleared, FaultRaised, Result
from drivers.tsp.events import UnknownEvent
from drivers.tsp.payload import PayloadError

u8, u16, u32 = st.integers(0, 255), st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF)
text = st.text(max_size=40).filter(lambda s: len(s.encode()) <= 255)
codes = st.binary(max_size=60)

faults = st.builds(FaultRaised, u16, u16, u8, u8, u8, text)
MESSAGES: list[st.SearchStrategy[Any]] = [
    st.builds(
        Identity,
        u8,
        u8,
        text,
        text,
        text,
        text,
        text,
        st.binary(min_size=32, max_size=32),
        u32,
        u32.map(Capability),
        u16,
    ),
    st.builds(Status, u8, u16, u8, u32, u8, u8, u32, u32, u8),
    st.builds(ErrorResponse, u8, text),
    st.builds(StartShuffleResult, st.booleans(), u32),
    st.builds(Result, u8),
    st.builds(TimeSyncResult, st.integers(0, 2**64 - 1)),
    st.builds(DeckReveal, u32, st.binary(min_size=16, max_size=16), codes),
    st.builds(Counters, *([u32] * 11)),
    st.builds(ChallengeResult, u8, st.binary(min_size=32, max_size=32)),
    st.builds(FaultList, st.lists(faults, max_size=4).map(tuple)),
    st.builds(
        SetConfig, u8, u8, u8, u8, st.lists(st.builds(PlanStep, u8, u8), max_size=20).map(tuple)
    ),
    st.builds(StartShuffle, u8, u32),
    st.builds(DispenseGroup, u32, u8, u8, u8, u8),
    st.builds(ClearFault, u16),
    st.builds(TimeSync, st.integers(0, 2**64 - 1)),
    st.builds(RevealDeck, u32),
    st.builds(FwChallenge, st.binary(min_size=16, max_size=16)),
    st.builds(StateChanged, u8, u8, u16, u32),
    st.builds(ShuffleStarted, u32, u8, u32, u8),
    st.builds(DeckCheck, u32, u8, u8, u8, u8, u8, codes, codes),
    st.builds(ShuffleComplete, u32, u8, u32, u8, st.binary(min_size=32, max_size=32)),
    st.builds(DeckMoved, u32, u8),
    st.builds(GroupDispensedEvent, u32, u8, u8, u8, codes, u8),
    faults,
    st.builds(FaultCleared, u16, u16, u8),
    st.builds(OperatorInput, u8),
]


@given(st.one_of(MESSAGES), st.binary(max_size=8))
def test_round_trip_with_trailing_bytes(message: Any, trailing: bytes) -> None:
    payload = message.encode()
    decoded = type(message).decode(payload + trailing)
    assert decoded.encode() == payload


@given(st.one_of(MESSAGES), st.data())
def test_truncated_payload_raises_payload_error(message: Any, data: st.DataObject) -> None:
    payload = message.encode()
    if not payload or isinstance(message, ErrorResponse):
        return
    cut = data.draw(st.integers(0, len(payload) - 1))
    try:
        decoded = type(message).decode(payload[:cut])
    except PayloadError as exc:
        message_text = str(exc)
        assert "needs" in message_text
        return
    # Only a shorter variable-length field can still parse; it must then differ.
    assert decoded != message


@given(st.integers(0, 255), st.binary(max_size=80))
def test_decode_event_never_raises_anything_but_payload_error(
    msg_type: int, payload: bytes
) -> None:
    with contextlib.suppress(PayloadError):
        EVENTS.decode(msg_type, payload)


def test_unknown_event_type_is_kept() -> None:
    assert EVENTS.decode(0x5A, b"\x01") == UnknownEvent(0x5A, b"\x01")


def test_fault_names() -> None:
    assert FAULTS.name(0x0101) == "JAM_INPUT"
    assert FAULTS.code("lid_open") == 0x0201
    assert FAULTS.name(0x0999) == "FAULT_0x0999"
    with pytest.raises(ValueError, match="unknown fault 'NOPE'"):
        FAULTS.code("NOPE")


def test_deck_faults_from_verdict_bits() -> None:
    assert deck_faults(0) == frozenset()
    assert deck_faults(0x05) == {DeckFault.SHORT, DeckFault.DUPLICATE}
    assert deck_faults(0x28) == {DeckFault.FOREIGN_BACK, DeckFault.WRONG_PROFILE}


def test_group_dispensed_conversion() -> None:
    from datetime import UTC, datetime

    ts = datetime(2024, 1, 1, tzinfo=UTC)
    event = GroupDispensedEvent(7, 2, 3, 0, bytes([51, 0xFD, 0xFE]), 40)
    converted = to_input(event, "shuffler", ts)
    assert converted is not None
    assert converted.ts is ts
    assert getattr(converted, "purpose") is Purpose.FLOP  # noqa: B009
    assert getattr(converted, "seat") is None  # noqa: B009
    assert getattr(converted, "cards") == ("As", None, None)  # noqa: B009
    assert to_input(StateChanged(1, 0, 0, 0), "shuffler", ts) is None


def test_ledger_checks_live_cards_against_the_revealed_order() -> None:
    from drivers.shuffler.commitment import deck_commitment
    from drivers.shuffler.integrity import DeckLedger

    order, salt = bytes(range(52)), bytes(16)
    ledger = DeckLedger()
    ledger.observe(ShuffleComplete(9, 0, 100, 52, deck_commitment(9, salt, order)))
    ledger.observe(GroupDispensedEvent(9, 1, 1, 1, bytes([0, 1]), 50))
    ledger.observe(GroupDispensedEvent(9, 2, 1, 2, bytes([0xFD, 7]), 48))
    assert ledger.check(9, DeckReveal(9, salt, order)) == [
        "deck 9 group 2: dispensed 7, order has 3"
    ]
    assert ledger.check(9, DeckReveal(9, bytes(16), order[::-1])) == [
        "deck 9: the revealed order does not match its commitment"
    ]
    assert "no commitment known" in ledger.check(10, DeckReveal(10, salt, order))[0]
    assert "revealed 11" in ledger.check(10, DeckReveal(11, salt, order))[0]
