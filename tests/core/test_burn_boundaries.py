"""The burn rules at each street and at each side of their counts.

DE-1547-SEP: a burn card read in the muck while the board is still to be completed is a
warning, whichever street it is and however few hands are live; once the river is out, the burns
going to the muck is how the hand ends. DE-1547-RET: a burn put back on the deck is taken off
its own street only. BURN-EXTRA and BURN-MISS name the street they happen on (the turn as well
as the flop), and RRoP 5.6 / RR Hold'em 2 decide a flop dealt without a burn by how many cards
were turned."""

from __future__ import annotations

import pytest

from controller.rules.ids import Rule
from controller.table.events import TableEvent
from controller.table.streets import Street
from tests.helpers import data, of_type, one, run_text

SEATS = '{ "1" = 100, "2" = 100, "3" = 100, "4" = 100, "5" = 100, "6" = 100 }'
ORDER = (
    '["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac", "2d", "3d", '
    '"4d", "5d", "6d", "7d", "8d"]'
)
STREETS = ("flop", "turn", "river")
STREET_ORDER = (Street.FLOP, Street.TURN, Street.RIVER)
#: The burn of each street in ORDER (twelve hole cards first, then burn and cards by street).
BURNS = {"flop": "Ac", "turn": "5d", "river": "7d"}


def _scenario(name: str, profile: str, steps: list[str], house_rules: str = "{}") -> str:
    """Scenario text: six seats of 100 (button 6, blinds 1/2), ORDER's deck, ``steps``."""
    return "\n".join(
        [
            "[scenario]",
            f'name = "{name}"',
            f'profile = "{profile}"',
            f"house_rules = {house_rules}",
            "[table]",
            f"stacks = {SEATS}",
            "button = 6",
            "blinds = [1, 2]",
            "[deck]",
            f"order = {ORDER}",
            *(f"[[step]]\n{step}" for step in steps),
        ]
    )


#: The hand to the end of the preflop betting, every seat in.
PREFLOP = ['dealer = "start_hand"', 'shuffler = "shuffle"', 'auto = "deal_hole"',
           'auto = "check_round"']  # fmt: skip
#: ... and the flop dealt and checked.
FLOP = [*PREFLOP, 'auto = "board"\nstreet = "flop"', 'auto = "check_round"']


def _arrive(zone: str, *cards: str) -> str:
    """The readers see ``cards`` (the cards dispensed last, when none are named) in ``zone``."""
    text = f'reader = "arrive"\nzone = "{zone}"'
    quoted = ", ".join(f'"{card}"' for card in cards)
    return f"{text}\ncards = [{quoted}]" if cards else text


def _dispense(purpose: str) -> str:
    return f'shuffler = "dispense"\npurpose = "{purpose}"'


def _fold(seat: int) -> str:
    return f'dealer = "action"\nseat = {seat}\naction = "fold"'


def _cited(event: TableEvent) -> list[str]:
    return [str(rule) for rule in event.rules]


def hand_with_a_burn_in_the_muck(after: str) -> str:
    """Six seats check every street down; the last street's burn (so far) is read in the muck
    once the betting after ``after`` closed."""
    steps = list(PREFLOP)
    for street in STREETS:
        steps += [f'auto = "board"\nstreet = "{street}"', 'auto = "check_round"']
        if street == after:
            steps.append(f'reader = "arrive"\nzone = "muck"\ncards = ["{BURNS[street]}"]')
    steps.append('auto = "showdown"')
    return _scenario(f"a burn in the muck after the {after}", "rrop-cash", steps)


@pytest.mark.parametrize(("after", "warned"), [("flop", True), ("turn", True), ("river", False)])
def test_de_1547_sep_a_burn_in_the_muck_before_the_board_is_complete_warns_at_every_street(
    after: str, warned: bool
) -> None:
    run = run_text(hand_with_a_burn_in_the_muck(after))
    warnings = [
        e for e in of_type(run.events, "irregularity.detected") if Rule.DE_1547_SEP.value in e.rules
    ]
    assert len(warnings) == (1 if warned else 0), [e.data for e in warnings]
    if warned:
        assert warnings[0].severity.value == "warn"
    # a warning only: the hand goes on to its award, never held
    assert of_type(run.events, "pot.awarded")
    assert not of_type(run.events, "hand.hold")


def _returned_turn_burn(*, returned: bool) -> str:
    """Delaware (burns may go back on top of the deck): the flop is out with its burn (Ac);
    the turn's burn (5d) is dispensed and read, then, if ``returned``, put back on the deck."""
    steps = [
        'dealer = "start_hand"',
        'shuffler = "shuffle"',
        'auto = "deal_hole"',
        'auto = "check_round"',
        'auto = "board"\nstreet = "flop"',
        'auto = "check_round"',
        'shuffler = "dispense"\npurpose = "burn"',
        'reader = "arrive"\nzone = "burn"',
    ]
    if returned:
        steps.append('reader = "arrive"\nzone = "shuffler_in"\ncards = ["5d"]')
    return _scenario("the turn burn back on the deck", "de-charitable", steps)


def test_de_1547_ret_the_burn_put_back_is_taken_off_its_own_street_and_the_stub_grows_by_one() -> (
    None
):
    before = run_text(_returned_turn_burn(returned=False)).state.hand
    after = run_text(_returned_turn_burn(returned=True)).state.hand
    assert before is not None
    assert after is not None
    assert dict(before.board_rulings.burn_for) == {Street.FLOP: "Ac", Street.TURN: "5d"}
    # the turn's burn went back: the flop's stays assigned
    assert dict(after.board_rulings.burn_for) == {Street.FLOP: "Ac"}
    assert after.deal.stub == before.deal.stub + 1


def test_de_1547_sep_a_burn_in_the_muck_warns_with_only_two_hands_live() -> None:
    """Four seats fold before the flop: two live hands are still a hand whose board is to come."""
    steps = [*PREFLOP[:3], *(_fold(seat) for seat in (3, 4, 5, 6)), 'auto = "check_round"',
             'auto = "board"\nstreet = "flop"', _arrive("muck", BURNS["flop"])]  # fmt: skip
    run = run_text(_scenario("heads-up burn in the muck", "rrop-cash", steps))
    assert run.state.hand is not None
    assert run.state.hand.live_count == 2
    warning = one(run.events, "irregularity.detected")
    assert _cited(warning) == [Rule.DE_1547_SEP.value]
    assert data(warning)["card"] == BURNS["flop"]


@pytest.mark.parametrize("returned", [Street.FLOP, Street.TURN, Street.RIVER])
def test_de_1547_ret_a_burn_put_back_is_taken_off_its_own_street_only(returned: Street) -> None:
    """Every burn is read (the river's is dispensed and read, the river not yet turned), then one
    goes back on the deck: the others stay assigned to their streets, whatever they sort as."""
    steps = [*FLOP, 'auto = "board"\nstreet = "turn"', 'auto = "check_round"']
    steps += [_dispense("burn"), _arrive("burn"), _arrive("shuffler_in", BURNS[returned.label])]
    hand = run_text(_scenario("a burn back on the deck", "de-charitable", steps)).state.hand
    assert hand is not None
    kept = {street: BURNS[street.label] for street in STREET_ORDER if street is not returned}
    assert dict(hand.board_rulings.burn_for) == kept


@pytest.mark.parametrize(
    "steps",
    [
        # after the river: no street is left to burn for
        [*FLOP, 'auto = "board"\nstreet = "turn"', 'auto = "check_round"',
         'auto = "board"\nstreet = "river"', _dispense("burn"), _arrive("burn")],
        # while the hole cards are still going out: no board is being dealt
        ['dealer = "start_hand"', 'shuffler = "shuffle"', _dispense("burn"), _arrive("burn")],
    ],
    ids=["after-the-river", "during-the-hole-deal"],
)  # fmt: skip
def test_burn_extra_a_burn_with_no_street_to_deal_is_irregular_and_never_a_street_s_burn(
    steps: list[str],
) -> None:
    run = run_text(_scenario("a burn with no street", "rrop-cash", steps))
    irregular = one(run.events, "irregularity.detected")
    assert _cited(irregular) == [Rule.BURN_EXTRA.value]
    assert data(irregular)["reason"] == "a burn card with no street left to deal"
    assert run.state.hand is not None
    assert data(irregular)["card"] not in run.state.hand.board_rulings.burn_for.values()
    assert not of_type(run.events, "hand.hold")


def test_burn_extra_at_the_turn_corrected_makes_the_extra_burn_the_turn_card() -> None:
    steps = [*FLOP, _dispense("burn"), _arrive("burn"), _dispense("burn"), _arrive("burn"),
             'dealer = "confirm"']  # fmt: skip
    run = run_text(_scenario("a second burn before the turn", "rrop-cash", steps))
    assert data(one(run.events, "hand.hold"))["reason"] == "a second burn before the turn"
    corrected = one(run.events, "irregularity.detected")
    assert data(corrected)["reason"] == "the extra burn is the turn's next card"
    dealt = [data(e) for e in of_type(run.events, "board.dealt")]
    assert dealt[-1]["street"] == "turn"
    assert dealt[-1]["cards"] == [data(corrected)["card"]]


def test_burn_miss_at_the_turn_rejected_lets_the_turn_stand_without_a_burn() -> None:
    """The dealer says the burn was dealt and not read: the turn stands, recorded as a street
    with no burn read (not the flop's)."""
    steps = [*FLOP, _dispense("turn"), _arrive("board"), 'dealer = "reject"']
    run = run_text(_scenario("the turn without a burn, rejected", "rrop-cash", steps))
    assert data(one(run.events, "hand.hold"))["street"] == "turn"
    assert [data(e)["street"] for e in of_type(run.events, "board.dealt")] == ["flop", "turn"]
    assert run.state.hand is not None
    assert run.state.hand.board_rulings.no_burn == {Street.TURN}


@pytest.mark.parametrize(
    ("turned", "redealt_for"),
    [
        # two cards, then the hold: fewer than a flop is not a flop with too many
        (["Ac", "2d"], [Rule.BURN_MISS.value]),
        # three cards: the flop itself was turned without a burn (RRoP 5.6, reshuffle profile)
        (["Ac", "2d", "3d"], [Rule.BURN_MISS.value]),
        # four: a flop with too many cards whatever the burn (RR Hold'em 2)
        (["Ac", "2d", "3d", "4d"], [Rule.BURN_MISS.value, Rule.FLOP_COUNT.value]),
    ],
)
def test_burn_miss_flop_count_a_flop_turned_without_a_burn_is_dealt_again_citing_its_count(
    turned: list[str], redealt_for: list[str]
) -> None:
    steps = [*PREFLOP, _dispense("flop"), _arrive("board", *turned[:3])]
    steps += [_arrive("board", card) for card in turned[3:]]
    run = run_text(_scenario("a flop without a burn", "rrop-cash", [*steps, 'dealer = "confirm"']))
    redeal = one(run.events, "board.redeal.required")
    assert _cited(redeal) == redealt_for
    assert data(redeal)["cards"] == turned
    # the stub is reshuffled for the last rule the ruling cites
    assert _cited(one(run.events, "stub.reshuffle.required")) == [redealt_for[-1]]


def test_burn_miss_with_preflop_exposed_continue_the_first_flop_card_becomes_the_burn() -> None:
    """``burn_error.preflop_exposed = continue``: the flop is not dealt again; its first card is
    the burn and the next card off the deck completes it."""
    steps = [*PREFLOP, _dispense("flop"), _arrive("board"), 'dealer = "confirm"']
    house = '{ "burn_error.preflop_exposed" = "continue" }'
    run = run_text(_scenario("a flop without a burn, continue", "rrop-cash", steps, house))
    assert not of_type(run.events, "board.redeal.required")
    burned = one(run.events, "card.burn.assigned")
    assert (data(burned)["street"], data(burned)["card"]) == ("flop", "Ac")
    assert _cited(burned) == [Rule.BURN_ASSIGN.value, Rule.BURN_MISS.value]
