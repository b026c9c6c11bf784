"""SHF-RAND: the statistics of the shuffler randomness audit (controller/pit/reports/randomness.py
and shuffle_laws.py) against exact small cases, known laws and their invariants."""

from __future__ import annotations

import itertools
import math
import random
import zlib
from collections import Counter
from fractions import Fraction
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.pit.reports import randomness as rnd
from controller.pit.reports.shuffle_laws import (
    change_bins,
    change_law,
    invert,
    pooled_bins,
    suit_pairs_law,
)

FAIR_SEED = 20260105


def fair_decks(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    deck = list(range(rnd.DECK))
    out = []
    for _ in range(count):
        rng.shuffle(deck)
        out.append(bytes(deck))
    return out


# --------------------------------------------------------------------------- exact laws


def brute_suit_pairs(suits: int, size: int) -> dict[int, Fraction]:
    words = set(itertools.permutations([s for s in range(suits) for _ in range(size)]))
    counts = Counter(sum(a == b for a, b in itertools.pairwise(w)) for w in words)
    return {x: Fraction(c, len(words)) for x, c in counts.items()}


@pytest.mark.parametrize(("suits", "size"), [(1, 4), (2, 3), (3, 2), (2, 4), (4, 2), (3, 3)])
def test_the_suit_run_law_is_the_count_of_every_suit_word(suits: int, size: int) -> None:
    law = suit_pairs_law(suits, size)
    brute = brute_suit_pairs(suits, size)
    assert {x: p for x, p in enumerate(law) if p} == brute


def test_the_suit_run_law_of_a_deck_sums_to_one_with_mean_twelve() -> None:
    law = suit_pairs_law(4, 13)
    assert sum(law) == 1
    # each of the 51 neighbours is of one suit with chance 12/51
    assert sum(x * p for x, p in enumerate(law)) == 12
    assert law[48] > 0  # four solid suits
    assert law[0] > 0


def brute_change_moments(k: int, bins: int) -> tuple[list[Fraction], list[list[Fraction]]]:
    """The mean and covariance of the bins' counts over every permutation of ``k``."""
    ranges = change_bins(k, bins)
    bin_of = {d: i for i, (lo, hi) in enumerate(ranges) for d in range(lo, hi + 1)}
    perms = list(itertools.permutations(range(k)))
    vectors = []
    for sigma in perms:
        v = [0] * len(ranges)
        for p, q in enumerate(sigma):
            v[bin_of[abs(q - p)]] += 1
        vectors.append(v)
    n = len(perms)
    mean = [Fraction(sum(v[a] for v in vectors), n) for a in range(len(ranges))]
    cov = [
        [
            Fraction(sum(v[a] * v[b] for v in vectors), n) - mean[a] * mean[b]
            for b in range(len(ranges))
        ]
        for a in range(len(ranges))
    ]
    return mean, cov


@pytest.mark.parametrize(("k", "bins"), [(5, 3), (6, 4), (7, 7)])
def test_the_change_covariance_is_that_of_every_permutation(k: int, bins: int) -> None:
    mean, cov = change_law(k, bins)
    brute_mean, brute_cov = brute_change_moments(k, bins)
    assert mean == pytest.approx([float(m) for m in brute_mean], abs=1e-12)
    for row, brute_row in zip(cov, brute_cov, strict=True):
        assert row == pytest.approx([float(c) for c in brute_row], abs=1e-12)


def test_the_change_covariance_gives_the_footrules_known_variance() -> None:
    # Diaconis and Graham (1977): Spearman's footrule Σ|σ(i) - i| has mean (k²-1)/3 and
    # variance (k+1)(2k²+7)/45; with one bin per |d| it is a linear form of the bins
    k = rnd.DECK
    mean, cov = change_law(k, k)
    assert sum(d * m for d, m in enumerate(mean)) == pytest.approx((k * k - 1) / 3)
    variance = sum(a * cov[a][b] * b for a in range(k) for b in range(k))
    assert variance == pytest.approx((k + 1) * (2 * k * k + 7) / 45)


def test_the_change_bins_split_the_law_evenly_and_cover_every_change() -> None:
    ranges = change_bins(rnd.DECK, rnd.CHANGE_BINS)
    assert len(ranges) == rnd.CHANGE_BINS
    assert ranges[0][0] == 0
    assert ranges[-1][1] == rnd.DECK - 1
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(ranges))
    mean, _ = change_law(rnd.DECK, rnd.CHANGE_BINS)
    assert sum(mean) == pytest.approx(rnd.DECK)
    assert all(abs(m / rnd.DECK - 1 / rnd.CHANGE_BINS) < 0.025 for m in mean)


def test_pooled_bins_each_expect_five_from_the_decks_the_test_needs() -> None:
    law = suit_pairs_law(4, 13)
    ranges = pooled_bins(law, Fraction(5, rnd.SUIT_DECKS))
    assert ranges[0][0] == 0
    assert ranges[-1][1] == 48
    assert all(sum(law[lo : hi + 1]) * rnd.SUIT_DECKS >= 5 for lo, hi in ranges)


def test_a_small_inverse() -> None:
    inverse = invert([[4.0, 1.0], [1.0, 3.0]])
    assert inverse[0] == pytest.approx((3 / 11, -1 / 11))
    assert inverse[1] == pytest.approx((-1 / 11, 4 / 11))
    with pytest.raises(ValueError, match="singular"):
        invert([[1.0, 2.0], [2.0, 4.0]])


# --------------------------------------------------------------------------- the tally


def test_a_tally_counts_positions_changes_and_suit_pairs() -> None:
    top = bytes(range(52))  # 2c 3c … Ac 2d … As: every neighbour but three of one suit
    rotated = top[1:] + top[:1]
    t = rnd.tally([top, rotated])
    assert t.decks == 2
    assert t.pairs == 1
    assert t.counts[0 * 52 + 0] == 1  # 2c on top of the first
    assert t.counts[0 * 52 + 51] == 1  # … and at the bottom of the second
    assert t.suits[48] == 1
    assert t.suits[47] == 1
    assert t.changes[-1 + 51] == 51  # every card up one …
    assert t.changes[51 + 51] == 1  # … and 2c down 51
    assert t.first == top
    assert t.last == rotated


def test_a_tally_of_two_runs_merged_is_the_tally_of_both() -> None:
    decks = fair_decks(30, 1)
    whole = rnd.tally(decks)
    assert rnd.tally(decks[:12]).merged(rnd.tally(decks[12:])) == whole
    assert rnd.Tally().merged(whole) == whole
    assert whole.merged(rnd.Tally()) == whole


def test_a_tally_is_stored_and_read_back_whole() -> None:
    t = rnd.tally(fair_decks(20, 2))
    assert rnd.Tally.from_bytes(t.to_bytes()) == t
    assert rnd.Tally.from_bytes(rnd.Tally().to_bytes()) == rnd.Tally()
    with pytest.raises(rnd.DeckError, match="not a stored tally"):
        rnd.Tally.from_bytes(b"garbage")
    with pytest.raises(rnd.DeckError, match="length"):
        rnd.Tally.from_bytes(zlib.compress(b"\0" * 12))


def test_a_window_keeps_the_last_decks_only() -> None:
    decks = fair_decks(40, 3)
    window = rnd.Window(15)
    for deck in decks:
        window.add(deck)
    assert window.tally == rnd.tally(decks[-15:])
    assert window.repeats == 0
    again = rnd.Window(5)
    for deck in [decks[0], decks[1], decks[0], decks[2], decks[0]]:
        again.add(deck)
    assert again.repeats == 2
    again.add(decks[3])  # the first decks[0] leaves the window: two copies left
    assert again.repeats == 1
    with pytest.raises(ValueError, match="at least 2"):
        rnd.Window(1)


@pytest.mark.parametrize(
    ("deck", "why"),
    [
        (bytes(range(51)), "51 cards"),
        (bytes(range(51)) + b"\x00", "each of the 52 once"),
        (bytes(range(1, 52)) + b"\x34", "each of the 52 once"),
    ],
)
def test_a_deck_that_is_not_whole_is_refused_and_counts_nothing(deck: bytes, why: str) -> None:
    t = rnd.Tally()
    with pytest.raises(rnd.DeckError, match=why):
        t.add(deck)
    assert t == rnd.Tally()


# --------------------------------------------------------------------------- the tests


def test_shf_rand_too_few_decks_says_so_instead_of_a_p_value() -> None:
    t = rnd.tally(fair_decks(rnd.POSITION_DECKS - 1, 4))
    positions, changes, suits = rnd.checks(t)
    assert (positions.p_value, positions.enough, positions.needed) == (None, False, 260)
    assert suits.p_value is None
    assert not suits.enough
    assert changes.enough
    assert changes.decks == rnd.POSITION_DECKS - 2
    t.add(fair_decks(1, 5)[0])
    assert all(c.enough for c in rnd.checks(t))
    short = rnd.tally(fair_decks(rnd.CHANGE_PAIRS, 6))
    assert rnd.changes_check(short).p_value is None  # 39 pairs


def test_shf_rand_a_fair_shuffler_passes_every_test() -> None:
    t = rnd.tally(fair_decks(1000, FAIR_SEED))
    result = rnd.verdict(t, 1e-4)
    assert not result.alarm, result
    positions, changes, suits = result.checks
    assert positions.df == 51 * 51
    assert changes.df == 12
    assert suits.df is not None
    assert all(c.p_value is not None and c.p_value > 1e-3 for c in result.checks)


def test_shf_rand_the_position_statistic_is_scaled_to_its_degrees_of_freedom() -> None:
    # n uniform permutation matrices: E[Σ(O-E)²/E] = k(k-1) exactly, so the scaled statistic
    # averages (k-1)² = df (sd ≈ 72 each: 60 tallies are within ±40 with room to spare)
    rng = random.Random(7)
    stats = [
        rnd.positions_check(rnd.tally(fair_decks(260, rng.getrandbits(32)))).statistic
        for _ in range(60)
    ]
    assert all(s is not None for s in stats)
    assert sum(s or 0.0 for s in stats) / len(stats) == pytest.approx(2601, abs=40)


def test_shf_rand_a_perfect_rotation_is_flagged() -> None:
    decks = fair_decks(1, 8)
    for _ in range(519):  # each deck the one before cut by one card
        decks.append(decks[-1][1:] + decks[-1][:1])
    result = rnd.verdict(rnd.tally(decks), 1e-4)
    positions, changes, suits = result.checks
    assert result.alarm
    assert changes.p_value is not None
    assert changes.p_value < 1e-100
    assert suits.p_value is not None
    assert suits.p_value < 1e-100
    # every card has been at every position exactly ten times: too good to be true
    assert positions.statistic == pytest.approx(0.0)
    assert positions.p_value is not None
    assert positions.p_value < 1e-100
    assert result.worst is not None
    assert result.worst.corrected == pytest.approx(0.0, abs=1e-100)


def test_shf_rand_a_stuck_card_is_flagged_by_positions_and_changes() -> None:
    rng = random.Random(9)
    decks = []
    for _ in range(300):
        rest = list(range(1, 52))
        rng.shuffle(rest)
        decks.append(bytes([*rest[:20], 0, *rest[20:]]))  # 2c always 21st
    result = rnd.verdict(rnd.tally(decks), 1e-4)
    failed = {c.test for c in result.failed}
    assert failed >= {"positions", "changes"}


def test_shf_rand_a_repeated_order_is_an_alarm_whatever_the_p_values() -> None:
    decks = fair_decks(300, 10)
    decks.append(decks[17])
    assert rnd.repeated(decks) == 1
    result = rnd.verdict(rnd.tally(decks), 1e-4, rnd.repeated(decks))
    assert not result.failed
    assert result.alarm


def test_shf_rand_bonferroni_multiplies_by_the_number_of_tests() -> None:
    check = rnd.Check("suits", 300, 260, 30.0, 13, 0.004)
    assert check.corrected == pytest.approx(0.012)
    assert rnd.Check("suits", 300, 260, 1.0, 13, 0.9).corrected == 1.0
    assert rnd.Check("suits", 10, 260).corrected is None
    result = rnd.Verdict((check,), 0, 0.01)
    assert not result.alarm  # 0.004 < 0.01, but 3 × 0.004 is not
    assert rnd.Verdict((check,), 0, 0.02).failed == (check,)


def test_a_level_outside_zero_and_one_is_refused() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        rnd.verdict(rnd.Tally(), 0.0)


# --------------------------------------------------------------------------- properties


def relabelled(decks: list[bytes], labels: list[int]) -> list[bytes]:
    return [bytes(labels[c] for c in deck) for deck in decks]


@st.composite
def shufflers(draw: st.DrawFn) -> list[bytes]:
    """Decks of a fair or a biased shuffler (a card stuck, or a weak cut), enough for every
    test."""
    seed = draw(st.integers(0, 2**32 - 1))
    mode = draw(st.sampled_from(["fair", "stuck", "cut"]))
    rng = random.Random(seed)
    decks = [bytes(rng.sample(range(52), 52))]
    while len(decks) < rnd.POSITION_DECKS:
        if mode == "fair":
            decks.append(bytes(rng.sample(range(52), 52)))
        elif mode == "stuck":
            rest = rng.sample(range(1, 52), 51)
            decks.append(bytes([0, *rest]))
        else:
            cut = rng.randrange(52)
            decks.append(decks[-1][cut:] + decks[-1][:cut])
    return decks


@settings(max_examples=15, deadline=None)
@given(decks=shufflers())
def test_shf_rand_every_p_value_is_a_probability(decks: list[bytes]) -> None:
    for check in rnd.checks(rnd.tally(decks)):
        assert check.p_value is not None
        assert 0.0 <= check.p_value <= 1.0
        assert check.corrected is not None
        assert check.p_value <= check.corrected <= 1.0
        assert check.statistic is not None
        assert check.statistic >= 0.0


@settings(max_examples=15, deadline=None)
@given(decks=shufflers(), seed=st.integers(0, 2**32 - 1))
def test_shf_rand_renaming_the_cards_changes_no_position_or_change_statistic(
    decks: list[bytes], seed: int
) -> None:
    labels = random.Random(seed).sample(range(52), 52)
    before = rnd.checks(rnd.tally(decks))
    after = rnd.checks(rnd.tally(relabelled(decks, labels)))
    for test in (0, 1):
        assert after[test].statistic == pytest.approx(before[test].statistic, rel=1e-9)


@settings(max_examples=15, deadline=None)
@given(decks=shufflers(), seed=st.integers(0, 2**32 - 1))
def test_shf_rand_renaming_suits_and_ranks_within_them_changes_no_statistic(
    decks: list[bytes], seed: int
) -> None:
    rng = random.Random(seed)
    suits = rng.sample(range(4), 4)
    ranks = [rng.sample(range(13), 13) for _ in range(4)]
    labels = [suits[c // 13] * 13 + ranks[c // 13][c % 13] for c in range(52)]
    before = rnd.checks(rnd.tally(decks))
    after = rnd.checks(rnd.tally(relabelled(decks, labels)))
    for b, a in zip(before, after, strict=True):
        assert a.statistic == pytest.approx(b.statistic, rel=1e-9)
        assert a.p_value == pytest.approx(b.p_value, rel=1e-6, abs=1e-300)


def test_the_suit_statistic_counts_decks_not_cards() -> None:
    # a deck with every suit solid has 48 pairs; one alternating suits has none
    solid = bytes(range(52))
    alternating = bytes(s * 13 + r for r in range(13) for s in range(4))
    assert rnd.suit_pairs(solid) == 48
    assert rnd.suit_pairs(alternating) == 0
    # the four suits solid: 4! orders of the suits, 13! of each suit's cards
    assert suit_pairs_law(4, 13)[48] == Fraction(24 * math.factorial(13) ** 4, math.factorial(52))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(0, 40),
    cuts=st.lists(st.integers(0, 40), max_size=5),
)
def test_a_run_cut_anywhere_and_merged_is_the_tally_of_the_whole(
    seed: int, count: int, cuts: list[int]
) -> None:
    decks = fair_decks(count, seed)
    edges = sorted({0, count, *(c for c in cuts if c <= count)})
    merged = rnd.Tally()
    for low, high in itertools.pairwise(edges):
        merged = merged.merged(rnd.tally(decks[low:high]))
    assert merged == rnd.tally(decks)
    assert rnd.Tally.from_bytes(merged.to_bytes()) == merged


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(0, 40),
    cuts=st.lists(st.integers(0, 40), max_size=8),
    kept=st.lists(st.booleans(), min_size=9, max_size=9),
    empty=st.lists(st.integers(0, 9), max_size=3),
    by_lane=st.booleans(),
)
def test_runs_joined_at_once_are_runs_merged_one_by_one_and_the_tally_of_all(
    seed: int,
    count: int,
    cuts: list[int],
    kept: list[bool],
    empty: list[int],
    by_lane: bool,
) -> None:
    """SHF-RAND: a span's days joined in one pass (some as the store keeps them, empty days
    among them; the lanes added at once, or one by one as beyond their bound) = merged one by
    one = every deck tallied in order."""
    rng = random.Random(seed)
    pool = fair_decks(6, seed)  # a stuck shuffler's decks and repeated orders among fair ones
    decks = [
        rng.choice(pool) if rng.random() < 0.3 else bytes(rng.sample(range(52), 52))
        for _ in range(count)
    ]
    edges = sorted({0, count, *(c for c in cuts if c <= count)})
    parts = [rnd.tally(decks[low:high]) for low, high in itertools.pairwise(edges)]
    for at in empty:
        parts.insert(min(at, len(parts)), rnd.Tally())
    one_by_one = rnd.Tally()
    for part in parts:
        one_by_one = one_by_one.merged(part)
    runs = [p.to_bytes() if stored else p for p, stored in zip(parts, kept, strict=False)]
    runs += parts[len(runs) :]
    with mock.patch.object(rnd, "LANE", 1 if by_lane else rnd.LANE):
        at_once = rnd.joined(runs)
    assert at_once == one_by_one == rnd.tally(decks)
    assert rnd.joined([]) == rnd.Tally()


def test_a_stored_tally_whose_numbers_do_not_add_up_is_refused_when_joined() -> None:
    t = rnd.tally(fair_decks(3, 5))
    t.counts[0] = 2**32 - 1  # beyond any count of 3 decks: added to another, it would carry
    with pytest.raises(rnd.DeckError, match="do not add up"):
        rnd.joined([t.to_bytes(), t.to_bytes()])
    with pytest.raises(rnd.DeckError, match="do not add up"):
        rnd.joined([rnd.tally(fair_decks(3, 6)), t.to_bytes()])
    with pytest.raises(rnd.DeckError, match="not a stored tally"):
        rnd.joined([b"garbage"])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(2, 60), size=st.integers(2, 20))
def test_a_window_is_the_tally_of_its_last_decks(seed: int, count: int, size: int) -> None:
    rng = random.Random(seed)
    pool = fair_decks(8, seed)  # few orders: repeats come often
    decks = [rng.choice(pool) for _ in range(count)]
    window = rnd.Window(size)
    for deck in decks:
        window.add(deck)
    assert window.tally == rnd.tally(decks[-size:])
    assert window.repeats == rnd.repeated(decks[-size:])
