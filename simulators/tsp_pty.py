"""Serve a TSP/1 device model in a :class:`~simulators.tsp_device.WireDevice` on a pty from the
asyncio event loop.

The pty master is watched with ``add_reader``; the device's timers run in a pump task; outgoing
bytes are paced at the configured baud rate (10 bits a byte) and written in random-sized chunks,
so the driver sees realistic timing and split reads. Unplugging closes the pty (and removes its
symlink, as udev would); the device keeps running and queueing events. Replugging opens a fresh
pty and re-points the symlink. A device is its model and its commands: a subclass names them
(``TspPtyServer[ShufflerModel]``, ``COMMANDS``, :meth:`apply`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from types import TracebackType
from typing import Generic, Self, TypeVar

from controller.aio import stop_tasks
from drivers.tsp.device_link import DeviceTimers
from simulators.command_vocabulary import CommandedDevice
from simulators.pty import PtyCable
from simulators.tsp_device import DeviceModel, WireDevice

ModelT = TypeVar("ModelT", bound=DeviceModel)


class TspPtyServer(CommandedDevice, Generic[ModelT]):
    """Serves one simulated TSP/1 device on a pty until stopped (or for an ``async with``)."""

    def __init__(
        self,
        model: ModelT,
        port: PtyCable,
        *,
        baud: int = 115200,
        chunk: int = 64,
        rng: random.Random | None = None,
        timers: DeviceTimers | None = None,
    ) -> None:
        self.rng = rng or random.Random()
        self.model = model
        self.device = WireDevice(model, self.rng, timers)
        self.port = port
        self.baud = baud
        self.chunk = chunk
        self.unplugged = False
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._tx = bytearray()
        self._tx_ready = asyncio.Event()
        self._stopped = asyncio.Event()
        self._serving: asyncio.Task[None] | None = None

    def now(self) -> float:
        """The device's clock (the event loop's)."""
        return self._loop.time()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Open the pty and start reading; return the device path."""
        path = self.port.plug()
        self._watch()
        return path

    async def serve(self) -> None:
        """Run until :meth:`stop`."""
        pump = asyncio.create_task(self._pump(), name="tsp-sim-pump")
        writer = asyncio.create_task(self._writer(), name="tsp-sim-writer")
        try:
            await self._stopped.wait()
        finally:
            try:
                await stop_tasks(pump, writer)
            finally:
                self._unwatch()
                self.port.unplug()

    def stop(self) -> None:
        """Ask :meth:`serve` to return."""
        self._stopped.set()

    async def __aenter__(self) -> Self:
        self.start()
        self._serving = asyncio.create_task(self.serve(), name="tsp-sim")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if self._serving is not None:
            await self._serving

    @property
    def path(self) -> str | None:
        """The pty while plugged in, else None."""
        return self.port.path if self.port.plugged else None

    def kick(self) -> None:
        """Something changed outside the loop's view (a control command): step the device now."""
        self._step(self.now())

    # ------------------------------------------------------------------ cable

    def unplug(self) -> None:
        """Pull the cable: close the pty; the device keeps running and queueing events."""
        if self.unplugged:
            return
        self._unwatch()
        # unplugging also removes the symlink, as udev removes /dev/serial/by-id/… when a device
        # goes: a dangling link could lead the driver to whatever pty comes next under that number
        self.port.unplug()
        self._tx.clear()
        self.device.reset_transport()
        self.unplugged = True

    def replug(self) -> str:
        """Plug the cable back in: a new pty, the symlink re-pointed; returns its path."""
        if not self.unplugged:
            return self.port.path
        path = self.port.plug()
        self.device.reset_transport()
        self.unplugged = False
        self._watch()
        self._wake.set()
        return path

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
        now = self.now()
        self.device.receive(data, now)
        self._flush()

    def _step(self, now: float) -> None:
        self.device.step(now)
        self._flush()

    def _flush(self) -> None:
        wire = self.device.take_wire()
        if wire and not self.unplugged:
            self._tx += wire
            self._tx_ready.set()
        self._wake.set()

    async def _pump(self) -> None:
        """Run the device's timers."""
        while True:
            self._step(self.now())
            deadline = self.device.next_deadline()
            self._wake.clear()
            # A timer sets the same event as new input does. (Not asyncio.wait_for: on 3.11 it
            # can swallow a cancellation that lands as the event is set, and then serve() never
            # returns.)
            timer = None if deadline is None else self._loop.call_at(deadline, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                if timer is not None:
                    timer.cancel()

    async def _writer(self) -> None:
        """Write queued bytes in chunks, no faster than the baud rate."""
        byte_time = 10 / self.baud if self.baud else 0.0
        next_free = self.now()
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
                    next_free = max(next_free, self.now()) + len(piece) * byte_time
                    await asyncio.sleep(max(0.0, next_free - self.now()))
            self._tx_ready.clear()
