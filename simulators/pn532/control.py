"""The run-time control channel of the PN532 simulator: JSON lines over a Unix-domain socket.

Each request is one JSON object on one line, naming one action; each gets one JSON line back,
``{"ok": true, …}`` or ``{"ok": false, "error": "…"}``. Scenario steps use the same vocabulary.

==============================================  =============================================
``{"place": ["04a1b2c3d4e580", …]}``            put tags on the antenna
``{"remove": [...]}``                           lift tags off
``{"tags": [...]}``                             exactly these tags on the antenna
``{"fault": "flap", "rate": 0.2}``              each tag misses a poll with this probability
``{"fault": "stacked_miss", "rate": 0.5}``      a stack of 2+ tags loses some with this
                                                probability
``{"fault": "corrupt", "rate": 0.1}``           response frames get a bit flipped
``{"fault": "antenna", "mode": "timeout"}``     break the RF front end (modes: timeout, silent,
                                                error, overcurrent)
``{"fault": "unplug"}`` / ``{"fault": "replug"}``  pull / plug the cable
``{"clear": "flap"}``                           remove a fault (flap, stacked_miss, corrupt,
                                                antenna, all)
``{"status": true}``                            tags, faults, device path, link statistics
==============================================  =============================================
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.uids import UidError, normalize_uid, uid_to_bytes
from simulators.pn532.faults import AntennaMode
from simulators.pn532.server import Pn532Simulator

ACTIONS = ("place", "remove", "tags", "fault", "clear", "status")
OPTIONS = {"fault": frozenset({"rate", "mode"})}
"""Keys a request may carry besides its action."""
CLEARABLE = ("flap", "stacked_miss", "corrupt", "antenna", "all")
RATE_FAULTS = ("flap", "stacked_miss", "corrupt")
MAX_LINE = 64 * 1024


class ControlError(ValueError):
    """A request the simulator cannot carry out; the message says why."""


@dataclass(frozen=True, slots=True)
class Request:
    """One validated control action."""

    action: str
    uids: tuple[bytes, ...] = ()
    fault: str = ""
    rate: float = 0.0
    mode: AntennaMode | None = None


def _uids(value: object) -> tuple[bytes, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ControlError("expected a list of UID strings")
    try:
        return tuple(uid_to_bytes(item) for item in value)
    except UidError as exc:
        raise ControlError(str(exc)) from None


def _rate(request: Mapping[str, Any]) -> float:
    rate = request.get("rate")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
        raise ControlError("rate must be a number from 0 to 1")
    return float(rate)


def parse_request(request: object) -> Request:
    """Validate one request (a decoded JSON object or a scenario step)."""
    if not isinstance(request, Mapping):
        raise ControlError("a request is a JSON object")
    actions = [key for key in ACTIONS if key in request]
    if len(actions) != 1:
        raise ControlError(f"a request names exactly one action of: {', '.join(ACTIONS)}")
    action = actions[0]
    unknown = set(request) - {action} - OPTIONS.get(action, frozenset())
    if unknown:
        raise ControlError(f"unknown key(s) for {action!r}: {', '.join(sorted(unknown))}")
    value = request[action]
    if action in ("place", "remove", "tags"):
        return Request(action, uids=_uids(value))
    if action == "status":
        return Request(action)
    if action == "clear":
        if value not in CLEARABLE:
            raise ControlError(f"clear takes one of {', '.join(CLEARABLE)}")
        return Request(action, fault=str(value))
    extra = {"rate", "mode"} & set(request)
    if value in RATE_FAULTS:
        if "mode" in extra:
            raise ControlError(f"{value} takes a rate, not a mode")
        return Request(action, fault=str(value), rate=_rate(request))
    if value == "antenna":
        if "rate" in extra:
            raise ControlError("antenna takes a mode, not a rate")
        try:
            return Request(action, fault=value, mode=AntennaMode(request.get("mode", "timeout")))
        except ValueError:
            modes = ", ".join(m.value for m in AntennaMode)
            raise ControlError(f"antenna mode must be one of {modes}") from None
    if value in ("unplug", "replug"):
        if extra:
            raise ControlError(f"{value} takes no options")
        return Request(action, fault=str(value))
    raise ControlError("fault must be flap, stacked_miss, corrupt, antenna, unplug or replug")


def status(sim: Pn532Simulator) -> dict[str, Any]:
    """What the simulator shows to a curious test or operator."""
    module = sim.module
    stats = module.stats
    return {
        "device": sim.device,
        "path": sim.cable.path if sim.plugged else None,
        "plugged": sim.plugged,
        "asleep": module.asleep,
        "sam_mode": module.chip.sam_mode,
        "tags": [uid.hex() for uid in module.antenna.uids],
        "faults": module.faults.describe(),
        "commands": {f"{code:02x}": count for code, count in sorted(stats.commands.items())},
        "aborts": stats.aborts,
        "nacks": stats.nacks,
        "errors_sent": stats.errors_sent,
        "garbage_bytes": stats.garbage_bytes,
        "wakeups": stats.wakeups,
        "unplugs": sim.unplugs,
        "journal": list(stats.journal)[-64:],
    }


def perform(sim: Pn532Simulator, request: Request) -> dict[str, Any]:
    """Carry out a validated request; returns the reply's fields."""
    match request.action, request.fault:
        case "place", _:
            sim.place(request.uids)
        case "remove", _:
            sim.remove(request.uids)
        case "tags", _:
            sim.set_tags(request.uids)
        case "fault", "flap":
            sim.set_flap(request.rate)
        case "fault", "stacked_miss":
            sim.set_stacked_miss(request.rate)
        case "fault", "corrupt":
            sim.set_corrupt(request.rate)
        case "fault", "antenna":
            sim.set_antenna(request.mode)
        case "fault", "unplug":
            sim.unplug()
        case "fault", "replug":
            sim.replug()
        case "clear", name:
            if name in ("flap", "all"):
                sim.set_flap(0.0)
            if name in ("stacked_miss", "all"):
                sim.set_stacked_miss(0.0)
            if name in ("corrupt", "all"):
                sim.set_corrupt(0.0)
            if name in ("antenna", "all"):
                sim.set_antenna(None)
        case "status", _:
            return status(sim)
    return {"tags": [uid.hex() for uid in sim.module.antenna.uids]}


def handle_line(sim: Pn532Simulator, line: bytes) -> bytes:
    """One request line in, one reply line out; never raises on bad input."""
    try:
        request = json.loads(line)
        reply: dict[str, Any] = {"ok": True, **perform(sim, parse_request(request))}
    except json.JSONDecodeError as exc:
        reply = {"ok": False, "error": f"not JSON: {exc}"}
    except ControlError as exc:
        reply = {"ok": False, "error": str(exc)}
    return json.dumps(reply).encode() + b"\n"


async def serve(sim: Pn532Simulator, path: Path) -> asyncio.Server:
    """Listen for control connections on a Unix-domain socket at ``path``."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(handle_line(sim, line))
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass  # the client went away or sent an endless line: drop the session
        finally:
            writer.close()

    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return await asyncio.start_unix_server(session, path, limit=MAX_LINE)


class ControlClient:
    """A blocking client of the control channel, for tests and scripts."""

    def __init__(self, path: Path | str, timeout: float = 5.0) -> None:
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.settimeout(timeout)
        self._socket.connect(str(path))
        self._file = self._socket.makefile("rb")

    def request(self, **request: Any) -> dict[str, Any]:
        """Send one request; return the reply, raising ControlError if the simulator refused."""
        self._socket.sendall(json.dumps(request).encode() + b"\n")
        line = self._file.readline()
        if not line:
            raise ConnectionError("the simulator closed the control channel")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise ControlError(str(reply.get("error")))
        return reply

    def place(self, *uids: str) -> dict[str, Any]:
        """Put tags on the antenna."""
        return self.request(place=[normalize_uid(u) for u in uids])

    def remove(self, *uids: str) -> dict[str, Any]:
        """Lift tags off the antenna."""
        return self.request(remove=[normalize_uid(u) for u in uids])

    def fault(self, name: str, **options: Any) -> dict[str, Any]:
        """Inject a fault (``flap``/``stacked_miss`` with ``rate``, ``antenna`` with ``mode``…)."""
        return self.request(fault=name, **options)

    def clear(self, name: str = "all") -> dict[str, Any]:
        """Remove a fault."""
        return self.request(clear=name)

    def status(self) -> dict[str, Any]:
        """The simulator's status."""
        return self.request(status=True)

    def close(self) -> None:
        """Close the connection."""
        self._file.close()
        self._socket.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
