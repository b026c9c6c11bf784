"""``tablectl demo``: watch the table core play hands.

An automatic dealer plays random hands at a six-seat table (random but legal actions, all-ins and
side pots) through the pure core, and every table event is printed as it happens, with its rule
IDs. With ``--hands N`` it stops after N hands and exits 0; without, it plays until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from controller.envelope import envelope
from simulators.autoplay import AutoDealer, Style
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec

SEATS = {1: 200, 2: 200, 3: 200, 4: 200, 5: 200, 6: 200}


def add_parser(subparsers: Any) -> None:
    """Register the ``demo`` verb."""
    demo = subparsers.add_parser("demo", help="watch an automatic dealer play hands")
    demo.add_argument("--hands", type=int, default=0, help="stop after N hands (default: never)")
    demo.add_argument("--seed", type=int, default=None, help="seed for a reproducible session")
    demo.add_argument("--profile", default="rrop-cash", help="rules profile (config/profiles)")
    demo.add_argument("--json", action="store_true", help="print event envelopes as JSON lines")
    demo.add_argument(
        "--pause", type=float, default=None, help="seconds between hands (default 1 when endless)"
    )
    demo.set_defaults(handler=run)


def _line(env: dict[str, Any]) -> str:
    rules = ",".join(env["rules"])
    data = json.dumps(env["data"], separators=(",", ":"))
    return f"{env['seq']:>6} {env['hand_id'] or '-':<10} {env['type']:<22} {rules:<16} {data}"


def run(args: argparse.Namespace) -> int:
    """Play hands and print their events."""
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    scenario = Scenario(
        scenario=ScenarioMeta(name="demo", profile=args.profile),
        table=TableSpec(id="DEMO", stacks=SEATS, button=6, blinds=(1, 2)),
    )
    dealer = AutoDealer(scenario, rng, Style(fold=0.25, aggressive=0.2, all_in=0.1))
    pause = args.pause if args.pause is not None else (0.0 if args.hands else 1.0)
    print(f"# tablectl demo: seed {seed}, profile {args.profile}, Ctrl-C to stop", file=sys.stderr)
    played = printed = 0
    try:
        while not args.hands or played < args.hands:
            if not dealer.play_hand():
                dealer = AutoDealer(scenario, rng, dealer.style)  # a player has every chip
                continue
            played += 1
            for event in dealer.run.events[printed:]:
                printed += 1
                env = envelope(event, table_id="DEMO", epoch="demo", seq=printed, secure=True)
                print(json.dumps(env) if args.json else _line(env), flush=True)
            printed = len(dealer.run.events)
            time.sleep(pause)
    except KeyboardInterrupt:
        print(f"\n# stopped after {played} hands", file=sys.stderr)
    return 0
