"""The live view folds the event stream into a picture of the table."""

from __future__ import annotations

from rich.console import Console

from controller.envelope import envelope
from controller.view.model import TableView
from controller.view.render import render
from simulators.scenario.model import load_scenario
from tests.helpers import SCENARIOS, run_file


def folded(name: str, *, secure: bool = True) -> TableView:
    run = run_file(name)
    view = TableView()
    table = load_scenario(SCENARIOS / name).table.id
    for seq, event in enumerate(run.events, start=1):
        view.apply(envelope(event, table_id=table, epoch="e", seq=seq, secure=secure))
    return view


def test_a_hand_folds_into_stacks_board_and_shown_hands() -> None:
    view = folded("T18-odd-chip-two-way.toml")
    assert view.hand_id == "T1-00001"
    assert view.board == ["As", "Ks", "Qs", "Js", "Ts"]
    assert {s: v.stack for s, v in view.seats.items()} == {
        1: 104,
        2: 103,
        3: 93,
        4: 100,
        5: 100,
        6: 100,
    }
    assert view.seats[1].category == "Straight Flush"
    assert view.seats[3].status == "folded"
    assert view.street == "complete"


def test_surveillance_sees_hole_cards_the_pit_does_not() -> None:
    surveillance = folded("T18-odd-chip-two-way.toml", secure=True)
    pit = folded("T18-odd-chip-two-way.toml", secure=False)
    assert surveillance.seats[3].cards == ["6c", "7d"]  # folded on the flop: never public
    assert pit.seats[3].cards == []
    assert pit.seats[1].cards == surveillance.seats[1].cards == ["2c", "3d"]  # tabled: public


def test_holds_and_misdeals_are_shown() -> None:
    view = folded("T03-seat-reads-one-card.toml")
    assert view.street == "misdeal"
    assert view.irregularities >= 2
    assert any("SEAT-COUNT" in line for line in view.log)


def test_the_view_renders() -> None:
    view = folded("T06-other-card-exposed-becomes-burn.toml")
    console = Console(width=140, record=True)
    console.print(render(view))
    text = console.export_text()
    assert "table T1" in text
    assert "EXP-OTHER" in text
    assert "♦" in text


def test_the_event_panel_reads_as_words_not_python() -> None:
    """No ``None``, no brackets or quotes: cards and seats spaced, payouts as seat:chips, and
    a field without a value left out."""
    view = folded("T18-odd-chip-two-way.toml")
    text = "\n".join(view.log)
    for python in ("None", "[", "]", "'", "{", "}"):
        assert python not in text, (python, text)
    awarded = next(line for line in view.log if "pot.awarded" in line)
    assert awarded.endswith("payouts 1:13 2:12")  # the odd chip to seat 1
    assert any(line.endswith("seat 1  cards 2c 3d") for line in view.log)
    view = TableView()
    view.apply(
        {"type": "card.exposed", "seq": 9, "rules": ["RROP-EXPOSED"],
         "data": {"seat": None, "cards": ["Jd", "5h"], "reason": ""}}
    )  # fmt: skip
    assert view.log[-1].split("RROP-EXPOSED")[1].strip() == "cards Jd 5h"


def test_hands_count_completed_ones_not_started_ones() -> None:
    misdealt = folded("T03-seat-reads-one-card.toml")
    assert (misdealt.dealt, misdealt.hands) == (1, 0)
    played = folded("T18-odd-chip-two-way.toml")
    assert (played.dealt, played.hands) == (1, 1)
    console = Console(width=140, record=True)
    console.print(render(misdealt))
    assert "hands completed 0 of 1 dealt" in console.export_text()
