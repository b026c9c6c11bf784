"""The hole deal's checks at each side of their boundaries.

GRP-SIZE: a hole group of 0, 1 or 3 cards is held before delivery (at once a misdeal, or waiting
for the dealer under ``grp.size_error = hold``); two is a group. SEAT-SEQ / SEAT-EMPTY: a group
dispensed for any seat but the next, before or after it, is a misdeal, and the hand ends there.
EXTRA-2+: a hole group after the last seat's, and the second or third extra card. SEAT-WRONG-FIRST
is only the first group at a seat other than the first. DE-1544a-GRP: each group is delivered
when both its cards are at its seat, whatever seat is read first. DEAL-DONE: once, and only when
every seat holds exactly two cards of its own group and no replacement is owed, even when the
hand has reached the showdown. EXP-OTHER / EXP-REPL-CHECK / JOKER: a replacement is asked for
once every group is delivered, each one owed is delivered as one card, and the next card is an
extra card. EXTRA-1 is the first seat's only; elsewhere an extra card is a count held for a
misdeal before the cutoff, a dead hand after it. SEAT-COUNT: only a SEAT-COUNT hold stands for a
seat's count, and a seat skipped does not stop the seats after it.
"""

from __future__ import annotations

import pytest

from simulators.scenario.primitives import CoreRun
from tests.core.test_seat_counts import _group
from tests.helpers import START, act, data, of_type, one, run_text, scenario_text, step

SEATS = dict.fromkeys(range(1, 7), 100)
#: Seat k's group is cards 2k-1 and 2k (button 6); then the burn and the board.
ORDER = (
    'order = ["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac", "2d", '
    '"3d", "4d", "5d", "6d", "7d", "8d"]'
)
DEAL = '[[step]]\nauto = "deal_hole"\n'
JOKERS = ("0447c75aded1c8", "049db12832872a")


def _run(
    steps: str,
    *,
    house_rules: str = "{}",
    button: int = 6,
    settle: int = 60,
) -> CoreRun:
    """Six seats of 100 dealt from ORDER; the readers settle ``settle`` seconds after the deal."""
    text = scenario_text(SEATS, button, steps, house_rules=house_rules, deck=ORDER)
    return run_text(text.replace("blinds = [1, 2]", f"blinds = [1, 2]\nsettle = {settle}"))


def _dispense(purpose: str = "hole", seat: int | None = None, count: int | None = None) -> str:
    return step(shuffler="dispense", purpose=purpose, seat=seat, count=count)


def _arrive(zone: str, *cards: str) -> str:
    """``cards`` read at ``zone`` (the last group dispensed when none are named)."""
    return step(reader="arrive", zone=zone, cards=list(cards) if cards else None)


def _types(run: CoreRun) -> list[str]:
    return [e.type for e in run.events]


def _holds(run: CoreRun) -> list[tuple[object, ...]]:
    return [
        (h["rule"], h.get("seat"), h["ruling"], h["reason"])
        for h in map(data, of_type(run.events, "hand.hold"))
    ]


# --------------------------------------------------------------------------- the groups


@pytest.mark.parametrize("size_error", ["reshuffle", "hold"])
@pytest.mark.parametrize("count", [0, 1, 2, 3])
def test_grp_size_a_hole_group_of_other_than_two_cards_is_held_before_delivery(
    count: int, size_error: str
) -> None:
    run = _run(
        START + _dispense(seat=1, count=count),
        house_rules=f'{{ "grp.size_error" = "{size_error}" }}',
    )
    if count == 2:
        assert not of_type(run.events, "hand.hold")
        assert data(one(run.events, "deal.group.dispensed"))["seat"] == 1
        return
    hold = one(run.events, "hand.hold")
    assert _holds(run) == [("GRP-SIZE", 1, "misdeal", f"hole group of {count} cards")]
    assert data(hold)["count"] == count
    # decided at once by default; the dealer confirms it under grp.size_error = hold
    assert hold.needs_confirm is (size_error == "hold")
    misdeals = [data(e)["rule"] for e in of_type(run.events, "hand.misdeal")]
    assert misdeals == (["GRP-SIZE"] if size_error == "reshuffle" else [])
    assert not of_type(run.events, "deal.group.dispensed")


@pytest.mark.parametrize("groups", [6, 7])
def test_extra_2_a_hole_group_after_the_last_seat_s_is_a_misdeal_that_ends_the_hand(
    groups: int,
) -> None:
    steps = START + "".join(_group(seat) for seat in range(1, 7)) + _dispense() * (groups - 6)
    run = _run(steps)
    if groups == 6:
        assert "hand.misdeal" not in _types(run)
        assert data(one(run.events, "deal.complete"))["seats"] == [1, 2, 3, 4, 5, 6]
        return
    assert _types(run)[-3:] == ["deal.complete", "irregularity.detected", "hand.misdeal"]
    misdeal = data(run.events[-1])
    assert (misdeal["rule"], misdeal["reason"]) == (
        "EXTRA-2+",
        "a hole group after every seat had one",
    )
    assert run.state.hand is None


@pytest.mark.parametrize(
    ("seat", "rule"),
    [(1, "SEAT-SEQ"), (2, "SEAT-SEQ"), (3, None), (4, "SEAT-SEQ"), (6, "SEAT-SEQ"),
     (7, "SEAT-EMPTY"), (10, "SEAT-EMPTY")],
)  # fmt: skip
def test_seat_seq_seat_empty_a_hole_group_for_any_seat_but_the_next_is_a_misdeal(
    seat: int, rule: str | None
) -> None:
    """Seats 1 and 2 have their groups: seat 3's is next. Before it, after it, the last seat, or
    a seat not dealt in: a misdeal before the group goes out, and nothing more of that hand."""
    run = _run(START + _group(1) + _group(2) + _dispense(seat=seat))
    dispensed = [data(e)["seat"] for e in of_type(run.events, "deal.group.dispensed")]
    if rule is None:
        assert dispensed == [1, 2, 3]
        assert "hand.misdeal" not in _types(run)
        return
    assert dispensed == [1, 2]
    reason = f"group for seat {seat} when seat 3 was next"
    irregular = data(one(run.events, "irregularity.detected"))
    assert (irregular["rule"], irregular["seat"], irregular["reason"]) == (rule, seat, reason)
    assert _types(run)[-1] == "hand.misdeal"
    assert (data(run.events[-1])["rule"], data(run.events[-1])["reason"]) == (rule, reason)


def test_seat_seq_cards_of_a_first_group_held_at_the_shuffler_read_at_the_first_seat() -> None:
    """The first group is of three (held, ``grp.size_error = hold``): dealt to no seat, it is not
    the first group, and its cards at seat 1, the first seat, are not at a wrong first seat."""
    run = _run(
        START + _dispense(seat=1, count=3) + _arrive("seat:1"),
        house_rules='{ "grp.size_error" = "hold" }',
    )
    misdeal = data(one(run.events, "hand.misdeal"))
    assert misdeal["rule"] == "SEAT-SEQ"
    assert misdeal["reason"] == "a card of a group stopped at the shuffler reached seat 1"


def test_de_1544a_grp_a_group_is_delivered_when_its_cards_are_read_whichever_seat_is_first() -> (
    None
):
    """Seats 1 and 2 have their groups in the tray; seat 2's cards are read first."""
    steps = START + _dispense(seat=1) + _dispense(seat=2)
    steps += _arrive("seat:2", "4c", "5c") + _arrive("seat:1", "2c", "3c")
    run = _run(steps)
    delivered = [
        (d["seat"], d["group"], d["cards"])
        for d in map(data, of_type(run.events, "deal.group.delivered"))
    ]
    assert delivered == [(2, 2, ["4c", "5c"]), (1, 1, ["2c", "3c"])]
    assert "hand.misdeal" not in _types(run)


# --------------------------------------------------------------------------- DEAL-DONE

#: Seat 3's part of the deal for the count of its own cards it holds at the last delivery:
#: one (its second card went onto the board), two, or three (a card before its group came).
SEAT_3_HOLDS = {
    1: _group(3) + _arrive("board", "7c"),
    2: _group(3),
    3: _arrive("seat:3", "Kd") + step(dealer="reject") + _group(3),
}


@pytest.mark.parametrize("count", [1, 2, 3])
def test_deal_done_only_when_every_seat_holds_exactly_two_cards(count: int) -> None:
    steps = START + _group(1) + _group(2) + SEAT_3_HOLDS[count]
    run = _run(steps + "".join(_group(seat) for seat in (4, 5, 6)))
    assert len(of_type(run.events, "deal.group.delivered")) == 6
    complete = of_type(run.events, "deal.complete")
    assert len(complete) == (1 if count == 2 else 0)


def test_deal_done_not_while_a_seat_holds_two_cards_that_are_not_its_group_s() -> None:
    """Two cards reach seat 6 before its group is out (each held, the dealer rejects): once
    every group is out and seat 5's is delivered, every seat holds two, but seat 6's group is
    still in the tray."""
    steps = START + "".join(_group(seat) for seat in (1, 2, 3, 4))
    for card in ("Kd", "Qd"):
        steps += _arrive("seat:6", card) + step(dealer="reject")
    steps += _dispense(seat=5) + _dispense(seat=6) + _arrive("seat:5", "Tc", "Jc")
    run = _run(steps)
    assert [data(e)["seat"] for e in of_type(run.events, "deal.group.delivered")] == [1, 2, 3, 4, 5]
    assert [h[0] for h in _holds(run)] == ["SEAT-SEQ", "SEAT-SEQ"]
    assert not of_type(run.events, "deal.complete")


def test_deal_done_not_while_a_replacement_is_owed() -> None:
    """A joker read at seat 4 is a scrap of paper: seat 4 is owed a card. When the last group is
    delivered every seat holds two cards, and the deal is still not complete."""
    steps = START + "".join(_group(seat) for seat in (1, 2, 3, 4, 5))
    steps += step(reader="arrive", zone="seat:4", uids=[JOKERS[0]]) + _group(6)
    run = _run(steps)
    assert data(one(run.events, "card.replacement.requested"))["seat"] == 4
    assert len(of_type(run.events, "deal.group.delivered")) == 6
    assert not of_type(run.events, "deal.complete")


def test_deal_done_the_deal_is_complete_once_when_a_card_is_replaced_after_it() -> None:
    """Seat 4's 8c is found boxed after deal.complete, before any action: it is replaced, and
    the deal is not complete a second time."""
    steps = START + DEAL + step(dealer="boxed", card="8c")
    steps += _dispense("extra", seat=4, count=1) + _arrive("seat:4")
    run = _run(steps)
    replaced = data(of_type(run.events, "deal.group.delivered")[-1])
    assert (replaced["seat"], replaced["replacement"]) == (4, True)
    assert len(of_type(run.events, "deal.complete")) == 1
    assert run.events[-1].type == "deal.group.delivered"


def test_deal_done_a_deal_completed_at_the_showdown_leaves_the_hand_at_the_showdown() -> None:
    """Every seat all in before seat 6's cards are read; the board is out: seat 6's cards then
    complete the deal, and the showdown goes on."""
    steps = START + "".join(_group(seat) for seat in range(1, 6)) + _dispense(seat=6)
    steps += "".join(act(seat, "allin") for seat in (3, 4, 5, 6, 1, 2))
    steps += "".join(step(auto="board", street=street) for street in ("flop", "turn", "river"))
    run = _run(steps + _arrive("seat:6", "Qc", "Kc"))
    assert _types(run)[-2:] == ["deal.group.delivered", "deal.complete"]
    assert run.state.hand is not None
    assert run.state.hand.phase.value == "showdown"


# --------------------------------------------------------------------------- replacements


def test_exp_other_the_replacement_is_asked_for_once_every_group_is_delivered() -> None:
    """Seat 4's 8c is exposed while seats 5 and 6 still wait for their groups."""
    steps = START + "".join(_group(seat) for seat in (1, 2, 3, 4))
    steps += step(dealer="exposed", card="8c") + _group(5) + _group(6)
    run = _run(steps)
    types = _types(run)
    last_group = max(i for i, t in enumerate(types) if t == "deal.group.delivered")
    asked = types.index("card.replacement.requested")
    assert asked > last_group
    assert data(run.events[last_group])["seat"] == 6
    assert data(run.events[asked])["seat"] == 4


def test_exp_repl_check_a_replacement_is_delivered_as_one_card_of_its_own_group() -> None:
    steps = START + "".join(_group(seat) for seat in (1, 2, 3, 4))
    steps += step(dealer="exposed", card="8c") + _group(5) + _group(6)
    steps += _dispense("extra", seat=4, count=1) + _arrive("seat:4")
    run = _run(steps)
    group = data(of_type(run.events, "deal.group.dispensed")[-1])["group"]
    replaced = of_type(run.events, "deal.group.delivered")[-1]
    assert replaced.rules == ("EXP-REPL-CHECK",)
    assert data(replaced) == {
        "seat": 4,
        "group": group,
        "count": 1,
        "replacement": True,
        "cards": ["Ac"],
    }
    assert data(one(run.events, "deal.complete"))["seats"] == [1, 2, 3, 4, 5, 6]


#: What makes seat 4 owed one, two or three replacements: a joker, two, and a boxed card.
SCRAPS = {
    1: [step(reader="arrive", zone="seat:4", uids=[JOKERS[0]])],
    2: [step(reader="arrive", zone="seat:4", uids=[joker]) for joker in JOKERS],
    3: [step(reader="arrive", zone="seat:4", uids=[joker]) for joker in JOKERS]
    + [step(dealer="boxed", seat=4)],
}


@pytest.mark.parametrize("owed", [1, 2, 3])
def test_joker_boxed_each_replacement_owed_is_delivered_and_the_next_card_is_an_extra_card(
    owed: int,
) -> None:
    steps = START + DEAL + "".join(SCRAPS[owed])
    for _ in range(owed + 1):
        steps += _dispense("extra", seat=4, count=1) + _arrive("seat:4")
    run = _run(steps)
    assert [data(e)["seat"] for e in of_type(run.events, "card.replacement.requested")] == [
        4
    ] * owed
    replacements = [
        data(e) for e in of_type(run.events, "deal.group.delivered") if data(e).get("replacement")
    ]
    assert [(r["seat"], r["count"]) for r in replacements] == [(4, 1)] * owed
    assert _holds(run) == [("SEAT-COUNT", 4, "misdeal", "seat 4 holds an extra card")]


# --------------------------------------------------------------------------- extra cards


def test_extra_2_every_extra_card_from_the_second_on_is_extra_2_after_the_cutoff() -> None:
    """Seats 3 and 4 act (the cutoff passes); then three extra cards, the first at seat 1."""
    steps = START + DEAL + act(3, "call") + act(4, "call")
    for seat in (1, 2, 5):
        steps += _dispense("extra", count=1) + _arrive(f"seat:{seat}")
    run = _run(steps)
    extra_1 = [e for e in of_type(run.events, "irregularity.detected") if e.rules == ("EXTRA-1",)]
    assert [data(e)["seat"] for e in extra_1] == [1]
    noted = [
        (d["rule"], d["reason"], d["cutoff_passed"])
        for d in map(data, of_type(run.events, "irregularity.detected"))
        if d.get("cutoff_passed")
    ]
    assert noted == [
        ("EXTRA-2+", "2 extra cards dealt", True),
        ("EXTRA-2+", "3 extra cards dealt", True),
    ]
    assert [(h[0], h[1], h[2]) for h in _holds(run)] == [
        ("EXTRA-2+", 2, "continue"),
        ("EXTRA-2+", 5, "continue"),
    ]


@pytest.mark.parametrize(
    ("seat", "first"),
    [(4, True), (5, False), (3, False), (2, False), (1, False)],
)
def test_extra_1_only_the_first_seat_s_extra_card_is_the_burn(seat: int, first: bool) -> None:
    """Button 3: seat 4 is the first seat, seat 3 the last; seats 1 and 2 come after the
    first in the deal though their numbers are lower."""
    run = _run(START + DEAL + _dispense("extra", count=1) + _arrive(f"seat:{seat}"), button=3)
    burned = of_type(run.events, "card.burn.assigned")
    if first:
        assert [(data(e)["street"], e.rules) for e in burned] == [
            ("flop", ("BURN-ASSIGN", "EXTRA-1"))
        ]
        assert not of_type(run.events, "hand.hold")
        return
    assert not burned
    assert _holds(run) == [("SEAT-COUNT", seat, "misdeal", f"seat {seat} holds an extra card")]


@pytest.mark.parametrize(("actions", "ruling"), [(0, "misdeal"), (1, "misdeal"), (2, "dead_hand")])
def test_seat_count_an_extra_card_is_a_misdeal_before_the_cutoff_and_a_dead_hand_after(
    actions: int, ruling: str
) -> None:
    steps = START + DEAL + "".join(act(seat, "call") for seat in (3, 4)[:actions])
    run = _run(steps + _dispense("extra", count=1) + _arrive("seat:5"))
    assert _holds(run) == [("SEAT-COUNT", 5, ruling, "seat 5 holds an extra card")]


@pytest.mark.parametrize("extra_single", ["burn", "misdeal"])
def test_extra_1_the_first_player_s_extra_card_is_the_burn_or_a_misdeal_by_profile(
    extra_single: str,
) -> None:
    run = _run(
        START + DEAL + _dispense("extra", count=1) + _arrive("seat:1"),
        house_rules=f'{{ "extra.single" = "{extra_single}" }}',
    )
    misdeals = [(data(e)["rule"], data(e)["reason"]) for e in of_type(run.events, "hand.misdeal")]
    burned = [data(e)["card"] for e in of_type(run.events, "card.burn.assigned")]
    if extra_single == "misdeal":
        assert misdeals == [("EXTRA-1", "an extra card to the first player")]
        assert burned == []
    else:
        assert misdeals == []
        assert burned == ["Ac"]


# --------------------------------------------------------------------------- cards at seats


@pytest.mark.parametrize("seat", [None, 3])
def test_seat_count_a_card_at_a_seat_while_the_turn_waits_in_the_tray_is_an_extra_card(
    seat: int | None,
) -> None:
    """After the flop round, the turn's burn is read and the turn is dispensed (with or without a
    seat); its card is read at seat 3. It belongs to no hole group: seat 3 holds an extra card."""
    steps = START + DEAL + step(auto="check_round") + step(auto="board", street="flop")
    steps += step(auto="check_round") + _dispense("burn") + _arrive("burn")
    run = _run(steps + _dispense("turn", seat=seat) + _arrive("seat:3"))
    assert _holds(run) == [("SEAT-COUNT", 3, "dead_hand", "seat 3 holds an extra card")]
    assert not [e for e in of_type(run.events, "deal.group.delivered") if data(e)["seat"] == 3][1:]


def test_seat_count_a_card_after_both_cards_of_a_split_group_were_read_is_an_extra_card() -> None:
    """After the cutoff, both cards of seat 6's group are read at seat 5 (SEAT-SEQ, the floor
    decides); a card from the deck then read at seat 4 is of no group: an extra card."""
    steps = START + "".join(_group(seat) for seat in range(1, 6)) + _dispense(seat=6)
    steps += act(3, "call") + act(4, "call")
    steps += _arrive("seat:5", "Qc") + _arrive("seat:5", "Kc") + _arrive("seat:4", "Kd")
    run = _run(steps)
    assert [(h[0], h[1]) for h in _holds(run)] == [
        ("SEAT-SEQ", 5),
        ("SEAT-SEQ", 5),
        ("SEAT-COUNT", 4),
    ]
    assert _holds(run)[-1] == ("SEAT-COUNT", 4, "dead_hand", "seat 4 holds an extra card")


# --------------------------------------------------------------------------- the settle check


@pytest.mark.parametrize(
    ("rule", "held_seat", "counted"),
    [
        ("SEAT-COUNT", 3, False),
        ("SEAT-COUNT", 2, True),
        ("SEAT-SEQ", 3, True),
        ("DE-1546a", 3, True),
    ],
)
def test_seat_count_only_a_seat_count_hold_on_the_seat_stands_for_its_count(
    rule: str, held_seat: int, counted: bool
) -> None:
    """Seat 3 holds one card when the readers settle; a hold on ``rule`` waits on
    ``held_seat``."""
    steps = START + _group(1) + _group(2) + _group(3, '["6c"]')
    steps += "".join(_group(seat) for seat in (4, 5, 6))
    steps += step(dealer="hold", rule=rule, seat=held_seat) + step(wait=10)
    run = _run(steps, settle=5)
    counts = [h for h in _holds(run) if h[3] == "seat 3 holds 1 card"]
    assert counts == ([("SEAT-COUNT", 3, "misdeal", "seat 3 holds 1 card")] if counted else [])


def test_seat_count_a_folded_seat_is_skipped_and_the_seats_after_it_are_counted() -> None:
    steps = START + "".join(_group(seat) for seat in (1, 2, 3, 4)) + _group(5, '["Tc"]')
    steps += _group(6) + act(3, "fold") + step(wait=10)
    run = _run(steps, settle=5)
    assert _holds(run) == [("SEAT-COUNT", 5, "misdeal", "seat 5 holds 1 card")]


@pytest.mark.parametrize(("count", "said"), [(1, "1 card"), (3, "3 cards")])
def test_seat_count_after_the_cutoff_the_count_is_said_in_words(count: int, said: str) -> None:
    """Seat 5 holds one card, or three (a card before its group came, the hold rejected)."""
    seat_5 = _group(5, '["Tc"]') if count == 1 else (
        _arrive("seat:5", "Kd") + step(dealer="reject") + _group(5)
    )  # fmt: skip
    steps = START + "".join(_group(seat) for seat in (1, 2, 3, 4)) + seat_5 + _group(6)
    run = _run(steps + act(3, "call") + act(4, "call") + step(wait=12), settle=10)
    reason = f"seat 5 holds {said}"
    noted = [
        (d["reason"], d["rule"]) for d in map(data, of_type(run.events, "irregularity.detected"))
    ]
    assert noted == [(reason, "SEAT-COUNT")]
    assert _holds(run)[-1] == ("SEAT-COUNT", 5, "dead_hand", reason)


def test_de_1544a_grp_a_group_from_another_deck_is_reported_and_still_delivered_at_its_seat() -> (
    None
):
    """Seat 3's group waits in the tray when a new deck is shuffled mid-hand; that deck's first
    group (numbered 1 again) goes to seat 4 and both its cards are read there."""
    steps = START + _group(1) + _group(2) + _dispense(seat=3)
    steps += step(shuffler="shuffle", order=["Kd", "Qd", "Jd", "Td"])
    run = _run(steps + _dispense(seat=4) + _arrive("seat:4"))
    reasons = [data(e)["reason"] for e in of_type(run.events, "irregularity.detected")]
    assert reasons == ["a group dispensed from another deck"]
    delivered = [
        (d["seat"], d["group"], d["cards"])
        for d in map(data, of_type(run.events, "deal.group.delivered"))
    ]
    assert delivered[-1] == (4, 1, ["Kd", "Qd"])


def test_exp_repl_exposed_a_card_dealt_again_as_a_replacement_is_still_a_replacement() -> None:
    """Delaware (a burn may go back on the deck): seat 4's replacement Ac is read in the burns and
    put back on the deck; a second joker at seat 4 is replaced by that same Ac. Exposed, it is
    an exposed replacement."""
    steps = START + DEAL + step(reader="arrive", zone="seat:4", uids=[JOKERS[0]])
    steps += _dispense("extra", seat=4, count=1) + _arrive("seat:4")
    steps += _arrive("burn", "Ac") + _arrive("shuffler_in", "Ac")
    steps += step(reader="arrive", zone="seat:4", uids=[JOKERS[1]]) + _arrive("seat:4", "Ac")
    text = scenario_text(
        SEATS, 6, steps + step(dealer="exposed", card="Ac"), profile="de-charitable", deck=ORDER
    )
    run = run_text(text)
    replaced = [d["cards"] for d in map(data, of_type(run.events, "deal.group.delivered"))][-2:]
    assert replaced == [["Ac"], ["Ac"]]
    misdeal = data(one(run.events, "hand.misdeal"))
    assert (misdeal["rule"], misdeal["reason"]) == (
        "EXP-REPL-EXPOSED",
        "the replacement card was exposed too",
    )
