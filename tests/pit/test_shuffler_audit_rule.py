"""SHF-RAND, the proof: the audit's alarm rule (controller/pit/reports/audit_rule.py, the
defaults of ``[reports]``) over decks the shuffler simulator shuffled and revealed through its
own requests, seeded. A biased shuffler is flagged within the decks docs/reports.md says; a fair
one raises no alarm over 10,000 decks (about 3 s; benchmarks/shuffler_audit.py runs 100 such
shufflers for the false-alarm rate)."""

from __future__ import annotations

import pytest

from controller.pit.reports.audit_rule import ALPHA, EVERY, WINDOW, Rule, follow
from simulators.shuffler.bias import parse_bias
from simulators.shuffler.revealed import revealed_decks

#: The seeds of these runs: benchmarks/shuffler_audit.py's run 0 of --seed 7.
SEED = 7 << 40


def first_alarm(bias: str | None, limit: int) -> int | None:
    """The decks dealt when the rule first raises the alarm (None: not within ``limit``)."""
    decks = revealed_decks(limit, seed=SEED, bias=None if bias is None else parse_bias(bias))
    for dealt, verdict in follow(decks, Rule()):
        if verdict.alarm:
            return dealt
    return None


def test_the_rule_is_the_documented_default() -> None:
    assert (ALPHA, WINDOW, EVERY) == (1e-5, 1000, 50)
    with pytest.raises(ValueError, match="alpha"):
        Rule(alpha=0.0)
    with pytest.raises(ValueError, match="window"):
        Rule(window=10)
    with pytest.raises(ValueError, match="every"):
        Rule(every=0)


@pytest.mark.slow
def test_shf_rand_a_fair_simulated_shuffler_raises_no_alarm() -> None:
    checks = list(follow(revealed_decks(10_000, seed=SEED), Rule()))
    assert len(checks) == 10_000 // EVERY
    assert not any(verdict.alarm for _, verdict in checks)
    # every test had its decks by the end, and none came near the level
    last = checks[-1][1]
    assert all(c.corrected is not None and c.corrected > 1e-3 for c in last.checks)


@pytest.mark.parametrize(
    ("bias", "within"),
    [("riffles=3", 50), ("riffles=4", 400), ("stuck=1", 300), ("stuck=26", 300)],
)
def test_shf_rand_a_biased_simulated_shuffler_is_flagged_within_the_documented_decks(
    bias: str, within: int
) -> None:
    caught = first_alarm(bias, within)
    assert caught is not None, f"{bias} not flagged within {within} decks"
    assert caught <= within
