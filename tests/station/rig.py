"""A table with its dealer's station, all real: mosquitto, ``tablectl run`` as its own process on
a virtual shuffler and a badge reader (the ``jsonl`` driver on a pty: each line written is a tag
read), and the station in this process, served by uvicorn on a free port and asked with httpx.

The keyring has the rig's keys (tests/integration/conftest.py) and the station's, which acts for
the roster: ``ann`` and ``bob`` (dealers, each with a badge) and ``cat`` (floor).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from controller.aio import cancel_and_wait
from controller.config import load_config
from controller.pit.http import listen, web_server
from controller.shell.cli import keyring_entry, person_block
from controller.signing import new_key, save_private_key
from controller.station.app import create_app
from controller.station.roster import Roster, new_person, save_roster
from controller.station.settings import station_settings
from controller.station.station import Station
from controller.table.codec import input_to_json
from controller.table.inputs import TagArrived, Zone
from tests.integration.broker import Broker, free_port
from tests.integration.conftest import DaemonProcess
from tests.waiting import until

ANN_BADGE = "04a1b2c3d4e5f6"
BOB_BADGE = "04a1b2c3d4e5f7"
PINS = {"ann": "1234", "bob": "5678", "cat": "2468"}
PEOPLE = {
    "ann": ("Ann Example", "dealer"),
    "bob": ("Bob Example", "dealer"),
    "cat": ("Cat Floor", "floor"),
}


@dataclass
class Table:
    """The daemon of the rig, and how to lay a tag on its badge reader."""

    daemon: DaemonProcess
    badge_master: int
    config: Path
    console: Path

    def badge(self, uid: str) -> None:
        """A tag laid on the badge reader (the enroll zone)."""
        item = TagArrived(datetime.now(UTC), "badge", Zone.parse("enroll"), uid)
        os.write(self.badge_master, input_to_json(item).encode() + b"\n")

    async def request(self, command: str, **fields: Any) -> dict[str, Any]:
        """A request on the console socket, signed with the rig's key for ``command`` (a hold:
        surveillance's), as another console than the station would send it."""
        body = self.daemon.sign(command, {"transaction": uuid.uuid4().hex, **fields})
        reader, writer = await asyncio.open_unix_connection(str(self.console))
        try:
            writer.write(json.dumps({"command": command, **body}).encode() + b"\n")
            answer: dict[str, Any] = json.loads(await asyncio.wait_for(reader.readline(), 30))
        finally:
            writer.close()
        return answer

    def events(self) -> list[dict[str, Any]]:
        """Every event the journal holds, in order: ``{"type", "by", …}`` as journaled."""
        with contextlib.closing(
            sqlite3.connect(f"file:{self.daemon.journal}?mode=ro", uri=True, timeout=5)
        ) as conn:
            rows = conn.execute("SELECT seq, type, body FROM events ORDER BY seq").fetchall()
        return [{"seq": seq, "type": kind, **json.loads(body)} for seq, kind, body in rows]


def make_table(
    directory: Path,
    broker: Broker,
    *,
    station: str = "",
    table_extra: str = "",
    stacks: str = "{ 1 = 100, 2 = 100, 3 = 100 }",
) -> Table:
    """The daemon's process, configured and keyed (not started)."""
    master, slave = os.openpty()
    console = Path(tempfile.mkdtemp(prefix="ts")) / "console.sock"
    devices = (
        '[devices.shuffler]\ndriver = "virtual"\nseed = 7\n'
        f'state_file = "{directory / "shuffler.json"}"\n'
        f'[devices.badge]\ndriver = "jsonl"\nport = "{os.ttyname(slave)}"\n'
    )
    sections = (
        f'[daemon]\nconsole = "{console}"\n'
        '[station]\nbadge_zone = "enroll"\n'
        f'roster = "{directory / "roster.toml"}"\nkey = "{directory / "station.key"}"\n{station}'
    )
    daemon = DaemonProcess(
        directory,
        broker,
        devices=devices,
        sections=sections,
        stacks=stacks,
        table_extra=table_extra,
        # the station signs every request with its one key, and the tests press its buttons as
        # fast as the table answers: a hand played that way goes past the default 20 a second
        # a key (a dealer's hands never do), which is not what these tests are about
        security_extra="rate_per_key = 1000\nrate_per_key_burst = 1000\n",
    )
    daemon._slave = slave  # type: ignore[attr-defined]  # kept open: the reader's line stays up
    private, public = new_key()
    save_private_key(private, directory / "station.key")
    blocks = [
        keyring_entry(
            "station",
            {
                "person": "dealer's station T1",
                "roles": ["dealer", "floor"],  # a floor person may finish a hand at the station
                "public_key": public,
                "acts_for": sorted(PEOPLE),
            },
        ),
        *(person_block(pid, {"roles": [role]}) for pid, (_, role) in PEOPLE.items()),
    ]
    keyring = daemon.keys.keyring
    keyring.write_text(keyring.read_text() + "\n" + "\n".join(blocks))
    roster = Roster()
    for pid, (name, role) in PEOPLE.items():
        badges = {"ann": [ANN_BADGE], "bob": [BOB_BADGE]}.get(pid, [])
        roster = roster.with_person(new_person(pid, name, [role], badges, PINS[pid]))
    save_roster(roster, directory / "roster.toml")
    return Table(daemon, master, daemon.config, console)


class ServedTable(NamedTuple):
    """A table whose station listens on ``port``, and its broker."""

    broker: Broker
    port: int
    table: Table


def served_table(directory: Path, stacks: str = "{ 1 = 100, 2 = 100, 3 = 100 }") -> ServedTable:
    """A broker of its own (started) and a table (not started) whose station listens on a free
    port, in ``directory``; the house lets the dealer confirm RR-SD-4 (the virtual table's
    readers never see the losing hands reach the muck)."""
    (directory / "broker").mkdir()
    broker = Broker(directory / "broker")
    broker.start()
    port = free_port()
    table = make_table(
        directory / "table",
        broker,
        station=f'listen = "127.0.0.1:{port}"\n',
        table_extra='house_rules = { dealer_may_confirm = ["RR-SD-4"] }\n',
        stacks=stacks,
    )
    return ServedTable(broker, port, table)


@dataclass
class Running:
    """The station in this process and an HTTP client of it."""

    station: Station
    client: httpx.AsyncClient
    base: str

    async def login(self, dealer: str | None, pin: str) -> httpx.Response:
        body = {"pin": pin} if dealer is None else {"dealer": dealer, "pin": pin}
        return await self.client.post("/api/login", json=body)

    async def post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return await self.client.post(path, json=body or {})

    async def view(self) -> dict[str, Any]:
        answer = await self.client.get("/api/view")
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    async def until_view(self, condition: Any, what: str, timeout: float = 30.0) -> dict[str, Any]:
        """The station's view once ``condition(view)`` holds (the view as the station has it)."""
        found: dict[str, Any] = {}

        def holds() -> bool:
            view = self.station.link.view
            if view is None or not self.station.link.connected:
                return False
            found.clear()
            found.update(view)
            return bool(condition(view))

        await until(holds, timeout, what)
        return found


@contextlib.asynccontextmanager
async def station_running(config: Path) -> AsyncIterator[Running]:
    """The station of ``config`` (its daemon running), served on a free port, until the block
    ends; it has seen the table's view when the block begins."""
    settings = station_settings(load_config(config))
    station = Station(settings)
    listener = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    server = web_server(
        create_app(station), header_timeout=10, keepalive_timeout=30, trusted_proxies=[]
    )
    tasks = [
        asyncio.create_task(station.link.follow()),
        asyncio.create_task(station.idle_logout()),
        asyncio.create_task(server.serve(sockets=[listener])),
    ]
    base = f"http://127.0.0.1:{port}"
    try:
        await until(lambda: station.link.connected and server.started, 30, "the station to start")
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            yield Running(station, client, base)
    finally:
        server.should_exit = True
        await asyncio.wait([tasks[2]], timeout=10)
        await cancel_and_wait(tasks)
        listener.close()
        await station.link.close()
