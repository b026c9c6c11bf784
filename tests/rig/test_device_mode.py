"""``tablectl scenario run`` in device mode: verdicts and exit codes as with ``--core``; the
normal form the two modes are compared in; the rig leaves no process behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simulators.rig.rig import Rig, RigOptions
from simulators.rig.setup import TableSetup
from simulators.scenario.normal import chatter, differences, normal, normal_form
from tests.helpers import SCENARIOS
from tests.rig.conftest import alive, stop_leftovers

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
NORMAL = SCENARIOS / "normal-hand-4-seats.toml"


def scenario_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "scenario", "run", *args],
        capture_output=True, text=True, timeout=90, cwd=REPO, check=False,
    )  # fmt: skip


def test_a_file_passes_on_the_journal_alone() -> None:
    proc = scenario_run("--broker", "none", str(NORMAL))
    assert proc.returncode == 0, proc.stderr
    assert "the events stay in the journal" in proc.stderr
    assert f"PASS {NORMAL}" in proc.stdout
    assert "pot.awarded" in proc.stdout
    assert "deal.group.delivered" in proc.stdout


def test_json_lines_come_from_the_broker(broker_url: str) -> None:
    proc = scenario_run("--broker", broker_url, "--json", str(NORMAL))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len({e["epoch"] for e in events}) == 1
    assert events[-1]["type"] == "hand.completed"
    assert "PASS" in proc.stderr


def test_a_failed_expectation_exits_1_with_what_came_instead(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text(
        NORMAL.read_text()
        + '\n[[expect]]\ntype = "pot.awarded"\ndata = { payouts = { "1" = 1 } }\n'
    )
    proc = scenario_run("--broker", "none", "-q", str(broken))
    assert proc.returncode == 1
    assert f"FAIL {broken}" in proc.stdout
    assert 'expect #8 {pot.awarded, data={"payouts": {"1": 1}}} not found' in proc.stdout


def test_a_step_the_devices_refuse_exits_2_naming_the_step(tmp_path: Path) -> None:
    refused = tmp_path / "refused.toml"
    refused.write_text(
        '[scenario]\nname = "a group with no deck"\n[table]\nstacks = { 1 = 10, 2 = 10 }\n'
        'button = 1\n[[step]]\ndealer = "start_hand"\n[[step]]\nshuffler = "dispense"\n'
        'purpose = "hole"\nseat = 2\n'
    )
    proc = scenario_run("--broker", "none", str(refused))
    assert proc.returncode == 2
    assert "step 2 (shuffler = dispense)" in proc.stderr
    assert "refused" in proc.stderr


def test_core_only_files_are_skipped_and_bad_brokers_refused() -> None:
    core_only = SCENARIOS / "rule-SHF-INFO.toml"
    proc = scenario_run("--broker", "none", str(core_only))
    assert proc.returncode == 0
    assert "SKIP" in proc.stderr
    proc = scenario_run("--broker", "http://example:80", str(NORMAL))
    assert proc.returncode == 2
    assert "mqtt://" in proc.stderr


def envelope(kind: str, data: dict[str, Any], rules: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": kind, "rules": rules or [], "severity": "info", "needs_confirm": False,
        "hand_id": "T1-00001", "data": data, "seq": 7, "epoch": "e", "ts": "now",
    }  # fmt: skip


def test_the_normal_form_drops_what_a_real_device_says_differently() -> None:
    online = envelope("device.status", {"device": "shuffler", "health": "online"})
    overflow = envelope("device.status", {"device": "reader", "fault": "ZONE_OVERFLOW"})
    lid = envelope("device.status", {"device": "shuffler", "fault": "LID_OPEN", "fault_id": 3,
                                     "detail": "lid opened"})  # fmt: skip
    reboot = envelope("device.status", {"device": "shuffler", "rebooted": True, "boot_id": 9},
                      ["SHF-POWER"])  # fmt: skip
    deck = envelope("deck.verified", {"shuffle_id": 1234, "counted": 52, "commitment": "ab"})
    assert chatter(online)
    assert chatter(overflow)
    assert not chatter(lid)
    assert not chatter(reboot)
    assert normal_form([online, overflow, lid, reboot, deck]) == [
        normal(lid), normal(reboot), normal(deck)
    ]  # fmt: skip
    assert normal(lid)["data"] == {"device": "shuffler", "fault": "LID_OPEN"}
    assert normal(reboot)["data"] == {"device": "shuffler", "rebooted": True}
    assert normal(deck)["data"] == {"counted": 52}
    assert "seq" not in normal(deck)


def test_differences_name_the_first_events_that_part() -> None:
    core = normal_form([envelope("hand.started", {"button": 4}), envelope("deal.complete", {})])
    assert differences(core, list(core)) == []
    other = normal_form([envelope("hand.started", {"button": 5})])
    found = differences(core, other)
    assert "event 1" in found[0]
    assert "'button': 5" in found[0] or "5" in found[0]
    assert "core adds deal.complete" in found[-1]


async def test_closing_the_rig_leaves_no_process_even_after_an_error(broker_url: str) -> None:
    pids: list[int] = []
    places: list[Path] = []

    async def fail_with_a_table() -> None:
        async with Rig(RigOptions(broker=broker_url)) as rig:
            table = await rig.open_table(TableSetup(id="T2", stacks={1: 10, 2: 10}, button=1))
            children = [table.daemon, table.bench.shuffler_sim, table.bench.reader_sim]
            if rig.local_broker is not None:
                children.append(rig.local_broker.child)
            pids.extend(child.pid for child in children if child is not None and child.pid)
            places.append(rig.directory)
            assert all(alive(pid) for pid in pids)
            raise RuntimeError("boom")

    try:
        with pytest.raises(RuntimeError, match="boom"):
            await fail_with_a_table()
        assert len(pids) >= 3
        assert not [pid for pid in pids if alive(pid)]
        assert not places[0].exists()  # a temporary directory is removed
    finally:
        stop_leftovers(pids)
