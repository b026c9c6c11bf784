"""The shuffler simulator's runtime: model + TSP/1 device link + pty + fault injection.

Everything runs on one asyncio loop: the pty master is watched with ``add_reader``, and outgoing
bytes are paced at the configured baud rate (10 bits a byte) in chunks, so the driver sees
realistic timing and split reads. Link faults act here, between the link and the wire: corrupted
CRCs, truncated frames, stalls, and unplugging the cable (closing the pty).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import random
from pathlib import Path
from typing import Any

from controller.cards import parse_card
from drivers.shuffler.codes import Button, ClearedBy, FaultFlag, Severity, fault_code
from drivers.tsp.cobs import cobs_encode
from drivers.tsp.device_link import DeviceLink, DeviceTimers
from simulators.pty import PtyCable
from simulators.shuffler.commands import (
    BurstCommand,
    ClearCommand,
    Command,
    CommandError,
    DeckCheckCommand,
    DeckCommand,
    FaultCommand,
    PressCommand,
    StatusCommand,
    parse_command,
)
from simulators.shuffler.model import RefusedError, ShufflerModel

SEVERITIES = {"info": Severity.INFO, "warn": Severity.WARN, "error": Severity.ERROR}
SEVERITIES["critical"] = Severity.CRITICAL


class SimulatorServer:
    """Serves one simulated shuffler on a pty until stopped."""

    def __init__(
        self,
        model: ShufflerModel,
        port: PtyCable,
        *,
        baud: int = 115200,
        chunk: int = 64,
        rng: random.Random | None = None,
        timers: DeviceTimers | None = None,
    ) -> None:
        self.model = model
        self.port = port
        self.baud = baud
        self.chunk = chunk
        self.rng = rng or random.Random()
        self.link = DeviceLink(timers)
        model.link_counters = self._link_counters
        model.queued_events = lambda: self.link.queued_events
        model.host_lost = self.link.host_lost
        self.crc_rate = {"in": 0.0, "out": 0.0}
        self.partial_rate = 0.0
        self.stalled_until = 0.0
        self.unplugged = False
        self.corrupted = {"in": 0, "out": 0}
        self.truncated = 0
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._tx = bytearray()
        self._tx_ready = asyncio.Event()
        self._stopped = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Open the pty and start reading; return the device path."""
        path = self.port.plug()
        self._watch()
        return path

    async def serve(self) -> None:
        """Run until :meth:`stop`."""
        pump = asyncio.create_task(self._pump(), name="shuffler-sim-pump")
        writer = asyncio.create_task(self._writer(), name="shuffler-sim-writer")
        try:
            await self._stopped.wait()
        finally:
            pump.cancel()
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            self._unwatch()
            self.port.unplug()

    def stop(self) -> None:
        """Ask :meth:`serve` to return."""
        self._stopped.set()

    # ------------------------------------------------------------------ the device loop

    def _watch(self) -> None:
        self._loop.add_reader(self.port.master_fd, self._readable)

    def _unwatch(self) -> None:
        if self.port.plugged:
            self._loop.remove_reader(self.port.master_fd)

    def _readable(self) -> None:
        try:
            data = self.port.read()
        except OSError:
            return  # nobody holds the slave open; the kernel reports EIO until someone does
        now = self._loop.time()
        if not data or now < self.stalled_until:
            return
        data = self._corrupt_incoming(data)
        self.link.receive(data, now)
        for request in self.link.take_requests():
            msg_type, payload = self.model.handle(request.type, request.payload, now)
            self.link.respond(request, payload, msg_type)
        self._step(now)

    def _step(self, now: float) -> None:
        self.model.tick(now)
        for msg_type, payload in self.model.take_events():
            self.link.queue_event(msg_type, payload)
        self.link.tick(now)
        for frame in self.link.take_frames():
            self._send(frame)
        self._wake.set()

    async def _pump(self) -> None:
        """Run the model's and the link's timers."""
        while True:
            now = self._loop.time()
            if now >= self.stalled_until:
                self._step(now)
            deadlines = [
                d for d in (self.model.next_deadline(), self.link.next_deadline()) if d is not None
            ]
            if now < self.stalled_until:
                deadlines.append(self.stalled_until)
            self._wake.clear()
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    # ------------------------------------------------------------------ the wire

    def _send(self, encoded: bytes) -> None:
        if self.unplugged:
            return
        frame = bytearray(encoded)
        if self.rng.random() < self.crc_rate["out"]:
            frame[-1 - self.rng.randrange(2)] ^= 1 << self.rng.randrange(8)
            self.corrupted["out"] += 1
        wire = cobs_encode(bytes(frame)) + b"\x00"
        if self.rng.random() < self.partial_rate:
            # The frame is cut off mid-way and its delimiter never sent: the receiver glues it to
            # the next frame, fails both, and the senders' timers recover.
            wire = wire[: self.rng.randrange(1, len(wire) - 1)]
            self.truncated += 1
        self._tx += wire
        self._tx_ready.set()

    async def _writer(self) -> None:
        """Write queued bytes in chunks, no faster than the baud rate."""
        byte_time = 10 / self.baud if self.baud else 0.0
        next_free = self._loop.time()
        while True:
            await self._tx_ready.wait()
            while self._tx:
                size = self.rng.randint(1, self.chunk) if self.chunk > 1 else len(self._tx)
                piece = bytes(self._tx[:size])
                del self._tx[:size]
                if not self.unplugged and self.port.plugged:
                    # A full input queue on the host side drops bytes, as a real UART would.
                    with contextlib.suppress(OSError):
                        self.port.write(piece)
                if byte_time:
                    next_free = max(next_free, self._loop.time()) + len(piece) * byte_time
                    await asyncio.sleep(max(0.0, next_free - self._loop.time()))
            self._tx_ready.clear()

    def _corrupt_incoming(self, data: bytes) -> bytes:
        rate = self.crc_rate["in"]
        if not rate:
            return data
        out = bytearray(data)
        for end in [i for i, byte in enumerate(out) if byte == 0]:
            if end and self.rng.random() < rate:
                index = self.rng.randrange(max(0, end - 3), end)
                out[index] = (out[index] ^ (1 << self.rng.randrange(8))) or 1
                self.corrupted["in"] += 1
        return bytes(out)

    def _link_counters(self) -> dict[str, int]:
        stats = self.link.stats
        return {
            "crc_errors": stats.crc_errors,
            "naks": stats.naks_sent + stats.naks_received,
            "retransmits": stats.retransmits,
        }

    # ------------------------------------------------------------------ faults and control

    def unplug(self) -> None:
        """Pull the cable: close the pty; the device keeps running and queueing events."""
        if self.unplugged:
            return
        self._unwatch()
        # unplugging also removes the symlink, as udev removes /dev/serial/by-id/… when a device
        # goes: a dangling link could lead the driver to whatever pty comes next under that number
        self.port.unplug()
        self._tx.clear()
        self.link.reset_transport()
        self.unplugged = True

    def replug(self) -> str:
        """Plug the cable back in: a new pty, the symlink re-pointed."""
        if not self.unplugged:
            return self.port.path
        path = self.port.plug()
        self.link.reset_transport()
        self.unplugged = False
        self._watch()
        self._wake.set()
        return path

    def apply(self, command: Command) -> dict[str, Any]:
        """Carry out one control command; return the reply fields."""
        now = self._loop.time()
        try:
            reply = self._apply(command, now)
        except RefusedError as refusal:
            return {"ok": False, "error": refusal.detail}
        self._step(now)
        return {"ok": True, **reply}

    def _apply(self, command: Command, now: float) -> dict[str, Any]:
        model = self.model
        if isinstance(command, FaultCommand):
            return self._fault(command, now)
        if isinstance(command, DeckCheckCommand):
            model.next_check = command.deck_check
        elif isinstance(command, DeckCommand):
            spec = command.deck
            model.config.order = (
                None if spec.order is None else tuple(parse_card(c) for c in spec.order)
            )
            model.config.seed = spec.seed
        elif isinstance(command, PressCommand):
            model.press(Button[command.press.upper()], now)
        elif isinstance(command, ClearCommand):
            if command.clear == "all":
                return {"cleared": model.clear_faults(0xFFFF, ClearedBy.OPERATOR)}
            return {"cleared": model.clear_code(fault_code(command.clear), ClearedBy.OPERATOR)}
        elif isinstance(command, BurstCommand):
            model.burst(command.burst)
        elif isinstance(command, StatusCommand):
            return self.snapshot(now)
        return {}

    def _fault(self, command: FaultCommand, now: float) -> dict[str, Any]:
        model = self.model
        kind = command.fault
        if kind == "crc":
            for direction in ("in", "out"):
                if command.direction in (direction, "both"):
                    self.crc_rate[direction] = command.rate
        elif kind == "partial":
            self.partial_rate = command.rate
        elif kind == "stall":
            self.stalled_until = now + command.seconds
        elif kind == "unplug":
            self.unplug()
        elif kind == "replug":
            return {"path": self.replug()}
        elif kind in ("jam", "raise"):
            code = fault_code(command.code or "JAM_INPUT")
            severity = SEVERITIES[command.severity]
            flags = FaultFlag.RECOVERABLE | FaultFlag.OPERATOR_ACTION
            return {"fault_id": model.raise_fault(code, severity, flags, command.detail)}
        elif kind in ("lid_open", "lid_close"):
            model.lid(kind == "lid_open")
        elif kind == "count_mismatch":
            model.next_count = 51 if command.count is None else command.count
        elif kind == "power_loss":
            model.power_loss(now)
            self.link.reboot()
            self._tx.clear()
        elif kind == "unapproved_firmware":
            # New firmware takes effect at the next boot: flash, then reset.
            model.set_firmware(model.firmware + b"\npatched build, not approved\n")
            model.power_loss(now)
            self.link.reboot()
        elif kind == "lying_firmware":
            model.set_firmware(model.firmware + b"\npatched\n", report=model.reported_hash)
        elif kind == "no_challenge":
            model.challenge_mode = "refuse"
        elif kind == "approved_firmware":
            model.challenge_mode = "answer"
        elif kind == "bad_commitment":
            model.tamper_reveal = True
        return {}

    def snapshot(self, now: float) -> dict[str, Any]:
        """The simulator's state, for tests and the operator."""
        model = self.model
        return {
            "path": self.port.path if self.port.plugged else None,
            "plugged": not self.unplugged,
            "state": model.state.name,
            "boot_id": model.boot_id,
            "shuffle_id": model.shuffle_id,
            "faults": sorted(f.fault_id for f in model.faults.values()),
            "queued_events": self.link.queued_events,
            "firmware_sha256": hashlib.sha256(model.firmware).hexdigest(),
            "link": self.link.stats.as_dict(),
            "corrupted": dict(self.corrupted),
            "truncated": self.truncated,
        }


async def serve_control(server: SimulatorServer, path: Path) -> asyncio.Server:
    """Listen on a Unix socket for JSON-line commands; one JSON reply per line."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    reply = server.apply(parse_command(json.loads(line)))
                except (CommandError, ValueError) as exc:
                    reply = {"ok": False, "error": str(exc)}
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # The simulator is shutting down with a client still connected: end quietly
            # (the stream machinery would otherwise log the cancellation as an error).
            pass
        finally:
            writer.close()

    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return await asyncio.start_unix_server(client, path=str(path))
