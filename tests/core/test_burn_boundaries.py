"""DE-1547-SEP at every street: a burn card read in the muck while the board is still to be
completed is a warning, whichever street it is (after the flop, after the turn); once the river
is out, the burns going to the muck is how the hand ends."""

from __future__ import annotations

import pytest

from controller.rules.ids import Rule
from controller.table.streets import Street
from tests.helpers import of_type, run_text

SEATS = '{ "1" = 100, "2" = 100, "3" = 100, "4" = 100, "5" = 100, "6" = 100 }'
ORDER = (
    '["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac", "2d", "3d", '
    '"4d", "5d", "6d", "7d", "8d"]'
)
STREETS = ("flop", "turn", "river")
#: The burn of each street in ORDER (twelve hole cards first, then burn and cards by street).
BURNS = {"flop": "Ac", "turn": "5d", "river": "7d"}


def _scenario(name: str, profile: str, steps: list[str]) -> str:
    """Scenario text: six seats of 100 (button 6, blinds 1/2), ORDER's deck, ``steps``."""
    return "\n".join(
        [
            "[scenario]",
            f'name = "{name}"',
            f'profile = "{profile}"',
            "[table]",
            f"stacks = {SEATS}",
            "button = 6",
            "blinds = [1, 2]",
            "[deck]",
            f"order = {ORDER}",
            *(f"[[step]]\n{step}" for step in steps),
        ]
    )


def hand_with_a_burn_in_the_muck(after: str) -> str:
    """Six seats check every street down; the last street's burn (so far) is read in the muck
    once the betting after ``after`` closed."""
    steps = ['dealer = "start_hand"', 'shuffler = "shuffle"', 'auto = "deal_hole"',
             'auto = "check_round"']  # fmt: skip
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
