"""``tablectl scenario run FILE… [--core] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.envelope import envelope
from controller.table.events import TableEvent
from simulators.scenario.core_runner import run_core
from simulators.scenario.expect import check
from simulators.scenario.model import Scenario, ScenarioError, load_scenario


def add_parser(subparsers: Any) -> None:
    """Register the ``scenario`` verb."""
    scenario = subparsers.add_parser("scenario", help="play scenario files")
    verbs = scenario.add_subparsers(dest="scenario_verb", metavar="VERB", required=True)
    run = verbs.add_parser("run", help="play scenario files and check their expectations")
    run.add_argument("files", nargs="+", type=Path, metavar="FILE")
    run.add_argument(
        "--core", action="store_true", help="play straight into the pure core (no devices)"
    )
    run.add_argument("--broker", help="MQTT broker URL (device mode)")
    run.add_argument("--json", action="store_true", help="print every event envelope as JSON")
    run.add_argument("--quiet", "-q", action="store_true", help="print only the verdicts")
    run.set_defaults(handler=run_command)


def envelopes(scenario: Scenario, events: list[TableEvent]) -> list[dict[str, Any]]:
    """The run's events as surveillance-view envelopes numbered from 1."""
    return [
        envelope(e, table_id=scenario.table.id, epoch="core", seq=i, secure=True)
        for i, e in enumerate(events, start=1)
    ]


def _pretty(env: dict[str, Any]) -> str:
    rules = ",".join(env["rules"])
    data = json.dumps(env["data"], separators=(",", ":"))
    flag = " [secure]" if env.get("secure") else ""
    return f"{env['seq']:>4} {env['type']:<24} {rules:<22} {data}{flag}"


def run_command(args: argparse.Namespace) -> int:
    """Play each file; exit 1 when any expectation fails, 2 when a file cannot be run."""
    if not args.core:
        print(
            "tablectl scenario run: device mode needs the daemon; use --core for the pure core",
            file=sys.stderr,
        )
        return 2
    status = 0
    for path in args.files:
        try:
            scenario = load_scenario(path)
            run = run_core(scenario)
        except ScenarioError as exc:
            print(f"ERROR {exc}", file=sys.stderr)
            status = max(status, 2)
            continue
        envs = envelopes(scenario, run.events)
        if args.json:
            for env in envs:
                print(json.dumps(env, separators=(",", ":")))
        elif not args.quiet:
            print(f"# {path}: {scenario.scenario.name}")
            for env in envs:
                print(_pretty(env))
        verdict = check(envs, scenario.expect, scenario.expect_not)
        out = sys.stderr if args.json else sys.stdout
        if verdict.passed:
            print(f"PASS {path} ({len(envs)} events)", file=out)
        else:
            status = max(status, 1)
            print(f"FAIL {path}", file=out)
            for failure in verdict.failures:
                print(f"  {failure}", file=out)
    return status
