"""Carrying out the reader simulator's commands, whichever transport it runs on.

The pty server (``tablectl sim rfid``) and the fake pyusb backend both run a :class:`ReaderModel`
inside a :class:`~simulators.tsp_device.WireDevice`; they differ in what unplugging means and in
how they are woken. Each offers the :class:`ReaderRuntime` protocol, and its ``apply`` is
:func:`apply`.
"""

from __future__ import annotations

from typing import Any, Protocol

from controller.table.inputs import Zone
from drivers.rfid.tsp_reader.codes import FAULTS, AntennaCode, zone_of
from simulators.command_vocabulary import CommandError, StatusCommand
from simulators.rfid.commands import (
    ANTENNA_FAULTS,
    ClearCommand,
    Command,
    FaultCommand,
    PlaceCommand,
    RemoveCommand,
    TagsCommand,
)
from simulators.rfid.model import ReaderModel
from simulators.tsp_device import SEVERITIES, WireDevice


class ReaderRuntime(Protocol):
    """What a transport running the reader offers the command handler."""

    device: WireDevice
    model: ReaderModel

    def now(self) -> float:
        """The device clock (seconds, monotonic)."""

    def kick(self) -> None:
        """Run the device now: something changed (a tag was placed, a fault injected)."""

    def unplug(self) -> None:
        """Pull the cable."""

    def replug(self) -> str:
        """Plug it back in; return where the device is now."""

    def describe(self) -> dict[str, Any]:
        """Where the device is: its pty, or its USB address."""


def reboot(runtime: ReaderRuntime) -> None:
    """The reader boots: a new boot id, and every event still in its RAM is gone."""
    runtime.model.boot(runtime.now())
    link = runtime.device.link
    link.reboot()
    link.drop_events()
    runtime.device.reset_transport()


def power_loss(runtime: ReaderRuntime) -> None:
    """A power cut and back (counted in the reader's power cycles)."""
    runtime.model.power_cycles += 1
    reboot(runtime)


def apply(runtime: ReaderRuntime, command: Command) -> dict[str, Any]:
    """Carry out a validated command; return the reply's fields."""
    model = runtime.model
    reply: dict[str, Any] = {}
    if isinstance(command, PlaceCommand):
        _antenna(model, command.antenna)
        model.place(command.antenna, [bytes.fromhex(u) for u in command.place])
    elif isinstance(command, RemoveCommand):
        if command.antenna is not None:
            _antenna(model, command.antenna)
        model.remove([bytes.fromhex(u) for u in command.remove], command.antenna)
    elif isinstance(command, TagsCommand):
        for number in command.tags:
            _antenna(model, number)
        for antenna in model.antennas:
            antenna.tags.clear()
        for number, uids in command.tags.items():
            model.place(number, [bytes.fromhex(u) for u in uids])
    elif isinstance(command, FaultCommand):
        reply = _fault(runtime, command)
    elif isinstance(command, ClearCommand):
        reply = _clear(runtime, command)
    elif isinstance(command, StatusCommand):
        return status(runtime)
    runtime.kick()
    return reply


def _antenna(model: ReaderModel, number: int) -> None:
    if number >= len(model.antennas):
        raise CommandError(f"antenna: the reader has antennas 0 to {len(model.antennas) - 1}")


def _targets(model: ReaderModel, number: int | None) -> list[int]:
    if number is None:
        return [antenna.number for antenna in model.antennas]
    _antenna(model, number)
    return [number]


def _fault(runtime: ReaderRuntime, command: FaultCommand) -> dict[str, Any]:
    model, kind = runtime.model, command.fault
    if runtime.device.inject(kind, command.rate, command.direction, command.seconds, runtime.now()):
        return {}
    if kind == "unplug":
        runtime.unplug()
    elif kind == "replug":
        return {"path": runtime.replug()}
    elif kind == "power_loss":
        power_loss(runtime)
        return {"boot_id": model.boot_id}
    elif kind in ("flap", "stacked_miss"):
        for number in _targets(model, command.antenna):
            setattr(model.antennas[number], f"{kind}_rate", command.rate)
    elif kind == "antenna":
        assert command.antenna is not None
        _antenna(model, command.antenna)
        broken = ANTENNA_FAULTS[command.code or "open"]
        model.break_antenna(command.antenna, broken, command.value, runtime.now())
    elif kind == "lose_edges":
        model.events.lose_rate = command.rate
    elif kind == "garble_edges":
        model.events.garble_rate = command.rate
    elif kind == "raise":
        code = FAULTS.code(command.code or "")
        return {"fault_id": model.raise_fault(code, SEVERITIES[command.severity], command.detail)}
    return {}


def _clear(runtime: ReaderRuntime, command: ClearCommand) -> dict[str, Any]:
    model, device, name = runtime.model, runtime.device, command.clear
    everything = name == "all"
    if name in ("flap", "stacked_miss") or everything:
        for number in _targets(model, command.antenna):
            for kind in ("flap", "stacked_miss"):
                if everything or kind == name:
                    setattr(model.antennas[number], f"{kind}_rate", 0.0)
    if name == "antenna" or everything:
        repaired = [n for n in _targets(model, command.antenna) if model.repair_antenna(n)]
        if not everything:
            return {"repaired": repaired}
    if name == "lose_edges" or everything:
        model.events.lose_rate = 0.0
    if name == "garble_edges" or everything:
        model.events.garble_rate = 0.0
    if name == "crc" or everything:
        device.crc_rate = {"in": 0.0, "out": 0.0}
    if name == "partial" or everything:
        device.partial_rate = 0.0
    if everything:
        return {"cleared": model.clear_fault(None)}
    if name not in ("flap", "stacked_miss", "lose_edges", "garble_edges", "crc", "partial"):
        return {"cleared": model.clear_fault(FAULTS.code(name))}
    return {}


def _zone(kind: int, index: int) -> str | None:
    zone: Zone | None = zone_of(kind, index)
    return None if zone is None else str(zone)


def status(runtime: ReaderRuntime) -> dict[str, Any]:
    """The simulator's state, for tests and the operator."""
    model = runtime.model
    antennas: dict[str, Any] = {}
    for antenna in model.antennas:
        where = antenna.assignment
        if not (antenna.tags or where or antenna.fault):
            continue
        antennas[str(antenna.number)] = {
            "zone": None if where is None else _zone(where.zone_kind, where.zone_index),
            "tags": [uid.hex() for uid in antenna.tags],
            "asserted": [uid.hex() for uid in antenna.asserted()],
            "fault": AntennaCode(antenna.fault).name.lower() if antenna.fault else None,
            "flap": antenna.flap_rate,
            "stacked_miss": antenna.stacked_miss_rate,
            "reads": antenna.reads,
            "missed_reads": antenna.missed_reads,
        }
    events = model.events
    return {
        **runtime.describe(),
        "boot_id": model.boot_id,
        "power_cycles": model.power_cycles,
        "sweep": model.sweep,
        "antennas": antennas,
        "faults": sorted(f.fault_id for f in model.faults.values()),
        "queued_events": runtime.device.link.queued_events,
        "edges": {
            "lost": events.lost,
            "garbled": events.garbled,
            "dropped": events.dropped,
            "lose_rate": events.lose_rate,
            "garble_rate": events.garble_rate,
        },
        "link": runtime.device.link.stats.as_dict(),
        **runtime.device.fault_status(),
    }
