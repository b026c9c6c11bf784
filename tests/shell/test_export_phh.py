"""``tablectl journal export --phh``: every showdown declaration, in order, and pokerkit agrees."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from controller.profiles import load_profile
from controller.shell.export import export_phh
from controller.shell.journal import Journal
from controller.shell.table import TableRunner, initial_state
from controller.shell.writer import JournalWriter
from simulators.scenario.core_runner import run_core
from simulators.scenario.model import load_scenario
from tests.core.test_phh import replay
from tests.helpers import SCENARIOS


def test_a_hand_mucked_before_the_winner_exports_the_muck_and_replays(tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIOS / "rule-DE-1551-muck-before-winner.toml")
    run = run_core(scenario)
    table = scenario.table
    genesis = {
        "table_id": table.id,
        "profile": scenario.scenario.profile,
        "house_rules": {},
        "stacks": {str(s): c for s, c in table.stacks.items()},
        "button": table.button,
        "blinds": list(table.blinds),
        "ante": table.ante,
    }
    path = tmp_path / "journal.sqlite"

    async def live() -> None:
        journal = Journal.open(path, table_id=table.id, genesis=genesis)
        profile = load_profile(scenario.scenario.profile)
        state = initial_state(genesis, profile, run.state.manifest)
        runner = TableRunner(JournalWriter(journal), state, "shuffler")
        for item in run.inputs:
            await runner.submit(item)
        await runner.writer.close()

    asyncio.run(live())
    journal = Journal.open_existing(path)
    [text] = export_phh(journal)
    journal.close()
    actions = tomllib.loads(text)["actions"]
    assert [a for a in actions if " sm" in a] == ["p1 sm", "p2 sm 4c5c", "p3 sm 9h9s"]
    hand = run.state.last_hand
    assert hand is not None
    assert [hand.stacks[s] for s in hand.order] == [98, 98, 104, 100]
    assert replay(text) == [98, 98, 104, 100]  # the aces mucked win nothing in pokerkit too
