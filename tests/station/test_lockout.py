"""Lock-out at the station (controller/station/lockout.py): per person, never per station, with
growing waits after five wrong PINs; the time comes in as an argument, so these are exact."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.pit.lockout import LockOut
from controller.station.lockout import Lockouts

POLICY = LockOut(attempts=5, minutes=15)
people = st.sampled_from(["ann", "bob", "cat", "unknown:04ffffffffffff"])
#: (who, seconds since the try before, right PIN?)
tries = st.lists(st.tuples(people, st.floats(0, 120), st.booleans()), max_size=60)


def play(lockouts: Lockouts, script: list[tuple[str, float, bool]]) -> dict[str, list[float]]:
    """Each try as the station makes it: refused unchecked while its person waits, else the
    PIN judged. The waits each person saw after a wrong PIN."""
    now = 0.0
    waits: dict[str, list[float]] = {}
    for who, gap, right in script:
        now += gap
        if lockouts.wait(who, now) > 0:
            continue  # refused: even the right PIN, and not counted
        if right:
            lockouts.succeeded(who)
            waits.pop(who, None)
        else:
            waits.setdefault(who, []).append(lockouts.failed(who, now))
    return waits


@given(tries, people)
def test_one_persons_wrong_pins_never_delay_another(
    script: list[tuple[str, float, bool]], other: str
) -> None:
    lockouts = Lockouts(POLICY)
    play(lockouts, [t for t in script if t[0] != other])
    assert lockouts.wait(other, 10_000.0) == 0
    assert lockouts.failures(other, 10_000.0) == 0


@given(st.integers(1, 30))
def test_five_wrong_pins_are_free_then_each_waits_twice_as_long(count: int) -> None:
    lockouts = Lockouts(POLICY)
    now = 0.0
    for n in range(1, count + 1):
        wait = lockouts.failed("ann", now)
        expected = 0.0 if n < 5 else min(2.0 ** (n - 5), 15 * 60)
        assert wait == expected
        now += wait  # the next try comes as soon as it may
    assert lockouts.failures("ann", now) == count


@given(tries)
def test_the_waits_grow_until_the_right_pin(script: list[tuple[str, float, bool]]) -> None:
    waits = play(Lockouts(POLICY), script)
    for seen in waits.values():
        assert seen == sorted(seen)
        assert all(w <= 15 * 60 for w in seen)


def test_in_a_wait_even_the_right_pin_is_refused_and_the_wait_ends() -> None:
    lockouts = Lockouts(POLICY)
    for _ in range(6):
        lockouts.failed("ann", 100.0)
    assert lockouts.wait("ann", 100.0) == 2.0  # the sixth wrong PIN: two seconds
    assert lockouts.wait("ann", 101.5) == 0.5
    assert lockouts.wait("ann", 102.0) == 0
    lockouts.succeeded("ann")
    assert lockouts.failures("ann", 102.0) == 0


def test_a_count_is_forgotten_after_a_quiet_day() -> None:
    lockouts = Lockouts(POLICY)
    for _ in range(7):
        lockouts.failed("ann", 0.0)
    assert lockouts.wait("ann", 1.0) > 0
    assert lockouts.failures("ann", POLICY.forget + 1) == 0
    assert lockouts.wait("ann", POLICY.forget + 1) == 0


def test_at_most_a_thousand_counts_are_kept_the_quietest_forgotten() -> None:
    lockouts = Lockouts(POLICY)
    for n in range(1200):
        lockouts.failed(f"unknown:{n}", float(n))
    assert lockouts.failures("unknown:0", 1200.0) == 0
    assert lockouts.failures("unknown:1199", 1200.0) == 1
