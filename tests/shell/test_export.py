"""``tablectl journal export``: PHH with every showdown declaration; who made each ruling."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.authority import Authority, Role
from controller.cli import main
from controller.pit.phh import phh_from_events
from controller.profiles import load_profile
from controller.shell.export import export_drop, export_events, export_phh, export_rulings
from controller.shell.journal import Journal
from controller.shell.table import TableRunner, initial_state
from controller.shell.writer import JournalWriter
from controller.table.inputs import Confirm, DealerInput
from simulators.scenario.core_runner import run_core
from simulators.scenario.model import load_scenario
from simulators.table_journal import genesis_of
from tests.core.test_phh import replay
from tests.helpers import SCENARIOS


def journal_of(name: str, tmp_path: Path, change: Any = None) -> tuple[Path, Any]:
    """Play a scenario file into a journal (through the shell's runner), its inputs changed."""
    scenario = load_scenario(SCENARIOS / name)
    run = run_core(scenario)
    inputs = [change(item) if change else item for item in run.inputs]
    table = scenario.table
    genesis = genesis_of(scenario)
    path = tmp_path / "journal.sqlite"

    async def live() -> None:
        journal = Journal.open(path, table_id=table.id, genesis=genesis)
        profile = load_profile(scenario.scenario.profile).with_overrides(
            scenario.scenario.house_rules
        )
        state = initial_state(genesis, profile, run.state.manifest)
        runner = TableRunner(JournalWriter(journal), state, "shuffler")
        for item in inputs:
            await runner.submit(item)
        await runner.writer.close()

    asyncio.run(live())
    return path, run


def test_a_hand_mucked_before_the_winner_exports_the_muck_and_replays(tmp_path: Path) -> None:
    path, run = journal_of("rule-DE-1551-muck-before-winner.toml", tmp_path)
    journal = Journal.open_existing(path)
    [text] = export_phh(journal)
    journal.close()
    actions = tomllib.loads(text)["actions"]
    assert [a for a in actions if " sm" in a] == ["p1 sm", "p2 sm 4c5c", "p3 sm 9h9s"]
    hand = run.state.last_hand
    assert hand is not None
    assert [hand.chips.stacks[s] for s in hand.order] == [98, 98, 104, 100]
    assert replay(text) == [98, 98, 104, 100]  # the aces mucked win nothing in pokerkit too


@pytest.mark.parametrize(
    "name",
    [
        "rule-HOUSE-RAKE.toml",
        "rule-HOUSE-DROP-JACKPOT.toml",
        "rule-STRADDLE.toml",
        "rule-ANTE-TABLE.toml",
        "ante-button.toml",
        "rule-RUN-TWICE.toml",
        "rule-RR-BR-3-4-fixed-limit-hand.toml",
    ],
)
def test_the_pit_s_phh_of_the_exported_events_is_the_journal_s_phh(
    name: str, tmp_path: Path
) -> None:
    """The house's money and blind structures: what the pit writes from the events a table
    publishes is what the table's own export writes."""
    path, _ = journal_of(name, tmp_path)
    journal = Journal.open_existing(path)
    try:
        texts = export_phh(journal)
        events = [json.loads(line) for line in export_events(journal)]
    finally:
        journal.close()
    assert texts
    for text in texts:
        hand_id = tomllib.loads(text)["_hand_id"]
        assert phh_from_events([e for e in events if e.get("hand_id") == hand_id]) == text


def test_rulings_name_who_made_them(tmp_path: Path) -> None:
    floor = Authority("Bob Floor", Role.FLOOR, "bob")

    def signed(item: Any) -> Any:
        if isinstance(item, DealerInput):
            role = floor if isinstance(item, Confirm) else Authority("Ann", Role.DEALER, "ann")
            return dataclasses.replace(item, authority=role)
        return item

    path, _ = journal_of("T03-seat-reads-one-card.toml", tmp_path, signed)
    journal = Journal.open_existing(path)
    rulings = list(export_rulings(journal))
    events = [json.loads(line) for line in export_events(journal)]
    journal.close()
    misdeal = next(line for line in rulings if "hand.misdeal" in line)  # the confirmed ruling
    assert "Bob Floor (floor)" in misdeal
    assert "SEAT-COUNT" in misdeal
    hold = next(line for line in rulings if "hand.hold" in line)
    assert "the table (no command)" in hold  # a reader's count raised it, not a person
    started = next(e for e in events if e["type"] == "hand.started")
    assert started["by"] == {"person": "Ann", "role": "dealer"}


def test_the_drop_is_totalled_per_table_and_period(tmp_path: Path) -> None:
    path, run = journal_of("rule-HOUSE-DROP-JACKPOT.toml", tmp_path)
    journal = Journal.open_existing(path)
    lines = list(export_drop(journal))
    hourly = list(export_drop(journal, "hour"))
    journal.close()
    assert lines[0].split() == ["table", "day", "rake", "jackpot", "time", "total", "raked"]
    day = run.events[0].ts.strftime("%Y-%m-%d")
    assert lines[1].split() == ["T1", day, "2", "1", "0", "3", "1"]
    assert lines[-1].split() == ["T1", "total", "2", "1", "0", "3", "1"]
    assert hourly[1].split()[1].endswith(":00Z")


def test_time_collected_is_in_the_drop(tmp_path: Path) -> None:
    path, _ = journal_of("rule-HOUSE-TIME.toml", tmp_path)
    journal = Journal.open_existing(path)
    *_, total = export_drop(journal, "month")
    journal.close()
    assert total.split() == ["T1", "total", "0", "0", "18", "18", "0"]


def test_rr_pl_a_pot_limit_table_s_hands_are_refused_as_phh_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PHH has no variant for pot-limit hold'em: the command says so and exits 1, and the
    events still export."""
    path, _ = journal_of("rule-RR-PL-pot-limit-hand.toml", tmp_path)
    assert main(["journal", "export", "--phh", "--journal", str(path)]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert "PHH has no variant for pot-limit hold'em: export its events instead" in said.err
    assert main(["journal", "export", "--journal", str(path)]) == 0
    started = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["data"]["betting"] for e in started if e["type"] == "hand.started"] == ["pot_limit"]
