"""Run a scenario straight into the pure core (``tablectl scenario run --core``).

The runner plays the devices itself: a virtual shuffler deals from the scenario's deck order and
reports groups the way the shuffler driver does (identities withheld unless the deck's
``id_policy`` is ``live``), and reader steps become tag arrivals and departures with the UIDs of
the scenario's deck manifest. Time starts at a fixed instant and advances one second per step
(or to the step's ``at``), a few milliseconds per input inside a step, so runs are reproducible.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError

from controller.cards import Card, card_code, parse_card
from controller.decks import DeckManifest, known_decks, load_deck
from controller.profiles import load_profile
from controller.table.betting import Street
from controller.table.engine import apply, deadline
from controller.table.events import TableEvent
from controller.table.flow import losers
from controller.table.inputs import (
    COMMANDS,
    Action,
    ActionKind,
    Award,
    ControllerRestarted,
    DeckChecked,
    DeckRevealed,
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    GroupDispensed,
    Health,
    Input,
    Purpose,
    ShuffleCompleted,
    TableHand,
    TagArrived,
    TagDeparted,
    Tick,
    Zone,
)
from controller.table.plan import DispenseRequest, next_dispense
from controller.table.state import Phase, TableState, new_table
from controller.table.tray import BOARD_PURPOSES
from drivers.shuffler.convert import cards_of, deck_faults
from simulators.deck_order import deck_order
from simulators.errors import ScenarioError
from simulators.scenario.model import Scenario, Step
from simulators.shuffler.deck import deck_check
from simulators.shuffler.faults import fault_severity

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT_COUNTS = {
    Purpose.HOLE: 2,
    Purpose.BURN: 1,
    Purpose.FLOP: 3,
    Purpose.TURN: 1,
    Purpose.RIVER: 1,
    Purpose.BOARD_OTHER: 1,
    Purpose.EXTRA: 1,
}
_STREET_PURPOSE = {"flop": Purpose.FLOP, "turn": Purpose.TURN, "river": Purpose.RIVER}
#: Scenario verdicts → the deck-check problems of the shuffler simulator.
_DECK_CHECKS = {
    "ok": "ok",
    "short": "short",
    "extra": "extra",
    "duplicate": "duplicate",
    "foreign_back": "foreign",
    "unreadable": "unreadable",
    "wrong_profile": "wrong_profile",
    "commitment_mismatch": "ok",
}


class DealtGroup(NamedTuple):
    """A group the shuffler dispensed: what for, and its cards."""

    purpose: Purpose
    cards: list[Card]


@dataclass
class VirtualShuffler:
    """The shuffler as the core sees it: deck order, position, shuffle and group counters."""

    base_order: tuple[Card, ...]
    seed: int | None
    live_ids: bool
    order: tuple[Card, ...] = ()
    position: int = 0
    shuffle_id: int = 1000
    shuffles: int = 0
    group: int = 0
    last_group: list[Card] = field(default_factory=list)
    groups: dict[int, DealtGroup] = field(default_factory=dict)  # this deck's groups by number

    def next_order(self, order: list[str] | None, seed: int | None) -> tuple[Card, ...]:
        """The deck the next shuffle gives: explicit, seeded, or the scenario's (then reseeded)."""
        if order is not None or seed is not None:
            return deck_order(order, seed)
        if self.shuffles == 0:
            return self.base_order
        return deck_order(seed=(self.seed or 0) + self.shuffles)

    def shuffle(self, order: list[str] | None, seed: int | None) -> tuple[Card, ...]:
        """Load a new shuffled deck (:meth:`next_order`)."""
        self.order = self.next_order(order, seed)
        self.shuffles += 1
        self.shuffle_id += 1
        self.position = 0
        self.group = 0
        self.groups = {}
        return self.order

    def dispense(self, count: int, purpose: Purpose = Purpose.BOARD_OTHER) -> list[Card]:
        """The next ``count`` cards off the top, as a group for ``purpose``."""
        if self.position + count > len(self.order):
            raise ScenarioError(f"the shuffler has only {len(self.order) - self.position} cards")
        cards = list(self.order[self.position : self.position + count])
        self.position += count
        self.group += 1
        self.last_group = list(cards)
        self.groups[self.group] = DealtGroup(purpose, list(cards))
        return cards

    @property
    def remaining(self) -> int:
        """Cards left in the shuffler."""
        return len(self.order) - self.position


@dataclass
class CoreRun:
    """The result of a run: every input applied and every event, in order."""

    scenario: Scenario
    state: TableState
    inputs: list[Input] = field(default_factory=list)
    events: list[TableEvent] = field(default_factory=list)


class CoreRunner:
    """Plays the steps of one scenario into the core."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        meta, table = scenario.scenario, scenario.table
        try:
            profile = load_profile(meta.profile).with_overrides(meta.house_rules)
            self.manifest: DeckManifest = load_deck(meta.deck)
            base = deck_order(scenario.deck.order, scenario.deck.seed)
        except ValueError as exc:
            raise ScenarioError(str(exc)) from None
        state = new_table(
            table.id, profile, self.manifest, table.stacks, table.button, table.blinds, table.ante
        )
        state.settle = table.settle
        state.other_decks = known_decks(exclude=self.manifest.deck_id)
        self.run = CoreRun(scenario, state)
        self.shuffler = VirtualShuffler(base, scenario.deck.seed, scenario.deck.id_policy == "live")
        self.now = EPOCH
        self.boot_id = 1
        self.returned_from = 0  # cards sent back to the stub after this event go in a reshuffle
        self.seen: set[Card] = set()  # cards read anywhere since the deck was shuffled

    # ----------------------------------------------------------------------- driving the core

    def feed(self, event: Input) -> list[TableEvent]:
        """Apply one input and keep the events."""
        if isinstance(event, TagArrived) and (card := self.manifest.card(event.uid)) is not None:
            self.seen.add(card)
        self.run.state, events = apply(self.run.state, event)
        self.run.inputs.append(event)
        self.run.events.extend(events)
        return events

    def tick(self) -> datetime:
        """The timestamp of the next input inside a step."""
        self.now += timedelta(milliseconds=10)
        return self.now

    def advance(self, to: datetime) -> None:
        """Let time pass until ``to``; a deadline on the way is a ``Tick`` at that moment."""
        due = deadline(self.run.state)
        if due is not None and due <= to:
            self.now = max(self.now, due)
            self.feed(Tick(due, "clock"))
        self.now = max(self.now, to)

    def play(self) -> CoreRun:
        """Play every step."""
        for index, step in enumerate(self.scenario.step):
            at = EPOCH + timedelta(seconds=step.at) if step.at is not None else None
            self.advance(max(self.now + timedelta(seconds=1), at or self.now))
            try:
                self.play_step(step)
            except ScenarioError as exc:
                raise ScenarioError(
                    f"step {index + 1} ({step.kind} = {_verb(step)}): {exc}"
                ) from None
        return self.run

    def play_step(self, step: Step) -> None:
        """One step of any kind."""
        kind = step.kind
        if kind == "dealer":
            self.feed(self.dealer_command(step))
        elif kind == "shuffler":
            self.shuffler_step(step)
        elif kind == "reader":
            self.reader_step(step)
        elif kind == "device":
            self.device_step(step)
        elif kind == "wait":
            assert step.wait is not None
            self.advance(self.now + timedelta(seconds=step.wait))
        else:
            self.macro(step)

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

    def shuffler_step(self, step: Step) -> None:
        """Shuffle (with a deck check) or dispense the next group."""
        if step.shuffler == "shuffle":
            self.shuffle(step.verdict or "ok", step.count, step.order, step.seed)
        elif step.shuffler == "reshuffle":
            self.reshuffle_stub(step.seed)
        elif step.shuffler == "reveal":
            ok = step.verdict != "commitment_mismatch"
            order = self.shuffler.order
            self.feed(DeckRevealed(self.tick(), "shuffler", self.shuffler.shuffle_id, order, ok))
        elif self.host_paced and step.by != "dealer":
            wanted = Purpose(step.purpose) if step.purpose else None
            purpose, seat, _ = self.host_request(wanted, step.seat)
            self.dispense(purpose, seat, step.count)
        else:  # the dealer's keypad (on a host-paced table: out of turn)
            purpose = Purpose(step.purpose or "hole")
            self.dispense(purpose, step.seat, step.count, keypad=True)

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

    def shuffle(
        self, verdict: str, count: int | None, order: list[str] | None, seed: int | None
    ) -> None:
        """A shuffle and its deck check, as the driver reports them.

        A verdict other than ``ok`` is what the TSP/1 shuffler simulator's deck check finds for
        that problem (:func:`simulators.shuffler.deck.deck_check`), so both modes agree.
        """
        self.returned_from = len(self.run.events)
        self.seen = set()
        cards = self.shuffler.shuffle(order, seed)
        sid = self.shuffler.shuffle_id
        check = deck_check(sid, bytes(_codes(cards)), _DECK_CHECKS[verdict], count)
        faults = deck_faults(check.verdict)
        self.feed(
            DeckChecked(
                self.tick(),
                "shuffler",
                sid,
                faults,
                check.counted,
                cards_of(check.missing),
                cards_of(check.duplicates),
            )
        )
        salt = sid.to_bytes(16, "little")
        commitment = hashlib.sha256(
            b"TSP1-deck" + sid.to_bytes(4, "little") + salt + bytes(_codes(cards))
        ).hexdigest()
        ok = not faults and check.counted == len(cards)
        self.feed(
            ShuffleCompleted(
                self.tick(), "shuffler", sid, ok, len(cards) if ok else 0, commitment if ok else ""
            )
        )

    def reshuffle_stub(self, seed: int | None) -> None:
        """The stub and the cards the table sent back (``stub.reshuffle.required``), reshuffled."""
        events = self.run.events[self.returned_from :]
        back, spent = returned_cards(events, self.shuffler.groups, self.seen)
        self.returned_from = len(self.run.events)
        self.seen -= set(back)  # back in the deck: they can be dealt (and read) again
        for number in spent:
            del self.shuffler.groups[number]
        cards = [*self.shuffler.order[self.shuffler.position :], *back]
        random.Random(seed if seed is not None else len(cards)).shuffle(cards)
        self.shuffler.order = tuple(cards)
        self.shuffler.position = 0
        self.shuffler.shuffle_id += 1
        sid = self.shuffler.shuffle_id
        self.feed(DeckChecked(self.tick(), "shuffler", sid, frozenset(), len(cards)))
        self.feed(ShuffleCompleted(self.tick(), "shuffler", sid, True, len(cards)))

    def dispense(
        self, purpose: Purpose, seat: int | None, count: int | None, *, keypad: bool = False
    ) -> list[Card]:
        """The next group off the shuffler: on a host-paced table the group the host asked for
        (``count`` then makes the shuffler misfeed), otherwise (or with ``keypad``) the one the
        dealer delivers from the keypad."""
        if self.host_paced and not keypad:
            _, _, asked = self.host_request(purpose, seat)
            count = count if count is not None else asked
        size = count if count is not None else DEFAULT_COUNTS[purpose]
        cards = self.shuffler.dispense(size, purpose)
        shown: tuple[Card | None, ...] = (
            tuple(cards) if self.shuffler.live_ids else (None,) * len(cards)
        )
        self.feed(
            GroupDispensed(
                self.tick(),
                "shuffler",
                self.shuffler.shuffle_id,
                self.shuffler.group,
                purpose,
                seat,
                shown,
                self.shuffler.remaining,
            )
        )
        return cards

    def reader_step(self, step: Step) -> None:
        """Tags arriving at or departing from a zone."""
        assert step.zone is not None
        try:
            zone = Zone.parse(step.zone)
            if step.uids is not None:
                uids = [self._uid_text(u) for u in step.uids]
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
                self.feed(TagArrived(self.tick(), "reader", zone, uid))
            else:
                self.feed(TagDeparted(self.tick(), "reader", zone, uid))

    def arrive(self, zone: Zone, cards: list[Card]) -> None:
        """Cards read at a zone."""
        for card in cards:
            self.feed(TagArrived(self.tick(), "reader", zone, self.manifest.uid(card)))

    def device_step(self, step: Step) -> None:
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
        self.feed(event)

    # ----------------------------------------------------------------------- macros

    def macro(self, step: Step) -> None:
        """``deal_hole``, ``board``, ``check_round`` or ``showdown``."""
        if step.auto == "deal_hole":
            self.deal_hole()
        elif step.auto == "board":
            assert step.street is not None
            self.deal_street(step.street)
        elif step.auto == "check_round":
            self.check_round()
        else:
            self.showdown()

    def deal_hole(self) -> None:
        """Dispense and deliver every remaining hole group in order, then any replacement owed."""
        hand = self.run.state.hand
        if hand is None:
            raise ScenarioError("no hand in progress to deal")
        for seat in hand.deal_order[hand.hole_groups :]:
            cards = self.dispense(Purpose.HOLE, seat, None)
            self.arrive(Zone.parse(f"seat:{seat}"), cards)
            if self.run.state.hand is not hand and self.run.state.hand is None:
                return
            hand = self.run.state.hand
            if hand is None or hand.holds:
                return
        self.replace_owed()

    def replace_owed(self) -> None:
        """Deal the replacement cards the table asked for (one off the top for each)."""
        hand = self.run.state.hand
        while hand is not None and not hand.holds and any(hand.owed.values()):
            seat = next(s for s, n in hand.owed.items() if n)
            self.arrive(Zone.parse(f"seat:{seat}"), self.dispense(Purpose.EXTRA, seat, 1))
            hand = self.run.state.hand

    def deal_street(self, street: str) -> None:
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
        if target in hand.no_burn or target in hand.burn_for:
            pass
        elif hand.next_burn is not None:
            self.arrive(burn, [hand.next_burn])
        elif profile.board_group_includes_burn:
            cards = self.dispense(purpose, None, DEFAULT_COUNTS[purpose] + 1)
            self.arrive(burn, cards[:1])
            self.arrive(Zone.parse("board"), cards[1:])
            return
        else:
            self.arrive(burn, self.dispense(Purpose.BURN, None, None))
        self.arrive(Zone.parse("board"), self.dispense(purpose, None, None))

    def check_round(self) -> None:
        """Every seat still to act checks, or calls when facing a bet."""
        for _ in range(20):
            hand = self.run.state.hand
            if hand is None or hand.phase is not Phase.BETTING or hand.round is None:
                return
            seat = hand.round.to_act
            if seat is None:
                return
            to_call = hand.round.current - hand.round.bets.get(seat, 0)
            kind = ActionKind.CALL if to_call > 0 else ActionKind.CHECK
            events = self.feed(Action(self.tick(), seat, kind))
            if events and events[0].type == "command.rejected":
                raise ScenarioError(events[0].data["reason"])
        raise ScenarioError("the betting round did not close")

    def showdown(self) -> None:
        """Table every live hand in showdown order, then the dealer pushes the award."""
        hand = self.run.state.hand
        if hand is None:
            raise ScenarioError("no hand in progress")
        if hand.phase is Phase.SHOWDOWN:
            for seat in hand.showdown_order:
                current = self.run.state.hand
                if current is None or current.phase is not Phase.SHOWDOWN:
                    break
                if seat in current.live and seat not in current.tabled:
                    self.feed(TableHand(self.tick(), seat))
        self.push_award()

    def push_award(self) -> None:
        """Kill the losing hands (their cards to the muck, RR-SD-4), then push the award."""
        hand = self.run.state.hand
        if hand is None or hand.phase is not Phase.AWARD:
            return
        muck = Zone.parse("muck")
        for seat in losers(hand):
            self.arrive(muck, [c for c in hand.dealt.get(seat, ()) if c not in hand.muck])
        self.feed(Award(self.tick()))

    def _uid_text(self, uid: str) -> str:
        return uid.replace(":", "").replace(" ", "").lower()


def returned_cards(
    events: list[TableEvent], groups: dict[int, DealtGroup], seen: set[Card]
) -> tuple[list[Card], set[int]]:
    """Every card the table sent back to the stub in ``events``, as the dealer gathers them,
    and the groups whose unread cards went back with them (they are spent).

    ``stub.reshuffle.required`` names the cards it read (``with``) and counts the board cards
    nobody read (``unread``): the dealer puts back every card of a board group (and of a group
    the table names) that was never read anywhere, as they are when the stub is reshuffled (one
    counted unread and turned since is named by a later event). The shuffler's count of the
    reshuffled stub is what checks the whole against the table's ``stub``.
    """
    back: list[Card] = []
    named: set[int] = set()
    unread = False
    for event in events:
        if event.type != "stub.reshuffle.required":
            continue
        back.extend(c for c in event.data["with"] if c not in back)
        unread = unread or bool(event.data.get("unread"))
        named.update(event.data.get("unread_groups", ()))
    spent: set[int] = set()
    if unread:
        for number, group in sorted(groups.items()):
            if group.purpose in BOARD_PURPOSES or number in named:
                back.extend(c for c in group.cards if c not in seen and c not in back)
                spent.add(number)
    return back, spent


def _codes(cards: tuple[Card, ...]) -> list[int]:
    return [card_code(c) for c in cards]


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    """One validating adapter per command class (building one is slow)."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def _verb(step: Step) -> Any:
    return getattr(step, step.kind)


def _dealer_fields(step: Step) -> set[str]:
    names = ("button", "seats", "seat", "action", "amount", "card", "reason", "hold", "rule")
    more = ("decision", "by", "left_table", "oversized_chip", "target", "cards")
    return {n for n in (*names, *more) if getattr(step, n) is not None}


def run_core(scenario: Scenario) -> CoreRun:
    """Play a scenario into the pure core and return the run."""
    return CoreRunner(scenario).play()
