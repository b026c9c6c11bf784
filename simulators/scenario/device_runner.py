"""Device mode: a scenario played through the real simulators, drivers and daemon.

``tablectl scenario run FILE`` (without ``--core``) builds the table of the file on the rig
(:mod:`simulators.rig`): the shuffler and reader simulators as processes, ``tablectl run`` on a
fresh journal, the broker. Each step happens at the table (:mod:`simulators.scenario.device_play`)
and the run's events are the daemon's: its surveillance stream from the broker, or its journal
when there is no broker. They are checked against the file's expectations with the same matcher
as ``--core``.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from simulators.errors import ScenarioError
from simulators.rig.broker import NONE, BrokerAddress
from simulators.rig.errors import RigError
from simulators.rig.mirror import Mirror, open_reader
from simulators.rig.rig import OpenTable, Rig, RigOptions
from simulators.rig.setup import TableSetup
from simulators.scenario.device_play import DevicePlay, DeviceRunError
from simulators.scenario.model import Scenario


@dataclass
class DeviceRun:
    """A scenario's run on the devices: the daemon's events as published."""

    scenario: Scenario
    envelopes: list[dict[str, Any]]
    epoch: str
    source: str  # "broker" or "journal"


class DeviceRunner(DevicePlay):
    """Plays the steps of one scenario on a running table."""

    step_index = 0
    settle_before_the_muck = True  # its events are compared with core mode's

    async def play(self) -> None:
        """Every step, in real time (``at`` waits for its moment; ``wait`` lets time pass)."""
        started = time.monotonic()
        if self.host_paced:
            self.step_index = -1  # the first shuffle step is the next one
            await self.arm_next_shuffle()
        for index, step in enumerate(self.scenario.step):
            self.step_index = index
            if step.at is not None:
                await self.wait_until(step.at - (time.monotonic() - started))
            await self.play_numbered(index, step)
        self._sync()

    async def arm_next_shuffle(self) -> None:
        """Load the deck (and the deck check's verdict) of the file's next shuffle step into the
        shuffler, so that the shuffle the daemon starts when a hand needs a deck deals it."""
        await super().arm_next_shuffle()
        step = next(
            (s for s in self.scenario.step[self.step_index + 1 :] if s.shuffler == "shuffle"),
            None,
        )
        if step is None:
            return
        verdict = step.verdict or "ok"
        if verdict == "commitment_mismatch":
            raise DeviceRunError("commitment_mismatch is a verdict of a reveal, not a shuffle")
        self.armed = self.shuffler.next_order(step.order, step.seed)
        await self._act(self.table.shuffler.arm(self.armed, verdict, step.count))


def device_modes(scenario: Scenario) -> bool:
    """Whether the file runs in device mode (``[scenario] modes``)."""
    return "device" in scenario.scenario.modes


def table_setup(scenario: Scenario) -> TableSetup:
    """The rig's table for a scenario."""
    meta, table = scenario.scenario, scenario.table
    return TableSetup(
        id=table.id,
        stacks=dict(table.stacks),
        button=table.button,
        blinds=table.blinds,
        ante=table.ante,
        profile=meta.profile,
        house_rules=dict(meta.house_rules),
        deck=meta.deck,
        settle=table.settle,
        id_policy=scenario.deck.id_policy,
        dispense=table.dispense,
    )


def starts_unapproved(scenario: Scenario) -> bool:
    """A file whose first shuffler happening is its refusal gets an unapproved shuffler."""
    first = next((s for s in scenario.step if s.kind in ("shuffler", "device", "auto")), None)
    return first is not None and first.device == "rejected" and first.name in (None, "shuffler")


async def run_device(scenario: Scenario, rig: Rig) -> DeviceRun:
    """Play ``scenario`` on a fresh table of ``rig``; return the daemon's events."""
    runner = DeviceRunner(scenario)
    unapproved = starts_unapproved(scenario)
    table = await rig.open_table(table_setup(scenario), unapproved=unapproved)
    mirror: Mirror | None = None
    try:
        mirror = Mirror(await open_reader(table.journal))
        runner.attach(table, mirror)
        await runner.settle_at_start(unapproved)
        await runner.play()
        return await _collect(scenario, table, mirror)
    finally:
        await rig.close_table()
        if mirror is not None:
            mirror.close()


async def _collect(scenario: Scenario, table: OpenTable, mirror: Mirror) -> DeviceRun:
    """The run's events up to the end of its last step, as the pit received them."""
    upto = mirror.last_seq
    link = table.rig.link
    if table.broker is None or link is None:
        return DeviceRun(scenario, mirror.envelopes(upto), mirror.epoch, "journal")
    try:
        await link.wait_events(mirror.epoch, upto)
    except TimeoutError:
        got = len(link.stream(mirror.epoch))
        raise RigError(f"the broker delivered {got} of the {upto} events the journal has") from None
    envelopes = [e for e in link.stream(mirror.epoch) if e["seq"] <= upto]
    return DeviceRun(scenario, envelopes, mirror.epoch, "broker")


async def run_files(
    scenarios: list[Scenario],
    options: RigOptions,
    jobs: int = 1,
    *,
    note: Callable[[str], None] | None = None,
) -> AsyncGenerator[tuple[int, DeviceRun | ScenarioError | RigError]]:
    """Play ``scenarios`` on ``jobs`` rigs at once; yield ``(index, run or error)`` as each
    finishes.

    The rigs share one broker (the one ``options`` names, or the first rig's own mosquitto),
    each under a topic prefix of its own so that their tables never hear each other. They share
    it as the first rig has it: its address with its logins (the rig's own mosquitto takes no
    anonymous client, and its ACL lets the rig's users reach every prefix).
    """

    def own(job: int) -> Path | None:
        return options.directory / f"rig-{job}" if options.directory is not None else None

    async with Rig(replace(options, directory=own(0))) as first:
        if note is not None:
            note(first.broker_note)
        rigs = [first]
        broker: str | BrokerAddress = first.address if first.address is not None else NONE
        try:
            for job in range(1, max(1, jobs)):
                extra = Rig(
                    replace(
                        options, broker=broker, prefix=f"{options.prefix}-{job}", directory=own(job)
                    )
                )
                rigs.append(extra)
                await extra.start()
            queue: asyncio.Queue[int] = asyncio.Queue()
            for index in range(len(scenarios)):
                queue.put_nowait(index)
            results: asyncio.Queue[tuple[int, DeviceRun | ScenarioError | RigError]] = (
                asyncio.Queue()
            )

            async def work(rig: Rig) -> None:
                while not queue.empty():
                    index = queue.get_nowait()
                    try:
                        outcome: DeviceRun | ScenarioError | RigError = await run_device(
                            scenarios[index], rig
                        )
                    except (ScenarioError, RigError) as exc:
                        outcome = exc
                    except Exception as exc:  # a bug: reported with the file, not a hang
                        detail = "".join(traceback.format_exception(exc)[-3:])
                        outcome = RigError(f"{type(exc).__name__}: {exc}\n{detail}")
                    await results.put((index, outcome))

            workers = [
                asyncio.create_task(work(rig), name=f"rig-{n}") for n, rig in enumerate(rigs)
            ]
            try:
                for _ in range(len(scenarios)):
                    yield await results.get()
            finally:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
        finally:
            for rig in rigs[1:]:
                await rig.close()
