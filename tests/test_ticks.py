"""A process's periodic timers on one grid (controller/aio.py): the ticks of a period are its
multiples on the loop's clock, so timers of one process due together share a wake of the loop."""

from __future__ import annotations

import asyncio
import math

from hypothesis import given
from hypothesis import strategies as st

from controller.aio import next_tick, sleep_to_tick

NOW = st.floats(min_value=0.0, max_value=1e7, allow_nan=False)
PERIOD = st.sampled_from([0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 5.0, 0.7])


def on_grid(when: float, period: float) -> bool:
    return math.isclose(when / period, round(when / period), abs_tol=1e-6)


@given(NOW, PERIOD)
def test_the_next_tick_is_on_the_grid_some_period_ahead(now: float, period: float) -> None:
    tick = next_tick(now, period)
    assert on_grid(tick, period)
    # half to one and a half periods ahead: a loop that ticks on it keeps its pace
    slack = 1e-9 * max(1.0, now)
    assert now + period / 2 - slack <= tick <= now + 1.5 * period + slack


@given(NOW, PERIOD)
def test_a_loop_on_a_tick_ticks_again_one_period_later(now: float, period: float) -> None:
    tick = next_tick(now, period)
    after = next_tick(tick + period / 1000, period)  # the work of a tick takes a little
    assert math.isclose(after - tick, period, rel_tol=1e-6, abs_tol=1e-6)


def test_timers_of_periods_on_one_grid_fall_on_the_same_instants() -> None:
    # the broker read every 0.2 s, a check of the members every half second and a scan every
    # second: each second, all three are due at one instant
    def ticks(period: float, start: float, until: float) -> set[float]:
        found = [next_tick(start, period)]
        while found[-1] < until:
            found.append(next_tick(found[-1] + 0.0004, period))  # a tick's work takes a little
        return {round(t, 9) for t in found}

    reads, members, scans = (ticks(p, 1000.0003, 1003.0) for p in (0.2, 0.5, 1.0))
    assert scans == {1001.0, 1002.0, 1003.0}
    assert scans <= members
    assert scans <= reads


async def test_sleeping_to_a_tick_wakes_on_the_grid() -> None:
    loop = asyncio.get_running_loop()
    for _ in range(3):
        await sleep_to_tick(0.05)
        woke = loop.time()
        # on the tick or just after it (never before: a timer does not fire early)
        assert 0.0 <= woke - round(woke / 0.05) * 0.05 < 0.025
