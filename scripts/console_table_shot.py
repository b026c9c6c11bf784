"""A screenshot of the pit console's table page (docs/img/console-table.png): a pit's web app on
a SQLite store made here, holding one table mid-hand (six seats, a side pot, a hold), seen by a
floor user with surveillance at 1280 × 800 in Debian's chromium.

    .venv/bin/python scripts/console_table_shot.py [--out docs/img/console-table.png]
        [--width 1280 --height 800]

Nothing is fetched: the store, the app and the browser are this machine's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.async_api import async_playwright

from controller.pit.http import listen, web_server
from controller.pit.ingest import Route, parse_event
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.users import add_user
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker

CHROMIUM = "/usr/bin/chromium"
TABLE, EPOCH, HAND = "T7", "e1", "T7-00042"
USER, PASSWORD = "floor-ann", "a long enough password"
HOLES = {1: ["Ah", "Qh"], 2: ["9c", "4d"], 3: ["Jc", "Js"], 5: ["7d", "7s"], 6: ["5h", "2s"]}


def event(seq: int, kind: str, data: dict[str, Any], **more: Any) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:", time.gmtime()) + f"{seq % 60:02d}.000Z"
    return {
        "schema": "tablectl.event/1",
        "table_id": TABLE,
        "epoch": EPOCH,
        "seq": seq,
        "event_id": f"{TABLE}:{EPOCH}:{seq}",
        "ts": stamp,
        "hand_id": HAND,
        "type": kind,
        "rules": [],
        "severity": "info",
        "needs_confirm": False,
        "historical": False,
        "data": data,
        **more,
    }


def action(seq: int, seat: int, kind: str, **data: Any) -> dict[str, Any]:
    return event(
        seq, "betting.action", {"seat": seat, "action": kind, "stack": 0, "all_in": False, **data}
    )


def hand_events() -> list[tuple[dict[str, Any], str]]:
    """The hand so far, as the table published it (public, and secure with the hole cards)."""
    stacks = {"1": 500, "2": 500, "3": 500, "5": 50, "6": 200}
    started = {
        "button": 6,
        "seats": [1, 2, 3, 5, 6],
        "small_blind": 1,
        "big_blind": 2,
        "blinds": [5, 10],
        "ante": 0,
        "stacks": stacks,
    }
    public = [
        event(1, "hand.started", started),
        action(2, 1, "post", blind="small", amount=5),
        action(3, 2, "post", blind="big", amount=10),
    ]
    secure: list[dict[str, Any]] = []
    seq = 4
    for seat, cards in HOLES.items():
        data = {"seat": seat, "group": seat, "count": 2}
        public.append(event(seq, "deal.group.delivered", data))
        secure.append(event(seq, "deal.group.delivered", {**data, "cards": cards}, secure=True))
        seq += 1
    public += [
        action(seq, 3, "raise", to=20, put_in=20),
        action(seq + 1, 5, "call", to=20, put_in=20),
        action(seq + 2, 6, "call", to=20, put_in=20),
        action(seq + 3, 1, "call", to=20, put_in=15),
        action(seq + 4, 2, "fold"),
        event(seq + 5, "betting.round.closed", {"street": "preflop", "pot": 100}),
        event(
            seq + 6,
            "board.dealt",
            {"street": "flop", "cards": ["As", "Kd", "7c"], "board": ["As", "Kd", "7c"]},
        ),
        action(seq + 7, 1, "bet", to=60, put_in=60),
        action(seq + 8, 3, "call", to=60, put_in=60),
        action(seq + 9, 5, "allin", to=30, put_in=30, all_in=True),
        action(seq + 10, 6, "fold"),
        event(seq + 11, "betting.round.closed", {"street": "flop", "pot": 270}),
        event(
            seq + 12,
            "board.dealt",
            {"street": "turn", "cards": ["Th"], "board": ["As", "Kd", "7c", "Th"]},
        ),
        action(seq + 13, 1, "bet", to=60, put_in=60),
    ]
    hold = {
        "hold": f"{HAND}-h1",
        "rule": "EXP-FIRST",
        "reason": "a card exposed at seat 6 during the deal",
        "ruling": "continue",
        "seat": 6,
    }
    public.append(event(seq + 14, "hand.hold", hold, severity="hold"))
    return [(e, "public") for e in public] + [(e, "secure") for e in secure]


def snapshot(last_seq: int) -> dict[str, Any]:
    """The table's retained public state on the turn: seat 1 bet 60, seat 3 to act."""

    def live(stack: int, committed: int, status: str = "live", cards: int = 2) -> dict[str, Any]:
        return {
            "stack": stack,
            "in_hand": True,
            "status": status,
            "committed": committed,
            "cards": cards,
        }

    return {
        "schema": "tablectl.state/1",
        "table_id": TABLE,
        "epoch": EPOCH,
        "seq": last_seq,
        "button": 6,
        "blinds": [5, 10],
        "ante": 0,
        "seats": {
            "1": live(360, 140),
            "2": live(490, 10, "folded", 0),
            "3": live(420, 80),
            "4": {"stack": 300, "in_hand": False},
            "5": live(0, 50),
            "6": live(180, 20, "folded", 0),
        },
        "hand": {
            "hand_id": HAND,
            "phase": "betting",
            "street": "turn",
            "board": ["As", "Kd", "7c", "Th"],
            "pot": 300,
            "to_act": 3,
            "current_bet": 60,
            "to_call": 60,
            "holds": [
                {
                    "id": f"{HAND}-h1",
                    "rule": "EXP-FIRST",
                    "ruling": "continue",
                    "reason": "a card exposed at seat 6 during the deal",
                    "seat": 6,
                }
            ],
        },
        "last_hand": "T7-00041",
    }


def make_store(url: str) -> None:
    store = Store(url)
    store.migrate()
    add_user(store, USER, ["floor", "surveillance"], PASSWORD)
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    birth = {"state": "online", "bdseq": 1, "journal": "j1", "epoch": EPOCH, "ts": stamp}
    store.record_status(TABLE, birth, now)
    events = hand_events()
    store.ingest(
        [
            parse_event(json.dumps(body).encode(), Route("event", TABLE, stream, "live"))  # type: ignore[arg-type]
            for body, stream in events
        ]
    )
    last = max(body["seq"] for body, _ in events)
    store.record_state(TABLE, snapshot(last), now, ("public", "secure"))
    store.close()


async def shoot(out: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'pit.sqlite'}"
        make_store(url)
        reader = StoreWorker(url, "api")
        await reader.open()
        app = create_app(reader, PitMetrics("shot"), pit_id="shot")
        listener = listen("127.0.0.1", 0)
        port = listener.getsockname()[1]
        server = web_server(app, header_timeout=10, keepalive_timeout=5, trusted_proxies=[])
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        try:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox"]
                )
                page = await browser.new_page(viewport={"width": width, "height": height})
                base = f"http://127.0.0.1:{port}"
                await page.goto(f"{base}/tables/{TABLE}")
                await page.get_by_label("User name").fill(USER)
                await page.get_by_label("Password").fill(PASSWORD)
                await page.get_by_role("button", name="Log in").click()
                await page.wait_for_url(f"{base}/tables/{TABLE}")
                await page.locator("svg.table-drawing").wait_for()
                out.parent.mkdir(parents=True, exist_ok=True)
                # the page from its top to the end of the table's section (the events below)
                box = await page.locator("#table-state").bounding_box()
                assert box is not None
                bottom = box["y"] + box["height"] + 16
                clip: Any = {"x": 0, "y": 0, "width": width, "height": bottom}  # a FloatRect
                await page.screenshot(path=str(out), full_page=True, clip=clip)
                await browser.close()
        finally:
            app.state.board.close()
            server.should_exit = True
            await serving
            listener.close()
            await reader.close()
    print(f"{out}: the table page at {width} x {height}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("docs/img/console-table.png"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    args = parser.parse_args()
    asyncio.run(shoot(args.out, args.width, args.height))


if __name__ == "__main__":
    main()
