"""Carrying out the FEIG simulator's commands (:mod:`simulators.feig.commands`).

The control channel (``--control``, served by :mod:`simulators.control_server`) and the
scenario's timed steps both end here; ``docs/simulators.md`` lists the commands. They act on a
:class:`FeigHost`: the line of readers on a pty (:class:`~simulators.feig.server.FeigSimulator`)
or one reader on the simulated USB bus
(:class:`~simulators.feig.usb_device.SimulatedFeigUsbReader`).
"""

from __future__ import annotations

from typing import Any, Protocol

from drivers.rfid.feig import setup
from simulators.command_vocabulary import CommandError, RemoveCommand, StatusCommand
from simulators.feig.bus import FeigLine
from simulators.feig.commands import (
    ClearCommand,
    Command,
    FaultCommand,
    PlaceCommand,
    ReaderSetup,
    SetupCommand,
    SlideCommand,
    TagsCommand,
)
from simulators.feig.reader import RF_PROBLEMS, ReaderModel


class FeigHost(Protocol):
    """Where a simulated line is plugged in: what the commands need of it."""

    line: FeigLine
    unplugs: int
    start_rates: dict[str, float]

    @property
    def device(self) -> str:
        """What a driver opens (a pty path, a USB bus position)."""
        ...

    @property
    def path(self) -> str | None:
        """Where the line is now (None while unplugged)."""
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


def _reader_status(reader: ReaderModel) -> dict[str, Any]:
    interface = reader.interface
    transponder = setup.Transponder(reader.ram[setup.CFG_TRANSPONDER])
    return {
        "address": reader.address,
        "model": reader.version.reader_type,
        "firmware": reader.version.firmware,
        "antennas": reader.owned(),
        "line": f"{interface.baudrate} baud parity {interface.parity}",
        "scan_mode": interface.scan_mode,
        "time_slots": transponder.time_slots,
        "afi": transponder.afi,
        "rf_on": reader.rf_on,
        "rf": [name for name, flag in RF_PROBLEMS.items() if reader.rf_flags & flag],
        "commands": {f"{code:02x}": n for code, n in sorted(reader.commands.items())},
        "inventories": reader.inventories,
        "pages_sent": reader.pages_sent,
        "rf_resets": reader.resets,
    }


def status(sim: FeigHost) -> dict[str, Any]:
    """What the simulator shows to a curious test or operator."""
    line, radio = sim.line, sim.line.radio
    antennas = {}
    for antenna in range(1, radio.antennas + 1):
        reader, ant_nr = line.reader_of(antenna)
        tags = [uid.hex() for uid in radio.tags.get(antenna, [])]
        antennas[str(antenna)] = {
            "reader": reader.address,
            "ant_nr": ant_nr,
            "tags": tags,
            # what the bench waits on before reusing the reader: nothing lies on it
            "asserted": tags,
            "fault": radio.faults[antenna].value if antenna in radio.faults else None,
        }
    counters = line.counters
    return {
        "device": sim.device,
        "path": sim.path,
        "plugged": sim.plugged,
        "readers": [_reader_status(reader) for reader in line.readers],
        "antennas": antennas,
        "queued_events": 0,
        "faults": {
            **line.link.describe(sim.now()),
            "flap": radio.flap,
            "crosstalk": radio.crosstalk,
            "stacked_miss": radio.stacked_miss,
        },
        "inventories": sum(reader.inventories for reader in line.readers),
        "pages_sent": sum(reader.pages_sent for reader in line.readers),
        "rf_resets": sum(reader.resets for reader in line.readers),
        "frames": counters.frames,
        "ignored_requests": counters.ignored,
        "data_timeouts": counters.data_timeouts,
        "advanced_frames": counters.advanced,
        "collisions": counters.collisions,
        "rushed_requests": counters.rushed,
        "wrong_speed_requests": counters.wrong_speed,
        "crosstalk_reads": radio.crosstalk_reads,
        "stacked_misses": radio.stacked_misses,
        "collided_slots": radio.collisions,
        "unplugs": sim.unplugs,
        "journal": list(line.journal),
    }


def apply(sim: FeigHost, command: Command) -> dict[str, Any]:
    """Carry out a validated command; return the reply's fields."""
    radio = sim.line.radio
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
    elif isinstance(command, SetupCommand):
        _setup(sim.line, command.setup)
    elif isinstance(command, StatusCommand):
        return status(sim)
    return {"tags": {str(a): [u.hex() for u in uids] for a, uids in radio.tags.items() if uids}}


def _fault(sim: FeigHost, command: FaultCommand) -> None:
    line, radio, rate = sim.line, sim.line.radio, command.rate or 0.0
    name = command.fault
    if name == "crc":
        line.link.crc = rate
    elif name == "partial":
        line.link.partial = rate
    elif name == "stall":
        line.link.stall_until = sim.now() + command.seconds
    elif name == "unplug":
        sim.unplug()
    elif name == "replug":
        sim.replug()
    elif name == "rf":
        readers = [r for r in line.readers if command.reader in (None, r.address)]
        if not readers:
            raise CommandError(f"reader: no reader at COM-ADR {command.reader} on the line")
        for reader in readers:
            reader.rf_flags |= RF_PROBLEMS[command.problem]
    elif name == "antenna":
        assert command.antenna is not None
        radio.check_antenna(command.antenna)
        radio.faults[command.antenna] = command.code
    else:  # flap, crosstalk, stacked_miss
        setattr(radio, name, rate)


def _clear(sim: FeigHost, command: ClearCommand) -> None:
    line, radio, name = sim.line, sim.line.radio, command.clear
    if name in ("crc", "all"):
        line.link.crc = 0.0
    if name in ("partial", "all"):
        line.link.partial = 0.0
    if name in ("stall", "all"):
        line.link.stall_until = 0.0
    if name in ("rf", "all"):
        for reader in line.readers:
            reader.rf_flags = 0
    for rate in ("flap", "crosstalk", "stacked_miss"):
        if name in (rate, "all"):
            setattr(radio, rate, sim.start_rates.get(rate, 0.0))
    if name in ("antenna", "all"):
        if command.antenna is None:
            radio.faults.clear()
        else:
            radio.faults.pop(command.antenna, None)


def _setup(line: FeigLine, wanted: ReaderSetup) -> None:
    """Set a reader up as ``wanted`` says, in RAM and EEPROM alike."""
    readers = [reader for reader in line.readers if reader.address == wanted.reader]
    if not readers:
        raise CommandError(f"setup.reader: no reader at COM-ADR {wanted.reader} on the line")
    reader = readers[0]
    interface = reader.interface
    record = interface.with_line(
        address=reader.address if wanted.address is None else wanted.address,
        baudrate=wanted.baudrate or interface.baudrate,
        parity=wanted.parity or interface.parity,
    ).record
    if wanted.response_time is not None:
        tenths = round(wanted.response_time * 10).to_bytes(2, "big")
        record = record[:6] + tenths + record[8:]
    if wanted.scan_mode is not None:
        mode = record[13] & ~setup.SCAN_MODE | (setup.SCAN_MODE if wanted.scan_mode else 0)
        record = record[:13] + bytes((mode,))
    cfg4 = bytearray(reader.ram[setup.CFG_TRANSPONDER])
    if wanted.time_slots is not None:
        cfg4[4] = cfg4[4] & ~setup.NO_TS | (setup.NO_TS if wanted.time_slots == 1 else 0)
    if wanted.afi is not None:
        cfg4[4] = cfg4[4] & ~setup.AFI | (setup.AFI if wanted.afi else 0)
        cfg4[5] = wanted.afi
    for memory in (reader.ram, reader.eeprom):
        memory[setup.CFG_INTERFACE] = record
        memory[setup.CFG_TRANSPONDER] = bytes(cfg4)
    reader.address = record[0]
    if wanted.diagnostics is not None:
        reader.diagnostics = frozenset(wanted.diagnostics)
    reader.running_baud = setup.Interface(record).baudrate  # as if it had been reset since
    version = reader.version
    if wanted.sw_type is not None:
        version = type(version)(
            version.sw_rev, version.d_rev, version.hw_type, wanted.sw_type, version.tr_type
        )
    if wanted.firmware is not None:
        major, minor, development = (int(part) for part in wanted.firmware.split("."))
        version = type(version)(
            major << 8 | minor, development, version.hw_type, version.sw_type, version.tr_type
        )
    reader.version = version
