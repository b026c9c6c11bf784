"""SEAT-COUNT and SEAT-DEALT-OUT at every count a seat can read when the readers settle: none
(dealt out), one, two (the only right count), three; and one wrong count is one ruling."""

from __future__ import annotations

import pytest

from simulators.scenario.core_runner import run_core
from simulators.scenario.model import parse_scenario

HEAD = """
[scenario]
name = "seat 3 at the settle time"
profile = "rrop-cash"

[table]
stacks = { "1" = 100, "2" = 100, "3" = 100, "4" = 100, "5" = 100, "6" = 100 }
button = 6
blinds = [1, 2]

[deck]
order = ["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac", "2d"]

[[step]]
dealer = "start_hand"

[[step]]
shuffler = "shuffle"
"""


def _group(seat: int, cards: str = "") -> str:
    read = f"cards = {cards}\n" if cards else ""
    return (
        f'[[step]]\nshuffler = "dispense"\npurpose = "hole"\nseat = {seat}\n\n'
        f'[[step]]\nreader = "arrive"\nzone = "seat:{seat}"\n{read}\n'
    )


#: Seat 3's part of the deal for each count it reads. Three: a card read at seat 3 before its
#: group was out (held, SEAT-SEQ; the dealer rejects that hold), then its own two cards.
SEAT_3 = {
    0: _group(3, "[]"),
    1: _group(3, '["6c"]'),
    2: _group(3),
    3: '[[step]]\nreader = "arrive"\nzone = "seat:3"\ncards = ["Kd"]\n\n'
    '[[step]]\ndealer = "reject"\n\n' + _group(3),
}


def _settled_holds(seat_3: str, after: str = "") -> list[dict[str, object]]:
    """The holds on a count (SEAT-*) once the readers settle, seat 3 dealt as ``seat_3`` and
    ``after`` coming after the deal."""
    text = HEAD + "".join(_group(s) for s in (1, 2)) + seat_3
    text += "".join(_group(s) for s in (4, 5, 6)) + after + "[[step]]\nwait = 5\n"
    run = run_core(parse_scenario(text, "seat-counts.toml"))
    settled = [e for e in run.events if e.type == "hand.hold" and "count" in e.data]
    return [dict(e.data) for e in settled]


@pytest.mark.parametrize(
    ("count", "rule"), [(0, "SEAT-DEALT-OUT"), (1, "SEAT-COUNT"), (3, "SEAT-COUNT")]
)
def test_seat_count_a_seat_not_holding_two_cards_when_the_readers_settle_is_held(
    count: int, rule: str
) -> None:
    holds = _settled_holds(SEAT_3[count])
    cards = "card" if count == 1 else "cards"
    assert [(h["rule"], h["seat"], h["count"], h["ruling"], h["reason"]) for h in holds] == [
        (rule, 3, count, "misdeal", f"seat 3 holds {count} {cards}")
    ]


def test_seat_count_a_seat_holding_its_two_cards_is_not_held() -> None:
    assert _settled_holds(SEAT_3[2]) == []


def test_seat_count_an_extra_card_at_a_seat_is_held_once_not_again_when_the_readers_settle() -> (
    None
):
    # the extra card comes before the settle time is up: the count check then sees three cards
    # at a seat whose hold for them is already waiting
    text = HEAD + '[[step]]\nauto = "deal_hole"\n\n'
    text += '[[step]]\nshuffler = "dispense"\npurpose = "extra"\ncount = 1\n\n'
    text += '[[step]]\nreader = "arrive"\nzone = "seat:3"\n\n[[step]]\nwait = 5\n'
    run = run_core(parse_scenario(text, "extra-card.toml"))
    holds = [e.data for e in run.events if e.type == "hand.hold"]
    assert [(h["rule"], h["seat"], h["count"], h["reason"]) for h in holds] == [
        ("SEAT-COUNT", 3, 3, "seat 3 holds an extra card")
    ]


@pytest.mark.parametrize(("count", "cards"), [(0, "[]"), (1, '["Tc"]')])
def test_seat_count_after_the_cutoff_a_wrong_count_is_a_dead_hand_with_the_count_in_words(
    count: int, cards: str
) -> None:
    # seats 3 and 4 act before the readers settle (10 s, as T04): the cutoff has passed
    head = HEAD.replace("blinds = [1, 2]", "blinds = [1, 2]\nsettle = 10")
    text = head + "".join(_group(s) for s in (1, 2, 3, 4)) + _group(5, cards) + _group(6)
    for seat in (3, 4):
        text += f'[[step]]\ndealer = "action"\nseat = {seat}\naction = "call"\n\n'
    run = run_core(parse_scenario(text + "[[step]]\nwait = 12\n", "after-cutoff.toml"))
    said = f"seat 5 holds {count} card{'' if count == 1 else 's'}"
    rule = "SEAT-DEALT-OUT" if count == 0 else "SEAT-COUNT"
    notes = [e.data for e in run.events if e.type == "irregularity.detected"]
    assert [(n["reason"], n["rule"], n["cutoff_passed"]) for n in notes] == [(said, rule, True)]
    holds = [e.data for e in run.events if e.type == "hand.hold"]
    assert [(h["reason"], h["rule"], h["ruling"]) for h in holds] == [(said, rule, "dead_hand")]


def test_deal_done_the_deal_is_complete_once_even_when_more_cards_come_after_it() -> None:
    # an extra card after the deal comes back through the deal's checks: no second deal.complete
    text = HEAD + '[[step]]\nauto = "deal_hole"\n\n'
    text += '[[step]]\nshuffler = "dispense"\npurpose = "extra"\ncount = 1\n\n'
    text += '[[step]]\nreader = "arrive"\nzone = "seat:1"\n\n[[step]]\nwait = 5\n'
    run = run_core(parse_scenario(text, "deal-done.toml"))
    assert [e.data["seats"] for e in run.events if e.type == "deal.complete"] == [
        [1, 2, 3, 4, 5, 6]
    ]


def test_de_1544a_grp_hole_groups_the_shuffler_does_not_seat_are_dealt_in_order() -> None:
    # a shuffler that does not say which seat a group is for: nothing to check it against
    groups = "".join(
        f'[[step]]\nshuffler = "dispense"\npurpose = "hole"\n\n'
        f'[[step]]\nreader = "arrive"\nzone = "seat:{seat}"\n\n'
        for seat in (1, 2, 3, 4, 5, 6)
    )
    run = run_core(parse_scenario(HEAD + groups + "[[step]]\nwait = 5\n", "unseated.toml"))
    types = [e.type for e in run.events]
    assert "deal.complete" in types
    assert "hand.misdeal" not in types
    assert "hand.hold" not in types


def test_seat_seq_a_card_of_a_group_held_at_the_shuffler_reaching_a_seat_names_that_group() -> None:
    """GRP-SIZE with ``grp.size_error = hold``: the group of three for seat 3 is held, dealt to
    no seat; its cards read at seat 3 anyway are a misdeal that says which group they were."""
    held = (
        '[[step]]\nshuffler = "dispense"\npurpose = "hole"\nseat = 3\ncount = 3\n\n'
        '[[step]]\nreader = "arrive"\nzone = "seat:3"\n\n'
    )
    head = HEAD.replace(
        'profile = "rrop-cash"',
        'profile = "rrop-cash"\nhouse_rules = { "grp.size_error" = "hold" }',
    )
    run = run_core(parse_scenario(head + _group(1) + _group(2) + held, "held-group.toml"))
    misdeal = next(e for e in run.events if e.type == "hand.misdeal")
    assert misdeal.data["rule"] == "SEAT-SEQ"
    assert misdeal.data["reason"] == "a card of a group stopped at the shuffler reached seat 3"
