"""The one Backoff and the one reconnect loop: growth, cap, jitter, reset; restarts and stops."""

from __future__ import annotations

import asyncio
import itertools
import random
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.aio import Backoff, retry_forever
from controller.table.inputs import DeviceHealthChanged, DeviceInput, Health, TagArrived, Zone
from drivers.errors import (
    DeviceRejectedError,
    DeviceUnavailableError,
    SessionRestartError,
)
from drivers.supervisor import InputSink, RestartPolicy, Supervisor

# --------------------------------------------------------------------------- Backoff

bases = st.floats(min_value=0.001, max_value=10.0)
caps = st.floats(min_value=0.001, max_value=120.0)


@given(base=bases, cap=caps, seed=st.integers(0, 2**32), attempts=st.integers(1, 80))
def test_every_delay_lies_between_zero_and_its_capped_ceiling(
    base: float, cap: float, seed: int, attempts: int
) -> None:
    backoff = Backoff(base, cap, rng=random.Random(seed))
    for n in range(1, attempts + 1):
        delay = backoff.next()
        assert backoff.attempt == n
        assert 0.0 <= delay <= backoff.ceiling(n) == min(cap, base * 2.0 ** min(n, 30))
        assert delay <= cap


@given(base=bases, cap=caps)
def test_the_ceiling_doubles_until_the_cap_and_stays_there(base: float, cap: float) -> None:
    backoff = Backoff(base, cap)
    ceilings = [backoff.ceiling(n) for n in range(1, 60)]
    assert ceilings == sorted(ceilings)
    for previous, current in itertools.pairwise(ceilings):
        assert current == min(cap, previous * 2) or current == cap
    assert ceilings[-1] == cap


@given(seed=st.integers(0, 2**32))
def test_the_jitter_is_full_it_spreads_over_the_whole_range(seed: int) -> None:
    # Reconnecting clients must not retry in step: the delays cover [0, ceiling], not a band.
    rng = random.Random(seed)
    delays = []
    for _ in range(400):
        backoff = Backoff(1.0, 8.0, rng=rng)
        backoff.next()
        delays.append(backoff.next())  # the second delay: ceiling 4 s
    assert min(delays) < 0.4
    assert max(delays) > 3.6


@given(
    stable_after=st.floats(min_value=0.1, max_value=600.0),
    failures=st.integers(1, 40),
    held=st.floats(min_value=0.0, max_value=1.0),
)
def test_a_connection_that_held_starts_the_count_over(
    stable_after: float, failures: int, held: float
) -> None:
    backoff = Backoff(0.25, 5.0, stable_after=stable_after)
    for _ in range(failures):
        backoff.next(lasted=stable_after * held * 0.99)  # none of these held
    assert backoff.attempt == failures
    backoff.next(lasted=stable_after + held)
    assert backoff.attempt == 1


# --------------------------------------------------------------------------- the loop


def now() -> datetime:
    return datetime.now(UTC)


class Flaky:
    """A device whose first connections fail, then one that delivers a tag and holds."""

    kind = "reader"
    reports_health = False

    def __init__(self, failures: list[BaseException]) -> None:
        self.device_id = "flaky"
        self.failures = failures
        self.connections = 0
        self.closed = 0
        self.holding = asyncio.Event()

    async def run(self, sink: InputSink) -> None:
        self.connections += 1
        try:
            if self.failures:
                raise self.failures.pop(0)
            await sink(TagArrived(now(), self.device_id, Zone.parse("board"), "04a1"))
            self.holding.set()
            await asyncio.Event().wait()
        finally:
            self.closed += 1


class Inputs:
    """A sink to wait on: tests wait for conditions with a timeout, never for time."""

    def __init__(self) -> None:
        self.items: list[DeviceInput] = []
        self._changed = asyncio.Condition()

    async def __call__(self, item: DeviceInput) -> None:
        async with self._changed:
            self.items.append(item)
            self._changed.notify_all()

    def healths(self) -> list[tuple[Health, bool | None]]:
        return [(i.health, i.approved) for i in self.items if isinstance(i, DeviceHealthChanged)]


FAST = RestartPolicy(backoff_base=0.001, backoff_cap=0.004, fail_after=3, rejected_retry=0.001)


async def test_a_failing_device_is_restarted_and_reported_until_it_holds() -> None:
    device = Flaky([DeviceUnavailableError("cannot open /dev/x"), DeviceUnavailableError("gone")])
    inputs = Inputs()
    supervisor = Supervisor(device, inputs, FAST, rng=random.Random(1))
    task = asyncio.create_task(supervisor.run())
    try:
        async with asyncio.timeout(5):
            await device.holding.wait()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert device.connections == supervisor.sessions == 3
    assert inputs.healths() == [(Health.RECONNECTING, None), (Health.ONLINE, None)]
    reconnecting = inputs.items[0]
    assert isinstance(reconnecting, DeviceHealthChanged)
    assert (reconnecting.detail, reconnecting.kind) == ("cannot open /dev/x", "reader")
    assert isinstance(inputs.items[-1], TagArrived)  # online first, then what it read
    # Cancelled: the connection in progress was closed, the loop is over.
    assert device.closed == 3
    assert task.done()


async def test_fail_after_failures_in_a_row_is_failed_and_it_keeps_trying() -> None:
    device = Flaky([DeviceUnavailableError("no") for _ in range(5)])
    inputs = Inputs()
    supervisor = Supervisor(device, inputs, FAST)
    task = asyncio.create_task(supervisor.run())
    try:
        async with asyncio.timeout(5):
            await device.holding.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert [h for h, _ in inputs.healths()] == [Health.RECONNECTING, Health.FAILED, Health.ONLINE]
    assert supervisor.backoff.attempt == 5


async def test_a_bug_in_a_driver_is_logged_and_the_device_restarted() -> None:
    device = Flaky([ZeroDivisionError("a bug")])
    inputs = Inputs()
    supervisor = Supervisor(device, inputs, FAST)
    task = asyncio.create_task(supervisor.run())
    try:
        async with asyncio.timeout(5):
            await device.holding.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    first = inputs.items[0]
    assert isinstance(first, DeviceHealthChanged)
    assert first.health is Health.RECONNECTING
    assert first.detail == "internal error: ZeroDivisionError('a bug')"
    assert device.connections == 2


async def test_a_reboot_reconnects_at_once_and_a_reject_is_rejected() -> None:
    device = Flaky([SessionRestartError("the device rebooted"), DeviceRejectedError("unknown")])
    inputs = Inputs()
    supervisor = Supervisor(device, inputs, FAST)
    task = asyncio.create_task(supervisor.run())
    try:
        async with asyncio.timeout(5):
            await device.holding.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert inputs.healths() == [
        (Health.RECONNECTING, None),
        (Health.REJECTED, False),
        (Health.ONLINE, None),
    ]
    assert supervisor.backoff.attempt == 0  # neither counts as a failure


async def test_a_failing_sink_ends_the_supervision_loudly() -> None:
    device = Flaky([])

    async def sink(item: DeviceInput) -> None:
        raise OSError("the journal's disk is full")

    supervisor = Supervisor(device, sink, FAST)
    with pytest.raises(OSError, match="disk is full"):
        async with asyncio.timeout(5):
            await supervisor.run()
    assert device.connections == 1


async def test_own_health_reports_are_deduplicated_and_waitable() -> None:
    class Reporting(Flaky):
        reports_health = True

        async def run(self, sink: InputSink) -> None:
            for health in (Health.ONLINE, Health.ONLINE, Health.STALE, Health.ONLINE):
                await sink(DeviceHealthChanged(now(), self.device_id, health, detail="x"))
            self.holding.set()
            await asyncio.Event().wait()

    device = Reporting([])
    inputs = Inputs()
    supervisor = Supervisor(device, inputs, FAST)
    task = asyncio.create_task(supervisor.run())
    try:
        async with asyncio.timeout(5):
            await device.holding.wait()
        assert await supervisor.wait_for(Health.ONLINE, timeout=5) is Health.ONLINE
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert [h for h, _ in inputs.healths()] == [Health.ONLINE, Health.STALE, Health.ONLINE]


async def test_the_loop_can_let_bugs_through_and_waits_what_it_is_told() -> None:
    ended: list[tuple[str, float]] = []
    attempts = 0

    async def attempt() -> None:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ConnectionError("lost")
        raise KeyError("a bug")

    async def lost(error: Exception | None, lasted: float) -> float:
        ended.append((repr(error), lasted))
        return 0.0

    def bug(error: Exception) -> bool:
        return not isinstance(error, ConnectionError)

    with pytest.raises(KeyError, match="a bug"):
        await retry_forever(attempt, lost, expected=(ConnectionError,), fatal=bug)
    assert [e for e, _ in ended] == ["ConnectionError('lost')"] * 2
    assert all(lasted >= 0 for _, lasted in ended)
