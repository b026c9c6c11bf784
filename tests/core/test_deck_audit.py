"""SHF-INFO: a retired deck's revealed order against the groups the table saw dealt from it.

Under ``id_policy = withhold`` a card of the deck in play that the shuffler never dispensed, read
at the seat a group is for, passes for one of that group's cards; the reveal after the hand
catches it (``controller/rules/deck_audit.py``).
"""

from __future__ import annotations

import pickle
import random
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cards import Card
from controller.rules.deck_audit import AUDIT_DECKS, cross_check
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import DeckRevealed, Purpose, Zone, ZoneKind
from controller.table.state import AuditGroup, AuditRead, DeckAudit
from simulators.autoplay import AutoDealer, Style, random_table
from simulators.irregular import IrregularDealer
from simulators.scenario.core_runner import CoreRunner
from simulators.scenario.model import Scenario, load_scenario, parse_scenario
from tests.helpers import SCENARIOS, data, of_type, one, run_file, scenario_text, step

UNDISPENSED = "rule-SHF-INFO-undispensed-card.toml"


class Orders(CoreRunner):
    """Keeps the order of every deck the runner shuffles, to reveal them afterwards."""

    orders: dict[int, tuple[Card, ...]]

    async def shuffle_deck(self, cards: tuple[Card, ...], verdict: str, count: int | None) -> None:
        self.orders[self.shuffler.shuffle_id] = tuple(cards)
        await super().shuffle_deck(cards, verdict, count)

    async def reshuffle_deck(self, added: list[Card], seed: int, cards: tuple[Card, ...]) -> None:
        await super().reshuffle_deck(added, seed, cards)
        self.orders[self.shuffler.shuffle_id] = tuple(cards)

    def reveal_all(self) -> list[TableEvent]:
        """Reveal every deck shuffled so far (its commitment verified); the events."""
        events: list[TableEvent] = []
        for sid, order in self.orders.items():
            self.now += timedelta(seconds=1)
            revealed = DeckRevealed(self.now, "shuffler", sid, order, True)
            self.run.state, caused = apply(self.run.state, revealed)
            events += caused
        self.orders = {}
        return events


class Revealing(Orders):
    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.orders = {}


class RevealingAuto(Orders, AutoDealer):
    def __init__(self, scenario: Scenario, rng: random.Random) -> None:
        AutoDealer.__init__(self, scenario, rng, Style(muck_loser=0.2))
        self.orders = {}


class RevealingIrregular(Orders, IrregularDealer):
    def __init__(self, scenario: Scenario, rng: random.Random) -> None:
        IrregularDealer.__init__(self, scenario, rng, Style(), rate=0.9)
        self.orders = {}


def audit_alarms(events: list[TableEvent]) -> list[TableEvent]:
    return [e for e in of_type(events, "integrity.alarm") if "deck audit" in e.data["reason"]]


HAND_ONE = (
    step(dealer="start_hand")
    + step(shuffler="shuffle")
    + step(shuffler="dispense", purpose="hole", seat=1)
    + step(reader="arrive", zone="seat:1", cards=["As", "9h"])
    + step(auto="deal_hole")
    + step(dealer="action", seat=3, action="fold")
    + step(dealer="action", seat=1, action="fold")
    + step(dealer="award")
)


def table(steps: str, id_policy: str = "withhold") -> Scenario:
    deck = f'order = ["As", "Kd", "7h", "7c", "2s", "3s"]\nid_policy = "{id_policy}"'
    return parse_scenario(scenario_text({1: 100, 2: 100, 3: 100}, 3, steps, deck=deck))


def test_shf_info_an_undispensed_card_read_at_its_seat_is_caught_at_the_reveal() -> None:
    run = run_file(UNDISPENSED)  # its expectations: no hold, no misdeal, the alarm
    alarm = one(run.events, "integrity.alarm")
    assert alarm.rules == ("SHF-INFO", "SEAT-SEQ")
    assert alarm.severity == "critical"
    assert not alarm.needs_confirm
    assert data(alarm) == {
        "reason": "deck audit: group 1 for seat 1 was read with a card the shuffler had not "
        "dispensed",
        "rule": "SEAT-SEQ",
        "zone": "seat:1",
        "shuffle_id": 1001,
        "group": 1,
        "purpose": "hole",
        "seat": 1,
        "dealt_in": "T1-00001",
        "cards": ["As", "9h"],
        "expected": ["As", "Kd"],
    }
    assert "cards" not in alarm.data
    assert "expected" not in alarm.data
    assert run.state.audit == ()  # a revealed deck's record goes


def test_shf_info_the_alarm_after_the_hand_holds_and_changes_nothing() -> None:
    """The reveal comes while the next hand runs: an alarm about the last one, nothing more."""
    runner = Revealing(table(HAND_ONE + step(dealer="start_hand") + step(shuffler="shuffle")))
    runner.play()
    before = runner.run.state
    first, second = sorted(runner.orders)
    assert before.hand is not None
    assert [d.shuffle_id for d in before.audit] == [first]
    after, events = apply(
        before, DeckRevealed(runner.now, "shuffler", first, runner.orders[first], True)
    )
    assert [e.type for e in events] == ["deck.revealed", "integrity.alarm"]
    assert data(events[1])["dealt_in"] == "T1-00001"
    assert after.hand == before.hand
    assert after.stacks == before.stacks
    assert not after.audit  # the deck is revealed; hand two's has dispensed nothing yet
    assert second in runner.orders


def test_shf_info_a_clean_hand_raises_no_alarm_at_the_reveal() -> None:
    runner = RevealingAuto(random_table(random.Random(4)), random.Random(4))
    assert runner.play_hand()
    assert len(runner.run.state.audit) == 1
    events = runner.reveal_all()
    assert [e.type for e in events] == ["deck.revealed"]
    assert not runner.run.state.audit


def test_shf_info_scenario_files_stub_reshuffles_and_misdeals_raise_no_false_alarm() -> None:
    """Every scenario file, its decks revealed after it: broken groups, reshuffled stubs,
    misdeals and voids, premature cards and rulings, with the cards the order dealt."""
    reshuffled = misdealt = 0
    for path in sorted(SCENARIOS.glob("*.toml")):
        runner = Revealing(load_scenario(path))
        run = runner.play()
        reshuffled += len(runner.orders) > 1
        misdealt += bool(of_type(run.events, "hand.misdeal"))
        assert audit_alarms(runner.reveal_all()) == [], path.name
    assert reshuffled >= 5
    assert misdealt >= 5


def test_shf_info_live_ids_a_wrong_hole_card_is_ruled_at_once_and_not_reported_again() -> None:
    wrong = HAND_ONE[: HAND_ONE.index('auto = "deal_hole"') - len("[[step]]\n")]
    runner = Revealing(table(wrong, id_policy="live"))
    run = runner.play()
    misdeal = one(run.events, "hand.misdeal")
    assert "SEAT-SEQ" in misdeal.rules
    assert [e.type for e in runner.reveal_all()] == ["deck.revealed"]


def test_shf_info_live_ids_reported_cards_that_are_not_the_order_are_an_alarm() -> None:
    """A shuffler whose reported cards are not its order (the order it committed to)."""
    clean = step(dealer="start_hand") + step(shuffler="shuffle") + step(auto="deal_hole")
    runner = Revealing(table(clean, id_policy="live"))
    runner.play()
    (sid, order), *_ = runner.orders.items()
    lied = (order[-1], *order[1:-1], order[0])  # the first card swapped with the last
    _, events = apply(runner.run.state, DeckRevealed(runner.now, "shuffler", sid, lied, True))
    alarm = one(events, "integrity.alarm")
    assert alarm.rules == ("SHF-INFO", "SHF-RECOG")
    assert data(alarm)["cards"] == ["As", "Kd"]
    assert data(alarm)["expected"] == [order[-1], "Kd"]


def group(number: int, size: int, remaining: int, *reads: tuple[str, Zone]) -> AuditGroup:
    purpose = Purpose.HOLE if number <= 2 else Purpose.BURN
    read = tuple(AuditRead(Card(card), zone) for card, zone in reads)
    return AuditGroup(number, purpose, number, size, remaining, None, "H", read)


ORDER = tuple(Card(c) for c in ("As", "Kd", "7h", "7c", "2s", "3s", "4s", "5s"))
SEAT1, BURN = Zone(ZoneKind.SEAT, 1), Zone(ZoneKind.BURN)


def rules_of(deck: DeckAudit) -> list[tuple[str, ...]]:
    return [tuple(r.value for r in rules) for _, rules in cross_check(deck, ORDER)]


def test_shf_info_the_groups_must_account_for_the_cards_the_order_dealt() -> None:
    ok = DeckAudit(1, (group(1, 2, 6, ("Kd", SEAT1), ("As", SEAT1)), group(3, 1, 5, ("7h", BURN))))
    assert rules_of(ok) == []
    gap = DeckAudit(1, (group(1, 2, 6), group(3, 1, 3)))  # 7h and 7c left in no group
    ((alarm, _),) = cross_check(gap, ORDER)
    assert alarm.expected == ("7h", "7c")
    assert alarm.group is None
    assert rules_of(gap) == [("DE-1544a-GRP",)]
    overlap = DeckAudit(1, (group(1, 2, 6), group(2, 2, 5)))
    assert rules_of(overlap) == [("DE-1544a-GRP",)]
    beyond = DeckAudit(1, (group(1, 2, 7),))
    assert rules_of(beyond) == [("DE-1544a-GRP",)]
    # a hole card of another group at the seat; a burn that is no group's card
    wrong = DeckAudit(1, (group(1, 2, 6, ("7h", SEAT1)), group(3, 1, 5, ("5s", BURN))))
    assert rules_of(wrong) == [("SEAT-SEQ",), ("BOARD-GROUP",)]
    reasons = [alarm.reason for alarm, _ in cross_check(wrong, ORDER)]
    assert reasons == [
        "deck audit: group 1 for seat 1 was read with a card of group 3",
        "deck audit: group 3 (burn) was read with a card the shuffler had not dispensed",
    ]


def test_shf_info_the_audit_keeps_the_last_decks_and_survives_a_snapshot() -> None:
    runner = RevealingAuto(random_table(random.Random(2)), random.Random(2))
    hands = 0
    while hands < AUDIT_DECKS + 3 and runner.play_hand():
        hands += 1
    state = runner.run.state
    kept = [d.shuffle_id for d in state.audit]
    assert kept == sorted(runner.orders)[-len(kept) :]
    assert len(kept) == min(hands, AUDIT_DECKS)
    assert pickle.loads(pickle.dumps(state)).audit == state.audit


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    irregular=st.booleans(),
    live=st.booleans(),
)
def test_shf_info_reads_that_are_what_the_order_dealt_never_raise_an_alarm(
    seed: int, irregular: bool, live: bool
) -> None:
    """Random hands (with irregularities or not), each deck revealed after its hand."""
    rng = random.Random(seed)
    scenario = random_table(rng)
    if live:
        scenario = scenario.model_copy(
            update={"deck": scenario.deck.model_copy(update={"id_policy": "live"})}
        )
    runner = (RevealingIrregular if irregular else RevealingAuto)(scenario, rng)
    for _ in range(3):
        if not runner.play_hand():
            break
        events = runner.reveal_all()
        assert audit_alarms(events) == []
        assert runner.run.state.audit == ()
