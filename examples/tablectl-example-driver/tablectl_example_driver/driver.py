"""The ``tag-bridge`` driver: an RFID reader whose vendor bridge reports tags as lines over TCP.

:class:`TagBridge` is a tablectl device (``drivers.contract.Device``, the contract every driver
implements): the daemon builds it with :meth:`~drivers.contract.Device.from_options` (the options
validated by :class:`~.options.BridgeOptions`), runs :meth:`~TagBridge.run` under its supervision
loop, and calls it again after a backoff whenever it raises ``DeviceError`` (reporting the device
``reconnecting`` meanwhile). So the driver does not reconnect by itself: one call of ``run`` is
one connection.

One connection: connect (``connect_timeout``), wait for the bridge's ``hello``, report the device
``online``, then turn every line into core inputs through the :class:`~.view.ZoneView` and hand
them to the sink in order. A line that is not a message, or names an antenna the options do not
map, is logged and counted, and the next line is read as usual. End of stream, a socket error,
or silence longer than ``idle_timeout`` ends the connection with ``DeviceError``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any, ClassVar

import structlog
from controller.table.inputs import DeviceHealthChanged, Health
from drivers.contract import READ, Device, DeviceContext, DeviceStatus
from drivers.errors import DeviceError
from drivers.supervisor import InputSink

from tablectl_example_driver.options import BridgeOptions
from tablectl_example_driver.protocol import Hello, LineBuffer, Rejected, parse_line
from tablectl_example_driver.view import UnknownAntennaError, ZoneView

log = structlog.get_logger("tablectl.tag_bridge")

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class TagBridge(Device):
    """A reader behind a vendor bridge, as a source of tag movements and reader faults."""

    #: ``tablectl config check`` and ``from_options`` validate the device's options with this.
    options_model: ClassVar[type[BridgeOptions]] = BridgeOptions
    kind = "reader"
    capabilities = frozenset({READ})
    options: BridgeOptions

    def __init__(
        self,
        device_id: str,
        options: BridgeOptions,
        context: DeviceContext | None = None,
        *,
        clock: Clock = _utc_now,
    ) -> None:
        # ``context`` (the table id, the deck manifest) is what the daemon offers every driver;
        # this one needs none of it.
        super().__init__(device_id, options, context)
        self.clock = clock
        self.view = ZoneView(device_id, options.zones())
        self.identity: Hello | None = None
        self.online = False
        self.lines = 0
        self.rejected = 0
        self._writer: asyncio.StreamWriter | None = None

    @property
    def address(self) -> str:
        """``host:port`` of the bridge."""
        return f"{self.options.host}:{self.options.port}"

    # ------------------------------------------------------------------ the device contract

    async def run(self, sink: InputSink) -> None:
        """One connection to the bridge: inputs to ``sink`` until it fails (DeviceError)."""
        try:
            async with asyncio.timeout(self.options.connect_timeout):
                reader, writer = await asyncio.open_connection(self.options.host, self.options.port)
        except TimeoutError:
            raise DeviceError(f"bridge {self.address}: no connection in time") from None
        except OSError as exc:
            raise DeviceError(f"bridge {self.address}: {exc.strerror or exc}") from None
        self._writer = writer
        try:
            async with contextlib.aclosing(self._lines(reader)) as lines:
                await self._greeting(lines)
                online = DeviceHealthChanged(
                    self.clock(), self.device_id, Health.ONLINE, detail=self._who(), kind=self.kind
                )
                await sink(online)
                async for line in lines:
                    await self._line(line, sink)
        finally:
            self.online = False
            self._writer = None
            writer.close()

    async def query(self) -> DeviceStatus:
        """Online while connected and greeted; the detail counts the lines read and rejected."""
        detail = f"{self.lines} lines, {self.rejected} rejected"
        return DeviceStatus(self.online, detail=detail)

    # shuffle, dispense and reveal: a reader takes none, as Device refuses them.

    def describe(self) -> dict[str, Any]:
        """Identity for the device topic: what the bridge said it is, and where it is."""
        hello = self.identity
        return {
            "model": hello.model if hello else None,
            "firmware": (hello.firmware or None) if hello else None,
            "bridge": self.address,
            "zones": {name: str(zone) for name, zone in self.view.zones.items()},
            "approved": None,  # readers are not on the approved-device list
        }

    async def close(self) -> None:
        """Close the connection if one is open (``run`` closes its own when it ends)."""
        if self._writer is not None:
            self._writer.close()

    # ------------------------------------------------------------------ one connection

    async def _lines(self, reader: asyncio.StreamReader) -> AsyncGenerator[bytes]:
        buffer = LineBuffer()
        while True:
            data = await self._read(reader)
            if not data:
                raise DeviceError(f"bridge {self.address}: connection closed")
            overlong = buffer.overlong
            for line in buffer.feed(data):
                yield line
            if buffer.overlong > overlong:
                self.rejected += buffer.overlong - overlong
                log.warning("tag_bridge.line_too_long", bridge=self.address)

    async def _read(self, reader: asyncio.StreamReader) -> bytes:
        idle = self.options.idle_timeout or None
        try:
            async with asyncio.timeout(idle):
                return await reader.read(65536)
        except TimeoutError:
            raise DeviceError(f"bridge {self.address}: silent for {idle} s") from None
        except OSError as exc:
            raise DeviceError(f"bridge {self.address}: {exc.strerror or exc}") from None

    async def _greeting(self, lines: AsyncIterator[bytes]) -> None:
        """Wait for ``hello``: a bridge that says something else first is not a bridge."""
        try:
            async with asyncio.timeout(self.options.connect_timeout):
                async for line in lines:
                    message = parse_line(line)
                    if message is None:
                        continue
                    if isinstance(message, Hello):
                        self.identity = message
                        self.online = True
                        log.info("tag_bridge.online", bridge=self.address, reader=self._who())
                        return
                    raise DeviceError(f"bridge {self.address}: expected hello, got {line[:80]!r}")
        except TimeoutError:
            raise DeviceError(f"bridge {self.address}: no hello in time") from None

    async def _line(self, line: bytes, sink: InputSink) -> None:
        message = parse_line(line)
        if message is None:
            return
        self.lines += 1
        if isinstance(message, Rejected):
            self._reject(message.reason, message.line)
            return
        try:
            inputs = self.view.apply(self.clock(), message)
        except UnknownAntennaError as exc:
            self._reject(str(exc), line.decode("utf-8", errors="replace"))
            return
        for item in inputs:
            await sink(item)

    def _reject(self, reason: str, text: str) -> None:
        self.rejected += 1
        log.warning("tag_bridge.bad_line", reason=reason, line=text[:200], count=self.rejected)

    def _who(self) -> str:
        hello = self.identity
        name = f"{hello.model} {hello.firmware}".strip() if hello else "unknown reader"
        return f"{name} at {self.address}"
