"""The simulated shuffler as a pure model: requests in, responses and events out."""

from __future__ import annotations

import hashlib
import random

import pytest

from controller.cards import Card, card_code
from controller.deck_order import deck_order
from drivers.shuffler.codes import DeviceState, IdPolicy, MsgType, ShuffleResult
from drivers.shuffler.commitment import verify_commitment
from drivers.shuffler.events import EVENTS, GroupDispensedEvent, ShuffleComplete
from drivers.shuffler.messages import (
    DeckReveal,
    DispenseGroup,
    Identity,
    RevealDeck,
    SetConfig,
    StartShuffle,
    StartShuffleResult,
    Status,
)
from drivers.tsp.common import ErrorCode, ErrorResponse
from simulators.shuffler.model import DeviceConfig, ShufflerModel


def model(**config: object) -> ShufflerModel:
    return ShufflerModel(DeviceConfig(firmware=b"fw", **config), random.Random(1), 0.0)  # type: ignore[arg-type]


def call(m: ShufflerModel, msg_type: MsgType, payload: bytes = b"", now: float = 0.0) -> bytes:
    rsp_type, body = m.handle(msg_type, payload, now)
    if rsp_type == MsgType.ERROR:
        raise AssertionError(ErrorResponse.decode(body))
    return body


def error(m: ShufflerModel, msg_type: MsgType, payload: bytes = b"") -> ErrorResponse:
    rsp_type, body = m.handle(msg_type, payload, 0.0)
    assert rsp_type == MsgType.ERROR
    return ErrorResponse.decode(body)


def shuffled(m: ShufflerModel) -> int:
    sid = StartShuffleResult.decode(call(m, MsgType.START_SHUFFLE, StartShuffle().encode()))
    m.tick(10.0)
    return sid.shuffle_id


def events(m: ShufflerModel) -> list[object]:
    return [EVENTS.decode(t, p) for t, p in m.take_events()]


def test_identify_reports_the_firmware_hash_and_boot_id() -> None:
    m = model()
    identity = Identity.decode(call(m, MsgType.IDENTIFY))
    assert identity.fw_sha256 == hashlib.sha256(b"fw").digest()
    assert identity.boot_id == m.boot_id
    assert Status.decode(call(m, MsgType.PING)).boot_id == m.boot_id


def test_shuffle_commits_to_the_order_and_reveals_after_retirement() -> None:
    m = model(seed=4)
    sid = shuffled(m)
    complete = next(e for e in events(m) if isinstance(e, ShuffleComplete))
    assert complete.result == ShuffleResult.OK
    assert error(m, MsgType.REVEAL_DECK, RevealDeck(sid).encode()).code == ErrorCode.BAD_STATE
    call(m, MsgType.ABORT)
    reveal = DeckReveal.decode(call(m, MsgType.REVEAL_DECK, RevealDeck(sid).encode()))
    assert reveal.order == bytes(card_code(c) for c in deck_order(seed=4))
    assert verify_commitment(complete.commitment, sid, reveal.salt, reveal.order)


def test_dispense_takes_the_next_cards_and_withholds_by_default() -> None:
    m = model(order=("As", "Kd", "Qh"))
    sid = shuffled(m)
    m.take_events()
    call(m, MsgType.DISPENSE_GROUP, DispenseGroup(sid, 1, 2, 1, 3).encode())
    group = events(m)[-1]
    assert group == GroupDispensedEvent(sid, 1, 1, 3, b"\xfd\xfd", 50)
    call(m, MsgType.SET_CONFIG, SetConfig(id_policy=IdPolicy.LIVE).encode())
    call(m, MsgType.DISPENSE_GROUP, DispenseGroup(sid, 2, 1, 2, 0).encode())
    qh = card_code(Card("Qh"))
    assert events(m)[-1] == GroupDispensedEvent(sid, 2, 2, 0, bytes([qh]), 49)
    assert m.state is DeviceState.DISPENSING


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (DispenseGroup(1, 1, 2, 1, 1), ErrorCode.BAD_ARG),  # another shuffle id
        (DispenseGroup(0, 1, 60, 1, 1), ErrorCode.BAD_ARG),  # more cards than left
        (DispenseGroup(0, 1, 2, 9, 1), ErrorCode.BAD_ARG),  # no such purpose
        (DispenseGroup(0, 1, 0, 1, 1), ErrorCode.BAD_ARG),  # per plan, and no plan
    ],
)
def test_bad_dispense_requests_are_refused(request_: DispenseGroup, code: ErrorCode) -> None:
    m = model()
    sid = shuffled(m)
    payload = DispenseGroup(
        sid if request_.shuffle_id == 0 else request_.shuffle_id + sid,
        request_.group, request_.count, request_.purpose, request_.seat,
    ).encode()  # fmt: skip
    assert error(m, MsgType.DISPENSE_GROUP, payload).code == code


def test_short_payload_and_unknown_type_are_errors() -> None:
    m = model()
    assert error(m, MsgType.DISPENSE_GROUP, b"\x01").code == ErrorCode.BAD_LENGTH
    assert m.handle(0x2F, b"", 0.0)[0] == MsgType.ERROR
    assert error(m, 0x2F).code == ErrorCode.NOT_SUPPORTED  # type: ignore[arg-type]


def test_power_loss_changes_the_boot_id_and_voids_the_shuffle() -> None:
    m = model()
    call(m, MsgType.START_SHUFFLE, StartShuffle().encode())
    boot = m.boot_id
    m.power_loss(1.0)
    assert m.boot_id != boot
    assert m.state is DeviceState.FAULT
    assert m.counters["power_cycles"] == 1
