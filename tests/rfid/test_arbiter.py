"""The crosstalk arbiter: one zone per tag, the best-heard wins, shadows promoted, moves kept."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.rfid.arbiter import Arbiter
from drivers.rfid.presence import Arrived, Departed, PresenceEdge, ZoneFresh, ZoneStale

T = datetime(2026, 1, 1, tzinfo=UTC)
A, B, C = "seat:1", "seat:2", "muck"
UID = "e0040150a1b2c3d4"

Moves = list[tuple[str, str, str]]


def names(edges: list[PresenceEdge[str]]) -> Moves:
    return [(type(e).__name__, e.zone, e.uid) for e in edges if isinstance(e, Arrived | Departed)]


def quiet(arbiter: Arbiter[str], readings: dict[str, int], sweeps: int) -> Moves:
    """``sweeps`` sweeps without edges, each hearing UID at these strengths."""
    out: Moves = []
    for _ in range(sweeps):
        out += names(arbiter.sweep(T, [], {(z, UID): v for z, v in readings.items()}))
    return out


def test_one_zone_passes_through() -> None:
    arbiter: Arbiter[str] = Arbiter()
    assert names(arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): 70})) == [("Arrived", A, UID)]
    assert names(arbiter.sweep(T, [Departed(T, A, UID)])) == [("Departed", A, UID)]
    assert arbiter.present(A) == frozenset()


def test_the_stronger_of_one_sweep_wins_and_the_weaker_is_a_shadow() -> None:
    arbiter: Arbiter[str] = Arbiter()
    edges = [Arrived(T, B, UID), Arrived(T, A, UID)]
    assert names(arbiter.sweep(T, edges, {(A, UID): 70, (B, UID): 50})) == [("Arrived", A, UID)]
    assert arbiter.shadows(UID) == {B}
    # the shadow going away is no news for the core
    assert names(arbiter.sweep(T, [Departed(T, B, UID)], {(A, UID): 70})) == []
    assert arbiter.present(A) == {UID}


def test_crosstalk_arriving_later_stays_a_shadow() -> None:
    arbiter: Arbiter[str] = Arbiter()
    arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): 70})
    quiet(arbiter, {A: 70}, 10)
    assert names(arbiter.sweep(T, [Arrived(T, B, UID)], {(A, UID): 71, (B, UID): 52})) == []
    assert quiet(arbiter, {A: 70, B: 50}, 30) == []
    assert arbiter.shadowed == 1
    assert arbiter.placement(UID) == A


def test_a_shadow_is_promoted_when_the_placed_zone_lets_go() -> None:
    """The card heard on both zones for a few sweeps on its way, then gone from the first."""
    arbiter: Arbiter[str] = Arbiter()
    out = names(arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): 70}))
    out += quiet(arbiter, {A: 70}, 20)
    out += names(arbiter.sweep(T, [Arrived(T, C, UID)], {(A, UID): 60, (C, UID): 55}))
    out += quiet(arbiter, {A: 50, C: 65}, 2)
    out += quiet(arbiter, {C: 70}, 2)
    out += names(arbiter.sweep(T, [Departed(T, A, UID)], {(C, UID): 70}))
    out += quiet(arbiter, {C: 70}, 10)
    assert out == [("Arrived", A, UID), ("Departed", A, UID), ("Arrived", C, UID)]
    assert arbiter.placement(UID) == C


def test_a_stacked_card_missed_for_a_while_is_not_moved_to_a_faint_neighbour() -> None:
    arbiter: Arbiter[str] = Arbiter()
    arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): 70})
    quiet(arbiter, {A: 70}, 30)
    arbiter.sweep(T, [Arrived(T, B, UID)], {(A, UID): 70, (B, UID): 45})  # crosstalk asserted
    # A misses it: it departs there; B still hears it faintly
    out = quiet(arbiter, {B: 45}, 2)
    out += names(arbiter.sweep(T, [Departed(T, A, UID)], {(B, UID): 45}))
    assert out == [("Departed", A, UID)]
    assert quiet(arbiter, {B: 45}, 2) == []
    # A hears it again: placed there again, B never mentioned
    out = names(arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): 70}))
    assert out == [("Arrived", A, UID)]
    assert arbiter.placement(UID) == A


def test_a_clearly_better_shadow_takes_over_after_a_few_sweeps() -> None:
    arbiter: Arbiter[str] = Arbiter(margin=6, switch_after=3)
    arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): 60})
    quiet(arbiter, {A: 60}, 20)
    arbiter.sweep(T, [Arrived(T, B, UID)], {(A, UID): 40, (B, UID): 70})
    out = quiet(arbiter, {A: 40, B: 70}, 40)
    assert out == [("Departed", A, UID), ("Arrived", B, UID)]
    assert arbiter.switched == 1


def test_sweeps_without_rssi_keep_the_placement() -> None:
    arbiter: Arbiter[str] = Arbiter(switch_after=1)
    arbiter.sweep(T, [Arrived(T, A, UID)])
    assert names(arbiter.sweep(T, [Arrived(T, B, UID)])) == []
    for _ in range(5):
        assert names(arbiter.sweep(T, [])) == []
    assert arbiter.placement(UID) == A


def test_health_edges_pass_through_first() -> None:
    arbiter: Arbiter[str] = Arbiter()
    stale, fresh = ZoneStale(T, A, 3, "no answer"), ZoneFresh(T, B)
    assert arbiter.sweep(T, [Arrived(T, A, UID), stale, fresh]) == [
        stale,
        fresh,
        Arrived(T, A, UID),
    ]


def test_arrivals_of_one_reader_sweep_reported_one_by_one_are_weighed_together() -> None:
    """The TSP/1 reader sends one TAG_ARRIVED at a time, each with its sweep number."""
    arbiter: Arbiter[str] = Arbiter()
    first = arbiter.sweep(T, [Arrived(T, B, UID)], {(B, UID): -60}, complete=False, sweep_id=7)
    assert names(first) == [("Arrived", B, UID)]
    louder = arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): -40}, complete=False, sweep_id=7)
    assert names(louder) == [("Departed", B, UID), ("Arrived", A, UID)]
    # a louder arrival of a later sweep is a shadow until the placed zone lets go
    other = "e004015000000009"
    arbiter.sweep(T, [Arrived(T, B, other)], {(B, other): -60}, complete=False, sweep_id=8)
    later = arbiter.sweep(T, [Arrived(T, A, other)], {(A, other): -40}, complete=False, sweep_id=9)
    assert names(later) == []
    assert arbiter.placement(other) == B
    gone = arbiter.sweep(T, [Departed(T, B, other)], complete=False)
    assert names(gone) == [("Departed", B, other), ("Arrived", A, other)]


ZONES = [A, B, C, "board"]
UIDS = ["e004015000000001", "e004015000000002", "e004015000000003"]
change = st.tuples(st.sampled_from(ZONES), st.sampled_from(UIDS), st.booleans())
sweep = st.tuples(
    st.lists(change, max_size=4),
    st.dictionaries(
        st.tuples(st.sampled_from(ZONES), st.sampled_from(UIDS)), st.integers(-128, 255)
    ),
    st.booleans(),  # with RSSI
)


@settings(max_examples=300)
@given(st.lists(sweep, max_size=40), st.integers(0, 20), st.integers(1, 5))
def test_the_core_sees_each_tag_in_one_zone_it_is_asserted_in(
    sweeps: list[tuple[list[tuple[str, str, bool]], dict[tuple[str, str], int], bool]],
    margin: int,
    switch_after: int,
) -> None:
    arbiter: Arbiter[str] = Arbiter(margin=margin, switch_after=switch_after)
    asserted: dict[str, set[str]] = {}  # what the per-zone trackers assert
    core: dict[str, str] = {}  # what the core was told: uid → zone

    def play(edges: list[PresenceEdge[str]], rssi: dict[tuple[str, str], int]) -> None:
        for edge in arbiter.sweep(T, edges, rssi):
            if isinstance(edge, Arrived):
                assert edge.uid not in core, "arrived twice without departing"
                core[edge.uid] = edge.zone
            elif isinstance(edge, Departed):
                assert core.pop(edge.uid) == edge.zone, "departed from where it was not"
        for uid, zones in asserted.items():
            if not zones:
                assert uid not in core
            elif uid in core:
                assert core[uid] in zones  # placed on a zone that asserts it
        for zone in ZONES:
            assert arbiter.present(zone) == {u for u, z in core.items() if z == zone}

    for changes, strengths, with_rssi in sweeps:
        edges: list[PresenceEdge[str]] = []
        for zone, uid, present in changes:
            zones = asserted.setdefault(uid, set())
            if present and zone not in zones:
                zones.add(zone)
                edges.append(Arrived(T, zone, uid))
            elif not present and zone in zones:
                zones.discard(zone)
                edges.append(Departed(T, zone, uid))
        play(edges, strengths if with_rssi else {})
    # Heard steadily where they are asserted, every tag is placed in the end (a louder zone
    # that stopped hearing it fades).
    steady = {(z, uid): 50 for uid, zones in asserted.items() for z in zones}
    for _ in range(80):
        play([], steady)
    for uid, zones in asserted.items():
        assert (uid in core) == bool(zones)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 255), st.integers(1, 60)), max_size=60))
def test_weaker_crosstalk_never_reaches_the_core(reads: list[tuple[bool, int, int]]) -> None:
    """However often the neighbour asserts the tag, weaker than its own antenna: nothing moves."""
    arbiter: Arbiter[str] = Arbiter()
    out = arbiter.sweep(T, [Arrived(T, A, UID)], {(A, UID): 80})
    on_b = False
    for present, own, weaker_by in reads:
        own_rssi = max(own, 60)
        rssi = {(A, UID): own_rssi}
        edges: list[PresenceEdge[str]] = []
        if present != on_b:
            on_b = present
            edges.append(Arrived(T, B, UID) if present else Departed(T, B, UID))
        if on_b:
            rssi[(B, UID)] = max(0, own_rssi - weaker_by)
        out += arbiter.sweep(T, edges, rssi)
    assert names(out) == [("Arrived", A, UID)]
