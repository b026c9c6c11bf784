"""Carrying out the PN532 simulator's commands (:mod:`simulators.pn532.commands`).

The control channel (``--control``, served by :mod:`simulators.control_server`) and the
scenario's timed steps both end here; ``docs/simulators.md`` lists the commands.
"""

from __future__ import annotations

from typing import Any

from simulators.command_vocabulary import PlaceCommand, RemoveCommand, StatusCommand
from simulators.pn532.commands import (
    ClearCommand,
    Command,
    FaultCommand,
    TagsCommand,
    parse_command,
    uid_bytes,
)
from simulators.pn532.server import Pn532Simulator


def status(sim: Pn532Simulator) -> dict[str, Any]:
    """What the simulator shows to a curious test or operator."""
    module = sim.module
    stats = module.stats
    return {
        "device": sim.device,
        "path": sim.path,
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


def apply(sim: Pn532Simulator, command: Command) -> dict[str, Any]:
    """Carry out a validated command; return the reply's fields."""
    if isinstance(command, PlaceCommand):
        sim.place(uid_bytes(command.place))
    elif isinstance(command, RemoveCommand):
        sim.remove(uid_bytes(command.remove))
    elif isinstance(command, TagsCommand):
        sim.set_tags(uid_bytes(command.tags))
    elif isinstance(command, FaultCommand):
        _fault(sim, command)
    elif isinstance(command, ClearCommand):
        _clear(sim, command.clear)
    elif isinstance(command, StatusCommand):
        return status(sim)
    return {"tags": [uid.hex() for uid in sim.module.antenna.uids]}


def _fault(sim: Pn532Simulator, command: FaultCommand) -> None:
    rate = command.rate or 0.0
    if command.fault == "flap":
        sim.set_flap(rate)
    elif command.fault == "stacked_miss":
        sim.set_stacked_miss(rate)
    elif command.fault == "corrupt":
        sim.set_corrupt(rate)
    elif command.fault == "antenna":
        sim.set_antenna(command.mode)
    elif command.fault == "unplug":
        sim.unplug()
    else:
        sim.replug()


def _clear(sim: Pn532Simulator, name: str) -> None:
    if name in ("flap", "all"):
        sim.set_flap(0.0)
    if name in ("stacked_miss", "all"):
        sim.set_stacked_miss(0.0)
    if name in ("corrupt", "all"):
        sim.set_corrupt(0.0)
    if name in ("antenna", "all"):
        sim.set_antenna(None)


def handle(sim: Pn532Simulator, data: Any) -> dict[str, Any]:
    """Validate and carry out one decoded command; the reply for the control channel (a bad
    command raises :class:`~simulators.command_vocabulary.CommandError`, which the channel
    answers with its message)."""
    return {"ok": True, **apply(sim, parse_command(data))}
