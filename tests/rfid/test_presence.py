"""The generic presence tracker: debounce, silence is never a departure, staleness, reconcile."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.rfid.presence import (
    Arrived,
    Debounce,
    Departed,
    PresenceEdge,
    PresenceTracker,
    ZoneFresh,
    ZoneHealth,
    ZoneStale,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
ZONES = ("seat:1", "board")
UIDS = ("04000000000001", "04000000000002", "04000000000003", "04000000000004")


def at(step: int) -> datetime:
    return T0 + timedelta(milliseconds=100 * step)


# An operation: ("seen", zone, uids) | ("failed", zone) | ("lost", zone)
Op = tuple[str, str, frozenset[str]]

operations = st.lists(
    st.one_of(
        st.tuples(st.just("seen"), st.sampled_from(ZONES), st.frozensets(st.sampled_from(UIDS))),
        st.tuples(st.just("failed"), st.sampled_from(ZONES), st.just(frozenset[str]())),
        st.tuples(st.just("lost"), st.sampled_from(ZONES), st.just(frozenset[str]())),
    ),
    max_size=80,
)
debounces = st.builds(
    Debounce,
    arrive_n=st.integers(1, 4),
    depart_n=st.integers(1, 5),
    stale_after=st.integers(1, 4),
)


@dataclass
class Run:
    """A replay of operations with everything a property needs to look back at."""

    debounce: Debounce
    tracker: PresenceTracker[str]
    edges: list[tuple[int, PresenceEdge[str]]] = field(default_factory=list)
    good_polls: dict[str, list[tuple[int, frozenset[str]]]] = field(default_factory=dict)
    stale_at: dict[str, list[int]] = field(default_factory=dict)

    def fresh_polls(self, zone: str, index: int) -> list[frozenset[str]]:
        """The zone's good polls up to op ``index``, since it last went stale before that."""
        since = max((i for i in self.stale_at.get(zone, []) if i < index), default=-1)
        return [uids for i, uids in self.good_polls.get(zone, []) if since < i <= index]


def replay(debounce: Debounce, ops: list[Op]) -> Run:
    run = Run(debounce, PresenceTracker(debounce))
    for index, (kind, zone, uids) in enumerate(ops):
        if kind == "seen":
            out = run.tracker.seen(at(index), zone, uids)
            run.good_polls.setdefault(zone, []).append((index, uids))
        elif kind == "failed":
            out = run.tracker.failed(at(index), zone, "timeout")
        else:
            out = run.tracker.lost(at(index), zone, "unplugged")
        if any(isinstance(e, ZoneStale) for e in out):
            run.stale_at.setdefault(zone, []).append(index)
        run.edges += [(index, e) for e in out]
    return run


@given(debounces, operations)
def test_failed_and_lost_polls_never_make_edges_of_tags(debounce: Debounce, ops: list[Op]) -> None:
    run = replay(debounce, ops)
    for index, edge in run.edges:
        if isinstance(edge, Arrived | Departed):
            assert ops[index][0] == "seen"


@given(debounces, operations)
def test_a_departure_needs_depart_n_clean_misses_since_the_zone_was_last_stale(
    debounce: Debounce, ops: list[Op]
) -> None:
    run = replay(debounce, ops)
    for index, edge in run.edges:
        if isinstance(edge, Departed):
            polls = run.fresh_polls(edge.zone, index)
            assert len(polls) >= debounce.depart_n
            assert all(edge.uid not in uids for uids in polls[-debounce.depart_n :])


@given(debounces, operations)
def test_an_arrival_needs_arrive_n_sightings_since_the_zone_was_last_stale(
    debounce: Debounce, ops: list[Op]
) -> None:
    run = replay(debounce, ops)
    for index, edge in run.edges:
        if isinstance(edge, Arrived):
            polls = run.fresh_polls(edge.zone, index)
            assert len(polls) >= debounce.arrive_n
            assert all(edge.uid in uids for uids in polls[-debounce.arrive_n :])


@given(debounces, operations)
def test_edges_alternate_and_present_is_what_arrived_and_did_not_leave(
    debounce: Debounce, ops: list[Op]
) -> None:
    run = replay(debounce, ops)
    present: dict[str, set[str]] = {zone: set() for zone in ZONES}
    for _, edge in run.edges:
        if isinstance(edge, Arrived):
            assert edge.uid not in present[edge.zone]
            present[edge.zone].add(edge.uid)
        elif isinstance(edge, Departed):
            assert edge.uid in present[edge.zone]
            present[edge.zone].discard(edge.uid)
    for zone in ZONES:
        assert run.tracker.present(zone) == present[zone]


@given(debounces, operations, st.frozensets(st.sampled_from(UIDS)))
def test_steady_good_polls_converge_to_what_the_reader_sees(
    debounce: Debounce, ops: list[Op], truth: frozenset[str]
) -> None:
    run = replay(debounce, ops)
    for step in range(max(debounce.arrive_n, debounce.depart_n)):
        run.tracker.seen(at(10_000 + step), "board", truth)
    assert run.tracker.present("board") == truth
    assert run.tracker.health("board") is ZoneHealth.FRESH


@given(debounces, operations)
def test_stale_after_enough_failures_and_fresh_again_on_the_next_good_poll(
    debounce: Debounce, ops: list[Op]
) -> None:
    run = replay(debounce, ops)
    health = dict.fromkeys(ZONES, ZoneHealth.UNKNOWN)
    failures = dict.fromkeys(ZONES, 0)
    by_index: dict[int, list[PresenceEdge[str]]] = {}
    for index, edge in run.edges:
        by_index.setdefault(index, []).append(edge)
    for index, (kind, zone, _) in enumerate(ops):
        health_edges = [e for e in by_index.get(index, []) if isinstance(e, ZoneStale | ZoneFresh)]
        expected: list[type] = []
        if kind == "seen":
            failures[zone] = 0
            if health[zone] is not ZoneHealth.FRESH:
                expected, health[zone] = [ZoneFresh], ZoneHealth.FRESH
        else:
            failures[zone] += 1
            going_stale = kind == "lost" or failures[zone] >= debounce.stale_after
            if going_stale and health[zone] is not ZoneHealth.STALE:
                expected, health[zone] = [ZoneStale], ZoneHealth.STALE
        assert [type(e) for e in health_edges] == expected
    for zone in ZONES:
        assert run.tracker.health(zone) is health[zone]


@given(
    st.integers(1, 6).flatmap(
        lambda depart_n: st.tuples(
            st.just(depart_n),
            st.lists(st.integers(0, depart_n - 1), min_size=1, max_size=30),
        )
    )
)
def test_flapping_shorter_than_depart_n_never_departs(case: tuple[int, list[int]]) -> None:
    depart_n, miss_runs = case
    tracker: PresenceTracker[str] = PresenceTracker(Debounce(arrive_n=1, depart_n=depart_n))
    tag = UIDS[0]
    step = 0
    edges: list[PresenceEdge[str]] = []
    for misses in miss_runs:  # seen once, then missed fewer than depart_n times in a row
        edges += tracker.seen(at(step), "seat:1", {tag})
        step += 1
        for _ in range(misses):
            edges += tracker.seen(at(step), "seat:1", set())
            edges += tracker.failed(at(step), "seat:1")  # failures in between change nothing
            step += 1
    assert [e for e in edges if isinstance(e, Departed)] == []
    assert tracker.present("seat:1") == {tag}


def test_reconnection_reconciles_tags_that_left_meanwhile() -> None:
    tracker: PresenceTracker[str] = PresenceTracker(Debounce(arrive_n=1, depart_n=2))
    a, b = UIDS[0], UIDS[1]
    assert tracker.seen(at(0), "seat:1", {a, b}) == [
        ZoneFresh(at(0), "seat:1"),
        Arrived(at(0), "seat:1", a),
        Arrived(at(0), "seat:1", b),
    ]
    assert tracker.lost(at(1), "seat:1", "unplugged") == [
        ZoneStale(at(1), "seat:1", 3, "unplugged")
    ]
    for step in range(2, 20):  # however long the outage, no news is no departure
        assert tracker.failed(at(step), "seat:1") == []
    assert tracker.present("seat:1") == {a, b}
    assert tracker.seen(at(20), "seat:1", {a}) == [ZoneFresh(at(20), "seat:1")]
    assert tracker.seen(at(21), "seat:1", {a}) == [Departed(at(21), "seat:1", b)]


def test_staleness_forgets_half_counted_runs() -> None:
    tracker: PresenceTracker[str] = PresenceTracker(Debounce(arrive_n=2, depart_n=2))
    tag = UIDS[0]
    tracker.seen(at(0), "board", {tag})  # one sighting of two
    tracker.lost(at(1), "board")
    assert tracker.seen(at(2), "board", {tag}) == [ZoneFresh(at(2), "board")]  # counts from 1
    assert tracker.seen(at(3), "board", {tag}) == [Arrived(at(3), "board", tag)]


def test_debounce_settings_must_be_positive() -> None:
    with pytest.raises(ValueError, match="depart_n"):
        Debounce(depart_n=0)
