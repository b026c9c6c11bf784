"""The simulated PN532 module as pure logic: link layer, command set, tag states, faults."""

from __future__ import annotations

import pytest

from drivers.rfid.pn532.frames import (
    ACK_BYTES,
    NACK_BYTES,
    Ack,
    DecodedItem,
    ErrorFrame,
    FrameDecoder,
    Garbage,
    InformationFrame,
    encode_information,
)
from simulators.pn532.faults import AntennaMode
from simulators.pn532.module import Pn532Module

WAKE = b"\x55\x55" + bytes(14)
NTAG = bytes.fromhex("04a1b2c3d4e580")
CLASSIC = bytes.fromhex("deadbeef")


def command(data: str) -> bytes:
    return encode_information(0xD4, bytes.fromhex(data))


def talk(module: Pn532Module, *commands: str, now: float = 0.0) -> list[DecodedItem]:
    wire = b"".join(command(c) for c in commands)
    return FrameDecoder().feed(module.receive(wire, now))


def answers(items: list[DecodedItem]) -> list[bytes]:
    return [i.data for i in items if isinstance(i, InformationFrame)]


@pytest.fixture
def module() -> Pn532Module:
    module = Pn532Module(seed=1)
    module.receive(WAKE, 0.0)
    return module


def test_asleep_after_power_up_until_woken_over_hsu() -> None:
    module = Pn532Module(seed=1)
    assert module.receive(command("02"), 0.0) == b""  # no wake-up: lost, not even an ACK
    out = FrameDecoder().feed(module.receive(WAKE + command("1401"), 0.0))
    assert out == [Ack(), InformationFrame(0xD5, b"\x15")]
    assert module.chip.sam_mode == 1
    assert module.stats.garbage_bytes == 0  # the rest of the wake-up preamble is not garbage


def test_firmware_version_and_communication_test(module: Pn532Module) -> None:
    items = talk(module, "02", "00006c69626e6663")
    assert answers(items) == [bytes.fromhex("0332010607"), bytes.fromhex("0100") + b"libnfc"]
    assert items.count(Ack()) == 2


@pytest.mark.parametrize("data", ["70", "0601", "1405", "4a0300", "320101ff", "d5"])
def test_unknown_or_malformed_commands_get_the_error_frame(module: Pn532Module, data: str) -> None:
    assert talk(module, data) == [Ack(), ErrorFrame()]


def test_frames_with_a_bad_checksum_are_ignored(module: Pn532Module) -> None:
    corrupted = bytearray(command("02"))
    corrupted[-2] ^= 0xFF
    assert module.receive(bytes(corrupted), 0.0) == b""


def test_nack_repeats_the_last_response_but_not_while_busy(module: Pn532Module) -> None:
    first = module.receive(command("02"), 0.0)
    assert module.receive(NACK_BYTES, 0.0) == first[len(ACK_BYTES) :]
    talk(module, "3205ff01ff")  # MxRtyPassiveActivation 0xff: retry until a tag comes
    assert talk(module, "4a0100") == [Ack()]  # no tag: runs until one comes
    assert module.receive(NACK_BYTES, 0.0) == b""


def test_pile_is_listed_two_at_a_time_and_halted_tags_wait_for_a_field_reset(
    module: Pn532Module,
) -> None:
    uids = [bytes.fromhex(f"04{n:012x}") for n in (3, 1, 2)]
    for uid in uids:
        module.antenna.place(uid)
    talk(module, "3205ff0102")  # two activation retries: answer at once when empty
    (first,) = answers(talk(module, "4a0200"))
    assert first[:2] == b"\x4b\x02"
    assert uids[1] in first
    assert uids[2] in first
    assert answers(talk(module, "4a0200")) == [first]  # not halted: found again
    assert answers(talk(module, "4400")) == [b"\x45\x00"]
    (second,) = answers(talk(module, "4a0200"))
    assert second[:2] == b"\x4b\x01"
    assert uids[0] in second
    talk(module, "4400")
    assert answers(talk(module, "4a0200")) == [b"\x4b\x00"]  # everyone halted
    talk(module, "320100", "320101")  # RF field off and on: tags power up IDLE
    assert answers(talk(module, "4a0200")) == [first]


def test_target_data_by_tag_type(module: Pn532Module) -> None:
    module.antenna.place(CLASSIC)
    (answer,) = answers(talk(module, "4a0100"))
    assert answer == bytes.fromhex("4b01" + "01" + "0004" + "08" + "04" + "deadbeef")


def test_endless_retries_wait_for_a_tag_and_an_ack_aborts(module: Pn532Module) -> None:
    assert talk(module, "4a0100") == [Ack()]  # default MxRtyPassiveActivation is 0xff
    assert module.busy_with == 0x4A
    module.antenna.place(NTAG)
    (answer,) = answers(FrameDecoder().feed(module.advance(0.1)))
    assert answer.startswith(b"\x4b\x01")
    assert answer.endswith(NTAG)
    module.antenna.remove(NTAG)
    talk(module, "4a0100")
    assert module.receive(ACK_BYTES, 0.2) == b""  # the host aborts
    assert module.busy_with is None
    module.antenna.place(NTAG)
    assert module.advance(0.3) == b""


def test_auto_poll_gives_up_after_its_polls(module: Pn532Module) -> None:
    assert talk(module, "6002011020", now=10.0) == [Ack()]  # 2 polls, 150 ms, 2 types
    assert module.next_deadline == pytest.approx(10.0 + 2 * 2 * 1 * 0.150)
    assert module.advance(10.5) == b""
    assert answers(FrameDecoder().feed(module.advance(10.6))) == [b"\x61\x00"]


def test_auto_poll_reports_a_mifare_target(module: Pn532Module) -> None:
    module.antenna.place(NTAG)
    (answer,) = answers(talk(module, "601402201003111204"))  # what nfc-poll sends
    assert answer == b"\x61\x01\x10\x0c\x01\x00\x44\x00\x07" + NTAG


def test_ntag_memory_reads_and_presence_check(module: Pn532Module) -> None:
    module.antenna.place(NTAG)
    talk(module, "4a0100")
    (answer,) = answers(talk(module, "40013000"))
    assert answer[:2] == b"\x41\x00"
    assert answer[2:5] == NTAG[:3]
    assert answer[5] == 0x88 ^ NTAG[0] ^ NTAG[1] ^ NTAG[2]
    assert answers(talk(module, "400160")) == [b"\x41\x00" + bytes.fromhex("0004040201000f03")]
    module.antenna.remove(NTAG)
    assert answers(talk(module, "40013000")) == [b"\x41\x01"]  # gone: the target times out


def test_mifare_classic_authentication_fails_without_keys(module: Pn532Module) -> None:
    module.antenna.place(CLASSIC)
    talk(module, "4a0100")
    auth = "400160" + "04" + "ffffffffffff" + "deadbeef"  # key A, block 4
    assert answers(talk(module, auth)) == [b"\x41\x14"]


def test_power_down_then_wake_up(module: Pn532Module) -> None:
    assert answers(talk(module, "16f0")) == [b"\x17\x00"]
    assert module.asleep
    assert module.receive(command("02"), 0.0) == b""
    assert answers(FrameDecoder().feed(module.receive(WAKE + command("02"), 0.0))) == [
        bytes.fromhex("0332010607")
    ]


def test_power_down_without_hsu_wake_source_needs_a_power_cycle(module: Pn532Module) -> None:
    talk(module, "1620")  # SPI only
    assert module.receive(WAKE + command("02"), 0.0) == b""
    module.power_on()
    assert answers(FrameDecoder().feed(module.receive(WAKE + command("02"), 0.0))) != []


def list_many(module: Pn532Module, times: int) -> list[int]:
    counts = []
    for _ in range(times):
        (answer,) = answers(talk(module, "4a0200"))
        counts.append(answer[1])
    return counts


def test_flapping_is_reproducible_from_the_seed() -> None:
    runs = []
    for _ in range(2):
        module = Pn532Module(seed=42)
        module.receive(WAKE + command("3205ff0102"), 0.0)
        module.antenna.place(NTAG)
        module.faults.flap_rate = 0.5
        runs.append(list_many(module, 40))
    assert runs[0] == runs[1]
    assert 0 in runs[0]
    assert 1 in runs[0]


def test_stacked_cards_lose_some_but_never_all(module: Pn532Module) -> None:
    talk(module, "3205ff0102")
    module.antenna.place(NTAG)
    module.antenna.place(CLASSIC)
    module.faults.stacked_miss_rate = 1.0
    assert set(list_many(module, 30)) == {1}


def test_antenna_fault_modes(module: Pn532Module) -> None:
    module.antenna.place(NTAG)
    talk(module, "3205ff0102")
    module.faults.antenna = AntennaMode.TIMEOUT
    assert talk(module, "4a0100") == [Ack()]
    assert answers(talk(module, "02")) == [bytes.fromhex("0332010607")]  # the MCU still answers
    module.faults.antenna = AntennaMode.ERROR
    assert talk(module, "4a0100") == [Ack(), ErrorFrame()]
    module.faults.antenna = AntennaMode.OVERCURRENT
    assert answers(talk(module, "4a0100", "04")) == [b"\x4b\x00", bytes.fromhex("052d000000")]
    module.faults.antenna = AntennaMode.SILENT
    assert module.receive(command("02"), 0.0) == b""
    module.faults.antenna = None
    assert answers(talk(module, "4a0100"))[0][:2] == b"\x4b\x01"


def test_corrupted_responses_fail_their_checksum_and_a_nack_may_repair_them() -> None:
    module = Pn532Module(seed=7)
    module.receive(WAKE, 0.0)
    module.faults.corrupt_rate = 1.0
    items = FrameDecoder().feed(module.receive(command("02"), 0.0))
    assert items[0] == Ack()
    assert any(isinstance(i, Garbage) and "checksum" in i.reason for i in items)
    module.faults.corrupt_rate = 0.0
    assert answers(FrameDecoder().feed(module.receive(NACK_BYTES, 0.0))) == [
        bytes.fromhex("0332010607")
    ]
