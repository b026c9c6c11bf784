"""The demo's dealer's station: ``tablectl station``'s web app in the demo's process, on the rig's
table, and the automatic dealer's commands sent through it.

:func:`prepare` gives the rig's keyring what a table's station needs (docs/station.md, "Running
it"): the station's key, acting for the demo's one dealer, and a roster with that dealer and a
PIN made for the run. :class:`DemoStation` serves the station (``127.0.0.1:8470``, or a free port
when that one is taken) and follows each table the demo opens (the link's console socket moves
to the new table's). :class:`StationConsole` is the automatic dealer's console: it logs in with
the PIN and sends what a dealer taps at the station through the station's own JSON API (**Start
hand**, the betting actions, **Table** and **Muck** at the showdown, **Run it twice**, **Push
award**, a hold's **Confirm** or **Reject** where the house lets the dealer, **Call the floor**
for the others), so the demo exercises what the kiosk's pages call. What the station has no
button for (the floor's rulings, which the floor makes on the pit's console; the dealer's
mistakes the demo makes on purpose) goes over the rig's own console, signed as before.

The station judges what it is sent against its view of the table, which follows the journal by
a few milliseconds: before each request the console waits (on the station's own change events,
not by polling) until that view shows the table waiting for it, as a dealer looks at the screen
before tapping.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import structlog

from controller.aio import cancel_and_wait
from controller.config import load_config
from controller.pit.http import WebListenError, listen, web_server
from controller.shell.cli import keyring_entry, person_block
from controller.signing import new_key, save_private_key
from controller.station.app import create_app
from controller.station.roster import Roster, new_person, save_roster
from controller.station.settings import station_settings
from controller.station.station import Station
from simulators.rig.console import Console, ConsoleError
from simulators.rig.keys import RigKeys
from simulators.rig.rig import OpenTable

log = structlog.get_logger("tablectl.demo")

#: The demo's dealer, as the roster and the events' ``by`` name them.
DEALER = "auto"
DEALER_NAME = "Automatic dealer"
#: Where the station listens when it can (the port of ``[station] listen``'s default).
PORT = 8470
#: Seconds the console waits for the station's view to show the table waiting for a command.
CATCH_UP = 10.0

Ready = Callable[[Mapping[str, Any]], bool]


def prepare(keys: RigKeys) -> str:
    """The station's key, its keyring entry (acting for the demo's dealer) and the roster, beside
    the rig's keyring; the dealer's PIN, made for this run."""
    directory = keys.directory
    private, public = new_key()
    save_private_key(private, directory / "station.key")
    entry = {
        "person": "the demo's dealer's station",
        "roles": ["dealer"],
        "public_key": public,
        "acts_for": [DEALER],
    }
    blocks = [keyring_entry("station", entry), person_block(DEALER, {"roles": ["dealer"]})]
    keys.keyring.write_text(keys.keyring.read_text() + "\n" + "\n".join(blocks))
    pin = f"{secrets.randbelow(10**6):06d}"
    save_roster(
        Roster().with_person(new_person(DEALER, DEALER_NAME, ["dealer"], [], pin)),
        directory / "roster.toml",
    )
    return pin


class DemoStation:
    """The station of the demo's tables, served until :meth:`close`."""

    def __init__(self, station: Station, listener: socket.socket) -> None:
        self.station = station
        self.listener = listener
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        self.server = web_server(
            create_app(station), header_timeout=10, keepalive_timeout=30, trusted_proxies=[]
        )
        self.tasks = [
            asyncio.create_task(station.link.follow(), name="demo:station-watch"),
            asyncio.create_task(station.idle_logout(), name="demo:station-idle"),
            asyncio.create_task(self.server.serve(sockets=[listener]), name="demo:station-web"),
        ]

    @classmethod
    async def start(cls, table: OpenTable) -> DemoStation:
        """Serve the station of ``table`` (its config names the keyring :func:`prepare` wrote
        beside); it follows the table when this returns."""
        settings = station_settings(load_config(table.paths.config))
        try:
            listener = listen("127.0.0.1", PORT)
        except WebListenError:
            listener = listen("127.0.0.1", 0)  # another demo (or station) has it: any port
        made = cls(Station(settings), listener)
        await made.caught_up(lambda view: True, "the station to follow the table")
        return made

    def follow(self, table: OpenTable) -> None:
        """Follow ``table`` from now on (a new table of the demo: its own console socket)."""
        self.station.link.path = table.paths.console

    async def caught_up(self, ready: Ready, what: str, timeout: float = CATCH_UP) -> bool:
        """Until the station's view of the table satisfies ``ready`` (False: not in time)."""
        station = self.station
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            version = station.version
            view = station.link.view
            if station.link.connected and view is not None and ready(view.get("table") or {}):
                return True
            left = deadline - loop.time()
            if left <= 0:
                log.warning("demo.station_behind", waiting_for=what)
                return False
            await station.wait_change(version, left)

    async def close(self) -> None:
        """Stop serving."""
        self.server.should_exit = True
        await asyncio.wait([self.tasks[2]], timeout=10)
        await cancel_and_wait(self.tasks)
        self.listener.close()
        await self.station.link.close()


def _hand(table: Mapping[str, Any]) -> Mapping[str, Any]:
    hand = table.get("hand")
    return hand if isinstance(hand, Mapping) else {}


#: Each command the station has a button for: the API path, the fields it takes, and what its
#: view shows when the table waits for it.
ROUTES: dict[str, tuple[str, frozenset[str], Callable[[dict[str, Any]], Ready]]] = {
    "start_hand": (
        "/api/hand/start",
        frozenset({"button", "straddles"}),
        lambda f: lambda t: not _hand(t),
    ),
    "action": (
        "/api/actions/{action}",
        frozenset({"seat", "action", "amount", "oversized_chip"}),
        lambda f: lambda t: _hand(t).get("to_act") == f.get("seat"),
    ),
    "table": (
        "/api/showdown/table",
        frozenset({"seat"}),
        lambda f: lambda t: _hand(t).get("phase") == "showdown",
    ),
    "muck": (
        "/api/showdown/muck",
        frozenset({"seat"}),
        lambda f: lambda t: _hand(t).get("phase") == "showdown",
    ),
    "award": ("/api/award", frozenset(), lambda f: lambda t: "proposal" in _hand(t)),
    "run_it_twice": (
        "/api/run_it_twice",
        frozenset(),
        lambda f: lambda t: _hand(t).get("phase") == "board",
    ),
    "post": ("/api/post", frozenset({"seat"}), lambda f: lambda t: not _hand(t)),
}


class StationConsole:
    """The automatic dealer's console: the station's API for what it has a button for, the rig's
    console (``fallback``) for the rest."""

    def __init__(self, station: DemoStation, fallback: Console, pin: str) -> None:
        self.station = station
        self.fallback = fallback
        self.pin = pin
        self._client: httpx.AsyncClient | None = None
        self.called: set[str] = set()  # the holds the floor was called to
        self.sent = 0  # requests sent through the station

    @property
    def client(self) -> httpx.AsyncClient:
        """The HTTP client of the station (made again after :meth:`close`: a restarted daemon
        keeps its console)."""
        if self._client is None:
            self._client = httpx.AsyncClient(base_url=self.station.url.rstrip("/"), timeout=30)
        return self._client

    async def send(self, command: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Send ``command`` as the dealer would at the station; the daemon's answer's shape."""
        if command in ("confirm", "reject"):
            return await self._rule(command, fields)
        route = ROUTES.get(command)
        extra = set(fields) - (route[1] if route is not None else set())
        if route is None or extra or fields.get("oversized_chip"):
            return await self.fallback.send(command, fields)
        path, takes, waits_for = route
        await self.station.caught_up(waits_for(fields), command)
        body = {k: v for k, v in fields.items() if k in takes - {"action", "oversized_chip"}}
        return await self._post(path.format(**fields), body, command)

    async def _rule(self, command: str, fields: dict[str, Any]) -> dict[str, Any]:
        """A ruling: at the station where the house lets the dealer; else the dealer calls the
        floor to the hold and the floor rules on its console (the rig's, signed as the floor)."""
        await self.station.caught_up(lambda t: bool(_hand(t).get("holds")), command)
        view = self.station.station.link.view or {}
        pending = _hand(view.get("table") or {}).get("holds") or []
        hold = next((h for h in pending if fields.get("hold") in (None, h.get("id"))), None)
        if hold is None:
            return await self.fallback.send(command, fields)
        if hold.get("dealer_may_confirm"):
            return await self._post(f"/api/holds/{hold['id']}/{command}", {}, command)
        if hold["id"] not in self.called:
            self.called.add(hold["id"])
            reason = f"a ruling on {hold.get('rule')} is needed"
            await self._post("/api/floor", {"hold": hold["id"], "reason": reason}, "call_floor")
        return await self.fallback.send(command, fields)

    async def _post(self, path: str, body: dict[str, Any], command: str) -> dict[str, Any]:
        for attempt in range(3):
            answer = await self.client.post(path, json=body)
            if answer.status_code == 401 and attempt < 2:
                await self._login()  # first use, or an idle log-out: log in and send again
                continue
            if answer.status_code == 503 and attempt < 2:
                await self.station.caught_up(lambda t: True, "the table to be in reach")
                continue
            break
        self.sent += 1
        data = answer.json() if answer.headers.get("content-type") == "application/json" else {}
        if answer.status_code != 200:
            error = data.get("error") if isinstance(data, dict) else None
            return {"status": "error", "error": error or f"HTTP {answer.status_code}"}
        return {"status": "ok", "command": command, "data": {"events": data.get("events", [])}}

    async def _login(self) -> None:
        answer = await self.client.post("/api/login", json={"dealer": DEALER, "pin": self.pin})
        if answer.status_code != 200:
            raise ConsoleError(f"the station refused the demo's dealer: {answer.text}")

    async def close(self) -> None:
        """Let go of the connections (the station logs nobody out: the next table's console
        logs in again, or the idle log-out ends the session)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        await self.fallback.close()


async def close_quietly(station: DemoStation | None) -> None:
    """Stop ``station``, whatever state it is in."""
    if station is not None:
        with contextlib.suppress(Exception):
            await station.close()
