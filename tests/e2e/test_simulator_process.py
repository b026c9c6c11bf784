"""The simulator process itself: scenario files, the control channel, a device that is not there."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import pytest

from controller.table.inputs import DeviceFault, DeviceHealthChanged, DeviceInput, Health
from drivers.shuffler.driver import ShufflerDriver
from drivers.shuffler.options import ShufflerOptions
from simulators.control_client import ControlError
from tests.e2e.conftest import RigFactory, SimFactory
from tests.waiting import until


async def test_scenario_file_schedules_faults(rig: RigFactory, tmp_path: Path) -> None:
    scenario = tmp_path / "jam.toml"
    scenario.write_text(
        '[[step]]\nat = 0.3\nfault = "jam"\ncode = "JAM_OUTPUT"\n\n'
        '[[step]]\nat = 0.6\nclear = "JAM_OUTPUT"\n',
        encoding="utf-8",
    )
    r = await rig("--scenario", str(scenario))
    await until(lambda: r.of(DeviceFault), 10, "the scheduled jam")
    assert r.of(DeviceFault)[0].code == "JAM_OUTPUT"


async def test_bad_scenario_file_stops_the_simulator(tmp_path: Path) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_text('[[step]]\nat = 1\nfault = "melt"\n', encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", "sim", "shuffler", "--scenario", str(scenario),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 2
    assert b"step 1: fault: Input should be" in stderr


async def test_control_channel_refuses_bad_commands(start_sim: SimFactory) -> None:
    sim = await start_sim()
    before = await sim.control.status()
    with pytest.raises(ControlError, match="rate: Input should be less than or equal to 1"):
        await sim.send({"fault": "crc", "rate": 5})
    with pytest.raises(ControlError, match="exactly one of the keys"):
        await sim.send({"jam": True})
    after = await sim.control.status()
    assert after["faults"] == before["faults"] == []
    assert after["corrupted"] == {"in": 0, "out": 0}


async def test_missing_port_goes_from_reconnecting_to_failed(tmp_path: Path) -> None:
    inputs: list[DeviceInput] = []

    async def sink(item: DeviceInput) -> None:
        inputs.append(item)

    options = ShufflerOptions(
        port=str(tmp_path / "nothing-here"), backoff_base=0.01, backoff_cap=0.02, fail_after=3
    )
    driver = ShufflerDriver("shuffler", options)
    task = asyncio.create_task(driver.supervise(sink).run())
    try:
        await until(lambda: driver.health is Health.FAILED, 10, "failed")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    changes = [item for item in inputs if isinstance(item, DeviceHealthChanged)]
    assert [c.health for c in changes] == [Health.RECONNECTING, Health.FAILED]
    assert "cannot open" in changes[-1].detail


async def test_a_failing_sink_ends_the_driver_loudly_and_loses_nothing(
    start_sim: SimFactory,
) -> None:
    sim = await start_sim()

    async def sink(item: DeviceInput) -> None:
        if isinstance(item, DeviceFault):
            raise RuntimeError("journal is broken")

    driver = ShufflerDriver("shuffler", ShufflerOptions(port=str(sim.link)))
    task = asyncio.create_task(driver.supervise(sink).run())
    await driver.wait_online(timeout=15)
    await sim.fault("jam")
    with pytest.raises(RuntimeError, match="journal is broken"):
        await asyncio.wait_for(task, 10)
    # The event was never acknowledged: the device still holds it for the next host.
    assert (await sim.control.status())["queued_events"] >= 1
