"""The host side of the HSU link, wired in memory to the simulated module (no pty needed)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from drivers.errors import LinkLostError, LinkTimeoutError
from drivers.rfid.pn532 import commands as cmd
from drivers.rfid.pn532.frames import ACK_BYTES, encode_information
from drivers.rfid.pn532.link import CommandRejectedError, Pn532Link
from simulators.pn532.faults import AntennaMode
from simulators.pn532.module import Pn532Module

Line = Callable[[bytes], bytes]
"""What the wire does to the module's answer on its way back (drop, garble, delay…)."""


def wire(module: Pn532Module, line: Line | None = None) -> Pn532Link:
    link = Pn532Link(ack_timeout=0.05, response_timeout=0.1)

    def write(data: bytes) -> None:
        answer = module.receive(data, 0.0)
        if answer:
            link.data_received(line(answer) if line else answer)

    link.write = write
    link.wake()
    return link


async def test_a_command_and_its_answer() -> None:
    link = wire(Pn532Module(seed=1))
    assert await link.call(cmd.sam_configuration()) == b""
    assert cmd.decode_firmware_version(await link.call(cmd.get_firmware_version())).ic == 0x32
    assert link.counters.commands == 2


async def test_an_answer_whose_ack_was_lost_is_still_taken() -> None:
    link = wire(Pn532Module(seed=1), lambda data: data.replace(ACK_BYTES, b""))
    assert await link.call(cmd.get_firmware_version()) == bytes.fromhex("32010607")


async def test_a_late_answer_to_an_abandoned_command_is_not_taken_for_this_one() -> None:
    stale = encode_information(0xD5, b"\x4b\x00")  # InListPassiveTarget's, arriving late
    link = wire(Pn532Module(seed=1), lambda data: data[:6] + stale + data[6:])
    assert await link.call(cmd.get_firmware_version()) == bytes.fromhex("32010607")
    assert link.counters.stale_frames == 1


async def test_the_error_frame_rejects_the_command() -> None:
    link = wire(Pn532Module(seed=1))
    with pytest.raises(CommandRejectedError, match="rejected"):
        await link.call(b"\x70")
    assert link.counters.rejected == 1


async def test_no_answer_times_out_and_aborts_the_command() -> None:
    module = Pn532Module(seed=1)
    link = wire(module)
    await link.call(cmd.rf_max_retries(passive_activation=2))
    module.faults.antenna = AntennaMode.TIMEOUT
    with pytest.raises(LinkTimeoutError, match="no answer to InListPassiveTarget"):
        await link.call(cmd.in_list_passive_target())
    assert module.busy_with is None  # the host's ACK aborted it
    assert module.stats.aborts == 1


async def test_no_ack_times_out() -> None:
    module = Pn532Module(seed=1)
    link = wire(module)
    module.faults.antenna = AntennaMode.SILENT
    with pytest.raises(LinkTimeoutError, match="no ACK to GetFirmwareVersion"):
        await link.call(cmd.get_firmware_version())


async def test_a_corrupted_answer_is_asked_for_again() -> None:
    garbled = [0]

    def flip_first_answer(data: bytes) -> bytes:
        if len(data) > 12 and not garbled[0]:
            garbled[0] = 1
            corrupted = bytearray(data)
            corrupted[12] ^= 0x01  # a data byte of the response after the 6-byte ACK
            return bytes(corrupted)
        return data

    module = Pn532Module(seed=1)
    link = wire(module, flip_first_answer)
    assert await link.call(cmd.get_firmware_version()) == bytes.fromhex("32010607")
    assert link.counters.nacks_sent == 1
    assert module.stats.nacks == 1


async def test_a_lost_port_fails_every_call() -> None:
    link = wire(Pn532Module(seed=1))
    link.connection_lost(OSError(5, "Input/output error"))
    with pytest.raises(LinkLostError, match="Input/output error"):
        await link.call(cmd.get_firmware_version())
    with pytest.raises(LinkLostError):
        link.wake()
