"""The ``jsonl`` driver: device inputs as JSON lines on a serial port, a pty or a FIFO.

Each line is one input in the journal's tagged form (:mod:`controller.table.codec`), e.g.
``{"v":1,"type":"TagArrived","fields":{"ts":"…","device":"reader","zone":["board",null],
"uid":"04a1…"}}``. It replays a recorded session into a daemon, bridges a device that has its own
converter, and gives the pipeline benchmark a byte-level source it can time. A line that is not
a valid device input is logged with the reason and skipped; the next line is read as usual.

The port is read with ``loop.add_reader`` on a non-blocking descriptor (raw mode when it is a
terminal), so the event loop never waits on it.
"""

from __future__ import annotations

import asyncio
import os
import termios
import tty
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field

from controller.table.codec import CodecError, input_from_json
from controller.table.inputs import DeviceInput
from drivers.contract import READ, Device, DeviceContext, DeviceStatus
from drivers.errors import DeviceError
from drivers.supervisor import InputSink

log = structlog.get_logger("tablectl.jsonl")

MAX_LINE = 64 * 1024


class LineOptions(BaseModel):
    """Options of the ``jsonl`` driver."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    port: Path = Field(description="serial device, pty or FIFO to read lines from")


class LineSource(Device):
    """Reads device inputs, one JSON line each, from a port."""

    options_model = LineOptions
    capabilities = frozenset({READ})
    options: LineOptions

    def __init__(
        self, device_id: str, options: LineOptions, context: DeviceContext | None = None
    ) -> None:
        super().__init__(device_id, options, context)
        self.lines = 0
        self.rejected = 0

    async def run(self, sink: InputSink) -> None:
        """Read lines until the port closes (a DeviceError) or the task is cancelled."""
        try:
            fd = os.open(self.options.port, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError as exc:
            raise DeviceError(f"{self.options.port}: {exc.strerror}") from None
        if os.isatty(fd):
            tty.setraw(fd, termios.TCSANOW)
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[bytes] = asyncio.Queue()

        def readable() -> None:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""  # EIO: the other side of the pty went away
            chunks.put_nowait(data)

        loop.add_reader(fd, readable)
        buffer = b""
        try:
            while True:
                data = await chunks.get()
                if not data:
                    raise DeviceError(f"{self.options.port}: closed")
                buffer += data
                *complete, buffer = buffer.split(b"\n")
                if len(buffer) > MAX_LINE:
                    log.warning("jsonl.line_too_long", bytes=len(buffer))
                    buffer = b""
                for line in complete:
                    await self._line(line, sink)
        finally:
            loop.remove_reader(fd)
            os.close(fd)

    async def _line(self, line: bytes, sink: InputSink) -> None:
        text = line.strip()
        if not text:
            return
        self.lines += 1
        try:
            item = input_from_json(text.decode("utf-8", errors="replace"))
        except CodecError as exc:
            self.rejected += 1
            log.warning("jsonl.bad_line", error=str(exc), line=self.lines)
            return
        if not isinstance(item, DeviceInput):
            self.rejected += 1
            log.warning("jsonl.not_a_device_input", type=type(item).__name__, line=self.lines)
            return
        await sink(item)

    async def query(self) -> DeviceStatus:
        """A line source is online when its port exists."""
        return DeviceStatus(self.options.port.exists(), detail=f"{self.lines} lines read")

    def describe(self) -> dict[str, Any]:
        """Where the lines come from."""
        return {"model": "JSON lines", "port": str(self.options.port), "approved": True}
