"""Carrying out the FEIG simulator's commands (:mod:`simulators.feig.commands`).

The control channel (``--control``, served by :mod:`simulators.control_server`) and the
scenario's timed steps both end here; ``docs/simulators.md`` lists the commands. They act on a
:class:`FeigHost`: the reader on a pty (:class:`~simulators.feig.server.FeigSimulator`) or on
the simulated USB bus (:class:`~simulators.feig.usb_device.SimulatedFeigUsbReader`).
"""

from __future__ import annotations

from typing import Any, Protocol

from simulators.command_vocabulary import RemoveCommand, StatusCommand
from simulators.feig.commands import (
    RF_PROBLEMS,
    ClearCommand,
    Command,
    FaultCommand,
    PlaceCommand,
    SlideCommand,
    TagsCommand,
    parse_command,
)
from simulators.feig.reader import FeigReaderModel


class FeigHost(Protocol):
    """Where a simulated reader is plugged in: what the commands need of it."""

    reader: FeigReaderModel
    unplugs: int
    start_rates: dict[str, float]

    @property
    def device(self) -> str:
        """What a driver opens (a pty path, a USB bus position)."""
        ...

    @property
    def path(self) -> str | None:
        """Where the reader is now (None while unplugged)."""
        ...

    @property
    def plugged(self) -> bool:
        """False while unplugged."""
        ...

    def now(self) -> float:
        """The simulator's clock."""
        ...

    def unplug(self) -> None:
        """Pull the cable."""
        ...

    def replug(self) -> str:
        """Plug it back in; where it is now."""
        ...


def status(sim: FeigHost) -> dict[str, Any]:
    """What the simulator shows to a curious test or operator."""
    reader, radio = sim.reader, sim.reader.radio
    antennas = {
        str(antenna): {
            "tags": [uid.hex() for uid in radio.tags.get(antenna, [])],
            # what the bench waits on before reusing the reader: nothing lies on it
            "asserted": [uid.hex() for uid in radio.tags.get(antenna, [])],
            "fault": radio.faults[antenna].value if antenna in radio.faults else None,
        }
        for antenna in range(1, radio.antennas + 1)
    }
    return {
        "device": sim.device,
        "path": sim.path,
        "plugged": sim.plugged,
        "antennas": antennas,
        "queued_events": 0,
        "faults": {
            **reader.link.describe(sim.now()),
            "flap": radio.flap,
            "crosstalk": radio.crosstalk,
            "stacked_miss": radio.stacked_miss,
            "rf": [name for name, bit in RF_PROBLEMS.items() if reader.rf_flags & bit],
        },
        "commands": {f"{code:02x}": n for code, n in sorted(reader.commands.items())},
        "inventories": reader.inventories,
        "pages_sent": reader.pages_sent,
        "ignored_requests": reader.ignored_requests,
        "rf_resets": reader.resets,
        "crosstalk_reads": radio.crosstalk_reads,
        "stacked_misses": radio.stacked_misses,
        "collisions": radio.collisions,
        "unplugs": sim.unplugs,
        "journal": list(reader.journal),
    }


def apply(sim: FeigHost, command: Command) -> dict[str, Any]:
    """Carry out a validated command; return the reply's fields."""
    radio = sim.reader.radio
    if isinstance(command, PlaceCommand):
        for uid in command.place:
            radio.place(bytes.fromhex(uid), command.antenna)
    elif isinstance(command, RemoveCommand):
        for uid in command.remove:
            radio.remove(bytes.fromhex(uid))
    elif isinstance(command, TagsCommand):
        for antenna in command.tags:
            radio.check_antenna(antenna)
        radio.tags.clear()
        radio.slides.clear()
        for antenna, uids in command.tags.items():
            for uid in uids:
                radio.place(bytes.fromhex(uid), antenna)
    elif isinstance(command, SlideCommand):
        for uid in command.slide:
            radio.slide(bytes.fromhex(uid), command.antenna, command.inventories)
    elif isinstance(command, FaultCommand):
        _fault(sim, command)
    elif isinstance(command, ClearCommand):
        _clear(sim, command)
    elif isinstance(command, StatusCommand):
        return status(sim)
    return {"tags": {str(a): [u.hex() for u in uids] for a, uids in radio.tags.items() if uids}}


def _fault(sim: FeigHost, command: FaultCommand) -> None:
    reader, radio, rate = sim.reader, sim.reader.radio, command.rate or 0.0
    name = command.fault
    if name == "crc":
        reader.link.crc = rate
    elif name == "partial":
        reader.link.partial = rate
    elif name == "stall":
        reader.link.stall_until = sim.now() + command.seconds
    elif name == "unplug":
        sim.unplug()
    elif name == "replug":
        sim.replug()
    elif name == "rf":
        reader.rf_flags |= RF_PROBLEMS[command.problem]
    elif name == "antenna":
        assert command.antenna is not None
        radio.check_antenna(command.antenna)
        radio.faults[command.antenna] = command.code
    else:  # flap, crosstalk, stacked_miss
        setattr(radio, name, rate)


def _clear(sim: FeigHost, command: ClearCommand) -> None:
    reader, radio, name = sim.reader, sim.reader.radio, command.clear
    if name in ("crc", "all"):
        reader.link.crc = 0.0
    if name in ("partial", "all"):
        reader.link.partial = 0.0
    if name in ("stall", "all"):
        reader.link.stall_until = 0.0
    if name in ("rf", "all"):
        reader.rf_flags = 0
    for rate in ("flap", "crosstalk", "stacked_miss"):
        if name in (rate, "all"):
            setattr(radio, rate, sim.start_rates.get(rate, 0.0))
    if name in ("antenna", "all"):
        if command.antenna is None:
            radio.faults.clear()
        else:
            radio.faults.pop(command.antenna, None)


def handle(sim: FeigHost, data: Any) -> dict[str, Any]:
    """Validate and carry out one decoded command; the reply for the control channel (a bad
    command raises a ValueError, which the channel answers with its message)."""
    return {"ok": True, **apply(sim, parse_command(data))}
