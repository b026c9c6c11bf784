"""The TSP/1 reader's reporter: snapshots and edges of unmapped antennas are ignored, and the
configuration problem is logged once per antenna, not once per sweep."""

from __future__ import annotations

from datetime import UTC, datetime

import structlog

from controller.table.inputs import Input, TagArrived, Zone, ZoneKind
from drivers.rfid.tsp_reader.codes import AntennaCode
from drivers.rfid.tsp_reader.events import InventorySnapshot, SnapshotEntry, TagArrivedEvent
from drivers.rfid.tsp_reader.reporter import Reporter

SEAT_3 = Zone(ZoneKind.SEAT, 3)
MAPPED_TAG = bytes.fromhex("04a1b2c3d4e5f6")
STRAY_TAG = bytes.fromhex("04000000000001")


def reporter() -> tuple[Reporter, list[Input]]:
    inputs: list[Input] = []

    async def sink(item: Input) -> None:
        inputs.append(item)

    clock = iter(datetime(2026, 1, 1, 12, 0, second, tzinfo=UTC) for second in range(60))
    return Reporter("rfid", {0: SEAT_3}, sink, lambda: next(clock)), inputs


def snapshot(sweep: int) -> InventorySnapshot:
    entries = (
        SnapshotEntry(0, AntennaCode.OK, (MAPPED_TAG,)),
        SnapshotEntry(7, AntennaCode.OK, (STRAY_TAG,)),
    )
    return InventorySnapshot(sweep, sweep * 50, entries)


async def test_an_unmapped_antenna_is_ignored_and_named_once() -> None:
    report, inputs = reporter()
    with structlog.testing.capture_logs() as logs:
        for sweep in range(1, 6):
            await report.event(snapshot(sweep))
        await report.event(TagArrivedEvent(7, 1, 3, STRAY_TAG))
    warnings = [entry for entry in logs if entry["event"] == "reader.unmapped_antenna"]
    assert [w["antenna"] for w in warnings] == [7]
    arrived = [item for item in inputs if isinstance(item, TagArrived)]
    assert [(a.zone, a.uid) for a in arrived] == [(SEAT_3, MAPPED_TAG.hex())]


async def test_a_zone_mismatch_is_named_once_and_the_configured_zone_wins() -> None:
    report, inputs = reporter()
    with structlog.testing.capture_logs() as logs:
        await report.event(TagArrivedEvent(0, 2, 0, MAPPED_TAG))  # the reader says: board
        await report.event(TagArrivedEvent(0, 2, 0, STRAY_TAG))
    mismatches = [entry for entry in logs if entry["event"] == "reader.zone_mismatch"]
    assert len(mismatches) == 1
    assert mismatches[0]["configured"] == "seat:3"
    arrived = [item for item in inputs if isinstance(item, TagArrived)]
    assert [a.zone for a in arrived] == [SEAT_3, SEAT_3]
