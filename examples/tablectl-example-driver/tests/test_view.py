"""The zone view: inputs only for real changes, and a replay of them is the view."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceInput,
    TagArrived,
    TagDeparted,
    Zone,
)
from hypothesis import given
from hypothesis import strategies as st

from tablectl_example_driver.protocol import (
    Arrive,
    Clear,
    Depart,
    Fault,
    Message,
    Present,
)
from tablectl_example_driver.view import UnknownAntennaError, ZoneView

TS = datetime(2026, 1, 1, tzinfo=UTC)
ZONES = {"0": Zone.parse("seat:1"), "1": Zone.parse("board"), "2": Zone.parse("burn")}
UIDS = ["04000000000001", "04000000000002", "04000000000003"]

antennas = st.sampled_from(sorted(ZONES))
uids = st.sampled_from(UIDS)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(Arrive, antennas, uids),
    st.builds(Depart, antennas, uids),
    st.builds(Present, antennas, st.lists(uids, max_size=3).map(tuple)),
    st.builds(Fault, st.sampled_from(["RF", "HEAT"]), st.just("")),
    st.builds(Clear, st.sampled_from(["RF", "HEAT"])),
)


def test_edges_and_a_snapshot() -> None:
    view = ZoneView("rfid", ZONES)
    seat = ZONES["0"]
    assert view.apply(TS, Arrive("0", UIDS[0])) == [TagArrived(TS, "rfid", seat, UIDS[0])]
    assert view.apply(TS, Arrive("0", UIDS[0])) == []  # said again: nothing new
    # the snapshot: one tag gone, one new
    assert view.apply(TS, Present("0", (UIDS[1],))) == [
        TagDeparted(TS, "rfid", seat, UIDS[0]),
        TagArrived(TS, "rfid", seat, UIDS[1]),
    ]
    assert view.apply(TS, Depart("0", UIDS[0])) == []
    assert view.apply(TS, Fault("RF", "antenna 0 open")) == [
        DeviceFault(TS, "rfid", "RF", detail="antenna 0 open")
    ]
    assert view.apply(TS, Fault("RF", "again")) == []
    assert view.apply(TS, Clear("RF")) == [DeviceFaultCleared(TS, "rfid", "RF")]
    assert view.apply(TS, Clear("RF")) == []


def test_an_unmapped_antenna_is_refused_and_changes_nothing() -> None:
    view = ZoneView("rfid", ZONES)
    with pytest.raises(UnknownAntennaError, match=r"antenna '7' is not mapped \(mapped: 0, 1, 2\)"):
        view.apply(TS, Arrive("7", UIDS[0]))
    assert all(not held for held in view.present.values())


@given(st.lists(messages, max_size=40))
def test_replaying_the_inputs_gives_the_view(sequence: list[Message]) -> None:
    view = ZoneView("rfid", ZONES)
    mirror: dict[Zone, set[str]] = {zone: set() for zone in ZONES.values()}
    faults: set[str] = set()
    for message in sequence:
        for item in view.apply(TS, message):
            _replay(item, mirror, faults)
    assert mirror == view.present
    assert faults == view.faults
    # and the view is what the messages said last about each antenna
    expected: dict[Zone, set[str]] = {zone: set() for zone in ZONES.values()}
    for message in sequence:
        if isinstance(message, Arrive):
            expected[ZONES[message.antenna]].add(message.uid)
        elif isinstance(message, Depart):
            expected[ZONES[message.antenna]].discard(message.uid)
        elif isinstance(message, Present):
            expected[ZONES[message.antenna]] = set(message.uids)
    assert view.present == expected


def _replay(item: DeviceInput, mirror: dict[Zone, set[str]], faults: set[str]) -> None:
    # every input is a change: an arrival of a tag not there, a departure of one that is…
    match item:
        case TagArrived(zone=zone, uid=uid):
            assert uid not in mirror[zone]
            mirror[zone].add(uid)
        case TagDeparted(zone=zone, uid=uid):
            assert uid in mirror[zone]
            mirror[zone].remove(uid)
        case DeviceFault(code=code):
            assert code not in faults
            faults.add(code)
        case DeviceFaultCleared(code=code):
            assert code in faults
            faults.remove(code)
        case _:
            raise AssertionError(f"unexpected input {item}")
