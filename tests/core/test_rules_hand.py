"""The rules of a normal hand, one test (or more) per catalogue ID, named after it."""

from __future__ import annotations

from controller.table.inputs import Zone
from tests.helpers import (
    DEAL,
    RUNOUT,
    START,
    act,
    data,
    of_type,
    one,
    run_file,
    run_text,
    scenario_text,
    step,
)

SIX = {1: 100, 2: 100, 3: 100, 4: 100, 5: 100, 6: 100}
ROYAL_BOARD = (
    'order = ["2c", "3d", "4c", "5d", "6c", "7d", "8c", "9d", "2h", "3h", "4h", "5h",'
    ' "6h", "As", "Ks", "Qs", "7h", "Js", "8h", "Ts"]'
)


def test_de_1537_5_7_blinds_are_the_two_seats_left_of_the_button() -> None:
    run = run_text(scenario_text({2: 50, 5: 50, 9: 50}, 9, START))
    started = one(run.events, "hand.started")
    assert started.data["small_blind"] == 2
    assert started.data["big_blind"] == 5
    posts = [e.data for e in of_type(run.events, "betting.action")]
    assert [(p["seat"], p["blind"], p["amount"]) for p in posts] == [(2, "small", 1), (5, "big", 2)]
    assert "DE-1537-5/7" in started.rules


def test_de_1537_5_7_a_short_stack_posts_what_it_has_all_in() -> None:
    run = run_text(scenario_text({1: 1, 2: 50, 3: 50}, 3, START, ante=1))
    posts = [e.data for e in of_type(run.events, "betting.action")]
    antes = [p for p in posts if p["blind"] == "ante"]
    assert [p["amount"] for p in antes] == [1, 1, 1]
    small = next(p for p in posts if p["blind"] == "small")
    assert small == {**small, "seat": 1, "amount": 0, "all_in": True}


def test_hu_button_posts_the_small_blind_and_the_other_seat_gets_the_first_group() -> None:
    run = run_text(scenario_text({3: 50, 7: 50}, 7, DEAL + RUNOUT + step(auto="showdown")))
    started = one(run.events, "hand.started")
    assert (started.data["small_blind"], started.data["big_blind"]) == (7, 3)
    assert "HU" in started.rules
    dispensed = [e.data["seat"] for e in of_type(run.events, "deal.group.dispensed")][:2]
    assert dispensed == [3, 7]
    actions = [(e.data["seat"], e.data["action"]) for e in of_type(run.events, "betting.action")]
    # the button acts first before the flop, last after it
    assert actions[2] == (7, "call")
    assert actions[4][0] == 3


def test_hu_first_group_to_the_button_when_the_house_says_so() -> None:
    text = scenario_text({3: 50, 7: 50}, 7, DEAL, house_rules='{ "headsup.first_card" = "button" }')
    dispensed = [e.data["seat"] for e in of_type(run_text(text).events, "deal.group.dispensed")]
    assert dispensed == [7, 3]


def test_rr_bb_rot_groups_go_left_of_the_button_first_and_the_button_last() -> None:
    run = run_text(scenario_text({1: 50, 4: 50, 6: 50, 9: 50}, 6, DEAL))
    assert [e.data["seat"] for e in of_type(run.events, "deal.group.dispensed")] == [9, 1, 4, 6]


def test_rr_bb_rot_the_button_moves_to_the_next_seat_with_chips() -> None:
    # seat 1 (next after the button) busts in the hand, so the button skips it
    steps = DEAL + act(1, "allin") + act(2, "call") + act(3, "fold") + RUNOUT
    text = scenario_text(
        {1: 20, 2: 100, 3: 100}, 3, steps + step(auto="showdown"), deck=ROYAL_BOARD
    )
    run = run_text(text)
    done = one(run.events, "hand.completed")
    assert "RR-BB-ROT" in done.rules
    expected = 2 if done.data["stacks"]["1"] == 0 else 1
    assert done.data["next_button"] == expected
    assert run.state.button == expected


def test_de_1544a_grp_a_group_is_delivered_when_both_cards_are_read_at_its_seat() -> None:
    steps = (
        START
        + step(shuffler="dispense", purpose="hole", seat=1)
        + step(reader="arrive", zone="seat:1", cards=["As"])
    )
    run = run_text(scenario_text({1: 50, 2: 50}, 2, steps, deck='order = ["As", "Kd"]'))
    assert not of_type(run.events, "deal.group.delivered")
    steps += step(reader="arrive", zone="seat:1", cards=["Kd"])
    run = run_text(scenario_text({1: 50, 2: 50}, 2, steps, deck='order = ["As", "Kd"]'))
    delivered = one(run.events, "deal.group.delivered")
    assert delivered.data == {"seat": 1, "group": 1, "count": 2}
    assert delivered.secret == {"cards": ["As", "Kd"]}
    assert "DE-1544a-GRP" in delivered.rules


def test_deal_done_only_when_every_seat_holds_its_two_cards() -> None:
    partial = (
        START
        + step(shuffler="dispense", purpose="hole", seat=1)
        + step(reader="arrive", zone="seat:1")
    )
    run = run_text(scenario_text({1: 50, 2: 50, 3: 50}, 3, partial + act(3, "call")))
    assert not of_type(run.events, "deal.complete")
    rejected = one(run.events, "command.rejected")
    assert "hole groups are not all dealt" in rejected.data["reason"]
    # every group dispensed but seat 3's cards not read yet: betting may start, no DEAL-DONE
    unread = (
        START
        + "".join(step(shuffler="dispense", purpose="hole", seat=s) for s in (1, 2, 3))
        + step(reader="arrive", zone="seat:1", cards=["2c", "3c"])
    )
    deck = 'order = ["2c", "3c", "4c", "5c", "6c", "7c"]'
    run = run_text(scenario_text({1: 50, 2: 50, 3: 50}, 3, unread + act(3, "call"), deck=deck))
    assert not of_type(run.events, "deal.complete")
    assert of_type(run.events, "betting.action")[-1].data["action"] == "call"
    run = run_text(scenario_text({1: 50, 2: 50, 3: 50}, 3, DEAL + act(3, "call")))
    complete = one(run.events, "deal.complete")
    assert complete.rules == ("DEAL-DONE",)
    assert complete.data == {"seats": [1, 2, 3]}


def test_shf_count_a_short_deck_is_rejected_and_cannot_deal() -> None:
    steps = '[[step]]\ndealer = "start_hand"\n' + step(shuffler="shuffle", verdict="short")
    steps += step(shuffler="dispense", purpose="hole", seat=1)
    run = run_text(scenario_text({1: 50, 2: 50}, 2, steps))
    rejected = one(run.events, "deck.rejected")
    assert "SHF-COUNT" in rejected.rules
    assert rejected.data["counted"] == 51
    assert not of_type(run.events, "deck.verified")
    assert not of_type(run.events, "deal.group.dispensed")
    hold = one(run.events, "hand.hold")
    assert hold.rules == ("SHF-COUNT",)
    assert hold.data["ruling"] == "misdeal"


def test_shf_recog_a_duplicate_card_in_the_deck_check_rejects_the_deck() -> None:
    steps = '[[step]]\ndealer = "start_hand"\n' + step(shuffler="shuffle", verdict="duplicate")
    run = run_text(scenario_text({1: 50, 2: 50}, 2, steps))
    rejected = one(run.events, "deck.rejected")
    assert "SHF-RECOG" in rejected.rules
    assert rejected.data["duplicates"]


def test_burn_assign_a_burn_goes_before_each_street() -> None:
    run = run_text(scenario_text({1: 50, 2: 50}, 2, DEAL + RUNOUT))
    burns = of_type(run.events, "card.burn.assigned")
    assert [b.data["street"] for b in burns] == ["flop", "turn", "river"]
    assert all(b.rules == ("BURN-ASSIGN",) and b.secret for b in burns)


def test_de_1548_every_action_is_recorded_as_entered() -> None:
    run = run_text(scenario_text({1: 50, 2: 50, 3: 50}, 3, DEAL + act(3, "raise", 6)))
    action = of_type(run.events, "betting.action")[-1]
    assert action.rules == ("DE-1548",)
    assert action.data == {**action.data, "seat": 3, "action": "raise", "to": 6, "put_in": 6}


def test_de_1550a_no_showdown_when_one_hand_is_left() -> None:
    run = run_text(
        scenario_text(
            {1: 50, 2: 50, 3: 50}, 3, DEAL + act(3, "raise", 6) + act(1, "fold") + act(2, "fold")
        )
    )
    assert not of_type(run.events, "showdown.order")
    proposed = one(run.events, "pot.award.proposed")
    assert proposed.data["payouts"] == {"3": 5}
    closed = one(run.events, "betting.round.closed")
    assert closed.data["returned"] == {"3": 4}


def test_de_1550a_showdown_with_two_live_hands_after_the_river() -> None:
    run = run_text(scenario_text({1: 50, 2: 50}, 2, DEAL + RUNOUT))
    assert "DE-1550a" in one(run.events, "showdown.order").rules


def test_de_1550b2_cards_speak_the_best_tabled_hand_wins() -> None:
    run = run_file("normal-hand-4-seats.toml")
    tabled = {e.data["seat"]: e.data for e in of_type(run.events, "showdown.hand.tabled")}
    assert tabled[4]["category"] == "Flush"
    assert one(run.events, "pot.awarded").data["payouts"] == {"4": 24}
    assert all("DE-1550b2" in e.rules for e in of_type(run.events, "showdown.hand.tabled"))


def test_de_1551_the_river_bettor_shows_first() -> None:
    run_file("T15-showdown-bettor-first.toml")


def test_de_1551_when_all_check_the_first_to_act_shows_first() -> None:
    run_file("T16-showdown-all-checked.toml")


def test_de_1551_delaware_goes_clockwise_even_with_a_side_pot() -> None:
    run = run_file("T17-showdown-clockwise-de.toml")
    assert "RR-SD-7" not in one(run.events, "showdown.order").rules


def test_rr_sd_7_side_pot_players_show_before_the_main_pot_all_in() -> None:
    run_file("T17-showdown-side-pot-first-rrop.toml")


def test_de_1552_the_pot_is_awarded_only_when_the_dealer_pushes_it() -> None:
    steps = DEAL + RUNOUT + step(dealer="table", seat=1) + step(dealer="table", seat=2)
    run = run_text(scenario_text({1: 50, 2: 50}, 2, steps))
    assert not of_type(run.events, "pot.awarded")
    assert run.state.hand is not None
    proposed = one(run.events, "pot.award.proposed")
    assert proposed.needs_confirm
    assert "DE-1552" in proposed.rules
    run = run_text(scenario_text({1: 50, 2: 50}, 2, steps + step(auto="showdown")))
    offer = one(run.events, "pot.award.proposed").data
    assert one(run.events, "pot.awarded").data == {k: offer[k] for k in ("pots", "payouts")}
    assert run.state.hand is None


def test_de_1552_award_without_a_proposal_is_rejected() -> None:
    run = run_text(scenario_text({1: 50, 2: 50}, 2, DEAL + step(dealer="award")))
    rejected = one(run.events, "command.rejected")
    assert rejected.data == {"command": "award", "reason": "there is no proposed award to push"}


def test_pot_sep_each_side_pot_is_split_on_its_own() -> None:
    # seat 1 all in for 10 with the best hand; 2 and 3 tie for the side pot
    deck = (
        'order = ["As", "Ah", "Kc", "Qd", "Kd", "Qc", "3h", "2c", "7d", "9h", "5h", "Js", "6d",'
        ' "4s"]'
    )
    steps = (
        DEAL
        + act(3, "call")
        + act(1, "allin")
        + act(2, "call")
        + act(3, "call")
        + step(auto="board", street="flop")
        + act(2, "bet", 10)
        + act(3, "call")
        + "".join(
            step(auto="board", street=s) + step(auto="check_round") for s in ("turn", "river")
        )
        + step(auto="showdown")
    )
    run = run_text(scenario_text({1: 10, 2: 100, 3: 100}, 3, steps, deck=deck))
    proposed = one(run.events, "pot.award.proposed")
    assert "POT-SEP" in proposed.rules
    pots = proposed.data["pots"]
    assert [p["eligible"] for p in pots] == [[2, 3], [1, 2, 3]]  # side pot first, main last
    assert pots[1]["winners"] == {"1": 30}
    assert pots[0]["winners"] == {"2": 10, "3": 10}


LITERAL_DECK = (
    'order = ["7h", "8h", "Jh", "Th", "2c", "3d", "Jc", "Td", "4c", "5d", "6c", "9d",'
    ' "2h", "As", "Ks", "Qs", "3h", "2d", "4h", "3c"]'
)


def test_de_1553_literal_reading_gives_the_odd_chip_to_the_first_live_player() -> None:
    # seats 2 and 4 tie with straights; seat 1 is live but loses. Read literally, § 1553 gives
    # the odd chip to seat 1, the first live player left of the button.
    steps = (
        DEAL
        + act(3, "fold")
        + act(4, "call")
        + act(5, "fold")
        + act(6, "fold")
        + act(1, "call")
        + act(2, "check")
        + step(auto="board", street="flop")
        + act(1, "check")
        + act(2, "bet", 3)
        + act(4, "call")
        + act(1, "call")
        + "".join(
            step(auto="board", street=s) + step(auto="check_round") for s in ("turn", "river")
        )
        + step(auto="showdown")
    )
    literal = '{ "odd_chip.recipient" = "first_live_player_literal" }'
    run = run_text(
        scenario_text(
            SIX, 6, steps, profile="de-charitable", house_rules=literal, deck=LITERAL_DECK
        )
    )
    proposed = one(run.events, "pot.award.proposed")
    assert "DE-1553" in proposed.rules
    (pot,) = proposed.data["pots"]
    assert pot == {
        "amount": 15,
        "eligible": [1, 2, 4],
        "winners": {"1": 1, "2": 7, "4": 7},
        "odd_chips": {"1": 1},
    }
    # the catalogue's default reading pays the first tied winner instead
    run = run_text(scenario_text(SIX, 6, steps, profile="de-charitable", deck=LITERAL_DECK))
    (pot,) = one(run.events, "pot.award.proposed").data["pots"]
    assert pot["odd_chips"] == {"2": 1}


def _odd_pot_steps() -> str:
    return (
        DEAL
        + act(3, "fold")
        + act(4, "call")
        + act(5, "fold")
        + act(6, "fold")
        + act(1, "fold")
        + act(2, "check")
        + RUNOUT
        + step(auto="showdown")
    )


def test_rr_tie_3_4_two_way_split_odd_chip_to_the_first_winner_left_of_the_button() -> None:
    run_file("T18-odd-chip-two-way.toml")


def test_rr_tie_3_4_at_most_one_odd_chip_each() -> None:
    run_file("T19-odd-chips-three-way.toml")


def test_tda_odd_the_tournament_profile_cites_the_tda_rule() -> None:
    run = run_text(
        scenario_text(SIX, 6, _odd_pot_steps(), profile="tda-tournament", deck=ROYAL_BOARD)
    )
    proposed = one(run.events, "pot.award.proposed")
    assert "TDA-ODD" in proposed.rules
    (pot,) = proposed.data["pots"]
    assert pot["amount"] == 5
    assert pot["odd_chips"] == {"2": 1}


def test_sec_1_hole_cards_travel_only_in_secure_fields() -> None:
    run = run_text(scenario_text({1: 50, 2: 50}, 2, DEAL))
    for event in of_type(run.events, "deal.group.delivered"):
        assert "cards" not in event.data
        assert len(data(event)["cards"]) == 2
        assert event.secure
        assert event.secure_view()["secure"] is True


def test_foul_foreign_an_unknown_tag_raises_an_integrity_alarm() -> None:
    run = run_text(
        scenario_text(
            {1: 50, 2: 50}, 2, DEAL + step(reader="arrive", zone="board", uids=["0400000000abcd"])
        )
    )
    alarm = one(run.events, "integrity.alarm")
    assert alarm.rules == ("FOUL-FOREIGN",)
    assert alarm.severity == "critical"
    assert alarm.secret == {"uid": "0400000000abcd"}
    assert str(Zone.parse("board")) == alarm.data["zone"]
