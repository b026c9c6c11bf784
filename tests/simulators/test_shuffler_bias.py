"""The shuffler simulator's biased modes (simulators/shuffler/bias.py): a weak riffle shuffle of
the Gilbert–Shannon–Reeds model and a stuck position, seeded, through the device's requests."""

from __future__ import annotations

import argparse
import itertools
import random
from collections import Counter
from math import comb

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulators.shuffler import add_arguments, build_model
from simulators.shuffler.bias import Bias, biased_order, parse_bias, riffle
from simulators.shuffler.revealed import revealed_decks


def rising_sequences(order: list[int]) -> int:
    """Maximal runs of consecutive values appearing in increasing positions (Bayer–Diaconis)."""
    where = {card: i for i, card in enumerate(order)}
    return 1 + sum(1 for v in range(len(order) - 1) if where[v + 1] < where[v])


def test_a_bias_is_read_from_its_words() -> None:
    assert parse_bias("riffles=3") == Bias(riffles=3)
    assert parse_bias("stuck=52") == Bias(stuck=52)
    assert parse_bias(" riffles=5 , stuck=1") == Bias(riffles=5, stuck=1)
    assert str(Bias(riffles=5, stuck=1)) == "riffles=5,stuck=1"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("riffles", "riffles=N or stuck=POSITION"),
        ("cut=3", "riffles=N or stuck=POSITION"),
        ("riffles=x", "a whole number"),
        ("riffles=0", "from 1 to 64"),
        ("stuck=0", "from 1 \\(the top\\) to 52"),
        ("stuck=53", "from 1 \\(the top\\) to 52"),
        ("stuck=1,stuck=2", "given twice"),
    ],
)
def test_a_bias_that_means_nothing_is_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_bias(text)


@given(seed=st.integers(0, 2**32 - 1), riffles=st.integers(1, 5))
def test_n_riffles_leave_a_permutation_with_at_most_2_to_the_n_rising_sequences(
    seed: int, riffles: int
) -> None:
    rng = random.Random(seed)
    order = list(range(52))
    for _ in range(riffles):
        order = riffle(order, rng)
    assert sorted(order) == list(range(52))
    assert rising_sequences(order) <= 2**riffles


def test_one_riffle_of_three_cards_has_the_gsr_law() -> None:
    # Bayer–Diaconis: after one riffle (a 2-shuffle) a permutation with r rising sequences has
    # probability C(2 + n - r, n) / 2^n: the identity 4/8, each of the four with two 1/8, 321 none
    rng = random.Random(5)
    draws = 40_000
    seen = Counter(tuple(riffle([0, 1, 2], rng)) for _ in range(draws))
    for order in itertools.permutations(range(3)):
        expected = comb(2 + 3 - rising_sequences(list(order)), 3) / 8
        assert seen[order] / draws == pytest.approx(expected, abs=0.01)


@given(seed=st.integers(0, 2**32 - 1), stuck=st.integers(1, 52))
def test_a_stuck_position_keeps_its_card(seed: int, stuck: int) -> None:
    previous = random.Random(seed).sample(range(52), 52)
    order = biased_order(previous, Bias(stuck=stuck), random.Random(seed + 1))
    assert sorted(order) == list(range(52))
    assert order[stuck - 1] == previous[stuck - 1]


def test_the_simulator_shuffles_the_deck_it_took_back_reproducibly() -> None:
    decks = list(revealed_decks(20, seed=7, bias=Bias(riffles=1)))
    assert decks == list(revealed_decks(20, seed=7, bias=Bias(riffles=1)))
    assert decks != list(revealed_decks(20, seed=8, bias=Bias(riffles=1)))
    # each deck is one riffle of the one before: two rising sequences at most, relative to it
    for before, after in itertools.pairwise(decks):
        relative = [before.index(card) for card in after]
        assert rising_sequences(relative) <= 2
    assert all(sorted(deck) == list(range(52)) for deck in decks)


def test_a_stuck_simulator_deals_the_same_card_at_that_position_every_time() -> None:
    decks = list(revealed_decks(30, seed=3, bias=Bias(stuck=17)))
    assert len({deck[16] for deck in decks}) == 1
    assert len(set(decks)) == 30


def test_a_fair_simulator_is_unchanged_by_the_bias_option() -> None:
    # without --bias the k-th deck is still deck_order(seed=N+k-1), as docs/simulators.md says
    assert list(revealed_decks(3, seed=11)) == list(revealed_decks(3, seed=11, bias=None))
    first = list(revealed_decks(2, seed=11))
    assert first[1] == next(iter(revealed_decks(1, seed=12)))


def test_the_command_line_takes_a_bias_and_refuses_it_with_an_order() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--seed", "4", "--bias", "riffles=3"])
    assert args.bias == Bias(riffles=3)
    assert build_model(args, random.Random(1), 0.0).config.bias == Bias(riffles=3)
    with pytest.raises(SystemExit):
        parser.parse_args(["--bias", "riffles=99"])
    both = parser.parse_args(["--order", "As", "--bias", "stuck=1"])
    with pytest.raises(ValueError, match="cannot go with --order"):
        build_model(both, random.Random(1), 0.0)
