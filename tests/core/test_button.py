"""The button and the blinds the core places when ``start_hand`` names none.

``controller/rules/button.py``: RR-BB-ROT, RR-BB-2 (moving and dead button), HU, MISSED-BLINDS
(seats that wait, new players), MD-REDEAL. The scenario files (``rule-RR-BB-2-*``, ``rule-HU-*``,
``rule-MD-REDEAL-*``, ``missed-blinds-*``) play each case through a whole hand; here the
placement is asked directly, and a hypothesis property plays random tables where players sit
out, come back, post, bust and misdeal.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Iterable
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.decks import synthetic_manifest
from controller.profiles import ButtonMode, load_profile
from controller.rules import blinds
from controller.rules.button import Placement, heads_up_button, place
from controller.rules.ids import Rule
from controller.table.context import RejectedError
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.flow import clockwise_seats
from controller.table.inputs import Input, Misdeal, Post, StartHand
from controller.table.state import HandState, Owed, Redeal, TableState, new_table
from simulators.autoplay import AutoDealer, Style
from simulators.scenario.core_runner import run_at_once
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec

SIX = dict.fromkeys(range(1, 7), 100)


def table(
    stacks: dict[int, int] = SIX,
    *,
    button: int,
    last_blinds: tuple[int, int] | None = None,
    mode: ButtonMode = ButtonMode.MOVING,
    played: Iterable[int] | None = None,
    **fields: object,
) -> TableState:
    """A table between hands: the button the last hand moved to and its blinds."""
    profile = load_profile("rrop-cash").with_overrides({"button.mode": mode.value})
    state = new_table("T1", profile, synthetic_manifest("d"), stacks, button, (1, 2))
    if last_blinds is not None:
        state.last_blinds = last_blinds
        state.hands_started = 1
        state.played = frozenset(stacks if played is None else played)
    for name, value in fields.items():
        setattr(state, name, value)
    return state


def where(placement: Placement) -> tuple[int, int | None, int, list[int]]:
    order = clockwise_seats(placement.seats, placement.button)
    return placement.button, placement.small, placement.big, list(order)


def test_rr_bb_2_moving_button_passes_the_seat_sitting_out_it_would_land_on() -> None:
    # the last hand: button 6, blinds 1 and 2; the button moved to seat 1, who sits out
    state = table(button=1, last_blinds=(1, 2))
    placement = place(state, seats=(2, 3, 4, 5, 6))
    assert where(placement) == (2, 3, 4, [3, 4, 5, 6, 2])
    assert Rule.RR_BB_2 in placement.rules
    # everyone in: the button stays where the last hand moved it, nothing skipped
    assert where(place(state)) == (1, 2, 3, [2, 3, 4, 5, 6, 1])
    assert Rule.RR_BB_2 not in place(state).rules


def test_rr_bb_rot_the_first_hand_moves_the_tables_button_on_to_a_seat_dealt_in() -> None:
    state = table(button=3)
    assert where(place(state, seats=(1, 2, 4, 5))) == (4, 5, 1, [5, 1, 2, 4])


def test_rr_bb_2_a_named_button_is_still_checked_and_places_the_blinds() -> None:
    state = table(button=1, last_blinds=(1, 2))
    with pytest.raises(RejectedError, match="the button seat 1 is not dealt in"):
        place(state, seats=(2, 3, 4, 5, 6), button=1)
    assert where(place(state, seats=(2, 3, 4, 5, 6), button=4)) == (4, 5, 6, [5, 6, 2, 3, 4])
    # a named button turns the dead button off, as it did before
    dead = table(button=1, last_blinds=(1, 2), mode=ButtonMode.DEAD)
    assert Rule.RR_BB_2 not in place(dead, button=4).rules


def test_hu_the_player_who_had_the_big_blind_most_recently_gets_the_button() -> None:
    # the last hand's big blind was seat 3; it plays: it gets the button
    assert heads_up_button(table(button=1, last_blinds=(2, 3)), frozenset({1, 3})) == 3
    # it left: the big blind went round 4, 5, 6, 1, 2, 3, so of 1 and 2, seat 2 had it last
    assert heads_up_button(table(button=1, last_blinds=(2, 3)), frozenset({1, 2})) == 2
    # and of 4 and 5, seat 5
    assert heads_up_button(table(button=1, last_blinds=(2, 3)), frozenset({4, 5})) == 5
    placement = place(table(button=1, last_blinds=(2, 3)), seats=(1, 2))
    assert where(placement) == (2, 2, 1, [1, 2])
    assert Rule.HU in placement.rules


def test_rr_bb_2_dead_button_and_its_fall_back_when_no_seat_is_left_for_it() -> None:
    dead = table(button=1, last_blinds=(1, 2), mode=ButtonMode.DEAD)
    # seat 1 (due the button) sits out: the button stays dead in front of it
    assert where(place(dead, seats=(2, 3, 4, 5, 6))) == (1, 2, 3, [2, 3, 4, 5, 6])
    # seat 2 (the last big blind) left: no small blind
    placement = place(dead, seats=(1, 3, 4, 5, 6))
    assert where(placement) == (1, None, 3, [3, 4, 5, 6, 1])
    assert Rule.RR_BB_2 in placement.rules
    # three seats where the last hand's blinds were 1 and 3 (seat 2 comes back between them):
    # the big blind due is seat 1, where the button should go; the button moves on instead
    odd = table({1: 100, 2: 100, 3: 100}, button=2, last_blinds=(1, 3), mode=ButtonMode.DEAD)
    assert where(place(odd)) == (2, 3, 1, [3, 1, 2])


def test_missed_blinds_a_listed_seat_that_owes_is_refused_and_nothing_changes() -> None:
    state = table(button=1, last_blinds=(1, 2), owes={4: Owed.BIG})
    before = pickle.dumps(state)
    with pytest.raises(RejectedError, match="seat 4 owes the big blind: post it") as refused:
        place(state, seats=(1, 2, 3, 4, 5, 6))
    assert refused.value.rules == (Rule.MISSED_BLINDS,)
    assert pickle.dumps(state) == before
    # through the engine: command.rejected, and the same state back
    after, events = apply(
        state, StartHand(datetime(2026, 1, 1, tzinfo=UTC), seats=(1, 2, 3, 4, 5, 6))
    )
    assert after is state
    assert [e.type for e in events] == ["command.rejected"]
    # not listed, it is left out and the hand starts without it
    placement = place(state)
    assert 4 not in placement.seats
    assert placement.waiting == frozenset({4})
    assert Rule.MISSED_BLINDS in placement.rules


def test_missed_blinds_the_only_other_seat_waiting_comes_in_as_the_big_blind() -> None:
    # seat 2 owes; seat 5 is the only other seat with chips: heads-up, seat 2 is the big blind
    state = table({2: 50, 5: 50}, button=5, last_blinds=(5, 2), owes={2: Owed.BIG})
    assert where(place(state)) == (5, 5, 2, [2, 5])


def test_missed_blinds_a_new_player_is_never_on_the_button_nor_between_it_and_the_big_blind() -> (
    None
):
    # seat 2 is new and posted; the button is due at seat 2: it goes on to seat 3
    state = table(button=2, last_blinds=(2, 3), played={1, 3, 4, 5, 6}, posting=frozenset({2}))
    assert where(place(state)) == (3, 4, 5, [4, 5, 6, 1, 2, 3])
    # the button due at seat 1, seat 2 would be the small blind: it waits
    state = table(button=1, last_blinds=(1, 3), played={1, 3, 4, 5, 6}, posting=frozenset({2}))
    placement = place(state)
    assert where(placement) == (1, 3, 4, [3, 4, 5, 6, 1])
    assert placement.waiting == frozenset({2})
    with pytest.raises(RejectedError, match="seat 2 is a new player on the button or between"):
        place(state, seats=(1, 2, 3, 4, 5, 6))


def test_md_redeal_keeps_the_button_the_players_and_a_dead_small_blind() -> None:
    state = table(
        button=1, last_blinds=(2, 3), mode=ButtonMode.DEAD, redeal=Redeal("T1-2", 1, (3, 4, 1), ())
    )
    placement = place(state)
    assert where(placement) == (1, None, 3, [3, 4, 1])
    assert Rule.MD_REDEAL in placement.rules
    with pytest.raises(RejectedError, match="keeps the button at seat 1"):
        place(state, button=3)


# ------------------------------------------------------------------ random tables


class SittingOut(AutoDealer):
    """The automatic dealer, one step at a time: the test decides who sits out and who posts."""

    def run_feed(self, event: Input) -> list[TableEvent]:
        return run_at_once(self.feed(event))

    def run_shuffle_and_deal(self, rng: random.Random) -> None:
        run_at_once(self._shuffle_and_deal(rng))

    async def _shuffle_and_deal(self, rng: random.Random) -> None:
        await self.shuffle("ok", None, None, rng.randrange(1 << 30))
        await self.deal_hole()

    def run_to_the_end(self) -> None:
        run_at_once(self._to_the_end())

    async def _to_the_end(self) -> None:
        for _ in range(1000):
            hand = self.run.state.hand
            if hand is None:
                return
            await self.next_move(hand)
        raise AssertionError("the hand did not end")


def after_strictly(seats: Iterable[int], start: int, end: int) -> list[int]:
    """The seats clockwise strictly after ``start`` and before ``end``."""
    found = []
    for seat in clockwise_seats(frozenset(seats) | {end}, start):
        if seat == end:
            break
        found.append(seat)
    return found


def check_placement(before: TableState, hand: HandState, misdealt: HandState | None) -> None:
    """Every rule of the placement, from the table as it was before the hand started."""
    seats = frozenset(hand.order)
    button, small, big = hand.button, hand.small_blind_seat, hand.big_blind_seat
    assert big is not None
    assert all(before.stacks[s] > 0 for s in seats)
    if misdealt is not None:  # MD-REDEAL: the same button, blinds and players
        assert (button, small, big, hand.order) == (
            misdealt.button,
            misdealt.small_blind_seat,
            misdealt.big_blind_seat,
            misdealt.order,
        )
        return
    # MISSED-BLINDS: who owes and has not posted plays only as the big blind
    waited = {s for s in seats if blinds.owed(before, s) is not None and s not in before.posting}
    assert waited <= {big}, f"seats {waited} owe and are dealt in as other than the big blind"
    new = {s for s in seats if before.hands_started and s not in before.played}
    assert button not in new
    assert not new & set(after_strictly(seats, button, big)), "a new player behind the button"
    last = before.last_hand
    dead = (
        before.profile.button_mode is ButtonMode.DEAD
        and len(seats) > 2
        and before.last_blinds is not None
        and (last is None or len(last.order) > 2)
    )
    if dead:  # RR-BB-2(b): nobody escapes the big blind; the button where the small blind was
        assert before.last_blinds is not None
        last_small, last_big = before.last_blinds
        due = clockwise_seats(seats, last_big)[0]
        if due != last_small:
            assert big == due
            assert button == last_small
            assert small == (last_big if last_big in seats else None)
            return
    assert button in seats
    if len(seats) == 2:  # HU: the button posts the small blind; nobody has the big blind twice
        assert small == button
        if before.last_blinds is not None and before.last_blinds[1] in seats:
            assert button == before.last_blinds[1]
        return
    order = clockwise_seats(seats, button)
    assert (small, big) == (order[0], order[1])
    if last is not None:  # RR-BB-2(a): forward to the next player dealt in, nobody passed over
        previous = last.showdown.button_seen or last.button
        passed = set(after_strictly(seats, previous, button))
        # but a seat that waited for the big blind (not a player yet when the button moved) or a
        # new player (never on the button: it plays behind it)
        assert passed <= waited | new, f"the button passed players: {passed - waited - new}"


def random_table(rng: random.Random, mode: ButtonMode) -> Scenario:
    seats = sorted(rng.sample(range(1, 11), rng.randint(3, 8)))
    stacks = {s: rng.choice([rng.randint(2, 12), rng.randint(30, 120)]) for s in seats}
    return Scenario(
        scenario=ScenarioMeta(
            name="sitting out", profile="rrop-cash", house_rules={"button.mode": mode.value}
        ),
        table=TableSpec(id="S", stacks=stacks, button=rng.choice(seats), blinds=(1, 2)),
    )


def play_sitting_out(seed: int, mode: ButtonMode, hands: int) -> list[HandState]:
    """``hands`` hands of a random table where the dealer never names the button."""
    rng = random.Random(seed)
    dealer = SittingOut(random_table(rng, mode), rng, Style(fold=0.3, aggressive=0.3, all_in=0.4))
    started: list[HandState] = []
    misdealt: HandState | None = None
    for _ in range(hands):
        state = dealer.run.state
        with_chips = sorted(s for s, c in state.stacks.items() if c > 0)
        if len(with_chips) < 2:
            break
        for seat in with_chips:  # some of those who owe post
            if blinds.owed(state, seat) is not None and rng.random() < 0.4:
                dealer.run_feed(Post(dealer.tick(), seat))
        listed: list[int] | None = None
        if misdealt is None and rng.random() < 0.6:
            listed = [s for s in with_chips if rng.random() > 0.3]
        before = dealer.run.state
        while True:
            seats = tuple(listed) if listed is not None and len(listed) >= 2 else None
            events = dealer.run_feed(StartHand(dealer.tick(), seats=seats))
            if events[0].type != "command.rejected":
                break
            # refused only for a listed seat that must wait, never for the button
            assert seats is not None, events[0].data
            assert events[0].rules == ("MISSED-BLINDS",), events[0].data
            seat = int(events[0].data["reason"].split()[1])
            assert seat in seats
            assert listed is not None
            listed.remove(seat)
        hand = dealer.run.state.hand
        assert hand is not None
        check_placement(before, hand, misdealt)
        started.append(hand)
        misdealt = None
        dealer.run_shuffle_and_deal(rng)
        if rng.random() < 0.1:
            events = dealer.run_feed(Misdeal(dealer.tick(), reason="cards flashed"))
            assert events[0].type == "hand.misdeal"
            misdealt = hand
            continue
        dealer.run_to_the_end()
    return started


@settings(max_examples=80)  # each example plays up to twelve hands
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), mode=st.sampled_from(ButtonMode))
def test_rr_bb_2_every_hand_starts_without_a_button_and_each_player_gets_it_in_turn(
    seed: int, mode: ButtonMode
) -> None:
    started = play_sitting_out(seed, mode, hands=12)
    assert started, "no hand started"


@pytest.mark.parametrize("mode", list(ButtonMode))
def test_rr_bb_2_each_round_every_player_gets_the_button_and_posts_the_big_blind(
    mode: ButtonMode,
) -> None:
    """Twelve hands, six seats nobody leaves: each seat has the button twice, the big blind too."""
    scenario = Scenario(
        scenario=ScenarioMeta(
            name="orbits", profile="rrop-cash", house_rules={"button.mode": mode}
        ),
        table=TableSpec(id="O", stacks=SIX, button=6, blinds=(1, 2)),
    )
    dealer = AutoDealer(scenario, random.Random(5), Style(fold=1.0, aggressive=0.0, all_in=0.0))
    buttons, bigs = [], []
    for _ in range(12):
        assert dealer.play_hand()
        last = dealer.run.state.last_hand
        assert last is not None
        buttons.append(last.button)
        bigs.append(last.big_blind_seat)
    assert buttons == [6, 1, 2, 3, 4, 5] * 2
    assert bigs == [2, 3, 4, 5, 6, 1] * 2
