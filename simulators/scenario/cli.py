"""``tablectl scenario run FILE… [--core] [--broker URL] [--json] [-q]``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.table.events import TableEvent
    from simulators.scenario.model import Scenario


def add_parsers(subparsers: Any) -> None:
    """Register the ``scenario`` verb."""
    scenario = subparsers.add_parser(
        "scenario",
        help="play scenario files",
        description="Play scenario files (a hand's cards, actions and the events expected, "
        "docs/scenarios.md) and check their expectations, or make one from a PHH hand history.",
    )
    verbs = scenario.add_subparsers(dest="scenario_verb", metavar="VERB", required=True)
    run = verbs.add_parser(
        "run",
        help="play scenario files and check their expectations",
        description="Play scenario files through the simulators, drivers and daemon (device "
        "mode), or with --core straight into the pure core.",
    )
    run.add_argument("files", nargs="+", type=Path, metavar="FILE", help="scenario files (TOML)")
    run.add_argument(
        "--core", action="store_true", help="play straight into the pure core (no devices)"
    )
    run.add_argument(
        "--broker",
        default="auto",
        metavar="URL",
        help="device mode: mqtt://host:port, or none (default: a mosquitto of its own when "
        "installed, else none: the events are read from the daemon's journal)",
    )
    run.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        metavar="N",
        help="device mode: play N files at once, each on a rig of its own (default 1)",
    )
    run.add_argument("--json", action="store_true", help="print every event envelope as JSON")
    run.add_argument("--quiet", "-q", action="store_true", help="print only the verdicts")
    run.set_defaults(handler=run_command)
    from_phh = verbs.add_parser(
        "from-phh",
        help="turn a PHH hand history into a scenario file",
        description="Print a scenario that deals the hand history's cards, makes its actions "
        "and expects the table to end where the history says (finishing_stacks).",
    )
    from_phh.add_argument("file", type=Path, metavar="FILE", help="a PHH (.phh) or bulk .phhs")
    from_phh.add_argument("--profile", default="rrop-cash", help="the rules profile")
    from_phh.add_argument(
        "--house",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a house rule, e.g. rake.mode=pot (repeatable; VALUE is TOML)",
    )
    from_phh.add_argument(
        "--hand",
        default=None,
        metavar="NAME",
        help="of a bulk .phhs (journal export --phh), the hand whose table is NAME (1, 2…)",
    )
    from_phh.add_argument(
        "--out", type=Path, default=None, help="where the scenario goes (default: standard output)"
    )
    from_phh.set_defaults(handler=from_phh_command)


def from_phh_command(args: argparse.Namespace) -> int:
    """``tablectl scenario from-phh FILE [--hand NAME] [--profile P] [--house KEY=VALUE]…
    [--out FILE]``."""
    import tomllib  # noqa: PLC0415

    from simulators.scenario.phh_import import PhhImportError, phh_to_scenario  # noqa: PLC0415

    house: dict[str, Any] = {}
    for item in args.house:
        key, sep, value = item.partition("=")
        try:
            house[key] = tomllib.loads(f"v = {value}")["v"] if sep else None
        except tomllib.TOMLDecodeError:
            house[key] = value  # a bare word: a string
        if not sep:
            print(f"tablectl scenario from-phh: --house {item}: KEY=VALUE", file=sys.stderr)
            return 2
    try:
        text = args.file.read_text(encoding="utf-8")
        scenario = phh_to_scenario(
            text,
            name=args.file.stem if args.hand is None else f"{args.file.stem}-{args.hand}",
            profile=args.profile,
            house_rules=house,
            hand=args.hand,
        )
    except (OSError, UnicodeDecodeError, PhhImportError, KeyError, ValueError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        print(f"tablectl scenario from-phh: {args.file}: {what}", file=sys.stderr)
        return 2
    if args.out is None:
        sys.stdout.write(scenario)
    else:
        args.out.write_text(scenario, encoding="utf-8")
    return 0


def envelopes(scenario: Scenario, events: list[TableEvent]) -> list[dict[str, Any]]:
    """The run's events as surveillance-view envelopes numbered from 1."""
    from controller.envelope import envelope  # noqa: PLC0415 (the verb loads what it runs)

    return [
        envelope(e, table_id=scenario.table.id, epoch="core", seq=i, secure=True)
        for i, e in enumerate(events, start=1)
    ]


def _pretty(env: dict[str, Any]) -> str:
    rules = ",".join(env["rules"])
    data = json.dumps(env["data"], separators=(",", ":"))
    flag = " [secure]" if env.get("secure") else ""
    return f"{env['seq']:>4} {env['type']:<24} {rules:<22} {data}{flag}"


def report(
    args: argparse.Namespace, path: Path, scenario: Scenario, envs: list[dict[str, Any]]
) -> int:
    """Print a run's events and verdict; 0 when its expectations held, else 1."""
    from simulators.scenario.expect import check  # noqa: PLC0415

    if args.json:
        for env in envs:
            print(json.dumps(env, separators=(",", ":")), flush=True)
    elif not args.quiet:
        print(f"# {path}: {scenario.scenario.name}")
        for env in envs:
            print(_pretty(env))
    verdict = check(envs, scenario.expect, scenario.expect_not)
    out = sys.stderr if args.json else sys.stdout
    if verdict.passed:
        print(f"PASS {path} ({len(envs)} events)", file=out, flush=True)
        return 0
    print(f"FAIL {path}", file=out)
    for failure in verdict.failures:
        print(f"  {failure}", file=out)
    out.flush()
    return 1


def run_command(args: argparse.Namespace) -> int:
    """Play each file; exit 1 when any expectation fails, 2 when a file cannot be run."""
    if args.core:
        from simulators.scenario.core_runner import run_core  # noqa: PLC0415

        return _each(args, lambda s: envelopes(s, run_core(s).events), "core")
    try:
        return asyncio.run(_device(args))
    except KeyboardInterrupt:
        print("tablectl scenario run: interrupted", file=sys.stderr)
        return 130


def _each(
    args: argparse.Namespace, play: Callable[[Scenario], list[dict[str, Any]]], mode: str
) -> int:
    from simulators.errors import ScenarioError  # noqa: PLC0415
    from simulators.scenario.model import load_scenario  # noqa: PLC0415

    status = 0
    for path in args.files:
        try:
            scenario = load_scenario(path)
            if mode not in scenario.scenario.modes:
                print(f"SKIP {path}: {mode} mode is not among its modes", file=sys.stderr)
                continue
            envs = play(scenario)
        except ScenarioError as exc:
            print(f"ERROR {exc}", file=sys.stderr)
            status = max(status, 2)
            continue
        status = max(status, report(args, path, scenario, envs))
    return status


async def _device(args: argparse.Namespace) -> int:
    from simulators.errors import ScenarioError  # noqa: PLC0415
    from simulators.rig.broker import AUTO, BrokerError, parse_broker  # noqa: PLC0415
    from simulators.rig.errors import RigError  # noqa: PLC0415
    from simulators.rig.rig import RigOptions  # noqa: PLC0415
    from simulators.scenario.device_runner import DeviceRun, run_files  # noqa: PLC0415
    from simulators.scenario.model import load_scenario  # noqa: PLC0415

    status = 0
    playable: list[tuple[Path, Scenario]] = []
    for path in args.files:
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            print(f"ERROR {exc}", file=sys.stderr)
            status = 2
            continue
        if "device" not in scenario.scenario.modes:
            print(f"SKIP {path}: device mode is not among its modes", file=sys.stderr)
            continue
        playable.append((path, scenario))
    try:
        if args.broker not in (AUTO, "none"):
            parse_broker(args.broker)
    except BrokerError as exc:
        print(f"tablectl scenario run: {exc}", file=sys.stderr)
        return 2
    if not playable:
        return status
    done: dict[int, DeviceRun | ScenarioError | RigError] = {}
    shown = 0

    def note(text: str) -> None:
        print(f"# device mode: {text}", file=sys.stderr, flush=True)

    scenarios = [scenario for _, scenario in playable]
    runs = run_files(scenarios, RigOptions(broker=args.broker), args.jobs, note=note)
    try:
        async for index, outcome in runs:
            done[index] = outcome
            while shown in done:  # in the order of the files
                path, scenario = playable[shown]
                result = done.pop(shown)
                if isinstance(result, DeviceRun):
                    status = max(status, report(args, path, scenario, result.envelopes))
                else:
                    print(f"ERROR {path}: {result}", file=sys.stderr, flush=True)
                    status = max(status, 2)
                shown += 1
    except (RigError, OSError) as exc:
        print(f"tablectl scenario run: {exc}", file=sys.stderr)
        return 2
    finally:
        await runs.aclose()
    return status
