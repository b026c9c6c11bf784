"""The PN532 driver against the simulator over real ptys (simulator in the test's event loop)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest

from controller.table.inputs import DeviceHealthChanged, Health, TagArrived, TagDeparted, Zone
from drivers.registry import load_driver
from drivers.rfid.pn532.driver import Pn532Reader
from simulators.pn532.faults import AntennaMode
from simulators.pn532.server import Pn532Simulator

StartSim = Callable[..., Awaitable[Pn532Simulator]]
StartReader = Callable[..., Awaitable[tuple[Pn532Reader, Any]]]
Until = Callable[..., Awaitable[None]]

A, B, C = "04a1b2c3d4e580", "04112233445566", "deadbeef"


def uid(text: str) -> bytes:
    return bytes.fromhex(text)


async def test_a_tag_arrives_and_departs(
    simulators: StartSim, reader_with_log: StartReader
) -> None:
    sim = await simulators()
    reader, log = await reader_with_log([{"port": sim.device, "zone": "seat:3"}])
    online = await log.health("rfid-seat3", Health.ONLINE)
    assert "PN532 v1.6" in online.detail
    sim.place([uid(A)])
    arrived = await log.arrived(A)
    assert (arrived.device, arrived.zone) == ("rfid-seat3", Zone.parse("seat:3"))
    assert reader.present("seat:3") == {A}
    sim.remove([uid(A)])
    departed = await log.departed(A)
    assert departed.ts >= arrived.ts
    assert reader.present("seat:3") == set()
    # The driver woke the chip over HSU and left LowVbat mode before anything else.
    assert list(sim.module.stats.journal)[:4] == ["wake", "cmd 14", "cmd 02", "cmd 32"]


async def test_two_modules_are_two_zones(
    simulators: StartSim, reader_with_log: StartReader
) -> None:
    seat = await simulators("seat1", tags=(A, B))
    board = await simulators("board", tags=(C,))
    reader, log = await reader_with_log(
        [
            {"port": seat.device, "zone": "seat:1"},
            {"port": board.device, "zone": "board", "device": "flop"},
        ]
    )
    for tag in (A, B, C):
        await log.arrived(tag)
    zones = {(e.uid, e.device, str(e.zone)) for e in log.events if isinstance(e, TagArrived)}
    assert zones == {(A, "rfid-seat1", "seat:1"), (B, "rfid-seat1", "seat:1"), (C, "flop", "board")}
    assert {d: str(f) for d, f in reader.firmware().items()} == {
        "rfid-seat1": "PN532 v1.6",
        "flop": "PN532 v1.6",
    }


async def test_a_pile_bigger_than_two_is_inventoried(
    simulators: StartSim, reader_with_log: StartReader
) -> None:
    tags = tuple(f"04{n:012x}" for n in range(5))
    sim = await simulators(tags=tags)
    reader, log = await reader_with_log([{"port": sim.device, "zone": "board"}])
    for tag in tags:
        await log.arrived(tag)
    assert reader.present("board") == set(tags)
    commands = sim.module.stats.commands
    assert commands[0x44] > 0  # full rounds were halted to reach the rest
    assert commands[0x32] > 2  # and the field cycled to wake them for the next poll


async def test_a_seat_limited_to_two_tags_polls_in_one_round(
    simulators: StartSim, reader_with_log: StartReader
) -> None:
    sim = await simulators(tags=(A, B))
    reader, log = await reader_with_log([{"port": sim.device, "zone": "seat:6", "max_tags": 2}])
    await log.arrived(A)
    await log.arrived(B)
    assert reader.modules[0].max_tags == 2
    assert sim.module.stats.commands[0x44] == 0  # two found, two wanted: no halting round


async def test_flapping_reads_never_make_a_tag_depart(
    simulators: StartSim, reader_with_log: StartReader, until: Until
) -> None:
    sim = await simulators(seed=11, tags=(A, B))
    reader, log = await reader_with_log([{"port": sim.device, "zone": "seat:2"}], depart_n=8)
    await log.arrived(A)
    await log.arrived(B)
    sim.set_flap(0.2)
    module = reader.modules[0]
    polls = module.polls
    await until(lambda: module.polls >= polls + 150, timeout=30)
    assert module.missed_reads > 20  # the reads really flapped…
    assert log.departures() == []  # …and no card left
    sim.remove([uid(B)])
    await log.departed(B)  # a real departure still gets through the debounce
    assert reader.present("seat:2") == {A}


async def test_stacked_cards_missed_now_and_then_never_depart(
    simulators: StartSim, reader_with_log: StartReader, until: Until
) -> None:
    sim = await simulators(seed=5, tags=(A, B, C))
    reader, log = await reader_with_log([{"port": sim.device, "zone": "seat:4"}], depart_n=8)
    for tag in (A, B, C):
        await log.arrived(tag)
    sim.set_stacked_miss(0.3)
    module = reader.modules[0]
    polls = module.polls
    await until(lambda: module.polls >= polls + 100, timeout=30)
    assert module.missed_reads > 10
    assert log.departures() == []


@pytest.mark.parametrize("mode", list(AntennaMode))
async def test_antenna_fault_is_stale_never_departures_then_reconciles(
    simulators: StartSim, reader_with_log: StartReader, until: Until, mode: AntennaMode
) -> None:
    sim = await simulators(tags=(A, B))
    reader, log = await reader_with_log([{"port": sim.device, "zone": "muck"}], reinit_after=4)
    await log.arrived(A)
    await log.arrived(B)
    sim.set_antenna(mode)
    sim.remove([uid(B)])  # the truth changes while the reader is blind
    stale = await log.health("rfid-muck", Health.STALE)
    module = reader.modules[0]
    failed = module.failed_polls
    await until(lambda: module.failed_polls >= failed + 6, timeout=30)  # blind for a while
    assert log.departures() == []
    assert reader.present("muck") == {A, B}
    mark = len(log.events)
    sim.set_antenna(None)
    await log.health("rfid-muck", Health.ONLINE, after=mark)
    await log.departed(B, after=mark)  # reconciled once the polls are good again
    assert [e.uid for e in log.departures()] == [B]
    assert reader.present("muck") == {A}
    assert "polls failed" in stale.detail


async def test_unplug_reconnects_and_reconciles(
    simulators: StartSim, reader_with_log: StartReader
) -> None:
    sim = await simulators(tags=(A, B))
    reader, log = await reader_with_log([{"port": sim.device, "zone": "seat:5"}])
    await log.arrived(A)
    await log.arrived(B)
    sim.unplug()
    lost = await log.health("rfid-seat5", Health.RECONNECTING)
    assert "lost" in lost.detail
    assert not Path(sim.device).exists()  # the udev-like link went with the cable
    sim.remove([uid(B)])
    sim.place([uid(C)])
    mark = len(log.events)
    sim.replug()
    await log.health("rfid-seat5", Health.ONLINE, after=mark)
    await log.departed(B, after=mark)
    await log.arrived(C, after=mark)
    assert [e.uid for e in log.departures()] == [B]  # A stayed put throughout
    assert reader.present("seat:5") == {A, C}
    assert sim.module.stats.wakeups == 2  # the freshly powered chip was woken up again


async def test_a_module_missing_at_start_is_reconnecting_until_it_appears(
    tmp_path: Path, reader_with_log: StartReader
) -> None:
    link = tmp_path / "late"
    _reader, log = await reader_with_log([{"port": str(link), "zone": "burn"}])
    waiting = await log.health("rfid-burn", Health.RECONNECTING)
    assert "cannot open" in waiting.detail
    async with Pn532Simulator(link=link, tags=[uid(A)]):
        await log.health("rfid-burn", Health.ONLINE)
        await log.arrived(A)


async def test_corrupted_responses_are_asked_for_again(
    simulators: StartSim, reader_with_log: StartReader, until: Until
) -> None:
    sim = await simulators(seed=3, tags=(A,))
    reader, log = await reader_with_log([{"port": sim.device, "zone": "enroll"}])
    await log.arrived(A)
    sim.set_corrupt(0.2)
    module = reader.modules[0]
    polls = module.polls
    await until(lambda: module.polls >= polls + 60, timeout=30)
    assert module.link is not None
    assert module.link.counters.nacks_sent > 0
    assert sim.module.stats.nacks > 0
    assert log.departures() == []
    assert not [
        e for e in log.events if isinstance(e, DeviceHealthChanged) and e.health is Health.STALE
    ]


def test_registered_as_pn532() -> None:
    assert load_driver("pn532") is Pn532Reader


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        ([], "at least 1"),
        ([{"port": "/dev/a", "zone": "seat:11"}], "seat:1"),
        ([{"port": "/dev/a", "zone": "board"}, {"port": "/dev/b", "zone": "board"}], "zone board"),
        ([{"port": "/dev/a", "zone": "board"}, {"port": "/dev/a", "zone": "muck"}], "port /dev/a"),
        ([{"port": "/dev/a", "zone": "board", "speed": 1}], "speed"),
    ],
)
def test_bad_options_are_refused_clearly(modules: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        Pn532Reader.from_options("rfid", {"modules": modules})


def test_module_device_ids() -> None:
    reader = Pn532Reader.from_options(
        "rfid",
        {"modules": [{"port": "/dev/a", "zone": "seat:10"}, {"port": "/dev/b", "zone": "board"}]},
    )
    assert [m.device_id for m in reader.modules] == ["rfid-seat10", "rfid-board"]
    assert not any(isinstance(e, TagDeparted) for e in reader.pending_events())


async def test_a_poll_that_fails_after_halting_tags_wakes_them_at_the_next(
    simulators: StartSim, reader_with_log: StartReader, until: Until
) -> None:
    """Three cards need a halting round (two answer at a time); a corrupted answer between the
    InDeselect and the field cycle leaves them halted on the chip: the next poll must wake
    them, or they would stop answering and depart."""
    sim = await simulators(seed=3, tags=(A, B, C))
    reader, log = await reader_with_log([{"port": sim.device, "zone": "seat:4"}], depart_n=8)
    for tag in (A, B, C):
        await log.arrived(tag)
    sim.set_corrupt(0.5)  # past the link's two NACKs now and then: a command fails
    module = reader.modules[0]
    polls = module.polls
    await until(lambda: module.polls >= polls + 60, timeout=60)
    assert module.failed_polls > 3  # commands really failed…
    assert log.departures() == []  # …and no card left
    sim.set_corrupt(0.0)
    assert reader.present("seat:4") == {A, B, C}
