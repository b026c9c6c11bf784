"""A table played into a real journal, as the daemon does it (no devices, no broker).

For the tests and benchmarks that journal what the automatic dealer
(:mod:`simulators.autoplay`) plays: the genesis a scenario's table starts from, the shell's table
runner writing into a journal through its writer thread, and a dealer whose hands go on for as
long as asked.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from controller.shell.journal import Journal
from controller.shell.table import TableRunner, initial_state
from controller.shell.writer import JournalWriter
from simulators.autoplay import AutoDealer, Style
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec


def endless_dealer(name: str, seed: int = 1, stack: int = 10**6) -> AutoDealer:
    """Six seats of ``stack`` chips at blinds 1/2, checks and calls only: the stacks never run
    out, so hands go on as long as asked."""
    scenario = Scenario(
        scenario=ScenarioMeta(name=name, profile="rrop-cash"),
        table=TableSpec(id="T1", stacks=dict.fromkeys(range(1, 7), stack), button=1, blinds=(1, 2)),
    )
    return AutoDealer(
        scenario, random.Random(seed), Style(fold=0.0, aggressive=0.0, muck_loser=0.3)
    )


def genesis_of(scenario: Scenario) -> dict[str, Any]:
    """What a new journal records as the table the scenario starts from."""
    table = scenario.table
    return {
        "table_id": table.id,
        "profile": scenario.scenario.profile,
        "house_rules": scenario.scenario.house_rules,
        "stacks": {str(s): c for s, c in table.stacks.items()},
        "button": table.button,
        "blinds": list(table.blinds),
        "ante": table.ante,
    }


def journal_runner(path: Path, dealer: AutoDealer) -> TableRunner:
    """The table runner over the journal at ``path`` (created with the dealer's genesis)."""
    genesis = genesis_of(dealer.scenario)
    journal = Journal.open(path, table_id=dealer.scenario.table.id, genesis=genesis)
    state = initial_state(genesis, dealer.run.state.profile, dealer.manifest)
    return TableRunner(JournalWriter(journal), state, "shuffler")
