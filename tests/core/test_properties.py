"""Hypothesis properties of the core over random hands: conservation, determinism, secrecy."""

from __future__ import annotations

import io
import json
import pickle
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cards import STANDARD_DECK, Card
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import Input
from controller.table.state import BURN, TableState, new_table
from simulators.autoplay import AutoDealer, Style, random_table

seeds = st.integers(min_value=0, max_value=2**32 - 1)
styles = st.sampled_from(
    [
        Style(fold=0.12, aggressive=0.3, all_in=0.35),
        Style(fold=0.3, aggressive=0.15, all_in=0.05, muck_loser=0.3),
        Style(fold=0.05, aggressive=0.05, all_in=0.0, muck_loser=0.1),
    ]
)


def placed_cards(state: TableState) -> list[Card]:
    """Every card the core has placed somewhere in the hand in progress."""
    hand = state.hand
    if hand is None:
        return []
    piles = hand.cards.piles
    # the one location map and the piles say the same
    assert {c: place for place, cards in piles.items() for c in cards} == dict(hand.cards.where)
    return [c for cards in piles.values() for c in cards]


def chips(state: TableState) -> int:
    """Every chip at the table, in stacks or in the pot."""
    hand = state.hand
    outside = sum(c for s, c in state.stacks.items() if hand is None or s not in hand.order)
    if hand is None:
        return outside
    return outside + sum(hand.chips.stacks.values()) + hand.total_pot


def fingerprint(state: TableState) -> bytes:
    """Every byte of ``state`` but its configuration, to tell whether anything in it changed.

    The manifest, the profile and the other decks' UIDs are configuration, shared by every
    state of the table and not the hand's to change: they are in the pickler's memo before it
    starts, so it writes a reference to each instead of its contents. The same state pickled
    twice gives the same bytes unless something in it was changed in place. (A deep copy and an
    equality check did the same at two and a half times the cost, most of these tests' time.)
    """
    configuration = (state.manifest, state.profile, state.other_decks)
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.memo = {id(item): (index, item) for index, item in enumerate(configuration)}
    pickler.dump(state)
    return buffer.getvalue()


class Checking(AutoDealer):
    """A dealer that checks the invariants after every input (mixed into the dealers)."""

    total_chips: int

    async def feed(self, event: Input) -> list[TableEvent]:
        before = self.run.state
        snapshot = fingerprint(before)
        events = await super().feed(event)
        after = self.run.state
        # purity: the state handed to apply is never changed
        assert fingerprint(before) == snapshot, "apply changed the state it was given"
        # card conservation: every card in exactly one place
        placed = placed_cards(after)
        assert len(placed) == len(set(placed)), f"a card is in two places: {placed}"
        assert set(placed) <= set(STANDARD_DECK)
        if after.hand is not None:
            assert len(placed) + after.hand.deal.tray + after.hand.deal.stub == 52
            assert after.hand.deal.tray >= 0
        # chip conservation: nothing created or lost, at any step; the house's take counts
        assert chips(after) + after.house == self.total_chips
        for e in events:
            if e.type in ("pot.award.proposed", "pot.awarded"):
                hand = after.hand or after.last_hand
                assert hand is not None
                pots = e.data["pots"]
                assert sum(e.data["payouts"].values()) == sum(p["amount"] for p in pots)
                taken = sum(p.get("rake", 0) for p in pots)
                assert taken == e.data.get("rake", 0)
                assert sum(p["amount"] for p in pots) + taken == hand.total_pot
                for pot in pots:
                    assert sum(pot["winners"].values()) == pot["amount"]
                    # run twice: each runout's part is split on its own
                    parts = pot.get("boards", [pot["winners"]])
                    assert sum(sum(part.values()) for part in parts) == pot["amount"]
                    for part in parts:
                        shares = sorted(part.values())
                        if after.profile.odd_chip_recipient == "first_tied_winner_clockwise":
                            assert shares[-1] - shares[0] <= 1  # odd chips: at most one each
            if e.type in ("hand.misdeal", "hand.void"):
                # every chip goes back: each seat has exactly what it had when the hand began
                ended = before.hand
                assert ended is not None
                assert e.data["returned"] == {
                    str(s): c for s, c in sorted(ended.chips.committed.items()) if c
                }
                for seat, start in ended.start_stacks.items():
                    assert after.stacks[seat] == start
        return events


class CheckingDealer(Checking):
    """An automatic dealer that checks the invariants after every input."""


def play(
    seed: int,
    style: Style,
    hands: int,
    *,
    checking: bool = True,
    house_rules: dict[str, Any] | None = None,
) -> AutoDealer:
    """``hands`` random hands; with ``checking``, every invariant checked after every input
    (the state fingerprinted twice each time: the properties that need only the run go without)."""
    rng = random.Random(seed)
    scenario = random_table(rng)
    if house_rules:
        meta = scenario.scenario.model_copy(update={"house_rules": house_rules})
        scenario = scenario.model_copy(update={"scenario": meta})
    dealer = (CheckingDealer if checking else AutoDealer)(scenario, rng, style)
    if isinstance(dealer, CheckingDealer):
        dealer.total_chips = chips(dealer.run.state)
    for _ in range(hands):
        if not dealer.play_hand():
            break
    return dealer


@settings(max_examples=60)  # each example plays three hands and checks every step
@given(seed=seeds, style=styles)
def test_card_and_chip_conservation_at_every_step(seed: int, style: Style) -> None:
    dealer = play(seed, style, hands=3)
    assert isinstance(dealer, CheckingDealer)
    assert chips(dealer.run.state) == dealer.total_chips
    assert dealer.run.state.hand is None


def test_the_purity_check_sees_a_change_made_in_place() -> None:
    dealer = play(7, Style(fold=0.05, aggressive=0.05, all_in=0.0), hands=1)
    state = dealer.run.state
    assert fingerprint(state) == fingerprint(state)
    stacks = state.stacks
    assert isinstance(stacks, dict)
    seat = next(iter(stacks))
    stacks[seat] += 1  # what a handler that edits the table it was given would do
    changed = fingerprint(state)
    stacks[seat] -= 1
    assert changed != fingerprint(state)
    # the configuration is left out: it is shared, and only referred to (measured against the
    # configuration's own size, so that what the state keeps can grow)
    configuration = (state.manifest, state.profile, state.other_decks)
    left_out = len(pickle.dumps(state, pickle.HIGHEST_PROTOCOL)) - len(fingerprint(state))
    assert left_out > len(pickle.dumps(configuration, pickle.HIGHEST_PROTOCOL)) // 2


house_money = st.one_of(
    st.fixed_dictionaries(
        {
            "rake.mode": st.just("pot"),
            "rake.percent": st.sampled_from([2.5, 5, 10, 33.3, 100]),
            "rake.cap": st.sampled_from([0, 1, 3, 50]),
            "rake.chip_unit": st.sampled_from([1, 2, 5]),
            "rake.minimum_pot": st.sampled_from([0, 10]),
            "rake.no_flop_no_drop": st.booleans(),
            "rake.pots": st.sampled_from(["main", "all"]),
            "rake.jackpot_drop": st.sampled_from([0, 1, 2]),
            "rake.jackpot_threshold": st.sampled_from([0, 20]),
        }
    ),
    st.fixed_dictionaries(
        {
            "ante.kind": st.sampled_from(["each", "big_blind", "button"]),
            "run_twice.allowed": st.just(True),
            "rake.mode": st.just("pot"),
            "rake.percent": st.sampled_from([5, 10]),
            "rake.cap": st.sampled_from([0, 3]),
        }
    ),
    st.fixed_dictionaries(
        {
            "rake.mode": st.just("time"),
            "rake.time_amount": st.sampled_from([1, 5, 40]),
            "rake.time_minutes": st.sampled_from([1, 30]),
        }
    ),
)


@settings(max_examples=60)
@given(seed=seeds, style=styles, house_rules=house_money)
def test_chips_at_the_start_are_the_chips_at_the_end_plus_the_house_take(
    seed: int, style: Style, house_rules: dict[str, Any]
) -> None:
    dealer = play(seed, style, hands=3, house_rules=house_rules)
    assert isinstance(dealer, CheckingDealer)
    state = dealer.run.state
    assert chips(state) + state.house == dealer.total_chips
    taken = sum(
        e.data["total"]
        for e in dealer.run.events
        if e.type in ("pot.rake.taken", "house.time.collected")
    )
    assert taken == state.house


@given(seed=seeds, style=styles)
def test_same_inputs_give_the_same_events(seed: int, style: Style) -> None:
    dealer = play(seed, style, hands=2, checking=False)
    start = dealer.scenario.table
    state = new_table(
        start.id,
        dealer.run.state.profile,
        dealer.manifest,
        start.stacks,
        start.button,
        start.blinds,
        start.ante,
    )
    replayed: list[TableEvent] = []
    for event in dealer.run.inputs:
        state, events = apply(state, event)
        replayed.extend(events)
    assert replayed == dealer.run.events
    assert state.stacks == dealer.run.state.stacks


@given(seed=seeds, style=styles)
def test_public_events_never_carry_hole_cards_before_they_are_tabled(
    seed: int, style: Style
) -> None:
    dealer = play(seed, style, hands=1, checking=False)
    hand = dealer.run.state.last_hand
    assert hand is not None
    secret = {c for cards in hand.deal.dealt.values() for c in cards} | set(hand.cards.at(BURN))
    for event in dealer.run.events:
        if event.type == "showdown.hand.tabled":
            secret -= set(event.data["cards"])
            continue
        public = json.dumps(event.public_view()["data"])
        leaked = [c for c in secret if f'"{c}"' in public]
        assert not leaked, f"{event.type} leaks {leaked}"
