"""The host's view of a TSP/1 reader: edges, reconciliation by snapshots, stale zones."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from controller.table.inputs import Zone
from drivers.rfid.presence import Arrived, Departed, PresenceEdge, ZoneFresh, ZoneStale
from drivers.rfid.tsp_reader.view import ReaderView

T = datetime(2026, 1, 1, tzinfo=UTC)
SEAT1, SEAT2, BOARD = Zone.parse("seat:1"), Zone.parse("seat:2"), Zone.parse("board")
ZONES = (SEAT1, SEAT2, BOARD)
UIDS = [f"04{n:012x}" for n in range(8)]

zones = st.sampled_from(ZONES)
tags = st.sampled_from(UIDS)
truth = st.fixed_dictionaries({zone: st.frozensets(tags, max_size=4) for zone in ZONES})


def apply(view: dict[Zone, set[str]], edges: list[PresenceEdge[Zone]]) -> None:
    """What a consumer of the edges believes afterwards."""
    for edge in edges:
        if isinstance(edge, Arrived):
            assert edge.uid not in view.setdefault(edge.zone, set()), "arrived twice"
            view[edge.zone].add(edge.uid)
        elif isinstance(edge, Departed):
            assert edge.uid in view.get(edge.zone, set()), "departed without arriving"
            view[edge.zone].discard(edge.uid)


@given(truth, truth)
def test_a_snapshot_brings_the_view_to_the_truth_with_the_fewest_edges(
    before: dict[Zone, frozenset[str]], after: dict[Zone, frozenset[str]]
) -> None:
    view = ReaderView()
    consumer: dict[Zone, set[str]] = {}
    apply(consumer, view.snapshot(T, dict(before)))
    edges = view.snapshot(T, dict(after))
    apply(consumer, edges)
    for zone in ZONES:
        assert view.present(zone) == after[zone]
        assert consumer.get(zone, set()) == after[zone]
    expected = sum(len(before[z] ^ after[z]) for z in ZONES)
    assert len(edges) == expected  # nothing but the differences
    assert view.snapshot(T, dict(after)) == []  # a second identical snapshot is silent


# An edge stream with some edges lost on the way, then a snapshot of the truth.
moves = st.lists(st.tuples(st.booleans(), zones, tags, st.booleans()), max_size=40)


@given(moves)
def test_lost_edges_are_repaired_by_the_next_snapshot(
    stream: list[tuple[bool, Zone, str, bool]],
) -> None:
    real: dict[Zone, set[str]] = {zone: set() for zone in ZONES}
    view = ReaderView()
    consumer: dict[Zone, set[str]] = {}
    lost = 0
    for place, zone, uid, delivered in stream:
        if place == (uid in real[zone]):
            continue  # the reader only sends edges that change something
        (real[zone].add if place else real[zone].discard)(uid)
        if not delivered:
            lost += 1
            continue
        apply(consumer, view.arrived(T, zone, uid) if place else view.departed(T, zone, uid))
    apply(consumer, view.snapshot(T, {zone: frozenset(real[zone]) for zone in ZONES}))
    for zone in ZONES:
        assert consumer.get(zone, set()) == real[zone]
    assert view.repaired_arrivals + view.repaired_departures <= lost


@given(truth, st.lists(st.tuples(zones, tags), max_size=10))
def test_repeated_edges_change_nothing(
    start: dict[Zone, frozenset[str]], repeats: list[tuple[Zone, str]]
) -> None:
    view = ReaderView()
    view.snapshot(T, dict(start))
    for zone, uid in repeats:
        edges = view.arrived(T, zone, uid) if uid in start[zone] else view.departed(T, zone, uid)
        assert edges == []
    assert {zone: view.present(zone) for zone in ZONES} == start


def test_a_faulty_antenna_makes_its_zone_stale_and_nothing_departs() -> None:
    view = ReaderView()
    view.arrived(T, SEAT1, UIDS[0])
    view.arrived(T, SEAT1, UIDS[1])
    assert view.antenna_fault(T, SEAT1, "OPEN") == [ZoneStale(T, SEAT1, 1, "OPEN")]
    assert view.antenna_fault(T, SEAT1, "OPEN") == []  # once
    # Untrusted snapshot entries (faulty, settling) change nothing.
    assert view.snapshot(T, {SEAT1: None}) == []
    assert view.present(SEAT1) == {UIDS[0], UIDS[1]}
    assert view.stale(SEAT1)
    # A good entry reconciles and freshens the zone: the card lifted meanwhile departs now.
    edges = view.snapshot(T, {SEAT1: frozenset({UIDS[0]})})
    assert edges == [ZoneFresh(T, SEAT1), Departed(T, SEAT1, UIDS[1])]
    assert not view.stale(SEAT1)


def test_the_antenna_reporting_itself_repaired_freshens_the_zone() -> None:
    view = ReaderView()
    view.antenna_fault(T, BOARD, "SHORT")
    assert view.stale_zones() == {BOARD: "SHORT"}
    assert view.antenna_ok(T, BOARD) == [ZoneFresh(T, BOARD)]
    assert view.antenna_ok(T, BOARD) == []
    assert view.stale_zones() == {}


def test_a_snapshot_only_speaks_for_the_zones_it_lists() -> None:
    view = ReaderView()
    view.arrived(T, SEAT1, UIDS[0])
    view.arrived(T, BOARD, UIDS[1])
    assert view.snapshot(T, {BOARD: frozenset()}) == [Departed(T, BOARD, UIDS[1])]
    assert view.present(SEAT1) == {UIDS[0]}
    assert view.zones() == {SEAT1: frozenset({UIDS[0]})}
