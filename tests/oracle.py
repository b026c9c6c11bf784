"""pokerkit as a test oracle: replay a hand our core played and read pokerkit's final stacks."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from pokerkit import (
    Automation,
    Card,
    ChipsPushing,
    FixedLimitTexasHoldem,
    Mode,
    NoLimitTexasHoldem,
    Poker,
    Pot,
    PotLimitPokerMixin,
    StandardHighHand,
    State,
    TexasHoldemMixin,
    UnfixedLimitHoldem,
)
from pokerkit.utilities import CardsLike, rake

from controller.table.inputs import ActionKind
from controller.table.state import BURN, HandState
from controller.table.streets import Street

AUTOMATIONS = (
    Automation.ANTE_POSTING,
    Automation.BET_COLLECTION,
    Automation.BLIND_OR_STRADDLE_POSTING,
    Automation.HOLE_CARDS_SHOWING_OR_MUCKING,
    Automation.HAND_KILLING,
    Automation.CHIPS_PUSHING,
    Automation.CHIPS_PULLING,
    Automation.RUNOUT_COUNT_SELECTION,
)
#: A hand run twice: the players choose the runouts (RUN-TWICE).
TWICE_AUTOMATIONS = tuple(a for a in AUTOMATIONS if a is not Automation.RUNOUT_COUNT_SELECTION)
_BOARD_SLICES = {Street.FLOP: (0, 3), Street.TURN: (3, 4), Street.RIVER: (4, 5)}

#: The house-rule keys the oracle reads, each with its default as docs/profiles.md gives it (the
#: same in every shipped profile). The oracle reads a table's rules from these plain keys, as a
#: table config writes them, never from the project's parsed profile.
HOUSE_DEFAULTS: dict[str, Any] = {
    "ante.kind": "each",
    "odd_chip.recipient": "first_tied_winner_clockwise",
    "odd_chip.max_per_player": 1,
    "rake.mode": "none",
    "rake.percent": 0,
    "rake.cap": 0,
    "rake.chip_unit": 1,
    "rake.minimum_pot": 0,
    "rake.no_flop_no_drop": True,
    "rake.pots": "all",
    "rake.jackpot_drop": 0,
    "rake.jackpot_threshold": 0,
    "betting.structure": "no_limit",
    "betting.cap": 4,
}


def house_rules(house: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keys the oracle reads: ``house``'s where it sets them, the documented defaults else."""
    return {key: (house or {}).get(key, default) for key, default in HOUSE_DEFAULTS.items()}


def drops_from_pots(rules: Mapping[str, Any]) -> bool:
    """Does the house take chips from the pots (HOUSE-RAKE by the pot, HOUSE-DROP-JACKPOT)?"""
    raking = rules["rake.mode"] == "pot" and rules["rake.percent"] > 0
    return bool(raking or rules["rake.jackpot_drop"] > 0)


class RememberedHighHand(StandardHighHand):
    """pokerkit's own high hand, each seat's cards evaluated once.

    pokerkit evaluates a seat's best five of seven again for every pot, every comparison and
    every street it checks (some twenty-five times a hand, each time all twenty-one combinations),
    which was two thirds of the oracle's time. The evaluation is pokerkit's, unchanged: only its
    repeats are remembered.
    """

    @classmethod
    def from_game(cls, hole_cards: CardsLike, board_cards: CardsLike = ()) -> StandardHighHand:
        return _best_hand(tuple(Card.clean(hole_cards)), tuple(Card.clean(board_cards)))


@lru_cache(maxsize=4096)
def _best_hand(hole: tuple[Card, ...], board: tuple[Card, ...]) -> StandardHighHand:
    hand = StandardHighHand.from_game(hole, board)
    assert isinstance(hand, StandardHighHand)
    return hand


def pokerkit_stacks(
    hand: HandState,
    blinds: tuple[int, int],
    ante: int,
    house: Mapping[str, Any] | None = None,
    *,
    evaluate_once: bool = True,
) -> dict[int, int]:
    """Replay ``hand`` (completed by our core, every live hand tabled) in pokerkit.

    ``evaluate_once`` has pokerkit evaluate each seat's cards once (:class:`RememberedHighHand`);
    the engine benchmark turns it off, to time pokerkit as it is.

    pokerkit's positions are ours: position 0 is the first seat left of the button, the last
    position is the button; heads-up its reversed blinds put the small blind on the button too.
    Antes count as ordinary contributions on both sides (pokerkit's ante trimming on).

    Two of pokerkit's conventions are configured to match the catalogue's rules:

    * pokerkit kills every hand that cannot win before it pushes chips, and then merges pots
      whose surviving contenders are the same; POT-SEP splits every pot separately, each with its
      own odd chip. The oracle keeps every live hand until the pots are pushed
      (``can_win_now`` answers yes), so pokerkit splits each pot on its own too.
    * pokerkit gives a pot's whole remainder to the first tied winner left of the button, which
      is the house rule ``odd_chip.max_per_player = 0``; under any other cap the oracle hands the
      odd chips out again as the rule's text says (:func:`odd_chip_moves`).

    ``house`` holds the table's house-rule keys as its config writes them (the documented
    defaults for the rest: :data:`HOUSE_DEFAULTS`). Where the house takes from the pots, pokerkit
    rakes each pot (:func:`pokerkit_rake`) and :class:`RakedState` takes the hand's cap, the
    main-pot-only rule, the minimum pot and the jackpot drop on top of it.
    """
    order = hand.order
    rules = house_rules(house)
    raking = drops_from_pots(rules)
    trimming, antes = True, (ante,) * len(order)
    if rules["ante.kind"] != "each":
        # one seat posts the table's ante: pokerkit's dead antes (no trimming: the main pot)
        poster = ante_poster(hand, rules["ante.kind"])
        posting = order[::-1] if len(order) == 2 else order  # heads-up pokerkit reverses them
        trimming, antes = False, tuple(ante if s == poster else 0 for s in posting)
    blinds_or_straddles: tuple[int, ...] = blinds
    if hand.chips.straddles:  # STRADDLE: each straddle in its seat's position
        raw = [*blinds, *[0] * (len(order) - 2)]
        for seat, chips in hand.chips.straddles:
            raw[order.index(seat)] = chips
        blinds_or_straddles = tuple(raw)
    game = pokerkit_game(
        hand,
        rules,
        TWICE_AUTOMATIONS if hand.showdown.boards else AUTOMATIONS,
        trimming,
        antes,
        blinds_or_straddles,
        blinds[1],
        pokerkit_rake(rules) if raking else rake,
    )
    state = game(tuple(hand.start_stacks[s] for s in order), len(order))
    if evaluate_once:
        state.hand_types = (RememberedHighHand,)
    if raking:
        state.__class__ = RakedState
        state.rules = rules  # type: ignore[attr-defined]
    state.can_win_now = lambda player_index: True  # type: ignore[method-assign]
    for seat in hand.deal_order:
        state.deal_hole("".join(hand.deal.dealt[seat]), order.index(seat))
    run_from = hand.showdown.run_from
    for street in Street:
        _formal_checks(state)
        if run_from is not None and street == run_from + 1:
            _runouts(state, hand, run_from)
        elif (
            street is not Street.PREFLOP
            and (run_from is None or street <= run_from)
            and len(hand.cards.board) >= _BOARD_SLICES[street][1]
        ):
            start, end = _BOARD_SLICES[street]
            state.burn_card(hand.cards.at(BURN)[street - 1])
            state.deal_board("".join(hand.cards.board[start:end]))
        for record in (a for a in hand.chips.actions if a.street is street):
            if record.kind is ActionKind.FOLD:
                state.fold()
            elif record.kind in (ActionKind.CHECK, ActionKind.CALL):
                state.check_or_call()
            else:
                state.complete_bet_or_raise_to(record.to)
    _formal_checks(state)
    if state.status:
        raise AssertionError(f"pokerkit did not finish the hand: {state.status}")
    moved = odd_chip_moves(state, rules)
    return {seat: state.stacks[i] + moved[i] for i, seat in enumerate(order)}


class PotLimitTexasHoldem(PotLimitPokerMixin, TexasHoldemMixin, UnfixedLimitHoldem):
    """pokerkit's hold'em with its pot-limit betting structure."""


def pokerkit_game(
    hand: HandState,
    rules: Mapping[str, Any],
    automations: tuple[Automation, ...],
    trimming: bool,
    antes: Any,
    blinds_or_straddles: Any,
    big_blind: int,
    raking: Callable[[int, State], tuple[int, int]],
) -> Poker:
    """pokerkit's hold'em of the table's betting structure (``betting.structure``).

    No-limit and pot-limit are pokerkit's own games. Fixed-limit is pokerkit's fixed-limit hold'em
    with the rule's sizes and cap as docs/profiles.md words them (RR-BR-5/6, RR-BR-3/4): the
    small bet the big blind and the big bet twice it; ``betting.cap`` bets and raises a round, the
    big blind counting as the pre-flop bet (pokerkit counts the raises after the blinds: one
    fewer before the flop), and no cap on a street where the action was heads-up when the count
    reached it (:func:`heads_up_streets`: pokerkit caps heads-up play too).
    """
    structure = rules["betting.structure"]
    if structure == "no_limit":
        kind: Any = NoLimitTexasHoldem
    elif structure == "pot_limit":
        kind = PotLimitTexasHoldem
    else:
        assert structure == "fixed_limit", structure
        game = FixedLimitTexasHoldem(
            automations,
            trimming,
            antes,
            blinds_or_straddles,
            big_blind,
            2 * big_blind,
            mode=Mode.CASH_GAME,
            rake=raking,
        )
        cap = rules["betting.cap"]
        uncapped = heads_up_streets(hand, cap)
        game.streets = tuple(
            replace(
                street,
                max_completion_betting_or_raising_count=None
                if Street(i) in uncapped
                else cap - 1 - len(hand.chips.straddles)
                if i == Street.PREFLOP
                else cap,
            )
            for i, street in enumerate(game.streets)
        )
        return game
    made: Poker = kind(
        automations,
        trimming,
        antes,
        blinds_or_straddles,
        big_blind,
        mode=Mode.CASH_GAME,
        rake=raking,
    )
    return made


def heads_up_streets(hand: HandState, cap: int) -> set[Street]:
    """The streets of a fixed-limit hand raised beyond ``cap``, each checked to have been
    heads-up when its count reached the cap: RRoP, Betting and raising 3-4 ("for a pot involving
    three or more players who are not all-in"; "unlimited raising is allowed in heads-up play
    [...] any time the action becomes heads-up before the raising has been capped"), read here
    from the hand's own record: the players neither folded nor all in after the action that
    reached the cap (the big blind counts as the pre-flop bet). A seat that never acts in the
    hand is all in on its blinds and antes: a seat with chips acts at least once, unless the
    hand ended before its turn, and then nothing was raised to a cap while it could bet."""
    acted = {record.seat for record in hand.chips.actions}
    out = {s for s in hand.order if s not in acted}
    found: set[Street] = set()
    for street in Street:
        count = 1 + len(hand.chips.straddles) if street is Street.PREFLOP else 0
        able_at_cap = len(hand.order) - len(out) if count >= cap else None
        for record in hand.chips.actions:
            if record.street is not street:
                continue
            if record.kind is ActionKind.FOLD or record.all_in:
                out.add(record.seat)
            if record.kind in (ActionKind.BET, ActionKind.RAISE):
                count += 1
                if count == cap:
                    able_at_cap = len(hand.order) - len(out)
        if count > cap:
            assert able_at_cap is not None, street
            assert able_at_cap <= 2, (street, able_at_cap)
            found.add(street)
    return found


def odd_chip_moves(state: State, rules: Mapping[str, Any]) -> list[int]:
    """What the odd-chip rule changes in pokerkit's pushes, per player index.

    pokerkit splits a pot among its tied winners evenly and gives the whole remainder to the
    first of them from the button (its positions start left of the button, so the first winner
    by index is the first clockwise). The rule (RR Ties 3-4, TDA; docs/profiles.md): the odd
    chips go "one each to successive tied winners clockwise from the button", at most
    ``odd_chip.max_per_player`` each, ``0`` meaning all to the first; each pot (and each board
    of a pot run twice) on its own. A pot's winners are read from pokerkit's push: every winner
    got the even share, which is at least a chip (a pot is never smaller than the hands that
    paid into it).
    """
    if rules["odd_chip.recipient"] != "first_tied_winner_clockwise":
        raise NotImplementedError("the oracle reads the tied-winner odd-chip rule only")
    cap = rules["odd_chip.max_per_player"]
    moved = [0] * len(state.stacks)
    for operation in state.operations:
        if not isinstance(operation, ChipsPushing) or operation.board_index is None:
            continue
        winners = [i for i, amount in enumerate(operation.amounts) if amount]
        share = min((operation.amounts[i] for i in winners), default=0)
        odd = sum(operation.amounts) - share * len(winners)
        given = [0] * len(winners)
        turn = 0
        while odd and cap and any(g < cap for g in given):  # one each, clockwise, to the cap
            if given[turn % len(winners)] < cap:
                given[turn % len(winners)] += 1
                odd -= 1
            turn += 1
        given[0] += odd  # no cap, or what the cap leaves: the first winner's
        for k, i in enumerate(winners):
            moved[i] += share + given[k] - operation.amounts[i]
    return moved


def ante_poster(hand: HandState, kind: str) -> int:
    """Who posts a table's ante, read from the rule's text (docs/rules.md, ANTE-TABLE: "the big
    blind … or the button (a dead button on an empty seat: the big blind)") and the seats the
    hand dealt in, never from the project's own answer.

    The seats dealt in are in ``hand.order``, the first left of the button first: the big blind
    is the second of them, and heads-up (where the button posts the small blind) the one that
    is not the button.
    """
    order = hand.order
    if kind == "button" and hand.button in order:
        return hand.button
    return order[0] if len(order) == 2 else order[1]


def _runouts(state: Any, hand: HandState, run_from: Street) -> None:
    """RUN-TWICE: the players choose two runouts; pokerkit takes each runout's streets whole,
    the first runout's then the second's, each street with its burn."""
    while state.can_select_runout_count():
        state.select_runout_count(runout_count=2)
    burns = iter(hand.cards.at(BURN)[run_from:])
    for board in (*hand.showdown.boards, hand.cards.board):
        for street in Street:
            if street > run_from:
                start, end = _BOARD_SLICES[street]
                state.burn_card(next(burns))
                state.deal_board("".join(board[start:end]))


def _formal_checks(state: object) -> None:
    """pokerkit asks a lone seat facing nobody who could call a raise to check anyway.

    Our core closes such a round at once (there is nothing to decide); the oracle makes the
    formal check for pokerkit, and only where every other live seat is all in.
    """
    while getattr(state, "actor_index", None) is not None:
        actor = state.actor_index  # type: ignore[attr-defined]
        others = [
            i
            for i, live in enumerate(state.statuses)  # type: ignore[attr-defined]
            if live and i != actor
        ]
        if state.checking_or_calling_amount or any(state.stacks[i] for i in others):  # type: ignore[attr-defined]
            return
        state.check_or_call()  # type: ignore[attr-defined]


def pokerkit_manual_stacks(hand: HandState, blinds: tuple[int, int], ante: int) -> dict[int, int]:
    """As :func:`pokerkit_stacks`, with every pokerkit operation made by hand.

    This is pokerkit driven the way a table controller would drive it: no automation, so every
    card movement and chip movement is its own operation (antes, blinds, each hole card, each
    burn and board card, each bet collection, each show, each pot pushed, each stack pulled).
    """
    order = hand.order
    state = NoLimitTexasHoldem.create_state(
        (),
        True,
        ante,
        blinds,
        blinds[1],
        tuple(hand.start_stacks[s] for s in order),
        len(order),
        mode=Mode.CASH_GAME,
    )
    state.can_win_now = lambda player_index: True  # type: ignore[method-assign]
    _chores(state)
    for seat in hand.deal_order:
        for card in hand.deal.dealt[seat]:
            state.deal_hole(card, order.index(seat))
    _chores(state)
    for street in Street:
        if street is not Street.PREFLOP and len(hand.cards.board) >= _BOARD_SLICES[street][1]:
            _formal_checks(state)
            _chores(state)
            while not state.can_burn_card() and state.can_show_or_muck_hole_cards(True):
                state.show_or_muck_hole_cards(True)  # all in: hands are shown before the runout
                _chores(state)
            start, end = _BOARD_SLICES[street]
            state.burn_card(hand.cards.at(BURN)[street - 1])
            for card in hand.cards.board[start:end]:
                state.deal_board(card)
        for record in (a for a in hand.chips.actions if a.street is street):
            if record.kind is ActionKind.FOLD:
                state.fold()
            elif record.kind in (ActionKind.CHECK, ActionKind.CALL):
                state.check_or_call()
            else:
                state.complete_bet_or_raise_to(record.to)
            _chores(state)
    _formal_checks(state)
    _chores(state)
    while state.can_show_or_muck_hole_cards(True):
        state.show_or_muck_hole_cards(True)
        _chores(state)
    return {seat: state.stacks[i] for i, seat in enumerate(order)}


def _chores(state: object) -> None:
    """The dealer's chip chores pokerkit waits for: antes, blinds, collecting, pushing, pulling."""
    s: Any = state
    while True:
        if s.can_post_ante():
            s.post_ante()
        elif s.can_post_blind_or_straddle():
            s.post_blind_or_straddle()
        elif s.can_collect_bets():
            s.collect_bets()
        elif s.can_select_runout_count():
            s.select_runout_count()
        elif s.can_kill_hand():
            s.kill_hand()
        elif s.can_push_chips():
            s.push_chips()
        elif s.can_pull_chips():
            s.pull_chips()
        else:
            return


def pokerkit_rake(rules: Mapping[str, Any]) -> Callable[[int, State], tuple[int, int]]:
    """pokerkit's raking (percentage, no flop no drop) with the share rounded down to the chip
    unit: pokerkit rounds an integer pot's rake to the nearest chip, so it rakes the pot as a
    float and the oracle rounds down (to nine places first: 0.29 × 100 is 28.999…)."""
    unit = rules["rake.chip_unit"]
    percentage = rules["rake.percent"] / 100 if rules["rake.mode"] == "pot" else 0

    def raking(amount: int, state: State) -> tuple[int, int]:
        raked, _ = rake(
            float(amount),  # type: ignore[arg-type]
            state,
            percentage=percentage,
            no_flop_no_drop=rules["rake.no_flop_no_drop"],
        )
        chips = math.floor(round(raked, 9) / unit) * unit
        return chips, amount - chips

    return raking


class RakedState(State):
    """pokerkit's pots, each raked by pokerkit, with the house rules pokerkit does not have, as
    docs/rules.md words them: the cap is the hand's ("main pot first, until the hand's
    ``rake.cap``"), ``rake.pots = "main"`` rakes the main pot only, nothing is raked from a hand
    whose pot is below ``rake.minimum_pot``, and the jackpot drop is "a fixed drop from the main
    pot of a hand whose pot reaches the threshold, after the rake" (no flop, no drop)."""

    rules: Mapping[str, Any]

    @property
    def pots(self) -> Iterator[Pot]:
        rules = self.rules
        pots = list(super().pots)
        total = sum(p.amount for p in pots)
        room = rules["rake.cap"] or total
        flop = any(self.board_cards)
        for i, pot in enumerate(pots):
            raked = pot.raked_amount
            if (i and rules["rake.pots"] == "main") or total < rules["rake.minimum_pot"]:
                raked = 0
            raked = min(raked, room)
            room -= raked
            if (
                i == 0
                and total >= rules["rake.jackpot_threshold"]
                and (flop or not rules["rake.no_flop_no_drop"])
            ):
                raked += min(rules["rake.jackpot_drop"], pot.amount - raked)
            yield Pot(raked, pot.amount - raked, pot.player_indices)


class SeparatePotsState(State):
    """pokerkit's state with the pots POT-SEP makes: the betting's pots, each split on its own.

    pokerkit rebuilds the pots from the hands still active when it pushes them, so a hand mucked
    at showdown no longer marks its level, and neighbouring pots left with the same contenders
    merge; the odd chips then fall differently. Here the levels are those of every hand that did
    not fold in the betting (a hand given up at showdown included), chips above the top level are
    dead money in the top pot, pots with the same claimants merge (as
    ``controller.game.pots.build_pots`` does), and only the hands still active contend.
    """

    @property
    def pots(self) -> Iterator[Pot]:
        if self._pots is not None:
            yield from self._pots
            return
        if sum(self.payoffs) == -sum(self.bets):
            return
        contributions = [-self.payoffs[i] - self.bets[i] for i in self.player_indices]
        pending = [-self.payoffs[i] for i in self.player_indices]
        dead = 0
        if not self.ante_trimming_status:  # dead antes: in the main pot, no seat's level
            for i in self.player_indices:
                ante = self.get_effective_ante(i)
                dead += ante
                contributions[i] -= ante
                pending[i] -= ante
        folded: set[int] = getattr(self, "folded", set())
        claimants = [i for i in self.player_indices if i not in folded]
        pots: list[tuple[int, tuple[int, ...]]] = []
        previous = 0
        for level in sorted({pending[i] for i in claimants if pending[i] > 0}):
            amount = sum(min(c, level) - previous for c in contributions if c > previous)
            eligible = tuple(i for i in claimants if pending[i] >= level)
            if pots and pots[-1][1] == eligible:
                pots[-1] = (pots[-1][0] + amount, eligible)
            elif amount:
                pots.append((amount, eligible))
            previous = level
        leftover = sum(c - previous for c in contributions if c > previous)
        if leftover and pots:
            pots[-1] = (pots[-1][0] + leftover, pots[-1][1])
        if dead:
            pots = (
                [(pots[0][0] + dead, pots[0][1]), *pots[1:]] if pots else [(dead, tuple(claimants))]
            )
        for amount, eligible in pots:
            raked, unraked = self.rake(amount, self)
            yield Pot(raked, unraked, tuple(i for i in eligible if self.statuses[i]))

    def fold(self, *args: Any, **kwargs: Any) -> Any:
        operation = super().fold(*args, **kwargs)
        self.folded = {*getattr(self, "folded", set()), operation.player_index}
        return operation
