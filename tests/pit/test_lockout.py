"""Lock-out after wrong passwords: counted per user, ended by time or by the right password."""

from __future__ import annotations

from controller.pit.lockout import LockOut


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_user_is_locked_out_after_the_attempts_and_may_try_again_after_the_period() -> None:
    clock = Clock()
    lockout = LockOut(3, 1.0, clock)
    for _ in range(2):
        lockout.failed("ann")
    assert lockout.locked("ann") == 0
    lockout.failed("ann")
    assert lockout.locked("ann") == 60.0
    assert lockout.locked("bob") == 0  # counted per user
    clock.now += 59
    assert lockout.locked("ann") == 1.0
    clock.now += 1
    assert lockout.locked("ann") == 0
    lockout.failed("ann")  # the period is over: counting starts again
    assert lockout.locked("ann") == 0


def test_the_right_password_clears_the_count() -> None:
    lockout = LockOut(2, 1.0, Clock())
    lockout.failed("ann")
    lockout.succeeded("ann")
    lockout.failed("ann")
    assert lockout.locked("ann") == 0
