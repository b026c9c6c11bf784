"""The TSP/1 heartbeat: PING every interval, report stale, give up after N misses.

Shared by every TSP/1 device (PING is type 0x12 in each message set and its response carries the
boot id, so the link also notices a reboot through it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from controller.table.inputs import Health
from drivers.errors import DeviceUnavailableError, LinkTimeoutError, SessionRestartError
from drivers.tsp.client import LinkClient
from drivers.tsp.frame import TYPE_PING, Frame

#: How a driver reports its device's health (with a detail) while the connection lasts.
HealthReport = Callable[[Health, str], Awaitable[None]]


def _ignore(frame: Frame) -> None:
    return None


async def heartbeat(
    client: LinkClient,
    report: HealthReport,
    *,
    interval: float = 1.0,
    max_failures: int = 3,
    restart: asyncio.Event | None = None,
    on_response: Callable[[Frame], None] = _ignore,
) -> None:
    """PING until the session must end; never returns normally.

    Raise :class:`DeviceUnavailableError` when the transport is lost,
    :class:`SessionRestartError` when ``restart`` is set (the device rebooted), and
    :class:`LinkTimeoutError` after ``max_failures`` PINGs in a row went unanswered. The first
    miss makes the device ``stale``; an answer after misses makes it ``online`` again.
    """
    failures = 0
    lost = asyncio.ensure_future(client.wait_lost())
    restarted = asyncio.ensure_future((restart or asyncio.Event()).wait())
    try:
        while True:
            done, _ = await asyncio.wait(
                {lost, restarted}, timeout=interval, return_when=asyncio.FIRST_COMPLETED
            )
            if lost in done:
                raise DeviceUnavailableError(f"link lost ({lost.result()})")
            if restarted in done:
                raise SessionRestartError("the device rebooted")
            try:
                on_response(await client.request(TYPE_PING))
            except LinkTimeoutError as exc:
                failures += 1
                await report(Health.STALE, str(exc))
                if failures >= max_failures:
                    raise
                continue
            if failures:
                failures = 0
                await report(Health.ONLINE, "")
    finally:
        lost.cancel()
        restarted.cancel()


async def serve(
    client: LinkClient,
    report: HealthReport,
    events: asyncio.Task[None],
    *,
    name: str,
    interval: float,
    max_failures: int,
    restart: asyncio.Event,
    on_response: Callable[[Frame], None] = _ignore,
) -> None:
    """Keep an established session alive until it ends; always ends by raising.

    Runs the heartbeat beside ``events`` (the task handing device events to the application).
    Neither ends by itself: the heartbeat raises when the link is lost, stalls or the device
    rebooted, and the event task only ends when its sink failed, which must end the session
    loudly rather than leave events unread. Whichever ends first, its error is raised here.
    """
    beat = asyncio.create_task(
        heartbeat(
            client,
            report,
            interval=interval,
            max_failures=max_failures,
            restart=restart,
            on_response=on_response,
        ),
        name=f"{name}:heartbeat",
    )
    try:
        done, _ = await asyncio.wait({beat, events}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        beat.cancel()
        # Wait for it without raising: the heartbeat's own error, if it ended first, is raised
        # from ``done`` below.
        await asyncio.wait({beat})
    for task in done:
        task.result()
