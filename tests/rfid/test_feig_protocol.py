"""The FEIG ID ISC subset of docs/protocols/feig-isc.md: its examples against driver and simulator.

The vectors are literal bytes from the document; their CRCs are checked with a bitwise CRC of
this file's own, not the codec's table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.uids import uid_from_bytes
from drivers.rfid.feig import protocol as p
from simulators.feig.radio import AntennaFault
from simulators.feig.reader import FeigReaderModel

SPEC = Path(__file__).resolve().parents[2] / "docs" / "protocols" / "feig-isc.md"


def _vectors() -> dict[str, bytes]:
    text = SPEC.read_text(encoding="utf-8")
    vectors: dict[str, bytes] = {}
    for block in re.findall(r"```feig-vectors\n(.*?)```", text, re.DOTALL):
        for entry in block.strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in entry.strip().splitlines())
            vectors[fields["name"]] = bytes.fromhex(fields["bytes"])
    return vectors


VECTORS = _vectors()


def _bitwise_crc(data: bytes) -> int:
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    return crc


def _vector(start: str) -> bytes:
    return next(raw for name, raw in VECTORS.items() if name.startswith(start))


def test_the_document_has_the_examples() -> None:
    assert len(VECTORS) >= 15


def test_crc_check_value() -> None:
    assert p.crc16(b"123456789") == 0x6F91 == _bitwise_crc(b"123456789")


@pytest.mark.parametrize(("name", "raw"), list(VECTORS.items()), ids=list(VECTORS))
def test_example_frame(name: str, raw: bytes) -> None:
    assert raw[0] == len(raw)
    assert _bitwise_crc(raw[:-2]) == raw[-2] | raw[-1] << 8  # least significant byte first
    request = "request" in name
    [frame] = list(p.FrameDecoder(responses=not request).feed(raw))
    assert isinstance(frame, p.Frame)
    if request:
        assert p.encode_request(frame.command, frame.data, frame.address) == raw
    else:
        assert frame.status is not None
        assert p.encode_response(frame.command, frame.status, frame.data, frame.address) == raw


def test_driver_requests_are_the_examples() -> None:
    assert p.encode_request(p.CMD_SOFTWARE_VERSION) == _vector("software version request")
    assert p.encode_request(p.CMD_RF_RESET) == _vector("RF reset request")
    assert p.inventory_request([1, 2, 3, 14]) == _vector("inventory request, antennas 1 2 3 14")
    assert p.inventory_request([14, 3, 2, 1], more=True) == _vector("inventory request with MORE")
    assert p.inventory_request(range(1, 15)) == _vector("inventory request, antennas 1 to 14")
    assert p.diagnostic_request(p.DIAG_GENERAL) == _vector("diagnostic request, mode 0x01")
    assert p.diagnostic_request(p.DIAG_ANTENNAS) == _vector("diagnostic request, mode 0x04")


def _answer(raw: bytes) -> p.Frame:
    [frame] = list(p.FrameDecoder(responses=True).feed(raw))
    assert isinstance(frame, p.Frame)
    return frame


def test_driver_reads_the_example_answers() -> None:
    version = p.SoftwareVersion.decode(_answer(_vector("software version answer")).data)
    assert version == p.SoftwareVersion(0x0304, 0x00, 0x4C, 0x49, 0x0008)
    assert str(version).startswith("ID ISC firmware 03.04")

    one = _answer(_vector("inventory answer, tag"))
    assert one.status == p.Status.OK
    [record] = p.decode_inventory_data(one.data)
    assert (record.antenna, record.rssi, record.antenna_status) == (3, 0x5A, 0)
    assert uid_from_bytes(record.uid, lsb_first=True) == "e0040150a1b2c3d4"

    nfc = _answer(_vector("inventory answer, ISO 14443-A"))
    [record] = p.decode_inventory_data(nfc.data)
    assert (record.tr_type, record.antenna, record.rssi) == (p.TR_TYPE_ISO14443A, 2, 0x40)
    assert uid_from_bytes(record.uid, lsb_first=True) == "04262d64c1556c"

    paged = _answer(_vector("inventory answer 0x94"))
    assert paged.status == p.Status.MORE_DATA
    records = p.decode_inventory_data(paged.data)
    assert [(r.antenna, r.rssi) for r in records] == [(1, 0x48), (2, 0x31)]

    none = _answer(_vector("inventory answer 0x01"))
    assert (none.status, p.decode_inventory_data(none.data)) == (p.Status.NO_TRANSPONDER, [])
    assert _answer(_vector("inventory answer 0x84")).status == p.Status.RF_WARNING

    states = p.decode_antenna_diagnostic(_answer(_vector("diagnostic answer, mode 0x04")).data)
    assert states == {1: 0, 2: 1, 3: 0, 4: 2}
    general = p.GeneralDiagnostic.decode(_answer(_vector("diagnostic answer, mode 0x01")).data)
    assert general.problems() == []
    assert _answer(_vector("answer 0x80")).status == p.Status.UNKNOWN_COMMAND


def test_simulator_answers_are_the_examples() -> None:
    reader = FeigReaderModel(antennas=4, seed=1)
    ask = reader.receive
    assert [a.data for a in ask(_vector("software version request"), 0)] == [
        _vector("software version answer")
    ]
    assert [a.data for a in ask(_vector("RF reset request"), 0)] == [_vector("RF reset answer")]
    assert [a.data for a in ask(_vector("diagnostic request, mode 0x01"), 0)] == [
        _vector("diagnostic answer, mode 0x01")
    ]
    reader.radio.faults.update({2: AntennaFault.OPEN, 4: AntennaFault.SHORT})
    assert [a.data for a in ask(_vector("diagnostic request, mode 0x04"), 0)] == [
        _vector("diagnostic answer, mode 0x04")
    ]
    assert [a.data for a in ask(p.encode_request(0x42), 0)] == [_vector("answer 0x80")]
    reader.radio.faults.clear()
    request = p.inventory_request([1, 2, 3, 4])
    assert [a.data for a in ask(request, 0)] == [_vector("inventory answer 0x01")]
    reader.radio.faults[2] = AntennaFault.OPEN
    assert [a.data for a in ask(request, 0)] == [_vector("inventory answer 0x84")]


def test_simulator_inventory_answer_is_byte_faithful() -> None:
    reader = FeigReaderModel(antennas=4, seed=1)
    reader.radio.place(bytes.fromhex("e0040150a1b2c3d4"), 3)
    [answer] = reader.receive(p.inventory_request([1, 2, 3, 4]), 0)
    expected = _vector("inventory answer, tag")
    # everything but the RSSI (which carries noise) and so the CRC
    assert answer.data[:17] == expected[:17]
    assert len(answer.data) == len(expected)
    assert _bitwise_crc(answer.data[:-2]) == answer.data[-2] | answer.data[-1] << 8


def test_simulator_answers_an_iso14443a_tag_as_the_example() -> None:
    reader = FeigReaderModel(antennas=4, seed=1)
    reader.radio.place(bytes.fromhex("04262d64c1556c"), 2)
    [answer] = reader.receive(p.inventory_request([1, 2, 3, 4]), 0)
    expected = _vector("inventory answer, ISO 14443-A")
    assert answer.data[:17] == expected[:17]  # all but the RSSI and the CRC


def test_more_than_a_frame_holds_is_paged_with_0x94() -> None:
    reader = FeigReaderModel(antennas=14, seed=2)
    # the same low nibble: every tag of an antenna answers in the same first slot
    uids = [bytes.fromhex(f"e0040150{n * 16:08x}") for n in range(45)]
    for n, uid in enumerate(uids):
        reader.radio.place(uid, 1 + n % 3)
    antennas = list(range(1, 15))
    frames = [_answer(a.data) for a in reader.receive(p.inventory_request(antennas), 0)]
    while frames[-1].status == p.Status.MORE_DATA:
        more = p.inventory_request(antennas, more=True)
        frames += [_answer(a.data) for a in reader.receive(more, 0)]
    assert [f.status for f in frames] == [0x94, 0x94, 0x00]
    assert all(len(f.data) <= 1 + 19 * 13 for f in frames)
    found = [r.uid[::-1] for f in frames for r in p.decode_inventory_data(f.data)]
    assert sorted(found) == sorted(uids)
    assert reader.radio.collisions > 0  # 45 tags, 16 slots: the anticollision had work


def test_a_corrupted_or_foreign_request_gets_no_answer() -> None:
    reader = FeigReaderModel(antennas=4, seed=1)
    bad = bytearray(p.encode_request(p.CMD_SOFTWARE_VERSION))
    bad[-1] ^= 0x01
    assert reader.receive(bytes(bad), 0) == []
    assert reader.receive(p.encode_request(p.CMD_SOFTWARE_VERSION, address=7), 0) == []
    assert reader.ignored_requests == 2
    # what follows the garbage is read as usual
    assert len(reader.receive(p.encode_request(p.CMD_SOFTWARE_VERSION), 0)) == 1


@given(st.binary(max_size=300), st.integers(1, 40))
def test_the_decoder_survives_any_bytes_and_finds_frames_after_them(
    noise: bytes, chunk: int
) -> None:
    frame = _vector("inventory answer 0x94")
    decoder = p.FrameDecoder(responses=True)
    decoder.feed(noise)  # whatever it makes of the noise
    list(decoder.feed(noise))
    decoder.reset()
    stream = frame * 2
    items = [
        item
        for at in range(0, len(stream), chunk)
        for item in decoder.feed(stream[at : at + chunk])
    ]
    assert [i for i in items if isinstance(i, p.Frame)] == [_answer(frame)] * 2
