"""``tablectl demo --core``: the demo straight into the pure core, without any process.

An automatic dealer plays random hands at a six-seat table (random but legal actions, all-ins and
side pots) through the pure core, and now and then makes one of the catalogue's mistakes, as fast
as the core goes: the same live view or event lines as the device demo (``simulators.rig.demo``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from rich.console import Console
from rich.live import Live

from controller.envelope import envelope
from controller.view.model import TableView
from controller.view.render import render
from simulators.autoplay import Style
from simulators.irregular import IrregularDealer
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec

SEATS = {1: 200, 2: 200, 3: 200, 4: 200, 5: 200, 6: 200}


def _line(env: dict[str, Any]) -> str:
    rules = ",".join(env["rules"])
    data = json.dumps(env["data"], separators=(",", ":"))
    return f"{env['seq']:>6} {env['hand_id'] or '-':<10} {env['type']:<22} {rules:<16} {data}"


def run_core_demo(args: argparse.Namespace, pause: float) -> int:
    """Play hands into the core and show their events, ``pause`` seconds apart in the live view
    (the demo's options set the pace, so the verb passes it in)."""
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    scenario = Scenario(
        scenario=ScenarioMeta(name="demo", profile=args.profile),
        table=TableSpec(id="DEMO", stacks=SEATS, button=6, blinds=(1, 2)),
    )
    style = Style(fold=0.25, aggressive=0.2, all_in=0.1)
    dealer = IrregularDealer(scenario, rng, style, rate=args.irregularities)
    live = sys.stdout.isatty() and not args.json
    print(f"# tablectl demo: seed {seed}, profile {args.profile}, Ctrl-C to stop", file=sys.stderr)
    view = TableView()
    console = Console()
    played = printed = 0
    screen = Live(render(view), console=console, auto_refresh=False) if live else None
    try:
        if screen is not None:
            screen.start()
        while not args.hands or played < args.hands:
            if not dealer.play_hand():
                dealer = IrregularDealer(scenario, rng, style, rate=args.irregularities)
                printed = 0
                continue
            played += 1
            for event in dealer.run.events[printed:]:
                printed += 1
                env = envelope(event, table_id="DEMO", epoch="demo", seq=printed, secure=True)
                view.apply(env)
                if screen is not None:
                    screen.update(render(view), refresh=True)
                    time.sleep(pause)
                else:
                    print(json.dumps(env) if args.json else _line(env), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        if screen is not None:
            screen.stop()
    print(f"# {played} hands, {view.irregularities} irregularities", file=sys.stderr)
    return 0
