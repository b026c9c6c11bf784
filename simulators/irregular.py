"""An automatic dealer that makes mistakes: the irregularities of the catalogue, at random.

Now and then (``rate`` of the hands) it makes one of a dealer's or a device's mistakes at the
moment it can happen: an exposed, boxed or off-table card, a card the reader misses, an extra card,
a premature board card or street (after its burn or not), a board group of the wrong size, a
missing burn, a card from another deck, a joker, a live hand's card
in the muck, a shuffler that jams, loses power or opens its lid, a misdeal called, a button in the
wrong place. It answers every hold as a dealer might (mostly confirming, sometimes rejecting) and
carries the hand through to its end, whatever the ruling. :class:`IrregularDealing` is its logic,
for any table; :class:`IrregularDealer` plays it into the pure core (the property tests), the
rig's dealer on the devices (the demo).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from datetime import timedelta

from controller.cards import Card
from controller.decks import load_deck
from controller.table.event_types import StubReshuffleRequired
from controller.table.inputs import (
    Boxed,
    ButtonReport,
    Confirm,
    DeviceFault,
    Exposed,
    Misdeal,
    OffTable,
    Purpose,
    Reject,
    TagArrived,
    Zone,
)
from controller.table.state import HandState, Phase
from simulators.autoplay import AutoDealer, AutoDealing, Style
from simulators.scenario.model import Scenario
from simulators.scenario.virtual_shuffler import DEFAULT_COUNTS

Mistake = Callable[["IrregularDealing", HandState], Awaitable[None]]
PLAIN = Style()


class IrregularDealing(AutoDealing):
    """Random hands with, now and then, one irregularity (of ``mistakes``)."""

    mistakes: list[tuple[str, Mistake]]

    def __init__(
        self, scenario: Scenario, rng: random.Random, style: Style = PLAIN, rate: float = 0.5
    ) -> None:
        super().__init__(scenario, rng, style)
        self.rate = rate
        self.mistakes = MISTAKES
        self.mistake: tuple[str, Mistake] | None = None
        self.made: list[str] = []
        self._reshuffled = 0

    # ----------------------------------------------------------------------- the hand

    async def deal_hand(self) -> bool:
        """One hand, with a mistake chosen at random for some of them."""
        self.mistake = None
        if self.rng.random() < self.rate:
            self.mistake = self.rng.choice(self.mistakes)
        return await super().deal_hand()

    async def deal_hole(self) -> None:
        """Deal group by group, so a mistake can strike in the middle of the deal."""
        when = self.rng.randrange(1, 7)
        groups = 0
        while (hand := self.run.state.hand) is not None and not hand.irregular.holds:
            if hand.deal.hole_groups >= len(hand.order):
                break
            seat = hand.deal_order[hand.deal.hole_groups]
            cards = await self.dispense(Purpose.HOLE, seat, None)
            if self._due("miss_read") and groups == when % len(hand.order):
                cards = cards[:1]  # the reader misses a card
                self._made("miss_read")
            await self.arrive(Zone.parse(f"seat:{seat}"), cards)
            groups += 1
            if groups == when:
                await self._strike("deal")
        await self._strike("dealt")

    async def next_move(self, hand: HandState) -> None:
        """Answer holds, recount and reshuffle when asked, replace cards owed, then play on."""
        if hand.irregular.holds:
            await self._answer_hold()
            return
        if self._reshuffle_asked() or hand.deal.recheck:
            await self.reshuffle_stub(self.rng.randrange(1 << 30))
            return
        if any(hand.deal.owed.values()):
            await self.replace_owed()
            return
        if hand.phase is Phase.DEALING:
            await self.deal_hole()
            return
        if hand.phase is Phase.BETTING and hand.chips.actions and hand.street == 0:
            await self._strike("preflop")
        elif hand.phase is Phase.BETTING and hand.street > 0:
            await self._strike("postflop")
        elif hand.phase is Phase.BOARD:
            await self._strike("board")
        current = self.run.state.hand
        if current is not None and current is not hand:
            return  # the mistake changed the hand: look again
        if current is None:
            return
        await super().next_move(current)

    # ----------------------------------------------------------------------- helpers

    def _due(self, name: str) -> bool:
        return self.mistake is not None and self.mistake[0] == name

    def _made(self, name: str) -> None:
        self.made.append(name)
        self.mistake = None

    async def _strike(self, moment: str) -> None:
        if self.mistake is None:
            return
        name, make = self.mistake
        if MOMENTS.get(name) != moment:
            return
        hand = self.run.state.hand
        if hand is None or hand.irregular.holds:
            return
        self._made(name)
        await make(self, hand)

    async def _answer_hold(self) -> None:
        roll = self.rng.random()
        await self.feed(Confirm(self.tick()) if roll < 0.7 else Reject(self.tick()))
        if self.run.state.hand is not None and self.run.state.hand.deal.deadline is not None:
            await self.advance(self.run.state.hand.deal.deadline)

    def _reshuffle_asked(self) -> bool:
        asked = sum(1 for e in self.run.events if e.type == StubReshuffleRequired.TYPE)
        if asked > self._reshuffled:
            self._reshuffled = asked
            return True
        return False

    def some_hole_card(self, hand: HandState) -> tuple[int, Card] | None:
        """A card at a seat, and the seat."""
        seats = [(s, c) for s, cards in sorted(hand.cards.holes.items()) for c in cards]
        return self.rng.choice(seats) if seats else None


class IrregularDealer(AutoDealer, IrregularDealing):
    """The irregular dealer at the pure core."""


async def _exposed(dealer: IrregularDealing, hand: HandState) -> None:
    found = dealer.some_hole_card(hand)
    if found:
        await dealer.feed(Exposed(dealer.tick(), found[1], found[0]))


async def _boxed(dealer: IrregularDealing, hand: HandState) -> None:
    found = dealer.some_hole_card(hand)
    if found:
        await dealer.feed(Boxed(dealer.tick(), found[1], found[0]))


async def _off_table(dealer: IrregularDealing, hand: HandState) -> None:
    found = dealer.some_hole_card(hand)
    if found:
        await dealer.feed(OffTable(dealer.tick(), found[1], found[0]))


def _extra_cards(count: int) -> Mistake:
    async def make(dealer: IrregularDealing, hand: HandState) -> None:
        cards = await dealer.dispense(Purpose.EXTRA, None, count)
        await dealer.arrive(Zone.parse(f"seat:{hand.deal_order[0]}"), cards)

    return make


async def _foreign(dealer: IrregularDealing, hand: HandState) -> None:
    other = load_deck("house-b")
    card = dealer.rng.choice(list(other.card_to_uid))
    seat = dealer.rng.choice(hand.order)
    await dealer.feed(
        TagArrived(dealer.tick(), "reader", Zone.parse(f"seat:{seat}"), other.uid(card))
    )


async def _joker(dealer: IrregularDealing, hand: HandState) -> None:
    joker = sorted(dealer.manifest.jokers)[0]
    seat = dealer.rng.choice(hand.order)
    await dealer.feed(TagArrived(dealer.tick(), "reader", Zone.parse(f"seat:{seat}"), joker))


async def _to_muck(dealer: IrregularDealing, hand: HandState) -> None:
    live = [s for s in hand.live if hand.cards.seat(s)]
    if live:
        seat = dealer.rng.choice(live)
        await dealer.arrive(Zone.parse("muck"), list(hand.cards.seat(seat)[:1]))


_NEXT = {0: Purpose.FLOP, 1: Purpose.TURN, 2: Purpose.RIVER}


async def _premature(dealer: IrregularDealing, hand: HandState) -> None:
    await dealer.arrive(Zone.parse("board"), await dealer.dispense(Purpose.BOARD_OTHER, None, 1))


async def _premature_street(dealer: IrregularDealing, hand: HandState) -> None:
    """The next street burned (or not) and turned, all or part of it, while the round is open."""
    purpose = _NEXT.get(hand.street)
    if purpose is None:
        return
    if dealer.rng.random() < 0.5:
        await dealer.arrive(Zone.parse("burn"), await dealer.dispense(Purpose.BURN, None, None))
    cards = await dealer.dispense(purpose, None, None)
    await dealer.arrive(Zone.parse("board"), cards[: dealer.rng.randint(1, len(cards))])


async def _wrong_size(dealer: IrregularDealing, hand: HandState) -> None:
    """The next street's group one or two cards too big (a flop also one short), after its burn
    or not, spread on the board or held back."""
    purpose = _NEXT.get(hand.street)
    if purpose is None:
        return
    if dealer.rng.random() < 0.5 and not dealer.run.state.profile.board_group_includes_burn:
        await dealer.arrive(Zone.parse("burn"), await dealer.dispense(Purpose.BURN, None, None))
    size = DEFAULT_COUNTS[purpose] + dealer.rng.choice([1, 2, -1 if purpose is Purpose.FLOP else 1])
    cards = await dealer.dispense(purpose, None, size)
    if dealer.rng.random() < 0.8:
        await dealer.arrive(Zone.parse("board"), cards)


async def _no_burn(dealer: IrregularDealing, hand: HandState) -> None:
    street = {0: Purpose.FLOP, 1: Purpose.TURN, 2: Purpose.RIVER}.get(hand.street)
    if street is not None and not hand.board_rulings.burn_for.get(hand.street + 1):  # type: ignore[call-overload]
        await dealer.arrive(Zone.parse("board"), await dealer.dispense(street, None, None))


def _fault(code: str) -> Mistake:
    async def make(dealer: IrregularDealing, hand: HandState) -> None:
        await dealer.feed(DeviceFault(dealer.tick(), "shuffler", code))

    return make


async def _misdeal(dealer: IrregularDealing, hand: HandState) -> None:
    await dealer.feed(Misdeal(dealer.tick(), "dealer error"))


async def _button(dealer: IrregularDealing, hand: HandState) -> None:
    await dealer.feed(ButtonReport(dealer.tick(), dealer.rng.choice(hand.order)))


async def _wait(dealer: IrregularDealing, hand: HandState) -> None:
    await dealer.advance(dealer.now + timedelta(seconds=dealer.run.state.settle + 1))


MISTAKES: list[tuple[str, Mistake]] = [
    ("exposed", _exposed),
    ("boxed", _boxed),
    ("off_table", _off_table),
    ("miss_read", _wait),
    ("extra_card", _extra_cards(1)),
    ("extra_cards", _extra_cards(2)),
    ("foreign_card", _foreign),
    ("joker", _joker),
    ("live_card_mucked", _to_muck),
    ("premature_board", _premature),
    ("premature_street", _premature_street),
    ("premature_street_preflop", _premature_street),
    ("wrong_size_board", _wrong_size),
    ("no_burn", _no_burn),
    ("jam", _fault("JAM_INPUT")),
    ("power_loss", _fault("POWER_LOSS")),
    ("lid_open", _fault("LID_OPEN")),
    ("misdeal", _misdeal),
    ("button", _button),
]

#: When each mistake can happen.
MOMENTS = {
    "exposed": "deal",
    "boxed": "deal",
    "off_table": "deal",
    "miss_read": "dealt",
    "extra_card": "dealt",
    "extra_cards": "dealt",
    "foreign_card": "postflop",
    "joker": "dealt",
    "live_card_mucked": "postflop",
    "premature_board": "preflop",
    "premature_street": "postflop",
    "premature_street_preflop": "preflop",
    "wrong_size_board": "board",
    "no_burn": "board",
    "jam": "dealt",
    "power_loss": "preflop",
    "lid_open": "postflop",
    "misdeal": "dealt",
    "button": "preflop",
}

#: The board's mistakes: premature cards and streets, wrong-size groups, missing burns.
BOARD_MISTAKES = [
    (name, make)
    for name, make in MISTAKES
    if name.startswith(("premature", "wrong_size")) or name == "no_burn"
]
