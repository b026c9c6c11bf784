"""Command/response exchanges with one PN532 over its HSU byte stream (UM0701-02 §6.2).

One command at a time (:class:`~drivers.request_link.RequestLink`): send the command frame, wait
for the ACK frame, then for the response (code + 1). A response with a bad checksum is asked for
again with a NACK; a response that never comes is aborted with an ACK so that it cannot be
mistaken later for the answer to another command; a response to an earlier, abandoned command is
recognised by its code and dropped.

Failures are of the one error tree (:mod:`drivers.errors`): no answer in time is
:class:`~drivers.errors.LinkTimeoutError`, the error frame :class:`CommandRejectedError`, and a
port that went away :class:`~drivers.errors.LinkLostError`, a
:class:`~drivers.errors.DeviceUnavailableError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from drivers.errors import DeviceCommandError, LinkTimeoutError
from drivers.request_link import LinkCounters, RequestLink
from drivers.rfid.pn532.commands import WAKE_UP, command_name, response_params
from drivers.rfid.pn532.frames import (
    ACK_BYTES,
    NACK_BYTES,
    TFI_HOST,
    TFI_PN532,
    Ack,
    DecodedItem,
    ErrorFrame,
    FrameDecoder,
    Garbage,
    InformationFrame,
    encode_information,
)

MAX_NACKS: Final = 2


class CommandRejectedError(DeviceCommandError):
    """The module answered with the error frame (it found the command malformed)."""


@dataclass(slots=True)
class Pn532LinkCounters(LinkCounters):
    """The link's counters, and the commands sent, rejected, and NACKs sent."""

    commands: int = 0
    rejected: int = 0
    nacks_sent: int = 0


class Pn532Link(RequestLink[DecodedItem, Pn532LinkCounters]):
    """The host side of the HSU link; also the protocol its serial stream feeds."""

    def __init__(
        self,
        write: Callable[[bytes], None] | None = None,
        *,
        ack_timeout: float = 0.2,
        response_timeout: float = 1.0,
    ) -> None:
        super().__init__(
            write,
            decoder=FrameDecoder(),
            garbage=Garbage,
            corrupt=lambda reason: "checksum" in reason,
            counters=Pn532LinkCounters(),
        )
        self.ack_timeout = ack_timeout
        self.response_timeout = response_timeout

    # ----------------------------------------------------------------- commands

    def wake(self) -> None:
        """Send the HSU wake-up sequence (a sleeping PN532 ignores everything else)."""
        self._send(WAKE_UP)

    async def call(self, data: bytes, *, timeout: float | None = None) -> bytes:
        """Send a command (``data[0]`` is its code); return the response's parameters."""
        code = data[0]
        name = command_name(code)
        self._flush()
        self.counters.commands += 1
        self._send(encode_information(TFI_HOST, data))
        loop = asyncio.get_running_loop()
        answer_code = bytes(((code + 1) & 0xFF,))
        deadline = loop.time() + self.ack_timeout
        while True:
            item = await self._next(deadline, f"no ACK to {name}")
            if isinstance(item, Ack):
                break
            if isinstance(item, InformationFrame | ErrorFrame) and self._answers(item, answer_code):
                return self._result(item, code)  # the ACK got lost on the way, the answer did not
            self.counters.stale_frames += 1  # something from before this command: not ours
        deadline = loop.time() + (self.response_timeout if timeout is None else timeout)
        nacks = 0
        while True:
            try:
                item = await self._next(deadline, f"no answer to {name}")
            except LinkTimeoutError:
                self._send(ACK_BYTES)  # abort it, so a late answer cannot pass for another
                raise
            if isinstance(item, InformationFrame | ErrorFrame) and self._answers(item, answer_code):
                return self._result(item, code)
            if isinstance(item, Garbage) and nacks < MAX_NACKS:
                nacks += 1
                self.counters.nacks_sent += 1
                self._send(NACK_BYTES)  # a response arrived corrupted: ask for it again
            else:
                self.counters.stale_frames += 1  # e.g. the answer to an earlier, aborted command

    # ----------------------------------------------------------------- internals

    @staticmethod
    def _answers(item: InformationFrame | ErrorFrame, answer_code: bytes) -> bool:
        """The error frame, or a response frame carrying this command's answer code."""
        return isinstance(item, ErrorFrame) or (
            item.tfi == TFI_PN532 and item.data[:1] == answer_code
        )

    def _result(self, item: InformationFrame | ErrorFrame, code: int) -> bytes:
        if isinstance(item, ErrorFrame):
            self.counters.rejected += 1
            raise CommandRejectedError(f"{command_name(code)} was rejected with the error frame")
        return response_params(code, item.data)
