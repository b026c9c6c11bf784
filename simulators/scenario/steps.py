"""What each scenario step and macro means, in terms of the table's primitives.

:class:`StepPlayer` turns a step of a scenario file (a dealer command, a shuffler or reader
happening, a device fault, a wait, a macro such as ``deal_hole``) into primitives
(:class:`~simulators.scenario.primitives.TablePrimitives`). It is written once for both modes: the
core runner drives it without an event loop (its primitives never wait), the device runner on
the event loop. On a host-paced table (``[table] dispense = "host"``) every group must be the one
the table asks for now, in both modes.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError

from controller.cards import Card, parse_card
from controller.decks import load_deck
from controller.table.decoder import record_of
from controller.table.event_types import CommandRejected
from controller.table.flow import losers
from controller.table.inputs import (
    COMMANDS,
    Action,
    ActionKind,
    Award,
    ControllerRestarted,
    DeckRevealed,
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    Health,
    Input,
    Purpose,
    TableHand,
    TagArrived,
    TagDeparted,
    Zone,
)
from controller.table.plan import DispenseRequest, next_dispense
from controller.table.state import MUCK, Phase
from controller.table.streets import Street
from simulators.errors import ScenarioError
from simulators.scenario.model import Step
from simulators.scenario.primitives import TablePrimitives
from simulators.scenario.virtual_shuffler import DEFAULT_COUNTS, returned_cards
from simulators.shuffler.faults import fault_severity

_STREET_PURPOSE = {"flop": Purpose.FLOP, "turn": Purpose.TURN, "river": Purpose.RIVER}


class StepPlayer(TablePrimitives):
    """Plays the steps of one scenario, and its macros, on the table's primitives."""

    async def play_numbered(self, index: int, step: Step) -> None:
        """Play step ``index`` (from 0) of the file; a step that cannot be played says which."""
        try:
            await self.play_step(step)
        except ScenarioError as exc:
            raise type(exc)(f"step {index + 1} ({step.kind} = {verb(step)}): {exc}") from None

    async def play_step(self, step: Step) -> None:
        """One step of any kind."""
        kind = step.kind
        if kind == "dealer":
            await self.feed(self.dealer_command(step))
        elif kind == "shuffler":
            await self.shuffler_step(step)
        elif kind == "reader":
            await self.reader_step(step)
        elif kind == "device":
            await self.device_step(step)
        elif kind == "wait":
            assert step.wait is not None
            await self.advance(self.now + timedelta(seconds=step.wait))
        else:
            await self.macro(step)

    # ----------------------------------------------------------------------- step kinds

    def dealer_command(self, step: Step) -> Input:
        """A dealer step as a command input."""
        assert step.dealer is not None
        cls = COMMANDS.get(step.dealer)
        if cls is None:
            raise ScenarioError(f"unknown dealer command {step.dealer!r} ({', '.join(COMMANDS)})")
        fields = {
            name: value
            for name in cls.__dataclass_fields__
            if name != "ts" and (value := getattr(step, name, None)) is not None
        }
        extra = _dealer_fields(step) - set(fields)
        if extra:
            raise ScenarioError(f"{step.dealer} takes no {', '.join(sorted(extra))}")
        try:
            command: Input = _adapter(cls).validate_python({**fields, "ts": self.tick()})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
            )
            raise ScenarioError(problems) from None
        return command

    async def shuffler_step(self, step: Step) -> None:
        """Shuffle (with a deck check), reshuffle the stub, reveal, or dispense the next group."""
        if step.shuffler == "shuffle":
            await self.shuffle(step.verdict or "ok", step.count, step.order, step.seed)
        elif step.shuffler == "reshuffle":
            await self.reshuffle_stub(step.seed)
        elif step.shuffler == "reveal":
            ok = step.verdict != "commitment_mismatch"
            order = self.shuffler.order
            sid = self.shuffler.shuffle_id
            await self.feed(DeckRevealed(self.tick(), "shuffler", sid, order, ok))
        elif self.host_paced and step.by != "dealer":
            wanted = Purpose(step.purpose) if step.purpose else None
            purpose, seat, _ = self.host_request(wanted, step.seat)
            await self.dispense(purpose, seat, step.count)
        else:  # the dealer's keypad (on a host-paced table: out of turn)
            purpose = Purpose(step.purpose or "hole")
            await self.dispense(purpose, step.seat, step.count, keypad=True)

    @property
    def host_paced(self) -> bool:
        """Whether the host asks the shuffler for each group (``[table] dispense = "host"``)."""
        return self.scenario.table.dispense == "host"

    def host_request(self, purpose: Purpose | None, seat: int | None) -> DispenseRequest:
        """The group the table asks the shuffler for now (purpose, seat, size), which must be
        the one the step or the macro means."""
        request = next_dispense(self.run.state)
        if request is None:
            raise ScenarioError("the table asks the shuffler for no group now")
        if (purpose is not None and purpose is not request.purpose) or (
            seat is not None and seat != request.seat
        ):
            wanted = f"{request.purpose}" + (f" for seat {request.seat}" if request.seat else "")
            raise ScenarioError(f"the table asks for a {wanted} group of {request.size} cards")
        return request

    async def shuffle(
        self, verdict: str, count: int | None, order: list[str] | None, seed: int | None
    ) -> None:
        """A fresh deck shuffled (the file's, or ``order`` or ``seed``), and its deck check."""
        self.returned_from = len(self.run.events)
        self.seen = set()
        await self.shuffle_deck(self.shuffler.shuffle(order, seed), verdict, count)

    async def reshuffle_stub(self, seed: int | None) -> None:
        """The stub and the cards the table sent back (``stub.reshuffle.required``), reshuffled."""
        virtual = self.shuffler
        events = self.run.events[self.returned_from :]
        back, spent = returned_cards(events, virtual.groups, self.seen)
        self.returned_from = len(self.run.events)
        self.seen -= set(back)  # back in the deck: they can be dealt (and read) again
        for number in spent:
            del virtual.groups[number]
        cards = [*virtual.order[virtual.position :], *back]
        chosen = seed if seed is not None else len(cards)
        random.Random(chosen).shuffle(cards)
        await self.reshuffle_deck(back, chosen, tuple(cards))

    async def dispense(
        self, purpose: Purpose, seat: int | None, count: int | None, *, keypad: bool = False
    ) -> list[Card]:
        """The next group off the shuffler: on a host-paced table the group the host asked for
        (``count`` then makes the shuffler misfeed), otherwise (or with ``keypad``) the one the
        dealer delivers from the keypad."""
        if self.host_paced and not keypad:
            _, _, asked = self.host_request(purpose, seat)
            size = count if count is not None else asked
            return await self.deal_group(purpose, seat, size, asked)
        size = count if count is not None else DEFAULT_COUNTS[purpose]
        return await self.deal_group(purpose, seat, size, None)

    async def reader_step(self, step: Step) -> None:
        """Tags arriving at or departing from a zone."""
        assert step.zone is not None
        try:
            zone = Zone.parse(step.zone)
            if step.uids is not None:
                uids = [_uid_text(u) for u in step.uids]
            else:
                cards = (
                    [parse_card(c) for c in step.cards]
                    if step.cards is not None
                    else self.shuffler.last_group
                )
                manifest = load_deck(step.deck) if step.deck else self.manifest
                uids = [manifest.uid(card) for card in cards]
        except ValueError as exc:
            raise ScenarioError(str(exc)) from None
        for uid in uids:
            if step.reader == "arrive":
                await self.feed(TagArrived(self.tick(), "reader", zone, uid))
            else:
                await self.feed(TagDeparted(self.tick(), "reader", zone, uid))

    async def arrive(self, zone: Zone, cards: list[Card]) -> None:
        """Cards read at a zone."""
        for card in cards:
            await self.feed(TagArrived(self.tick(), "reader", zone, self.manifest.uid(card)))

    async def device_step(self, step: Step) -> None:
        """A device fault, a clear, an unplug or replug, or a power loss."""
        name = step.name or "shuffler"
        code = step.code or ""
        ts = self.tick()
        event: Input
        if step.device == "fault":
            code = code or "UNKNOWN"
            event = DeviceFault(ts, name, code, severity=fault_severity(code))
        elif step.device == "clear":
            event = DeviceFaultCleared(ts, name, code)
        elif step.device == "unplug":
            event = DeviceHealthChanged(ts, name, Health.RECONNECTING, detail="unplugged")
        elif step.device == "replug":
            event = DeviceHealthChanged(ts, name, Health.ONLINE, detail="replugged")
        elif step.device == "rejected":
            detail = code or "firmware not on the approved list"
            event = DeviceHealthChanged(ts, name, Health.REJECTED, approved=False, detail=detail)
        elif step.device == "restart":
            event = ControllerRestarted(ts, "controller")
        else:
            self.boot_id += 1
            event = DeviceRebooted(ts, name, self.boot_id)
        await self.feed(event)

    # ----------------------------------------------------------------------- macros

    async def macro(self, step: Step) -> None:
        """``deal_hole``, ``board``, ``check_round`` or ``showdown``."""
        if step.auto == "deal_hole":
            await self.deal_hole()
        elif step.auto == "board":
            assert step.street is not None
            await self.deal_street(step.street)
        elif step.auto == "check_round":
            await self.check_round()
        else:
            await self.showdown()

    async def deal_hole(self) -> None:
        """Dispense and deliver every remaining hole group in order, then any replacement owed."""
        hand = self.run.state.hand
        if hand is None:
            raise ScenarioError("no hand in progress to deal")
        for seat in hand.deal_order[hand.deal.hole_groups :]:
            cards = await self.dispense(Purpose.HOLE, seat, None)
            await self.arrive(Zone.parse(f"seat:{seat}"), cards)
            if self.run.state.hand is not hand and self.run.state.hand is None:
                return
            hand = self.run.state.hand
            if hand is None or hand.irregular.holds:
                return
        await self.replace_owed()

    async def replace_owed(self) -> None:
        """Deal the replacement cards the table asked for (one off the top for each)."""
        hand = self.run.state.hand
        while hand is not None and not hand.irregular.holds and any(hand.deal.owed.values()):
            seat = next(s for s, n in hand.deal.owed.items() if n)
            cards = await self.dispense(Purpose.EXTRA, seat, 1)
            await self.arrive(Zone.parse(f"seat:{seat}"), cards)
            hand = self.run.state.hand

    async def deal_street(self, street: str) -> None:
        """Burn and deal one street as the table expects it.

        The burn rides in the board group if the profile says so; a card designated as the burn
        (an exposed or extra card) goes to the burn zone instead of a new one; a street dealt
        after a reshuffle has no burn.
        """
        hand = self.run.state.hand
        if hand is None:
            raise ScenarioError("no hand in progress")
        profile = self.run.state.profile
        purpose = _STREET_PURPOSE[street]
        target = Street[street.upper()]
        burn = Zone.parse("burn")
        if target in hand.board_rulings.no_burn or target in hand.board_rulings.burn_for:
            pass
        elif hand.board_rulings.next_burn is not None:
            await self.arrive(burn, [hand.board_rulings.next_burn])
        elif profile.board_group_includes_burn:
            cards = await self.dispense(purpose, None, DEFAULT_COUNTS[purpose] + 1)
            await self.arrive(burn, cards[:1])
            await self.arrive(Zone.parse("board"), cards[1:])
            return
        else:
            await self.arrive(burn, await self.dispense(Purpose.BURN, None, None))
        await self.arrive(Zone.parse("board"), await self.dispense(purpose, None, None))

    async def check_round(self) -> None:
        """Every seat still to act checks, or calls when facing a bet."""
        for _ in range(20):
            hand = self.run.state.hand
            if hand is None or hand.phase is not Phase.BETTING or hand.chips.round is None:
                return
            seat = hand.chips.round.to_act
            if seat is None:
                return
            to_call = hand.chips.round.current - hand.chips.round.bets.get(seat, 0)
            kind = ActionKind.CALL if to_call > 0 else ActionKind.CHECK
            events = await self.feed(Action(self.tick(), seat, kind))
            if events and isinstance(record_of(events[0]), CommandRejected):
                raise ScenarioError(events[0].data["reason"])
        raise ScenarioError("the betting round did not close")

    async def showdown(self) -> None:
        """Table every live hand in showdown order, then the dealer pushes the award."""
        hand = self.run.state.hand
        if hand is None:
            raise ScenarioError("no hand in progress")
        if hand.phase is Phase.SHOWDOWN:
            for seat in hand.showdown.order:
                current = self.run.state.hand
                if current is None or current.phase is not Phase.SHOWDOWN:
                    break
                if seat in current.live and seat not in current.showdown.tabled:
                    await self.feed(TableHand(self.tick(), seat))
        await self.push_award()

    async def push_award(self) -> None:
        """Kill the losing hands (their cards to the muck, RR-SD-4), then push the award."""
        hand = self.run.state.hand
        if hand is None or hand.phase is not Phase.AWARD:
            return
        muck = Zone.parse("muck")
        for seat in losers(hand):
            mucked = hand.cards.at(MUCK)
            await self.arrive(muck, [c for c in hand.deal.dealt.get(seat, ()) if c not in mucked])
        await self.feed(Award(self.tick()))


def verb(step: Step) -> Any:
    """What a step does (the value of its kind's key), to name it in a message."""
    return getattr(step, step.kind)


def _uid_text(uid: str) -> str:
    return uid.replace(":", "").replace(" ", "").lower()


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    """One validating adapter per command class (building one is slow)."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def _dealer_fields(step: Step) -> set[str]:
    names = ("button", "seats", "seat", "action", "amount", "card", "reason", "hold", "rule")
    more = ("decision", "by", "left_table", "oversized_chip", "target", "cards")
    return {n for n in (*names, *more) if getattr(step, n) is not None}
