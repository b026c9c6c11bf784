"""The inputs the daemon gives the core itself, beside the devices': the requests that come on
MQTT or the console socket, through the intake to its one worker, the journaled report of the
requests shed, and the clock's ticks (controller/shell/daemon.py puts the daemon together).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.config import TableConfig
from controller.shell.commands import CommandHandler, shed_event
from controller.shell.gate import Gate, bounded_text
from controller.shell.intake import Intake, Reply, Urgency
from controller.shell.metrics import Metrics
from controller.shell.space import JournalFullError
from controller.shell.table import ShutdownError, TableRunner
from controller.shell.writer import JournalWriter
from controller.table.engine import deadline
from controller.table.inputs import Tick

log = structlog.get_logger("tablectl.daemon")

#: What the ticker waits for when it waits for no deadline: any change of state wakes it.
ANY_CHANGE = object()


class DaemonInputs:
    """The requests and the clock of :class:`~controller.shell.daemon.Daemon`, which makes what
    is declared here."""

    config: TableConfig
    writer: JournalWriter
    runner: TableRunner
    gate: Gate
    intake: Intake
    commands: CommandHandler
    metrics: Metrics
    _tick_wake: asyncio.Event
    #: The deadline the ticker waits for: a change of state wakes it only when the state's
    #: deadline is another.
    _tick_due: object

    # ------------------------------------------------------------------ requests

    def _offer(
        self,
        verb: str,
        payload: bytes,
        reply: Reply,
        retained: bool = False,
    ) -> None:
        """A request from the broker: into the intake, answered when the worker gets to it."""
        self.intake.offer(verb, payload, datetime.now(UTC), reply, retained=retained)

    async def _request(self, verb: str, payload: bytes) -> dict[str, Any]:
        """A request from the console socket: through the same intake, waited for."""
        answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def reply(body: dict[str, Any], urgency: Urgency = Urgency.URGENT) -> None:
            if not answered.done():
                answered.set_result(body)

        self.intake.offer(verb, payload, datetime.now(UTC), reply)
        return await answered

    async def _serve_requests(self) -> None:
        """The one worker: the most urgent request first (see controller/shell/intake.py)."""
        while True:
            item = await self.intake.next()
            body = await self.commands.handle_queued(item)
            # answers to signed requests go out first
            item.reply(body, Urgency.URGENT if item.priority <= 1 else Urgency.ROUTINE)
            waited = (datetime.now(UTC) - item.received).total_seconds()
            self.metrics.command_seconds.labels(body.get("status") or "error").observe(waited)
            log.info(
                "request.handled",
                command=bounded_text(item.verb, 64),
                transaction=body.get("transaction"),
                status=body.get("status"),
                error=body.get("error"),
                waiting=len(self.intake),
            )

    async def _report_shed(self) -> None:
        """Once a second, journal how many requests were answered without running."""
        last = time.monotonic()
        while True:
            await asyncio.sleep(1.0)
            if not self.intake.shed:
                last = time.monotonic()
                continue
            counts = self.intake.shed_report()
            now = time.monotonic()
            log.warning("requests.shed", counts=counts)
            try:
                await self.runner.record_rejection(
                    shed_event(counts, now - last, datetime.now(UTC)), None
                )
            except JournalFullError:
                self.intake.shed.update(counts)  # reported once the journal has room
                continue
            except ShutdownError:
                pass
            last = now

    def _preload_nonces(self) -> None:
        """The nonces of the requests of the last minutes: a replay across a restart is
        refused too (an older one fails the clock check anyway)."""
        horizon = 2 * self.config.security.clock_skew
        now = datetime.now(UTC)
        for text in self.writer.journal.recent_requests(2000):
            auth = _auth_of(text)
            if auth is None:
                continue
            age = (now - auth[2]).total_seconds()
            if age < horizon:
                self.gate.remember_nonce(f"{auth[0]}:{auth[1]}", time.monotonic() + horizon - age)

    # ------------------------------------------------------------------ the clock

    async def _ticker(self) -> None:
        """Send the core a Tick when a deadline of its state falls due.

        The core names its next deadline (``controller.table.engine.deadline``), e.g. the
        readers' settle time after the deal.
        """
        while True:
            self._tick_wake.clear()
            due = deadline(self.runner.state)
            self._tick_due = due
            delay = None if due is None else (due - datetime.now(UTC)).total_seconds()
            if delay is not None and delay <= 0:
                tick = Tick(datetime.now(UTC), "clock")
                if self.runner.accepts(tick):
                    await self.runner.submit_when_writable(tick)
                    continue
                delay = None
                self._tick_due = ANY_CHANGE  # the core may take the tick after any input
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._tick_wake.wait()


def _auth_of(text: str) -> tuple[str, str, datetime] | None:
    """(key, nonce, ts) of a journaled signed request, None for any other."""
    try:
        auth = json.loads(text).get("auth")
        ts = datetime.fromisoformat(auth["ts"])
        return str(auth["key"]), str(auth["nonce"]), ts
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
