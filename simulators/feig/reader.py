"""One simulated FEIG ID ISC.M02.M8 reader: its commands, configuration memory and faults.

Pure (the time comes in with the request): :class:`ReaderModel` answers one decoded request
frame the way FEIG documents the reader (``docs/protocols/feig-isc.md`` cites every byte):
``[0x52]``, ``[0x63]``, ``[0x65]``, ``[0x69]``, ``[0x6A]``, ``[0x6E]`` (modes 0x01, 0x03, 0x04,
0x05), ``[0x71]``, ``[0x80]``-``[0x83]`` over its CFG1 and CFG4 blocks (RAM and EEPROM), and
``[0xB0][0x01]`` inventory, plain or over the antennas ANT_SEL selects, paged with status 0x94
and MODE bit MORE. It reads the tags its part of the line's :class:`~simulators.feig.radio.Radio`
hears: reader ``n`` on the line (0, 1, …) owns the line's antennas ``8n+1`` … ``8n+8`` as its
ANT_NR 1…8. Which bus this reader sits on, and what happens to the bytes on the way, is
:mod:`simulators.feig.bus`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from drivers.rfid.feig import datasets as d
from drivers.rfid.feig import protocol as p
from drivers.rfid.feig import setup
from drivers.rfid.feig.frames import Frame
from simulators.feig import timing
from simulators.feig.radio import AntennaFault, Heard, Radio

ANTENNAS = p.MAX_ANTENNA
"""An ID ISC.M02.M8's multiplexer outputs."""
PAGE_MAX = 16
"""Data sets an answer holds at most: "the More Bit is set if the number of Transponders exceeds
16" (M02 Annex C p. 99), and fewer when they would not fit the standard frame."""
FRAME_ROOM = 255 - 7
"""A standard answer's DATA at most: 255 bytes less LENGTH, COM-ADR, CONTROL-BYTE, STATUS, CRC16
and the DATA-SETS byte."""
BLOCKS = (setup.CFG_INTERFACE, setup.CFG_TRANSPONDER)
"""The configuration blocks an M02.M8 has (M02.M8 manual H90400-0e-ID-B, contents p. 3)."""
SW_TYPE_M02_M8 = 0x21
""""The value should be 0x21" (M02.M8 p. 23; Annex K No. 33 is ID ISC.M02M8)."""
SUPPORTED = {
    "iso15693": p.TransponderSupport.ISO15693,
    "iso14443a": p.TransponderSupport.ISO14443A,
}

#: The diagnostic's flag for each RF problem the simulator can be given.
RF_PROBLEMS = {
    "hardware": p.GeneralFlag.RF_HARDWARE,
    "noise": p.GeneralFlag.RF_NOISE,
    "overtemperature": p.GeneralFlag.TEMPERATURE_ALARM,
}
FAILING = p.GeneralFlag.RF_HARDWARE | p.GeneralFlag.TEMPERATURE_ALARM
"""Problems that stop an inventory (0x83, no data); the others only warn (0x84)."""
#: How a broken antenna shows in the mode 0x05 bit fields (power, below 50 Ω, above 50 Ω).
FAULT_FIELD = {AntennaFault.OPEN: 2, AntennaFault.SHORT: 1, AntennaFault.POWER: 0}


@dataclass(slots=True)
class Answer:
    """An answer frame and how long the reader works before it starts sending it."""

    data: bytes
    work: float = timing.REACTION


@dataclass(slots=True)
class ReaderModel:
    """One ID ISC.M02.M8 on a line."""

    radio: Radio
    index: int = 0
    """Its place on the line: it owns the line's antennas 8·index+1 … 8·index+8."""
    address: int = 0
    transponders: frozenset[str] = frozenset(SUPPORTED)
    journal: Callable[[str], None] = field(default=lambda line: None)
    rf_timing: bool = True
    """False: the reader works in no time (no RF time, so TR-RESPONSE-TIME never runs out)."""
    diagnostics: frozenset[int] = frozenset({0x01, 0x03, 0x04, 0x05})
    """The ``[0x6E]`` modes it has (the SDK marks 0x05 "only HF/UHF LR-Reader")."""
    version: p.SoftwareVersion = field(init=False)
    ram: dict[int, bytes] = field(init=False)
    eeprom: dict[int, bytes] = field(init=False)
    rf_on: bool = False
    running_baud: int = 115200
    """The baud rate it runs at: its CFG1 BAUD in EEPROM when it was last powered or reset (a
    new BAUD counts only after that, M02 p. 21)."""
    rf_flags: int = 0
    commands: Counter[int] = field(default_factory=Counter)
    inventories: int = 0
    pages_sent: int = 0
    resets: int = 0
    _pending: list[d.DataSet] = field(default_factory=list)
    _pending_status: int = p.Status.OK
    _pending_mode: bool | None = None
    """Whether the inventory whose pages wait was taken with antenna information (None: none)."""

    def __post_init__(self) -> None:
        tr_type = 0
        for name in self.transponders:
            tr_type |= SUPPORTED[name]
        self.version = p.SoftwareVersion(
            sw_rev=0x0102, d_rev=0x00, hw_type=0x00, sw_type=SW_TYPE_M02_M8, tr_type=tr_type
        )
        interface = setup.Interface(setup.DEFAULT_CFG1).with_line(
            address=self.address, baudrate=115200, parity="even"
        )
        self.eeprom = {
            setup.CFG_INTERFACE: interface.record,
            setup.CFG_TRANSPONDER: setup.DEFAULT_CFG4,
        }
        self.ram = dict(self.eeprom)
        self.running_baud = interface.baudrate

    # ------------------------------------------------------------------ what it is

    @property
    def first_antenna(self) -> int:
        """The line's number of its ANT_NR 1."""
        return self.index * ANTENNAS + 1

    def line_antenna(self, ant_nr: int) -> int:
        """The line's number of its antenna ``ant_nr``."""
        return self.first_antenna + ant_nr - 1

    def owned(self) -> list[int]:
        """Its antennas that the line has, as the line numbers them."""
        last = min(self.first_antenna + ANTENNAS - 1, self.radio.antennas)
        return list(range(self.first_antenna, last + 1))

    @property
    def interface(self) -> setup.Interface:
        """CFG1 in RAM."""
        return setup.Interface(self.ram[setup.CFG_INTERFACE])

    def power_on(self) -> None:
        """Fresh power: RAM from the EEPROM, the field off, no inventory pages waiting."""
        self.ram = dict(self.eeprom)
        self.address = self.interface.address
        self.running_baud = self.interface.baudrate
        self.rf_on = False
        self._pending, self._pending_mode = [], None

    # ------------------------------------------------------------------ a request

    def answer(self, frame: Frame) -> Answer | None:
        """The answer to one request addressed to it (None: it does not answer)."""
        self.commands[frame.command] += 1
        handler = self._HANDLERS.get(frame.command)
        if handler is None:
            return self._reply(frame.command, p.Status.UNKNOWN_COMMAND)
        return handler(self, frame.data)

    def _reply(self, command: int, status: int, data: bytes = b"", work: float = 0.0) -> Answer:
        encoded = Frame(self.address, command, data, status).encode()
        return Answer(encoded, timing.REACTION + work)

    def _baud_rate_detection(self, data: bytes) -> Answer:
        if data != b"\x00":
            return self._reply(p.CMD_BAUD_RATE_DETECTION, p.Status.LENGTH_ERROR)
        return self._reply(p.CMD_BAUD_RATE_DETECTION, p.Status.OK)

    def _cpu_reset(self, data: bytes) -> Answer:
        if data:
            return self._reply(p.CMD_CPU_RESET, p.Status.LENGTH_ERROR)
        answer = self._reply(p.CMD_CPU_RESET, p.Status.OK)
        self.power_on()
        return answer

    def _software_version(self, data: bytes) -> Answer:
        if data:
            return self._reply(p.CMD_SOFTWARE_VERSION, p.Status.LENGTH_ERROR)
        return self._reply(p.CMD_SOFTWARE_VERSION, p.Status.OK, self.version.encode())

    def _rf_reset(self, data: bytes) -> Answer:
        if data:
            return self._reply(p.CMD_RF_RESET, p.Status.LENGTH_ERROR)
        self.resets += 1
        self._pending, self._pending_mode = [], None
        return self._reply(p.CMD_RF_RESET, p.Status.OK, work=timing.RF_RESET)

    def _rf_on_off(self, data: bytes) -> Answer:
        if len(data) != 1:
            return self._reply(p.CMD_RF_ON_OFF, p.Status.LENGTH_ERROR)
        if data[0] not in (0x00, 0x01):
            return self._reply(p.CMD_RF_ON_OFF, p.Status.PARAMETER_RANGE_ERROR)
        self.rf_on = data[0] == 0x01
        return self._reply(p.CMD_RF_ON_OFF, p.Status.OK)

    def _set_output(self, data: bytes) -> Answer:
        # OS, OSF, OS-Time, two zero bytes (M02 §6.8 p. 53): the LEDs are not simulated.
        status = p.Status.OK if len(data) == 8 else p.Status.LENGTH_ERROR
        return self._reply(p.CMD_SET_OUTPUT, status)

    # ------------------------------------------------------------------ configuration

    def _read_config(self, data: bytes) -> Answer:
        if len(data) != 1:
            return self._reply(p.CMD_READ_CONFIG, p.Status.LENGTH_ERROR)
        block = data[0] & 0x3F
        if block not in BLOCKS:
            return self._reply(p.CMD_READ_CONFIG, p.Status.READ_PROTECT)
        memory = self.eeprom if data[0] & p.CFG_EEPROM else self.ram
        return self._reply(p.CMD_READ_CONFIG, p.Status.OK, memory[block])

    def _write_config(self, data: bytes) -> Answer:
        if len(data) != 1 + p.CFG_RECORD:
            return self._reply(p.CMD_WRITE_CONFIG, p.Status.LENGTH_ERROR)
        block, record = data[0] & 0x3F, data[1:]
        if block not in BLOCKS:
            return self._reply(p.CMD_WRITE_CONFIG, p.Status.WRITE_PROTECT)
        if not _plausible(block, record):
            return self._reply(p.CMD_WRITE_CONFIG, p.Status.PARAMETER_RANGE_ERROR)
        self.ram[block] = record
        if data[0] & p.CFG_EEPROM:
            self.eeprom[block] = record
        if block == setup.CFG_INTERFACE:
            self.address = record[0]  # COM-ADR counts at once; BAUD and parity after a reset
        return self._reply(p.CMD_WRITE_CONFIG, p.Status.OK)

    def _blocks(self, cfg_adr: int) -> list[int] | None:
        if cfg_adr & p.CFG_ALL:
            return list(BLOCKS)
        block = cfg_adr & 0x3F
        return [block] if block in BLOCKS else None

    def _save_config(self, data: bytes) -> Answer:
        if len(data) != 1:
            return self._reply(p.CMD_SAVE_CONFIG, p.Status.LENGTH_ERROR)
        blocks = self._blocks(data[0])
        if blocks is None:
            return self._reply(p.CMD_SAVE_CONFIG, p.Status.WRITE_PROTECT)
        for block in blocks:
            self.eeprom[block] = self.ram[block]
        return self._reply(p.CMD_SAVE_CONFIG, p.Status.OK)

    def _default_config(self, data: bytes) -> Answer:
        if len(data) != 1:
            return self._reply(p.CMD_DEFAULT_CONFIG, p.Status.LENGTH_ERROR)
        blocks = self._blocks(data[0])
        if blocks is None:
            return self._reply(p.CMD_DEFAULT_CONFIG, p.Status.WRITE_PROTECT)
        defaults = {
            setup.CFG_INTERFACE: setup.DEFAULT_CFG1,
            setup.CFG_TRANSPONDER: setup.DEFAULT_CFG4,
        }
        for block in blocks:
            self.ram[block] = defaults[block]
            if data[0] & p.CFG_EEPROM:
                self.eeprom[block] = defaults[block]
        self.address = self.interface.address
        return self._reply(p.CMD_DEFAULT_CONFIG, p.Status.OK)

    # ------------------------------------------------------------------ diagnostic

    def _diagnostic(self, data: bytes) -> Answer:
        if len(data) != 1:
            return self._reply(p.CMD_DIAGNOSTIC, p.Status.LENGTH_ERROR)
        mode, faults = data[0], self._faults()
        if mode not in self.diagnostics:
            return self._reply(p.CMD_DIAGNOSTIC, p.Status.PARAMETER_RANGE_ERROR)
        if mode == p.DIAG_GENERAL:
            flags = self.rf_flags | (p.GeneralFlag.MULTIPLEXER if faults else 0)
            body = p.GeneralDiagnostic(flags & 0xFF, flags >> 8).encode()
        elif mode == p.DIAG_MULTIPLEXER:
            # The SDK gives each channel a status byte without naming its values: 0x00 for a
            # channel in order, else the channel's bit of the mode 0x05 fields (bit 0 power,
            # bit 1 below 50 ohm, bit 2 above 50 ohm).
            body = bytes(
                1 << FAULT_FIELD[faults[n]] if n in faults else 0 for n in range(1, ANTENNAS + 1)
            )
        elif mode == p.DIAG_INTERNAL:
            body = bytes(2)  # INT_ERROR A and B: no EEPROM or RF decoder problem
        elif mode == p.DIAG_MULTIPLEXER_IMPEDANCE:
            fields = [0, 0, 0]
            for ant_nr, fault in faults.items():
                fields[FAULT_FIELD[fault]] |= 1 << (ant_nr - 1)
            body = bytes(fields)
        else:
            return self._reply(p.CMD_DIAGNOSTIC, p.Status.PARAMETER_RANGE_ERROR)
        return self._reply(p.CMD_DIAGNOSTIC, p.Status.OK, body)

    def _faults(self) -> dict[int, AntennaFault]:
        """Its broken antennas, by ANT_NR."""
        owned = self.owned()
        return {
            antenna - self.first_antenna + 1: fault
            for antenna, fault in self.radio.faults.items()
            if antenna in owned
        }

    # ------------------------------------------------------------------ inventory

    def _iso_host(self, data: bytes) -> Answer:
        if data[:1] != bytes((p.ISO_INVENTORY,)):
            # Only the inventory is simulated; the reader's other ISO 15693 commands (read and
            # write blocks, select, stay quiet…) are not.
            return self._reply(p.CMD_ISO_HOST, p.Status.UNKNOWN_COMMAND)
        if len(data) < 2:
            return self._reply(p.CMD_ISO_HOST, p.Status.LENGTH_ERROR)
        if self.interface.scan_mode:
            # "A Host command was sent to the Reader in the Scan Read Mode" (MU02 Annex C p. 92).
            return self._reply(p.CMD_ISO_HOST, p.Status.COMMAND_NOT_AVAILABLE)
        mode = data[1]
        with_antenna = bool(mode & p.MODE_ANT)
        if len(data) != (3 if with_antenna else 2):
            return self._reply(p.CMD_ISO_HOST, p.Status.LENGTH_ERROR)
        if mode & p.MODE_MORE:
            if self._pending_mode is not with_antenna:
                # "The command with More bit does not correspond with the last command" (MU02
                # Annex C p. 92).
                return self._reply(p.CMD_ISO_HOST, p.Status.COMMAND_NOT_AVAILABLE)
            return self._page(with_antenna, 0.0)
        if with_antenna:
            selected = [ant for ant in p.selected_antennas(data[2]) if ant <= len(self.owned())]
            if not data[2]:
                return self._reply(p.CMD_ISO_HOST, p.Status.PARAMETER_RANGE_ERROR)
        else:
            selected = list(range(1, len(self.owned()) + 1))
        return self._inventory(selected, with_antenna)

    def _inventory(self, selected: list[int], with_antenna: bool) -> Answer:
        self.inventories += 1
        if self.rf_flags & FAILING:
            self._pending, self._pending_mode = [], None
            return self._reply(p.CMD_ISO_HOST, p.Status.RF_COMMUNICATION_ERROR)
        heard, _ = self.radio.inventory([self.line_antenna(ant) for ant in selected])
        readable = self._answering([item for item in heard if self._reads(item.uid)])
        rf = self._rf_seconds(readable, selected)
        if rf > self.interface.response_time:
            # "At the latest after the TR-RESPONSE-TIME elapsed the Reader will send an answer
            # … the current commands between Reader and Transponder are aborted" (M02 p. 22).
            self._pending, self._pending_mode = [], None
            work = self.interface.response_time
            return self._reply(p.CMD_ISO_HOST, p.Status.RF_COMMUNICATION_ERROR, work=work)
        self._pending = self._data_sets(readable, with_antenna)
        self._pending_mode = with_antenna
        broken = any(ant in self._faults() for ant in selected)
        warned = broken or self.rf_flags & ~FAILING
        self._pending_status = p.Status.RF_WARNING if warned else p.Status.OK
        return self._page(with_antenna, rf)

    def _rf_seconds(self, readable: list[Heard], selected: list[int]) -> float:
        if not self.rf_timing:
            return 0.0
        per_antenna = Counter(item.antenna for item in readable)
        return sum(timing.inventory_seconds(per_antenna[self.line_antenna(a)]) for a in selected)

    def _answering(self, heard: list[Heard]) -> list[Heard]:
        """What CFG4 lets answer: no tag of another AFI; with one time slot, no two at once."""
        transponder = setup.Transponder(self.ram[setup.CFG_TRANSPONDER])
        if transponder.afi:
            return []  # the tags' AFI is 0: a filter on any other family hears none of them
        if transponder.time_slots == 16:
            return heard
        per_antenna = Counter(item.antenna for item in heard)
        return [item for item in heard if per_antenna[item.antenna] == 1]

    def _reads(self, uid: bytes) -> bool:
        if len(uid) == 8:
            return "iso15693" in self.transponders
        return len(uid) in (4, 7, 10) and "iso14443a" in self.transponders

    def _data_sets(self, heard: list[Heard], with_antenna: bool) -> list[d.DataSet]:
        reads: dict[bytes, list[d.AntennaRead]] = {}
        for item in heard:
            ant_nr = item.antenna - self.first_antenna + 1
            reads.setdefault(item.uid, []).append(d.AntennaRead(ant_nr, item.rssi))
        sets = []
        for uid, antennas in reads.items():
            ant = tuple(antennas) if with_antenna else ()
            if len(uid) == 8:
                sets.append(d.DataSet.iso15693(uid.hex(), antennas=ant))
            else:
                sets.append(d.DataSet.iso14443a(uid.hex(), antennas=ant))
        return sets

    def _page(self, with_antenna: bool, rf: float) -> Answer:
        page: list[d.DataSet] = []
        room = FRAME_ROOM
        for item in self._pending[:PAGE_MAX]:
            size = len(d.encode_data_set(item, with_antenna=with_antenna))
            if size > room:
                break
            page.append(item)
            room -= size
        self._pending = self._pending[len(page) :]
        if self._pending:
            status: int = p.Status.MORE_DATA
            self.pages_sent += 1
        elif page or self._pending_status != p.Status.OK:
            status = self._pending_status
        else:
            status = p.Status.NO_TRANSPONDER
        body = d.encode_inventory(page, with_antenna=with_antenna) if page else b""
        return self._reply(p.CMD_ISO_HOST, status, body, work=rf)

    _HANDLERS: ClassVar[dict[int, Callable[[ReaderModel, bytes], Answer]]] = {
        p.CMD_BAUD_RATE_DETECTION: _baud_rate_detection,
        p.CMD_CPU_RESET: _cpu_reset,
        p.CMD_SOFTWARE_VERSION: _software_version,
        p.CMD_RF_RESET: _rf_reset,
        p.CMD_RF_ON_OFF: _rf_on_off,
        p.CMD_DIAGNOSTIC: _diagnostic,
        p.CMD_SET_OUTPUT: _set_output,
        p.CMD_READ_CONFIG: _read_config,
        p.CMD_WRITE_CONFIG: _write_config,
        p.CMD_SAVE_CONFIG: _save_config,
        p.CMD_DEFAULT_CONFIG: _default_config,
        p.CMD_ISO_HOST: _iso_host,
    }


def _plausible(block: int, record: bytes) -> bool:
    """The reader's plausibility check of a written block (M02 p. 21 footnote: STATUS 0x11)."""
    if block == setup.CFG_INTERFACE:
        return record[0] != 0xFF and record[2] in setup.BAUD_RATES and record[3] & 0x03 != 0x03
    return True
