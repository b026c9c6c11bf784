"""The table as a dealer's station shows it: a pure function of the core's state.

What a dealer needs at the table and no more than the public may see: each seat's stack, its bet
in the round, what it has put in the hand, whether it is live, folded or all in, how many cards it
holds (their identities only once tabled), the button and the blinds, the seat to act, the pots
(main and side, as :func:`controller.game.pots.build_pots` makes them of what the rounds before
this one left in the middle), the board, what the seat
to act may do (:func:`controller.game.betting.options`: to call, the smallest and largest raise;
and the core's menu, :func:`controller.rules.menu.menu`: the actions it may enter, the quick sizes),
the betting round as the core keeps it (so a station checks an amount with the core's own
functions before it sends it), the holds with their rule and whether the house lets the dealer
rule on them (``dealer_may_confirm``), what the house lets the station offer (straddles, running
it twice) and what each seat owes for missed blinds, the award proposal and the house's take
(:func:`controller.game.rake.take`). No hole card before it is tabled, no burn, no deck order.

The view holds no ``null`` (a member that would be null is left out): the watch stream sends it
as JSON merge patches (:mod:`controller.shell.merge_patch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.game import betting, rake
from controller.game.pots import build_pots
from controller.game.rake import HouseTake
from controller.profiles import NewPlayer
from controller.rules import actions, blinds
from controller.rules.menu import menu
from controller.table.state import HandState, Phase, TableState
from controller.table.streets import Street

VIEW_SCHEMA = "tablectl.station-view/1"


def table_view(state: TableState) -> dict[str, Any]:
    """The table part of the station's view of ``state`` (without ``null`` members)."""
    hand = state.hand
    profile = state.profile
    body: dict[str, Any] = {
        "table_id": state.table_id,
        "button": hand.button if hand is not None else state.button,
        "blinds": list(state.blinds),
        "ante": state.ante,
        "hands_started": state.hands_started,
        "deck_ready": state.deck.ready,
        "house_total": state.house,
        "dealer_may_confirm": list(profile.dealer_may_confirm),
        # what the station offers between hands and at the runout, as the profile allows it:
        # straddles (STRADDLE), posts of missed blinds (MISSED-BLINDS), running it twice
        "straddles": {"mode": profile.straddle_mode.value, "max": profile.straddle_max},
        "run_twice": profile.run_twice_allowed,
        # the betting structure (RR-PL, RR-BR-5/6, RR-BR-3/4): the station says what it is
        "betting": _structure(state),
        "new_player_posts": profile.blinds_new_player is NewPlayer.POST,
        "owes": _owes(state),
        "posting": sorted(state.posting),
        "seats": _seats(state),
    }
    if hand is not None:
        body["hand"] = _hand(state, hand)
    last = state.last_hand
    if last is not None:
        body["last_hand"] = last.hand_id
    return body


def _owes(state: TableState) -> dict[str, str]:
    """MISSED-BLINDS: what each seat with chips owes before it plays again."""
    owes = {}
    for seat, chips in sorted(state.stacks.items()):
        debt = blinds.owed(state, seat) if chips > 0 else None
        if debt is not None:
            owes[str(seat)] = debt.value
    return owes


def _seats(state: TableState) -> dict[str, dict[str, Any]]:
    hand = state.hand
    # every seat of the table: those dealt in with their chips in the hand, a seat sitting the
    # hand out (``out``) with its stack as the hand found it
    stacks = {**state.stacks, **(hand.chips.stacks if hand is not None else {})}
    seats: dict[str, dict[str, Any]] = {}
    for seat in sorted(stacks):
        entry: dict[str, Any] = {"stack": stacks[seat]}
        if hand is not None and seat in hand.order:
            entry.update(_in_hand(hand, seat))
        else:
            entry["status"] = "out"
        seats[str(seat)] = entry
    return seats


def _in_hand(hand: HandState, seat: int) -> dict[str, Any]:
    chips = hand.chips
    rnd = chips.round
    dead = hand.irregular.dead.get(seat)
    if seat in chips.folded:
        status = "dead" if dead is not None else "folded"
    elif seat in hand.showdown.mucked:
        status = "mucked"
    elif chips.stacks.get(seat, 0) == 0:
        status = "all_in"
    else:
        status = "live"
    entry: dict[str, Any] = {
        "status": status,
        "bet": rnd.bets.get(seat, 0) if rnd is not None else 0,
        "committed": chips.committed.get(seat, 0),
        "cards": len(hand.deal.dealt.get(seat, ())),
    }
    tabled = hand.showdown.tabled.get(seat)
    shown = hand.showdown.shown.get(seat)
    if tabled is not None:
        entry["shown"] = list(shown or hand.deal.dealt.get(seat, ()))
        entry["category"] = tabled.category
    elif shown:  # all in and face up before the runout (ALLIN-FACEUP)
        entry["shown"] = list(shown)
    if dead is not None:
        entry["dead"] = dead
    return entry


def _hand(state: TableState, hand: HandState) -> dict[str, Any]:
    chips = hand.chips
    rnd = chips.round
    live = hand.live
    dead = sum(chips.dead.values()) if chips.dead else 0
    # the pots in the middle: what the rounds before this one left there; this round's bets are
    # still in front of the seats (each seat's ``bet``), as a dealer sees the table
    bets = rnd.bets if rnd is not None else {}
    settled = {seat: chips_in - bets.get(seat, 0) for seat, chips_in in chips.committed.items()}
    pots = build_pots(settled, live, dead)
    body: dict[str, Any] = {
        "hand_id": hand.hand_id,
        "phase": hand.phase.value,
        "street": hand.street.label,
        "order": list(hand.order),
        "small_blind": hand.small_blind_seat,
        "big_blind": hand.big_blind_seat,
        "board": list(hand.cards.board),
        "pot": hand.total_pot,
        "pots": [{"amount": p.amount, "eligible": list(p.eligible)} for p in pots],
        "holds": [
            {
                "id": hold.id,
                "rule": hold.rule.value,
                "ruling": hold.ruling.value,
                "reason": hold.reason,
                "seat": hold.seat,
                "dealer_may_confirm": hold.rule.value in state.profile.dealer_may_confirm,
            }
            for hold in hand.irregular.holds
        ],
        "showdown_order": list(hand.showdown.order),
        "runs": hand.showdown.runs,  # 2 once the players agreed to run it twice (RUN-TWICE)
    }
    if rnd is not None:
        limits = actions.table_limits(state, hand)
        body["round"] = _round(rnd)
        # the structure's bounds in this round, as the daemon judges them: the station checks an
        # amount with them before it sends it
        body["limits"] = {**limits._asdict(), "structure": limits.structure.value}
        choices = betting.options(rnd, chips.stacks, chips.folded, limits)
        # the round opens with the blinds, but nobody acts before the hole cards are all dealt
        if choices is not None and hand.phase is Phase.BETTING:
            body["to_act"] = choices.seat
            body["options"] = choices._asdict()
    pad = menu(state)  # the core's own menu: what the seat to act may enter now (none: held)
    if pad is not None:
        body["menu"] = {
            "seat": pad.seat,
            "actions": [kind.value for kind in pad.actions],
            "to_call": pad.to_call,
            "call_to": pad.call_to,
            "min_to": pad.min_to,
            "max_to": pad.max_to,
            "quick": [{"label": label, "to": to} for label, to in pad.quick],
            "structure": pad.structure.value,
        }
    proposal = hand.showdown.proposal
    take = hand.showdown.take
    if proposal is not None:
        payouts: dict[str, int] = {}
        for split in proposal:
            for seat, won in split.winners.items():
                payouts[str(seat)] = payouts.get(str(seat), 0) + won
        body["proposal"] = {
            "pots": [
                {
                    "amount": split.pot.amount,
                    "eligible": list(split.pot.eligible),
                    "winners": _seat_map(split.winners),
                    "odd_chips": _seat_map(split.odd_chips),
                    "house": split.house,
                }
                for split in proposal
            ],
            "payouts": payouts,
        }
    elif pots:
        # what the house would take from the pots as they stand (HOUSE-RAKE)
        take = rake.take([p.amount for p in pots], hand.street > Street.PREFLOP, state.profile)
    if take is not None:
        body["house_take"] = _take(take)
    return body


def _structure(state: TableState) -> dict[str, Any]:
    """The table's betting structure: its name and, fixed-limit, the small and big bet and the
    cap (the big blind before the turn, twice it from the turn; RR-BR-5/6, RR-BR-3/4)."""
    profile = state.profile
    structure = profile.betting_structure
    if structure is not betting.Structure.FIXED_LIMIT:
        return {"structure": structure.value}
    bets = list(actions.fixed_bets(state.blinds[1]))
    return {"structure": structure.value, "bets": bets, "cap": profile.betting_cap}


def _round(rnd: betting.Round) -> dict[str, Any]:
    """The open betting round as the core keeps it (controller/game/betting.py)."""
    return {
        "street": rnd.street.label,
        "bets": _seat_map(rnd.bets),
        "current": rnd.current,
        "full_raise": rnd.full_raise,
        "queue": list(rnd.queue),
        "acted_at": _seat_map(rnd.acted_at),
        "aggressor": rnd.aggressor,
        "first_actor": rnd.first_actor,
        "actions": rnd.actions,
    }


def _take(take: HouseTake) -> dict[str, Any]:
    return {
        "total": take.total,
        "rake": list(take.rake),
        "jackpot": take.jackpot,
        "waived": take.waived,
    }


def _seat_map(values: Mapping[int, int]) -> dict[str, int]:
    return {str(seat): chips for seat, chips in sorted(values.items())}
