"""Every rule of the catalogue the core decides, proved by its scenario files.

Each test plays the scenario files of one rule ID (their ``[[expect]]`` must hold) and checks that
the rule is cited by the events. ``docs/rules.md`` names these tests; ``test_docs_rules.py`` checks
that it does.
"""

from __future__ import annotations

from controller.table.state import BURN
from tests.helpers import SCENARIOS, run_file


def cited(rule: str, *files: str) -> None:
    """Play each file (its expectations must hold) and find ``rule`` among the events' rules."""
    for name in files:
        run = run_file(name)
        assert any(rule in event.rules for event in run.events), f"{name} never cites {rule}"


def test_de_1544a_appr_a_refused_shuffler_cannot_deal() -> None:
    cited("DE-1544a-APPR", "rule-DE-1544a-APPR.toml")


def test_shf_count_t1_short_deck() -> None:
    cited("SHF-COUNT", "T01-short-deck-rejected.toml")


def test_grp_size_t2_group_of_three() -> None:
    cited("GRP-SIZE", "T02-hole-group-of-three.toml")


def test_seat_count_t3_one_card_before_action() -> None:
    cited(
        "SEAT-COUNT", "T03-seat-reads-one-card.toml", "rule-SEAT-COUNT-reader-fault-rejected.toml"
    )


def test_seat_count_t4_one_card_after_the_cutoff() -> None:
    cited("SEAT-COUNT", "T04-seat-count-after-cutoff.toml")


def test_seat_count_not_counted_again_once_the_showdown_took_the_hand() -> None:
    """A killed or mucked hand may reach the muck before the settle check; a short live hand
    is still held then."""
    killed = run_file("rule-SEAT-COUNT-killed-hand-mucked.toml")
    assert not [e for e in killed.events if e.type == "hand.hold"]
    cited("SEAT-COUNT", "rule-SEAT-COUNT-at-showdown.toml")


def test_seat_wrong_first_first_group_at_the_wrong_seat() -> None:
    cited("SEAT-WRONG-FIRST", "rule-SEAT-WRONG-FIRST.toml")


def test_seat_seq_group_to_the_wrong_seat_and_split_groups() -> None:
    cited("SEAT-SEQ", "rule-SEAT-SEQ.toml", "rule-SEAT-SEQ-split-group.toml")


def test_seat_empty_cards_at_a_seat_not_dealt_in() -> None:
    cited("SEAT-EMPTY", "rule-SEAT-EMPTY.toml")


def test_seat_dealt_out_a_seat_with_no_cards() -> None:
    cited("SEAT-DEALT-OUT", "rule-SEAT-DEALT-OUT.toml")


def test_button_pos_misdeal_or_corrected_next_hand() -> None:
    cited("BUTTON-POS", "rule-BUTTON-POS.toml", "rule-BUTTON-POS-after-cutoff.toml")


def test_extra_1_t8_one_extra_card_becomes_the_burn() -> None:
    cited("EXTRA-1", "T08-one-extra-card-first-player.toml")


def test_extra_2_t9_two_extra_cards() -> None:
    cited("EXTRA-2+", "T09-two-extra-cards.toml")


def test_de_1546a_exposed_and_off_table_cards_are_dead() -> None:
    cited(
        "DE-1546a",
        "T05-first-card-exposed.toml",
        "rule-DE-1546a-off-table.toml",
        "rule-DE-1546a-after-deal.toml",
    )


def test_exp_first_t5_first_group_exposed() -> None:
    cited("EXP-FIRST", "T05-first-card-exposed.toml")


def test_exp_other_t6_replaced_and_burned() -> None:
    cited("EXP-OTHER", "T06-other-card-exposed-becomes-burn.toml")


def test_exp_repl_check_replacement_not_the_next_card() -> None:
    cited("EXP-REPL-CHECK", "rule-EXP-REPL-CHECK.toml")


def test_exp_multi_t7_two_exposed_cards() -> None:
    cited("EXP-MULTI", "T07-two-cards-exposed.toml")


def test_exp_repl_exposed_replacement_exposed_too() -> None:
    cited("EXP-REPL-EXPOSED", "rule-EXP-REPL-EXPOSED.toml")


def test_boxed_one_replaced_two_misdeal() -> None:
    cited("BOXED", "rule-BOXED.toml", "rule-BOXED-two.toml")


def test_shown_by_player_is_public_and_no_misdeal() -> None:
    cited("SHOWN-BY-PLAYER", "rule-SHOWN-BY-PLAYER.toml")


def test_md_cutoff_two_actions_and_the_floor_override() -> None:
    cited("MD-CUTOFF", "rule-MD-CUTOFF.toml", "rule-MD-CUTOFF-floor-override.toml")


def test_md_redeal_chips_back_same_button_same_players() -> None:
    cited("MD-REDEAL", "rule-MD-REDEAL.toml")


def test_foul_dup_t13_second_ace_voids() -> None:
    cited("FOUL-DUP", "T13-duplicate-card-voids.toml")


def test_foul_foreign_t14_card_of_deck_b_voids() -> None:
    cited("FOUL-FOREIGN", "T14-foreign-card-voids.toml")


def test_defect_knower_is_recorded() -> None:
    cited("DEFECT-KNOWER", "rule-DEFECT-KNOWER.toml")


def test_card_from_muck_is_held_then_dead() -> None:
    cited("CARD-FROM-MUCK", "rule-CARD-FROM-MUCK.toml")


def test_joker_is_replaced() -> None:
    cited("JOKER", "rule-JOKER.toml")


def test_de_1547_sep_t22_burn_into_the_muck() -> None:
    cited("DE-1547-SEP", "T22-burn-into-muck.toml")


def test_de_1547_ret_burn_back_on_the_deck() -> None:
    cited("DE-1547-RET", "rule-DE-1547-RET.toml", "rule-DE-1547-RET-not-allowed.toml")


def test_burn_miss_flop_turn_and_rejected() -> None:
    cited(
        "BURN-MISS",
        "rule-BURN-MISS.toml",
        "rule-BURN-MISS-turn.toml",
        "rule-BURN-MISS-rejected.toml",
    )


def test_burn_extra_second_burn_is_the_next_card() -> None:
    cited("BURN-EXTRA", "rule-BURN-EXTRA.toml")


def test_flop_count_t11_four_flop_cards() -> None:
    cited("FLOP-COUNT", "T11-four-flop-cards.toml")


def test_flop_prem_t10_premature_flop() -> None:
    cited("FLOP-PREM", "T10-premature-flop.toml")


def test_turn_prem_t12_premature_turn() -> None:
    cited("TURN-PREM", "T12-premature-turn.toml")


def test_river_prem_premature_river() -> None:
    cited("RIVER-PREM", "rule-RIVER-PREM.toml")


def test_board_group_flop_of_four_held() -> None:
    cited("BOARD-GROUP", "rule-BOARD-GROUP.toml")


# The board family: every street x premature or wrong size x burn dealt or not x dealer- or
# host-paced (tests/scenarios/board-*.toml, each played in both modes by tests/rig).


def board_files(street: str, kind: str) -> list[str]:
    """The family's files for one street and one kind of mistake, both paces, burn or not."""
    names = sorted(p.name for p in SCENARIOS.glob(f"board-*{street}-{kind}*.toml"))
    assert len(names) >= 4, names
    return names


def test_flop_prem_after_its_burn_or_not_dealer_and_host_paced() -> None:
    cited("FLOP-PREM", *board_files("flop", "premature"))


def test_turn_prem_after_its_burn_the_burn_stays_and_the_new_turn_has_its_own() -> None:
    for name in board_files("turn", "premature"):
        run = run_file(name)
        hand = run.state.last_hand
        assert hand is not None
        assert "TURN-PREM" in {r for e in run.events for r in e.rules}
        turn_burns = [
            e
            for e in run.events
            if e.type == "card.burn.assigned" and e.data.get("street") == "turn"
        ]
        # burned before the premature card: that burn and the turn's own; else the turn's only
        assert len(turn_burns) == (1 if "no-burn" in name else 2), name
        assert len(hand.cards.at(BURN)) == 1 + len(turn_burns)  # and the flop's: none for the river


def test_river_prem_after_its_burn_or_not_dealer_and_host_paced() -> None:
    cited("RIVER-PREM", *board_files("river", "premature"))


def test_flop_count_four_flop_cards_reaching_the_board_are_dealt_again() -> None:
    cited("FLOP-COUNT", *board_files("flop", "four"))


def test_board_group_wrong_size_turn_and_river_groups_that_reach_the_board() -> None:
    cited("BOARD-GROUP", *board_files("turn", "two"), *board_files("river", "two"))


def test_board_family_no_betting_round_is_lost_or_invented() -> None:
    order = ["preflop", "flop", "turn", "river"]
    for path in sorted(SCENARIOS.glob("board-*.toml")):
        run = run_file(path.name)
        closed = [e.data["street"] for e in run.events if e.type == "betting.round.closed"]
        assert closed == order, f"{path.name}: rounds closed {closed}"
        assert run.state.hand is None
        assert run.state.last_hand is not None
        assert len(run.state.last_hand.cards.board) == 5


def test_board_after_end_changes_nothing() -> None:
    cited("BOARD-AFTER-END", "rule-BOARD-AFTER-END.toml")


def test_stub_disorder_reshuffles_the_stub() -> None:
    cited("STUB-DISORDER", "rule-STUB-DISORDER.toml")


def test_de_1548_correction_before_the_next_action() -> None:
    cited("DE-1548", "rule-DE-1548-correction.toml")


def test_de_1549a_under_call() -> None:
    cited("DE-1549a", "rule-DE-1549a.toml")


def test_de_1549b_oversized_chip_is_a_call() -> None:
    cited("DE-1549b", "rule-DE-1549b.toml")


def test_tda_sa_three_actions() -> None:
    cited("TDA-SA", "rule-TDA-SA.toml")


def test_de_1550b1_one_card_shown() -> None:
    cited("DE-1550b1", "rule-DE-1550b1.toml")


def test_de_1550b2_verbal_concession_is_not_binding() -> None:
    cited("DE-1550b2", "rule-DE-1550b2-verbal-concession.toml")


def test_de_1550b3_6_mucked_card_dead_or_protected() -> None:
    cited("DE-1550b3/6", "rule-DE-1550b3-6.toml", "rule-DE-1550b3-6-protected.toml")


def test_de_1550b5_left_the_table() -> None:
    cited("DE-1550b5", "rule-DE-1550b5.toml")


def test_allin_faceup_tables_before_the_runout() -> None:
    cited("ALLIN-FACEUP", "rule-ALLIN-FACEUP.toml")


def test_rr_sd_1_contested_pots_need_tabled_hands() -> None:
    cited("RR-SD-1", "rule-RR-SD-1.toml")


def test_rr_sd_4_losers_killed_before_the_push() -> None:
    cited("RR-SD-4", "rule-RR-SD-4.toml")


def test_rr_sd_5_request_to_see() -> None:
    cited("RR-SD-5", "rule-RR-SD-5-winner-asks.toml", "rule-RR-SD-5-other-asks.toml")


def test_rr_he_6_t20_board_claim() -> None:
    cited("RR-HE-6", "T20-board-discarded-without-claim.toml", "T20b-board-declared-first.toml")


def test_de_1552_claims() -> None:
    cited("DE-1552", "rule-DE-1552-claim.toml", "rule-DE-1552-claim-too-late.toml")


def test_rr_bb_2_dead_and_moving_button() -> None:
    cited("RR-BB-2", "rule-RR-BB-2-dead-button.toml")


def test_rr_bb_2_moving_button_goes_on_to_the_next_player_dealt_in() -> None:
    """Nobody names the button: it passes a seat sitting out or left (the reported refusal)."""
    cited(
        "RR-BB-2",
        "rule-RR-BB-2-moving-sit-out-at-button.toml",
        "rule-RR-BB-2-moving-big-blind-leaves.toml",
    )
    for name in (
        "rule-RR-BB-2-moving-button.toml",
        "rule-RR-BB-2-moving-sit-out-before-button.toml",
    ):
        run = run_file(name)  # the button moves as usual: nothing passed, RR-BB-2 not cited
        started = [e for e in run.events if e.type == "hand.started"]
        assert not any("RR-BB-2" in e.rules for e in started)


def test_rr_bb_2_dead_button_with_seats_sitting_out_leaving_and_after_heads_up() -> None:
    cited(
        "RR-BB-2",
        "rule-RR-BB-2-dead-sit-out-at-button.toml",
        "rule-RR-BB-2-dead-sit-out-before-button.toml",
        "rule-RR-BB-2-dead-big-blind-leaves.toml",
        "rule-RR-BB-2-dead-after-heads-up.toml",
    )


def test_hu_going_heads_up_the_last_big_blind_gets_the_button_and_back_to_three() -> None:
    cited(
        "HU",
        "rule-HU.toml",
        "rule-HU-button-leaves.toml",
        "rule-HU-small-blind-leaves.toml",
        "rule-HU-big-blind-leaves.toml",
        "rule-HU-dead-button-button-leaves.toml",
        "rule-HU-back-to-three-handed.toml",
    )


def test_md_redeal_keeps_a_button_that_passed_a_seat_and_a_dead_small_blind() -> None:
    cited(
        "MD-REDEAL",
        "rule-MD-REDEAL-button-past-a-seat-sitting-out.toml",
        "rule-MD-REDEAL-dead-small-blind.toml",
    )


def test_gli29_prog_failed_program_blocks_dealing() -> None:
    cited("GLI29-PROG", "rule-GLI29-PROG.toml")


def test_gli29_err_jam_held_until_a_new_deck() -> None:
    cited("GLI29-ERR-JAM", "rule-GLI29-ERR-JAM.toml")


def test_shf_mid_hand_t21_power_loss_during_the_deal() -> None:
    cited("SHF-MID-HAND", "T21-shuffler-power-loss-mid-deal.toml")


def test_shf_door_lid_open_during_the_hand() -> None:
    cited("SHF-DOOR", "rule-SHF-DOOR.toml", "rule-SHF-DOOR-dispense-before-recount.toml")


def test_shf_power_new_boot_id_during_the_hand() -> None:
    cited("SHF-POWER", "rule-SHF-POWER.toml")


def test_ctrl_power_hand_resumes() -> None:
    cited("CTRL-POWER", "rule-CTRL-POWER.toml")


def test_shf_info_broken_commitment() -> None:
    cited("SHF-INFO", "rule-SHF-INFO.toml")


def test_shf_info_the_reveal_catches_an_undispensed_card_read_at_its_seat() -> None:
    cited("SHF-INFO", "rule-SHF-INFO-undispensed-card.toml")


def test_house_rake_percent_cap_unit_minimum_pots_and_no_flop_no_drop() -> None:
    cited(
        "HOUSE-RAKE",
        "rule-HOUSE-RAKE.toml",
        "house-rake-cap.toml",
        "house-rake-cap-across-pots.toml",
        "house-rake-chip-unit.toml",
        "house-rake-minimum-pot.toml",
        "house-rake-main-pot-all.toml",
        "house-rake-main-pot-only.toml",
        "house-rake-no-flop-no-drop.toml",
        "house-rake-preflop-drop.toml",
    )


def test_house_drop_jackpot_above_the_threshold_only() -> None:
    cited(
        "HOUSE-DROP-JACKPOT",
        "rule-HOUSE-DROP-JACKPOT.toml",
        "house-drop-jackpot-below-threshold.toml",
    )


def test_house_time_once_per_period() -> None:
    cited("HOUSE-TIME", "rule-HOUSE-TIME.toml", "house-time-next-period.toml")


def test_ante_table_big_blind_and_button_antes_are_dead_money() -> None:
    cited("ANTE-TABLE", "rule-ANTE-TABLE.toml", "ante-button.toml", "ante-big-blind-short.toml")


def test_straddle_utg_mississippi_re_straddle_and_refusals() -> None:
    cited(
        "STRADDLE",
        "rule-STRADDLE.toml",
        "straddle-mississippi.toml",
        "straddle-re-straddle.toml",
        "straddle-refused.toml",
    )


def test_missed_blinds_posted_waited_and_new_players() -> None:
    cited(
        "MISSED-BLINDS",
        "rule-MISSED-BLINDS.toml",
        "missed-blinds-wait.toml",
        "missed-blinds-new-player-posts.toml",
        "missed-blinds-new-player-waits.toml",
        "missed-blinds-dead-button.toml",
    )


def test_missed_blinds_a_new_player_is_dealt_in_once_the_button_has_passed_it() -> None:
    cited(
        "MISSED-BLINDS",
        "missed-blinds-new-player-between-button-and-big-blind.toml",
        "missed-blinds-new-player-between-dead-button.toml",
        "missed-blinds-new-player-heads-up.toml",
    )


def test_run_twice_each_pot_split_between_the_runouts() -> None:
    cited(
        "RUN-TWICE",
        "rule-RUN-TWICE.toml",
        "run-twice-from-the-flop.toml",
        "run-twice-not-allowed.toml",
        "run-twice-host-paced.toml",
        "run-twice-burn-miss.toml",
    )


def test_floor_call_holds_the_hand_until_the_floor_rules() -> None:
    """A floor call mid-hand holds it: the dealer's action and a disputed award's push are
    refused until the floor rules (a misdeal, or the award standing)."""
    cited("FLOOR-CALL", "rule-FLOOR-CALL.toml", "rule-FLOOR-CALL-disputed-award.toml")
