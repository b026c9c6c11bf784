"""The table's primitives played on the rig's real devices (device mode), on the event loop.

The scenario steps (:mod:`simulators.scenario.steps`) and the automatic dealers built on them
(:mod:`simulators.autoplay`, :mod:`simulators.irregular`) do everything through a few
primitives (:class:`~simulators.scenario.primitives.TablePrimitives`): feed an input, shuffle,
dispense a group, reshuffle the stub, let time pass. :class:`DevicePlay` gives each of them its
physical meaning on a running table (:class:`~simulators.rig.rig.OpenTable`):

* a dealer command is a request to the daemon (MQTT, or its console socket);
* a tag arriving at or leaving a zone is the card's tag put on or lifted off that antenna;
* a shuffle is the deck loaded into the shuffler simulator, the deck-check verdict set and the
  shuffle button pressed (the table's cards are gathered first); a group is the dealer's
  delivery from the keypad, or on a host-paced table the group the daemon asked for taken from
  the gated tray; a stub reshuffle puts the returned cards back and reshuffles;
* a device fault is the fault caused at the simulator (the lid opened, the input jammed, the
  power cut), a controller restart is the daemon stopped and started again on its journal;
* time is real: a ``wait`` lets the seconds pass, and the readers' settle deadline is the
  daemon's own ``Tick``.

After each act it waits until the daemon journaled what the devices reported, and reads the
table's state from the journal (:class:`~simulators.rig.mirror.Mirror`), so the macros and the
random dealers decide on the daemon's own state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from controller.cards import Card
from controller.table.engine import deadline
from controller.table.events import TableEvent
from controller.table.inputs import (
    COMMAND_NAMES,
    ControllerRestarted,
    DealerInput,
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    GroupDispensed,
    Health,
    Input,
    Purpose,
    ShuffleCompleted,
    TagArrived,
    TagDeparted,
    Tick,
    Zone,
    ZoneKind,
)
from controller.table.state import Phase
from controller.uids import normalize_uid
from simulators.errors import RefusedError, ScenarioError
from simulators.rig.mirror import Applied, Mirror, MirrorError
from simulators.rig.rig import OpenTable
from simulators.rig.setup import READER, SHUFFLER
from simulators.scenario.steps import StepPlayer

T = TypeVar("T")
WAIT = 15.0  # seconds the daemon gets to journal what a device reported


class DeviceRunError(ScenarioError):
    """The devices refused a step, or the daemon did not show what it should have."""


def _is(kind: type, **fields: Any) -> Callable[[Input], bool]:
    def wanted(item: Input) -> bool:
        return isinstance(item, kind) and all(getattr(item, k) == v for k, v in fields.items())

    return wanted


class DevicePlay(StepPlayer):
    """The primitives on a running table: put it before the logic that uses them (the steps of
    a file, or a dealer's decisions) so that its primitives are the ones played."""

    armed: tuple[Card, ...] = ()  # the deck loaded for the host's next shuffle
    armed_at: int = 0  # the journal mark when it was loaded
    pace: float = 0.0  # seconds the dealer takes before each act (a demo watched by people)
    # a scenario run (compared with core mode): the readers' settle check comes due before a
    # card leaves a seat at the showdown (:meth:`_settle_before_the_muck`)
    settle_before_the_muck = False

    def attach(self, table: OpenTable, mirror: Mirror) -> None:
        """Play on ``table``; ``mirror`` reads its daemon's journal."""
        self.table = table
        self.mirror = mirror
        self.run.inputs = mirror.run.inputs
        self.run.events = mirror.run.events
        self.now = datetime.now(UTC)
        self._sync()

    # ------------------------------------------------------------------ helpers

    def _sync(self) -> list[Applied]:
        applied = self.mirror.catch_up()
        self.run.state = self.mirror.state
        return applied

    async def _wait(self, wanted: Callable[[Input], bool], what: str, since: int) -> Applied:
        try:
            applied = await self.mirror.wait_for(wanted, what, since, WAIT)
        except MirrorError as exc:
            daemon = self.table.daemon
            if daemon is not None and not daemon.running:
                raise DeviceRunError(f"{exc}: the daemon exited\n{daemon.tail(1500)}") from None
            raise DeviceRunError(str(exc)) from None
        self.run.state = self.mirror.state
        return applied

    async def _act(self, act: Awaitable[T]) -> T:
        if self.pace:
            await asyncio.sleep(self.pace)
        try:
            return await act
        except RefusedError as exc:
            raise DeviceRunError(str(exc)) from None

    # ------------------------------------------------------------------ the clock

    def tick(self) -> datetime:
        """Inputs are stamped by the devices and the daemon: this is only "now"."""
        self.now = datetime.now(UTC)
        return self.now

    async def advance(self, to: datetime) -> None:
        """Let real time pass until ``to``; a deadline on the way is the daemon's Tick."""
        delay = (to - datetime.now(UTC)).total_seconds()
        mark = self.mirror.mark()
        if delay > 0:
            await asyncio.sleep(delay)
        self._sync()
        due = deadline(self.run.state)
        if due is not None and due <= to:
            await self._deadline_checked(due, mark)
        self.now = datetime.now(UTC)

    async def _deadline_checked(self, due: datetime, since: int) -> None:
        """Wait until the daemon has checked the deadline ``due``: the first input it journals
        at or after that moment runs the check (its clock's ``Tick``, or whatever else came
        first)."""

        def at_or_after(item: Input) -> bool:
            return item.ts >= due

        await self._wait(at_or_after, "an input at the readers' deadline (its Tick)", since)

    async def _settle_before_the_muck(self, zone: Zone | None) -> None:
        """A card is about to leave a seat at the showdown (a losing hand killed, a hand
        mucked): if the readers' settle check after the deal (SEAT-COUNT, SEAT-DEALT-OUT) is
        still to come, let it come first.

        In core mode a deadline falls due between two steps, never while a step's cards are on
        their way; here it falls due in real time. A hand played faster than the settle time
        would otherwise have it land while a seat's cards go to the muck, finding that seat one
        or two cards short; a slower hand had it before the showdown, as core mode does. So
        this waits on the check itself, not on how fast the table happened to play. (The demo's
        dealer does not wait: its table is not compared with anything.)
        """
        if not self.settle_before_the_muck or zone is None or zone.kind is not ZoneKind.SEAT:
            return
        self._sync()
        hand, due = self.run.state.hand, deadline(self.run.state)
        if hand is None or due is None or hand.phase not in (Phase.SHOWDOWN, Phase.AWARD):
            return
        await self.advance(due)

    async def wait_until(self, seconds: float) -> None:
        """Let real time pass (``at`` steps)."""
        await self.advance(datetime.now(UTC) + timedelta(seconds=seconds))

    # ------------------------------------------------------------------ the shuffler

    async def gather(self, cards: list[Card] | None = None) -> None:
        """The dealer picks cards up off the table (all of them: None)."""
        manifest = self.run.state.manifest
        uids = None if cards is None else [manifest.uid(card) for card in cards]
        mark = self.mirror.mark()
        lifted = await self._act(self.table.tags.lift_all(uids))
        for zone, uid in lifted:
            await self._wait(_is(TagDeparted, zone=zone, uid=uid), f"{uid} leaving {zone}", mark)

    async def shuffle_deck(self, cards: tuple[Card, ...], verdict: str, count: int | None) -> None:
        """Gather the table's cards, load the deck and press shuffle.

        On a host-paced table the daemon starts the shuffle itself when a hand needs a deck; the
        deck was loaded beforehand (:meth:`arm_next_shuffle`) and this waits for that shuffle.
        """
        if verdict == "commitment_mismatch":
            raise DeviceRunError("commitment_mismatch is a verdict of a reveal, not a shuffle")
        await self.gather()
        if self.host_paced:
            if cards != self.armed:
                raise DeviceRunError("the shuffle is not the one loaded for the host's request")
            what = "the shuffle the daemon asked for completing"
            done = (await self._wait(_is(ShuffleCompleted), what, self.armed_at)).item
            assert isinstance(done, ShuffleCompleted)
            self.shuffler.shuffle_id = done.shuffle_id
            await self.arm_next_shuffle()
            return
        mark = self.mirror.mark()
        sid = await self._act(self.table.shuffler.shuffle(cards, verdict, count))
        self.shuffler.shuffle_id = sid
        await self._wait(
            _is(ShuffleCompleted, shuffle_id=sid), f"the shuffle {sid} completing", mark
        )

    async def arm_next_shuffle(self) -> None:
        """Load the deck of the next shuffle before the host asks for it (host-paced tables).

        The player of a scenario knows its next shuffle step; this base loads nothing.
        """
        self.armed = ()
        self.armed_at = self.mirror.mark()

    async def reshuffle_stub(self, seed: int | None) -> None:
        """Undo the faults the dealer caused, then reshuffle the stub."""
        await self.clear_faults()
        await super().reshuffle_stub(seed)

    async def reshuffle_deck(self, added: list[Card], seed: int, cards: tuple[Card, ...]) -> None:
        """Put the cards the table sent back into the shuffler and reshuffle the stub."""
        await self.gather(added)  # those on the table; the unread ones are in the dealer's hand
        mark = self.mirror.mark()
        sid = await self._act(self.table.shuffler.reshuffle(added, seed))
        virtual = self.shuffler
        # the simulator shuffled the same cards the same way
        virtual.order, virtual.position, virtual.shuffle_id = cards, 0, sid
        what = f"the stub shuffle {sid} completing"
        await self._wait(_is(ShuffleCompleted, shuffle_id=sid), what, mark)

    async def deal_group(
        self, purpose: Purpose, seat: int | None, size: int, asked: int | None
    ) -> list[Card]:
        """The dealer takes the next group: from the keypad, or on a host-paced table the group
        the daemon asked for from the gated tray (``size`` cards instead: a misfeed)."""
        mark = self.mirror.mark()
        if asked is not None:
            waiting = await self._host_group()
            if (waiting["purpose"], waiting["seat"], waiting["count"]) != (purpose, seat, asked):
                raise DeviceRunError(
                    f"the daemon asked for {waiting}, the table's state for a {purpose} group "
                    f"of {asked} (seat {seat})"
                )
            dealt = await self._act(self.table.shuffler.deliver(None if size == asked else size))
        else:
            dealt = await self._act(self.table.shuffler.dispense(purpose, seat, size))
        await self._wait(
            _is(GroupDispensed, shuffle_id=dealt.shuffle_id, group=dealt.group),
            f"group {dealt.group} of shuffle {dealt.shuffle_id}",
            mark,
        )
        cards = list(dealt.cards)
        virtual = self.shuffler
        expected = list(virtual.order[virtual.position : virtual.position + len(cards)])
        if cards != expected:
            raise DeviceRunError(f"the shuffler dealt {cards}, its deck says {expected} come next")
        return virtual.dealt(dealt.group, purpose, cards)

    async def _host_group(self) -> dict[str, Any]:
        """The oldest group the daemon asked for, once it waits in the gated tray."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            waiting = await self._act(self.table.shuffler.host_groups())
            if waiting:
                return waiting[0]
            await asyncio.sleep(0.01)
        raise DeviceRunError(f"the daemon asked the shuffler for no group in {WAIT:.0f} s")

    async def clear_faults(self) -> None:
        """Undo the faults the dealer caused (close the lid, clear the jam) before going on."""
        for code in list(self.table.shuffler.raised):
            mark = self.mirror.mark()
            await self._act(self.table.shuffler.clear(code))
            wanted = _is(DeviceFaultCleared, device=SHUFFLER, code=code)
            await self._wait(wanted, f"{code} clearing", mark)

    # ------------------------------------------------------------------ inputs

    async def feed(self, event: Input) -> list[TableEvent]:
        """Make ``event`` happen at the table; return the events the daemon gave it."""
        if isinstance(event, DealerInput):
            return await self.command(event)
        mark = self.mirror.mark()
        if isinstance(event, TagArrived):
            card = self.run.state.manifest.card(event.uid)
            if card is not None:
                self.seen.add(card)
            lying = self.table.tags.where.get(normalize_uid(event.uid))
            if lying != event.zone:
                await self._settle_before_the_muck(lying)
            if not await self._act(self.table.tags.place(event.zone, event.uid)):
                return []  # it lies there already: the reader has nothing new to say
            uid = normalize_uid(event.uid)
            what = f"{uid} arriving at {event.zone}"
            return (await self._wait(_is(TagArrived, zone=event.zone, uid=uid), what, mark)).events
        if isinstance(event, TagDeparted):
            uid = normalize_uid(event.uid)
            if self.table.tags.where.get(uid) != event.zone:
                return []
            await self._settle_before_the_muck(event.zone)
            await self._act(self.table.tags.lift(uid))
            what = f"{uid} leaving {event.zone}"
            return (await self._wait(_is(TagDeparted, zone=event.zone, uid=uid), what, mark)).events
        if isinstance(event, ControllerRestarted):
            await self.table.restart_daemon()
            what = "the controller's restart"
            return (await self._wait(_is(ControllerRestarted), what, mark)).events
        if isinstance(event, Tick):
            await self.advance(event.ts)
            return []
        if getattr(event, "device", None) == READER:
            raise DeviceRunError(f"the rig cannot make the reader report {type(event).__name__}")
        return await self.device(event)

    async def command(self, event: DealerInput) -> list[TableEvent]:
        """A dealer command, sent as the console does; the events of its response."""
        name = COMMAND_NAMES[type(event)]
        fields = {
            f.name: getattr(event, f.name)
            for f in dataclasses.fields(event)
            if f.name not in ("ts", "authority") and getattr(event, f.name) is not None
        }
        if self.pace:
            await asyncio.sleep(self.pace)
        try:
            body = await self.table.console.send(name, fields)
        except RuntimeError as exc:
            raise DeviceRunError(f"{name}: {exc}") from None
        seqs = [int(e["seq"]) for e in (body.get("data") or {}).get("events", [])]
        if not seqs and body.get("status") != "ok":  # answered without running (rate, load)
            raise DeviceRunError(f"{name}: the table did not run it: {body.get('error')}")
        if seqs:
            try:
                await self.mirror.wait_seq(max(seqs), WAIT)
            except MirrorError as exc:
                raise DeviceRunError(str(exc)) from None
        self.run.state = self.mirror.state
        return self.mirror.events_at(seqs)

    async def device(self, event: Input) -> list[TableEvent]:
        """A shuffler fault, its clearing, a power cut, an unplug or replug, a refusal."""
        unit = self.table.shuffler
        mark = self.mirror.mark()
        name = getattr(event, "device", "")
        if name != SHUFFLER:
            raise DeviceRunError(f"the rig has no device {name!r} to act on")
        if isinstance(event, DeviceFault):
            await self._act(unit.fault(event.code))
            wanted = _is(DeviceFault, device=SHUFFLER, code=event.code)
        elif isinstance(event, DeviceFaultCleared):
            await self._act(unit.clear(event.code))
            wanted = _is(DeviceFaultCleared, device=SHUFFLER, code=event.code)
        elif isinstance(event, DeviceRebooted):
            await self._act(unit.power_loss())
            wanted = _is(DeviceRebooted, device=SHUFFLER)
        elif isinstance(event, DeviceHealthChanged) and event.health is Health.REJECTED:
            wanted = _is(DeviceHealthChanged, device=SHUFFLER, health=Health.REJECTED)
            self._sync()
            earlier = next((a for a in self.mirror.applied if wanted(a.item)), None)
            if earlier is not None:
                return earlier.events  # an unapproved shuffler was plugged in: refused at start
            await self._act(unit.unapproved())
        elif isinstance(event, DeviceHealthChanged) and event.health is Health.RECONNECTING:
            await self._act(unit.unplug())
            wanted = _is(DeviceHealthChanged, device=SHUFFLER, health=Health.RECONNECTING)
        elif isinstance(event, DeviceHealthChanged) and event.health is Health.ONLINE:
            await self._act(unit.replug())
            wanted = _is(DeviceHealthChanged, device=SHUFFLER, health=Health.ONLINE)
        else:
            raise DeviceRunError(f"the rig cannot make the shuffler report {type(event).__name__}")
        what = f"the shuffler reporting {type(event).__name__}"
        return (await self._wait(wanted, what, mark)).events

    # ------------------------------------------------------------------ settling

    async def settle_at_start(self, unapproved: bool) -> None:
        """Wait until the daemon has its devices: the reader online, the shuffler online (or
        refused, when an unapproved one was plugged in)."""
        shuffler = Health.REJECTED if unapproved else Health.ONLINE
        for device, health in ((SHUFFLER, shuffler), (READER, Health.ONLINE)):
            wanted = _is(DeviceHealthChanged, device=device, health=health)
            await self._wait(wanted, f"{device} {health.value}", 0)
