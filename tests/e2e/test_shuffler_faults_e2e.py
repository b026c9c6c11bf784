"""Faults: lossy links, stalls, unplug and replug, power loss, unapproved firmware."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceInput,
    DeviceRebooted,
    GroupDispensed,
    Health,
    Purpose,
    ShuffleCompleted,
)
from drivers.errors import DeviceNotReadyError
from tests.e2e.conftest import Rig, RigFactory
from tests.waiting import until

pytestmark = [pytest.mark.slow]


def fault_stream(inputs: list[DeviceInput]) -> list[tuple[str, int]]:
    """Raised and cleared faults in arrival order."""
    out: list[tuple[str, int]] = []
    for item in inputs:
        if isinstance(item, DeviceFault):
            out.append(("raised", item.fault_id))
        elif isinstance(item, DeviceFaultCleared):
            out.append(("cleared", item.fault_id))
    return out


def burst_of(first: int, count: int) -> list[tuple[str, int]]:
    """What a burst of ``count`` raise/clear pairs starting at fault id ``first`` produces."""
    return [(kind, first + i) for i in range(count) for kind in ("raised", "cleared")]


#: Bursts of faults sent again while a corrupted frame is still to come one way or the other
#: (each burst: two events, each a frame out and its ACK in), and the most sent in all.
MORE_BURSTS = 100
MOST_BURSTS = 3000


def arrived(r: Rig, count: int) -> bool:
    """Whether ``count`` raised and cleared faults came in."""
    return len(fault_stream(r.inputs)) == count


def corrupted_both_ways(status: dict[str, Any], driver_crc_errors: int) -> bool:
    """Whether corrupted frames went both ways and the driver counted one it received."""
    corrupted = status["corrupted"]
    return bool(corrupted["out"] > 0 and corrupted["in"] > 0 and driver_crc_errors > 0)


async def test_one_percent_corruption_loses_and_duplicates_nothing(rig: RigFactory) -> None:
    r = await rig("--seed", "9")
    await r.sim.fault("crc", rate=0.01)
    await r.sim.send({"burst": 300})
    shuffle_id = await r.driver.start_shuffle()
    await until(lambda: len(fault_stream(r.inputs)) == 600, 60, "600 fault events")
    await until(lambda: r.of(ShuffleCompleted), 10)
    for group in range(1, 11):
        await r.driver.dispense_group(shuffle_id, group, 2, Purpose.HOLE, group)
    await until(lambda: len(r.of(GroupDispensed)) == 10, 20, "ten groups")
    # Which frames the simulator corrupts is drawn from its seeded generator, but the draws
    # follow the frames in the order they cross the link, which the machine's timing decides:
    # some 660 frames each way make about 6.6 corrupted ones in each, and none in one of them
    # (0.99^660 a way: about one run in 400) is a run that tested nothing. More traffic until both
    # ways had theirs: every fault the test is about has then happened, whatever the timing.
    bursts = 300
    status = await r.sim.send({"status": True})
    while not corrupted_both_ways(status, r.driver.stats.crc_errors) and bursts < MOST_BURSTS:
        await r.sim.send({"burst": MORE_BURSTS})
        bursts += MORE_BURSTS
        await until(functools.partial(arrived, r, 2 * bursts), 60, "the next burst")
        status = await r.sim.send({"status": True})
    assert fault_stream(r.inputs) == burst_of(1, bursts)
    assert [g.group for g in r.of(GroupDispensed)] == list(range(1, 11))
    # The faults really happened, in both directions, and the link recovered from them.
    assert status["corrupted"]["out"] > 0
    assert status["corrupted"]["in"] > 0
    assert r.driver.stats.crc_errors > 0
    assert r.driver.stats.retransmits + status["link"]["retransmits"] > 0


async def test_partial_frames_are_resynchronised(rig: RigFactory) -> None:
    r = await rig()
    await r.sim.fault("partial", rate=0.05)
    await r.sim.send({"burst": 60})
    await until(lambda: len(fault_stream(r.inputs)) == 120, 40, "120 fault events")
    assert fault_stream(r.inputs) == burst_of(1, 60)
    assert (await r.sim.send({"status": True}))["truncated"] > 0
    assert r.driver.stats.crc_errors + r.driver.stats.framing_errors > 0


async def test_stall_makes_the_device_stale_then_online(rig: RigFactory) -> None:
    """A stall shorter than the driver's patience: stale, then online, nothing lost. The
    patience is set well above the stall (ten missed heartbeats, ~14 s) so that a busy machine,
    which can keep the simulator from answering for seconds after the stall, does not turn it
    into a reconnection (``test_long_stall_reconnects`` is that case)."""
    r = await rig(heartbeat_failures=10)
    await r.sim.fault("stall", seconds=1.5)
    await until(lambda: r.driver.health is Health.STALE, 30, "stale")
    await r.sim.send({"burst": 3})  # queued during the stall
    await until(lambda: r.driver.health is Health.ONLINE, 30, "online again")
    await until(lambda: len(fault_stream(r.inputs)) == 6, 30, "the burst")
    assert fault_stream(r.inputs) == burst_of(1, 3)
    assert r.health_path()[:3] == [Health.ONLINE, Health.STALE, Health.ONLINE]


async def test_long_stall_reconnects(rig: RigFactory) -> None:
    r = await rig(heartbeat_failures=2)
    await r.sim.fault("stall", seconds=4.0)
    await until(lambda: r.driver.health is Health.RECONNECTING, 15, "reconnecting")
    await until(lambda: r.driver.health is Health.ONLINE, 15, "online again")
    assert r.health_path() == [Health.ONLINE, Health.STALE, Health.RECONNECTING, Health.ONLINE]


async def test_unplug_and_replug_lose_nothing(rig: RigFactory) -> None:
    r = await rig()
    await r.sim.send({"burst": 20})
    await r.sim.fault("unplug")  # whatever was in flight is cut off mid-stream
    await until(lambda: r.driver.health is Health.RECONNECTING, 10, "reconnecting")
    assert not r.sim.link.is_symlink()  # the device node is gone while unplugged
    await r.sim.send({"burst": 15})  # happens while the cable is out
    jam = await r.sim.fault("jam", code="JAM_PATH")
    with pytest.raises(DeviceNotReadyError):
        await r.driver.start_shuffle()
    await r.sim.fault("replug")
    await until(lambda: r.driver.health is Health.ONLINE, 15, "online after replug")
    await until(lambda: len(fault_stream(r.inputs)) == 71, 20, "every event")
    assert fault_stream(r.inputs) == [*burst_of(1, 35), ("raised", jam["fault_id"])]
    assert [f.code for f in r.of(DeviceFault)][-1] == "JAM_PATH"
    assert not r.of(DeviceRebooted)  # the same boot: the de-duplication state carried over
    assert r.health_path()[0] is Health.ONLINE
    assert r.health_path()[-1] is Health.ONLINE
    assert Health.RECONNECTING in r.health_path()


async def test_power_loss_reports_a_reboot_and_keeps_queued_events(rig: RigFactory) -> None:
    r = await rig("--shuffle-time", "2")
    old_boot = r.driver.boot_id
    await r.driver.start_shuffle()
    await r.sim.send({"burst": 5})
    await r.sim.fault("power_loss")
    await until(lambda: r.of(DeviceRebooted), 10, "reboot")
    assert r.of(DeviceRebooted)[0].boot_id != old_boot
    await until(lambda: any(f.code == "POWER_LOSS_DURING_SHUFFLE" for f in r.of(DeviceFault)))
    await until(lambda: r.health_path()[-2:] == [Health.RECONNECTING, Health.ONLINE])
    raised = [(f.code, f.fault_id) for f in r.of(DeviceFault)]
    assert [code for code, _ in raised[:5]] == ["TRAY_NOT_SEATED"] * 5
    assert raised[-1][0] == "POWER_LOSS_DURING_SHUFFLE"
    # The driver re-identified and re-configured: the device takes commands again.
    assert (await r.driver.get_status()).boot_id == r.driver.boot_id


async def test_unapproved_firmware_is_refused(rig: RigFactory) -> None:
    r = await rig("--unapproved", online=False)
    await until(lambda: r.driver.health is Health.REJECTED, 15, "rejected")
    rejected = r.of(DeviceHealthChanged)[-1]
    assert (rejected.health, rejected.approved) == (Health.REJECTED, False)
    assert "not approved" in rejected.detail
    with pytest.raises(DeviceNotReadyError):
        await r.driver.start_shuffle()
    with pytest.raises(DeviceNotReadyError):
        await r.driver.dispense_group(1, 1, 2, Purpose.HOLE, 1)
    # Events of an unapproved device are never taken in.
    await r.sim.send({"burst": 2})
    supervisor = r.driver.supervisor
    assert supervisor is not None
    await until(lambda: supervisor.sessions >= 3, 10, "two retries")
    assert not r.of(DeviceFault)
    assert r.driver.health is Health.REJECTED


async def test_flashing_unapproved_firmware_is_refused_after_the_reboot(rig: RigFactory) -> None:
    r = await rig()
    await r.sim.fault("unapproved_firmware")
    await until(lambda: r.driver.health is Health.REJECTED, 15, "rejected")
    assert r.of(DeviceRebooted)
    with pytest.raises(DeviceNotReadyError):
        await r.driver.start_shuffle()


@pytest.mark.parametrize("fault", ["lying_firmware", "no_challenge"])
async def test_unverifiable_firmware_is_refused(rig: RigFactory, fault: str) -> None:
    r = await rig()
    await r.sim.fault(fault)
    await r.sim.fault("power_loss")  # the next session re-identifies and re-challenges
    await until(lambda: r.driver.health is Health.REJECTED, 15, "rejected")
    detail = r.of(DeviceHealthChanged)[-1].detail
    assert ("challenge failed" if fault == "lying_firmware" else "unverifiable") in detail


async def test_events_of_a_device_rebooted_into_unapproved_firmware_are_never_taken(
    rig: RigFactory,
) -> None:
    # The device reboots with events still queued: after the reboot it sends the first one
    # right behind the PING response that tells the host of the new boot id. Nothing it says
    # is taken before the next connection has checked its approval again, and that refuses it.
    r = await rig()
    await r.sim.fault("stall", seconds=0.5)  # the firmware hangs: the events stay queued
    await r.sim.send({"burst": 3})
    await r.sim.fault("unapproved_firmware")
    await until(lambda: r.driver.health is Health.REJECTED, 15, "rejected")
    new_boot = r.of(DeviceRebooted)[0].boot_id
    taken = [f for f in r.of(DeviceFault) if f.origin is not None and f.origin.boot_id == new_boot]
    assert taken == []
