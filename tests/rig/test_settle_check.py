"""The readers' settle check (SEAT-COUNT, SEAT-DEALT-OUT) in device mode comes due on the
daemon's real clock. In core mode it falls due between two steps; on the devices, a hand played
faster than the settle time used to have it land while the losing hands went to the muck at the
showdown, a seat one or two cards short: a hold the core never raised, depending on how fast the
machine happened to be. The rig waits for the check itself before a card leaves a seat there."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from controller.table.inputs import GroupDispensed, Purpose, TableHand, TagDeparted, ZoneKind
from simulators.rig.mirror import Mirror, open_reader
from simulators.rig.rig import Rig, RigOptions
from simulators.scenario.device_runner import DeviceRunner, table_setup
from simulators.scenario.expect import check
from simulators.scenario.model import parse_scenario
from tests.helpers import SCENARIOS

SETTLE = 4.0  # longer than the hand takes on the devices, unless the machine is very busy


async def test_a_hand_faster_than_the_settle_time_has_its_check_before_the_muck(
    tmp_path: Path,
) -> None:
    text = (SCENARIOS / "normal-hand-4-seats.toml").read_text()
    scenario = parse_scenario(text.replace("[table]\n", f"[table]\nsettle = {SETTLE}\n", 1))
    assert scenario.table.settle == SETTLE
    async with Rig(RigOptions(broker="none", directory=tmp_path)) as rig:
        table = await rig.open_table(table_setup(scenario))
        mirror = Mirror(await open_reader(table.journal))
        try:
            runner = DeviceRunner(scenario)
            runner.attach(table, mirror)
            await runner.settle_at_start(False)
            await runner.play()
            envelopes = mirror.envelopes()
            inputs = list(mirror.run.inputs)
        finally:
            await rig.close_table()
            mirror.close()
    verdict = check(envelopes, scenario.expect, scenario.expect_not)
    assert verdict.passed, "\n".join(verdict.failures)
    assert "hand.hold" not in [e["type"] for e in envelopes]
    # the check came due before the first card left a seat for the muck: that input is at or
    # after the deadline (the daemon checks the seats before it applies it), seats still full
    deal = max(
        i
        for i, item in enumerate(inputs)
        if isinstance(item, GroupDispensed) and item.purpose is Purpose.HOLE
    )
    due = inputs[deal].ts + timedelta(seconds=SETTLE)
    showdown = next(i for i, item in enumerate(inputs) if isinstance(item, TableHand))
    mucked = [
        item
        for item in inputs[showdown:]
        if isinstance(item, TagDeparted) and item.zone.kind is ZoneKind.SEAT
    ]
    assert mucked
    assert min(item.ts for item in mucked) >= due
