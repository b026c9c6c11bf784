"""The jsonl driver over a real pty, the virtual table's device memory."""

from __future__ import annotations

import asyncio
import os
import pty
import termios
import tty
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.decks import synthetic_manifest
from controller.table.codec import input_to_json
from controller.table.inputs import (
    DeviceFault,
    DeviceInput,
    GroupDispensed,
    Purpose,
    ShuffleCompleted,
    TagArrived,
    Zone,
)
from controller.table.plan import DispenseRequest
from drivers.contract import DeviceContext
from drivers.errors import AlreadyDoneError, DeviceCommandError, DeviceError
from drivers.jsonl import LineOptions, LineSource
from drivers.virtual import VirtualOptions, VirtualTable

NOW = datetime(2026, 1, 1, tzinfo=UTC)


async def collect(source: LineSource | VirtualTable, count: int) -> list[DeviceInput]:
    got: list[DeviceInput] = []
    enough = asyncio.Event()

    async def sink(item: DeviceInput) -> None:
        got.append(item)
        if len(got) >= count:
            enough.set()

    task = asyncio.create_task(source.run(sink))
    try:
        async with asyncio.timeout(5):
            await enough.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return got


async def test_jsonl_lines_in_any_chunks_bad_lines_skipped() -> None:
    master, slave = pty.openpty()
    tty.setraw(slave, termios.TCSANOW)
    source = LineSource("bench", LineOptions(port=Path(os.ttyname(slave))))
    first = DeviceFault(NOW, "bench", "JAM_INPUT", 1)
    second = TagArrived(NOW, "reader", Zone.parse("seat:2"), "04aabbccddeeff")
    stream = (
        input_to_json(first).encode()
        + b"\n"
        + b"this is not json\n"
        + b'{"v":1,"type":"StartHand","fields":{"ts":"2026-01-01T00:00:00Z"}}\n'
        + input_to_json(second).encode()
        + b"\n"
    )
    reading = asyncio.create_task(collect(source, 2))
    await asyncio.sleep(0.05)  # let the reader open the port before bytes arrive
    for cut in range(0, len(stream), 7):  # odd chunks: lines split across reads
        os.write(master, stream[cut : cut + 7])
    got = await reading
    assert got == [first, second]
    assert source.rejected == 2  # the garbage and the dealer command
    os.close(master)
    os.close(slave)


async def test_jsonl_port_that_does_not_exist_is_a_device_error(tmp_path: Path) -> None:
    source = LineSource("bench", LineOptions(port=tmp_path / "nope"))

    async def sink(item: DeviceInput) -> None:
        raise AssertionError(item)

    with pytest.raises(DeviceError, match="nope"):
        await source.run(sink)


def virtual(tmp_path: Path) -> VirtualTable:
    options = VirtualOptions(seed=1, state_file=tmp_path / "memory.json", deliver=True)
    return VirtualTable("shuffler", options, DeviceContext(manifest=synthetic_manifest("house-a")))


async def test_virtual_table_refuses_a_group_twice_and_remembers_across_hosts(
    tmp_path: Path,
) -> None:
    device = virtual(tmp_path)
    await device.shuffle(1)
    await device.dispense(1, 1, DispenseRequest(Purpose.HOLE, 3, 2))
    with pytest.raises(AlreadyDoneError):
        await device.dispense(1, 1, DispenseRequest(Purpose.HOLE, 3, 2))
    with pytest.raises(DeviceCommandError):
        await device.dispense(7, 2, DispenseRequest(Purpose.HOLE, 4, 2))
    # the host went away before taking any event: a new host gets them all, in order
    again = virtual(tmp_path)
    assert (await again.query()).groups == frozenset({1})
    events = await collect(again, 6)
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "DeckChecked",
        "ShuffleCompleted",
        "GroupDispensed",
        "TagArrived",
        "TagArrived",
        "DeviceHealthChanged",
    ]
    group = events[2]
    assert isinstance(group, GroupDispensed)
    assert group.cards == (None, None)  # identities withheld
    assert isinstance(events[1], ShuffleCompleted)
    assert {e.zone for e in events[3:5] if isinstance(e, TagArrived)} == {Zone.parse("seat:3")}
    with pytest.raises(AlreadyDoneError):
        await again.dispense(1, 1, DispenseRequest(Purpose.HOLE, 3, 2))
    assert again.dispensed_cards == 2
    # taken events are not delivered a third time
    third = virtual(tmp_path)
    await third.dispense(1, 2, DispenseRequest(Purpose.HOLE, 1, 2))
    fresh = await collect(third, 1)
    assert isinstance(fresh[0], GroupDispensed)
    assert fresh[0].group == 2
