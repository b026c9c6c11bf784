"""The desk (controller/station/desk.py): one dealer at a time, a change of dealer between hands
only (or to the floor), an idle session ended; the time is an argument."""

from __future__ import annotations

import pytest

from controller.authority import Role
from controller.station.desk import Desk, DeskError
from controller.station.roster import Person

ANN = Person("ann", "Ann Example", (Role.DEALER,), (), "$argon2id$x")
BOB = Person("bob", "Bob Example", (Role.DEALER,), (), "$argon2id$x")
CAT = Person("cat", "Cat Floor", (Role.FLOOR,), (), "$argon2id$x")


def test_a_log_in_between_hands_replaces_the_dealer() -> None:
    desk = Desk(idle=300)
    desk.login(ANN, "t-ann", 0.0, None)
    desk.login(BOB, "t-bob", 1.0, None)
    assert desk.current("t-ann", 2.0) is None
    session = desk.current("t-bob", 2.0)
    assert session is not None
    assert session.person is BOB


def test_mid_hand_only_its_dealer_or_the_floor_logs_in() -> None:
    desk = Desk(idle=300)
    desk.login(ANN, "t-ann", 0.0, None)
    desk.hand("T1-00001")
    with pytest.raises(DeskError, match="dealt by ann"):
        desk.login(BOB, "t-bob", 1.0, "T1-00001")
    assert desk.current("t-ann", 1.0) is not None  # the refusal changed nothing
    desk.login(ANN, "t-ann2", 2.0, "T1-00001")
    desk.login(CAT, "t-cat", 3.0, "T1-00001")
    assert desk.dealing == ("T1-00001", "cat")
    desk.hand(None)
    desk.login(BOB, "t-bob", 4.0, None)  # between hands again


def test_no_log_out_mid_hand() -> None:
    desk = Desk(idle=300)
    session = desk.login(ANN, "t-ann", 0.0, None)
    with pytest.raises(DeskError, match="between hands"):
        desk.logout(session, "T1-00001")
    desk.logout(session, None)
    assert desk.current("t-ann", 1.0) is None
    assert desk.ended == "logged out"


def test_an_idle_session_ends_and_use_keeps_it() -> None:
    desk = Desk(idle=10)
    desk.login(ANN, "t-ann", 0.0, None)
    assert desk.current("t-ann", 9.0) is not None  # used: ten more seconds
    assert desk.deadline() == 19.0
    assert not desk.expire(18.9)
    assert desk.expire(19.0)
    assert desk.ended == "idle"
    assert desk.current("t-ann", 19.5) is None


def test_a_token_opens_only_its_session() -> None:
    desk = Desk(idle=300)
    desk.login(ANN, "t-ann", 0.0, None)
    assert desk.current(None, 1.0) is None
    assert desk.current("t-guess", 1.0) is None
    assert desk.session is not None
    assert desk.session.digest != "t-ann"  # only the token's digest is kept


def test_reading_the_table_keeps_nobody_logged_in() -> None:
    desk = Desk(idle=10)
    desk.login(ANN, "t-ann", 0.0, None)
    for now in (3.0, 6.0, 9.0):  # a page reading, its live stream
        assert desk.holder("t-ann", now) is not None
    assert desk.deadline() == 10.0
    assert desk.holder("t-ann", 10.0) is None
    assert desk.ended == "idle"
