"""Every shuffler request and event, driver against the simulator process over a real pty."""

from __future__ import annotations

import pytest

from controller.cards import card_code
from controller.deck_order import deck_order
from controller.table.inputs import (
    DeckChecked,
    DeckRevealed,
    DeviceFault,
    DeviceFaultCleared,
    GroupDispensed,
    Health,
    Purpose,
    ShuffleCompleted,
)
from drivers.errors import AlreadyDoneError, DeviceCommandError
from drivers.shuffler.codes import Capability, DeckMove, DeviceState, Trigger
from drivers.shuffler.commitment import deck_commitment
from drivers.shuffler.events import DeckMoved, OperatorInput, ShuffleStarted, StateChanged
from tests.e2e.conftest import RigFactory
from tests.waiting import until


async def test_identify_approve_configure_and_sync(rig: RigFactory) -> None:
    r = await rig()
    identity = r.driver.identity
    assert identity is not None
    assert (identity.vendor, identity.model, identity.serial) == (
        "tablectl",
        "TSP-SIM-1",
        "SIM-0001",
    )
    assert identity.caps & Capability.FW_CHALLENGE
    assert identity.boot_id == r.driver.boot_id
    # The simulator starts with its clock off by up to 10^4 s; TIME_SYNC measured that offset.
    assert r.driver.clock_offset_ms is not None
    status = await r.driver.get_status()
    assert status.state == DeviceState.IDLE
    assert status.boot_id == identity.boot_id
    health = r.health_changes()  # from the connection the test began with
    assert [(h.health, h.approved) for h in health] == [(Health.ONLINE, True)]
    assert health[0].ts.tzinfo is not None
    # The heartbeat keeps PINGing.
    await until(lambda: r.driver.last_status is not None and r.driver.stats.requests >= 8)


async def test_shuffle_dispense_withheld_and_reveal(rig: RigFactory) -> None:
    r = await rig("--seed", "11")
    shuffle_id = await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted), what="shuffle complete")
    checked, completed = r.of(DeckChecked)[0], r.of(ShuffleCompleted)[0]
    assert (checked.shuffle_id, checked.faults, checked.counted) == (shuffle_id, frozenset(), 52)
    assert (completed.ok, completed.card_count, len(completed.commitment)) == (True, 52, 64)
    await r.driver.present()
    for group, seat in enumerate((1, 2, 3), start=1):
        await r.driver.dispense_group(shuffle_id, group, 2, Purpose.HOLE, seat)
    await r.driver.dispense_group(shuffle_id, 4, 1, Purpose.BURN)
    await r.driver.dispense_group(shuffle_id, 5, 3, Purpose.FLOP)
    await until(lambda: len(r.of(GroupDispensed)) == 5, what="five groups")
    groups = r.of(GroupDispensed)
    assert [(g.group, g.purpose, g.seat, len(g.cards)) for g in groups] == [
        (1, Purpose.HOLE, 1, 2),
        (2, Purpose.HOLE, 2, 2),
        (3, Purpose.HOLE, 3, 2),
        (4, Purpose.BURN, None, 1),
        (5, Purpose.FLOP, None, 3),
    ]
    assert all(card is None for g in groups for card in g.cards)  # WITHHOLD by default
    assert groups[-1].remaining == 52 - 10
    # The same group twice would re-dispense: the device refuses, saying it already did.
    with pytest.raises(AlreadyDoneError, match="ALREADY_DONE"):
        await r.driver.dispense_group(shuffle_id, 5, 3, Purpose.FLOP)
    # The deck in play cannot be revealed; once the next shuffle retires it, it can.
    with pytest.raises(DeviceCommandError, match="BAD_STATE"):
        await r.driver.reveal_deck(shuffle_id)
    await r.driver.start_shuffle()
    revealed = await r.driver.reveal_deck(shuffle_id)
    assert revealed.verified
    assert revealed.order == deck_order(seed=11)
    assert r.of(DeckRevealed) == [revealed]
    expected = deck_commitment(shuffle_id, b"", b"")  # a different salt never matches
    assert completed.commitment != expected.hex()


async def test_live_identities_when_configured(rig: RigFactory) -> None:
    r = await rig("--order", "As,Kd,7h,7c", id_policy="live")
    shuffle_id = await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted))
    await r.driver.dispense_group(shuffle_id, 1, 2, Purpose.HOLE, 4)
    await r.driver.dispense_group(shuffle_id, 2, 2, Purpose.HOLE, 5)
    await until(lambda: len(r.of(GroupDispensed)) == 2)
    assert [g.cards for g in r.of(GroupDispensed)] == [("As", "Kd"), ("7h", "7c")]
    await r.driver.abort()
    revealed = await r.driver.reveal_deck(shuffle_id)
    assert revealed.verified
    assert revealed.order[:4] == ("As", "Kd", "7h", "7c")


async def test_live_is_refused_without_the_capability(rig: RigFactory) -> None:
    r = await rig("--no-live", "--order", "As,Kd", id_policy="live")
    shuffle_id = await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted))
    await r.driver.dispense_group(shuffle_id, 1, 2, Purpose.HOLE, 1)
    await until(lambda: r.of(GroupDispensed))
    assert r.of(GroupDispensed)[0].cards == (None, None)


async def test_dispense_per_plan_with_count_zero(rig: RigFactory) -> None:
    plan = [{"count": 2, "purpose": "hole"}, {"count": 1, "purpose": "burn"}]
    r = await rig(dispense_plan=plan)
    shuffle_id = await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted))
    await r.driver.dispense_group(shuffle_id, 1, 0, Purpose.HOLE, 1)
    await r.driver.dispense_group(shuffle_id, 2, 0, Purpose.BURN)
    await until(lambda: len(r.of(GroupDispensed)) == 2)
    assert [len(g.cards) for g in r.of(GroupDispensed)] == [2, 1]


async def test_faults_clear_counters_and_fault_list(rig: RigFactory) -> None:
    r = await rig()
    reply = await r.sim.fault("jam", code="JAM_INPUT", detail="jam at pick roller")
    await until(lambda: r.of(DeviceFault), what="fault")
    fault = r.of(DeviceFault)[0]
    assert (fault.code, fault.severity, fault.fault_id) == ("JAM_INPUT", "error", reply["fault_id"])
    assert fault.detail == "jam at pick roller"
    listed = await r.driver.get_faults()
    assert [f.fault_id for f in listed.faults] == [reply["fault_id"]]
    # A jam blocks shuffling until it is cleared.
    with pytest.raises(DeviceCommandError, match="FAULT_ACTIVE"):
        await r.driver.start_shuffle()
    assert await r.driver.clear_fault() == 1
    await until(lambda: r.of(DeviceFaultCleared))
    cleared = r.of(DeviceFaultCleared)[0]
    assert cleared.code == "JAM_INPUT"
    # each event carries its identity on the device (boot id, event number): a copy the
    # shuffler resends after a host restart is recognised by it, not by its bytes
    assert fault.origin is not None
    assert cleared.origin is not None
    assert cleared.origin.boot_id == fault.origin.boot_id == r.driver.boot_id
    assert cleared.origin.seq != fault.origin.seq
    assert (await r.driver.get_faults()).faults == ()
    counters = await r.driver.get_counters()
    assert counters.jams == 1


async def test_lid_open_and_close(rig: RigFactory) -> None:
    r = await rig()
    await r.sim.fault("lid_open")
    await until(lambda: r.of(DeviceFault))
    assert (r.of(DeviceFault)[0].code, r.of(DeviceFault)[0].severity) == ("LID_OPEN", "warn")
    assert (await r.driver.clear_fault()) == 0  # the lid is still open: not clearable
    await r.sim.fault("lid_close")
    await until(lambda: r.of(DeviceFaultCleared))
    assert r.of(DeviceFaultCleared)[0].code == "LID_OPEN"
    assert (await r.driver.get_counters()).lid_opens == 1


@pytest.mark.parametrize(
    ("command", "faults", "counted"),
    [
        ({"deck_check": "duplicate"}, {"duplicate"}, 52),
        ({"deck_check": "foreign"}, {"foreign_back"}, 53),
        ({"deck_check": "unreadable"}, {"unreadable"}, 52),
        ({"fault": "count_mismatch", "count": 51}, {"short"}, 51),
    ],
)
async def test_bad_deck_checks(
    rig: RigFactory, command: dict[str, object], faults: set[str], counted: int
) -> None:
    r = await rig("--seed", "3")
    await r.sim.send(command)
    await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted))
    checked = r.of(DeckChecked)[0]
    assert {f.value for f in checked.faults} == faults
    assert checked.counted == counted
    assert not r.of(ShuffleCompleted)[0].ok
    if "duplicate" in faults:
        order = deck_order(seed=3)
        assert checked.duplicates == order[:1]
        assert checked.missing == order[-1:]
    if command.get("fault") == "count_mismatch":
        await until(lambda: r.of(DeviceFault))
        assert r.of(DeviceFault)[0].code == "COUNT_MISMATCH"


async def test_bad_commitment_raises_an_integrity_alarm(rig: RigFactory) -> None:
    r = await rig("--seed", "5")
    shuffle_id = await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted))
    await r.driver.abort()
    await r.sim.fault("bad_commitment")
    revealed = await r.driver.reveal_deck(shuffle_id)
    assert not revealed.verified
    assert r.of(DeckRevealed) == [revealed]
    assert any("does not match its commitment" in alarm for alarm in r.driver.integrity_alarms)


async def test_card_code_of_revealed_order_round_trips(rig: RigFactory) -> None:
    r = await rig("--order", "2c,As")
    shuffle_id = await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted))
    await r.driver.abort()
    revealed = await r.driver.reveal_deck(shuffle_id)
    assert [card_code(c) for c in revealed.order[:2]] == [0, 51]


async def test_events_the_core_does_not_consume_reach_observers(rig: RigFactory) -> None:
    r = await rig()
    await r.sim.send({"press": "shuffle"})  # the dealer's button starts a shuffle
    await until(lambda: r.of(ShuffleCompleted), what="dealer shuffle")
    await r.driver.present()
    # DeckMoved and the state change it causes are two events, acknowledged one at a time.
    await until(
        lambda: (
            any(isinstance(e, DeckMoved) for e in r.device_events)
            and any(
                isinstance(e, StateChanged) and e.state == DeviceState.PRESENTED
                for e in r.device_events
            )
        )
    )
    kinds = [type(e) for e in r.device_events]
    assert kinds.index(OperatorInput) < kinds.index(ShuffleStarted) < kinds.index(DeckMoved)
    started = next(e for e in r.device_events if isinstance(e, ShuffleStarted))
    assert started.trigger == Trigger.DEALER
    states = [DeviceState(e.state) for e in r.device_events if isinstance(e, StateChanged)]
    assert states == [DeviceState.SHUFFLING, DeviceState.READY, DeviceState.PRESENTED]
    moved = next(e for e in r.device_events if isinstance(e, DeckMoved))
    assert moved.what == DeckMove.PRESENTED


async def test_shuffler_without_a_settable_clock_comes_online_unsynced(rig: RigFactory) -> None:
    # TIME_SYNC is a capability: a device without it refuses the request (NOT_SUPPORTED), and
    # the driver does not ask, so the device still comes online and deals.
    r = await rig("--no-time-sync")
    assert r.driver.clock_offset_ms is None
    await r.driver.start_shuffle()
    await until(lambda: r.of(ShuffleCompleted), 10, "shuffle complete")
