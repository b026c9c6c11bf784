"""``tablectl sim rfid deal`` and ``place``: what they put where, and their answer to bad input.

The simulators are stood in for by control sockets answering as they do (``groups`` as the
shuffler simulator, ``status`` and ``place`` as the reader simulator), so each case is exactly
the state it tests; ``tests/rig/test_bench_doc.py`` runs both against the real simulators and
daemon. Bad input is one line on standard error and exit status 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.cli import build_parser, main
from controller.decks import load_deck
from simulators.control_server import control_channel

HOUSE_A = load_deck("house-a")
HOUSE_B = load_deck("house-b")
#: The reader's antennas as a table maps them (the zone each antenna is under).
MAPPED = {"0": "seat:1", "1": "seat:2", "2": "seat:3", "10": "board", "11": "burn"}


def uid(card: str) -> str:
    return HOUSE_A.uid(card)  # type: ignore[arg-type]


@dataclass
class FakeReader:
    """The reader simulator's control channel: its status, and the tags placed on it."""

    zones: dict[str, str | None] = field(default_factory=lambda: dict(MAPPED))
    tags: dict[int, list[str]] = field(default_factory=dict)
    placed: list[tuple[int, list[str]]] = field(default_factory=list)

    def handle(self, data: Any) -> dict[str, Any]:
        if "place" in data:
            antenna = int(data["antenna"])
            self.placed.append((antenna, list(data["place"])))
            self.tags.setdefault(antenna, []).extend(data["place"])
            return {"ok": True}
        assert data == {"status": True}, data
        antennas = {
            number: {"zone": zone, "tags": self.tags.get(int(number), [])}
            for number, zone in self.zones.items()
        }
        return {"ok": True, "antennas": antennas}


@dataclass
class FakeShuffler:
    """The shuffler simulator's ``groups`` command; ``then`` are the groups after each answer."""

    groups: list[dict[str, Any]] = field(default_factory=list)
    then: list[list[dict[str, Any]]] = field(default_factory=list)

    def handle(self, data: Any) -> dict[str, Any]:
        assert data == {"groups": True}, data
        answer = {"ok": True, "shuffle_id": 1001, "groups": list(self.groups)}
        if self.then:
            self.groups = self.then.pop(0)
        return answer


def hole(group: int, seat: int | None, *cards: str) -> dict[str, Any]:
    return {"group": group, "purpose": "hole", "seat": seat, "cards": list(cards)}


@dataclass
class Sockets:
    reader: Path
    shuffler: Path


@pytest.fixture
def sockets(tmp_path: Path) -> Sockets:
    return Sockets(tmp_path / "reader.ctl", tmp_path / "shuffler.ctl")


@contextlib.asynccontextmanager
async def serving(
    handlers: dict[Path, Callable[[Any], dict[str, Any]]],
) -> AsyncIterator[None]:
    async with contextlib.AsyncExitStack() as stack:
        for path, handle in handlers.items():
            await stack.enter_async_context(control_channel(handle, path))
        yield


async def tablectl(*args: str) -> int:
    """The command line, in a thread: the control sockets are served by this test's loop."""
    return await asyncio.to_thread(main, list(args))


def one_line(capsys: pytest.CaptureFixture[str], verb: str) -> str:
    """What went to standard error: one line, naming the command, no traceback."""
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"tablectl sim rfid {verb}: ")
    assert "Traceback" not in err
    return lines[0]


def deal_args(sockets: Sockets, *more: str) -> list[str]:
    return [
        "sim", "rfid", "deal",
        "--control", str(sockets.reader), "--shuffler-control", str(sockets.shuffler), *more,
    ]  # fmt: skip


async def test_deal_puts_the_last_group_on_its_seat(
    sockets: Sockets, capsys: pytest.CaptureFixture[str]
) -> None:
    reader = FakeReader()
    shuffler = FakeShuffler([hole(1, 1, "Ah", "Kd"), hole(2, 2, "7c", "2s")])
    reader.tags[0] = [uid("Ah"), uid("Kd")]  # group 1 is on the table already
    async with serving({sockets.reader: reader.handle, sockets.shuffler: shuffler.handle}):
        assert await tablectl(*deal_args(sockets)) == 0
    assert reader.placed == [(1, [uid("7c"), uid("2s")])]
    out, err = capsys.readouterr()
    assert (out, err) == ("group 2 (hole, seat 2): 7c 2s on seat:2 (antenna 1)\n", "")


async def test_deal_puts_board_and_burn_groups_on_their_zones(sockets: Sockets) -> None:
    reader = FakeReader()
    burn = {"group": 4, "purpose": "burn", "seat": None, "cards": ["3h"]}
    flop = {"group": 5, "purpose": "flop", "seat": None, "cards": ["Qs", "Jd", "4c"]}
    shuffler = FakeShuffler([burn], then=[[burn], [burn, flop]])
    async with serving({sockets.reader: reader.handle, sockets.shuffler: shuffler.handle}):
        assert await tablectl(*deal_args(sockets)) == 0
        # the flop comes on the shuffler's third answer: --wait waits for it
        assert await tablectl(*deal_args(sockets, "--wait", "5")) == 0
    assert reader.placed == [(11, [uid("3h")]), (10, [uid("Qs"), uid("Jd"), uid("4c")])]


async def test_deal_leaves_a_card_already_on_the_table_where_it_lies(sockets: Sockets) -> None:
    reader = FakeReader()
    reader.tags[2] = [uid("Ah")]  # the dealer put one card of the group on the wrong seat
    shuffler = FakeShuffler([hole(1, 1, "Ah", "Kd")])
    async with serving({sockets.reader: reader.handle, sockets.shuffler: shuffler.handle}):
        assert await tablectl(*deal_args(sockets)) == 0
    assert reader.placed == [(0, [uid("Kd")])]


@pytest.mark.parametrize(
    ("groups", "zones", "wanted"),
    [
        ([], MAPPED, "the shuffler has dispensed nothing from the deck in its tray"),
        (
            [hole(1, 1, "Ah", "Kd")],
            {"0": None, "1": None},
            "the reader has no antenna under seat:1: no zone is mapped yet",
        ),
        ([hole(1, 5, "Ah", "Kd")], MAPPED, "the reader has no antenna under seat:5 (it has "),
        ([hole(1, None, "Ah", "Kd")], MAPPED, "group 1 (hole) names no seat"),
    ],
)
async def test_deal_with_nothing_it_can_do_says_why_in_one_line(
    sockets: Sockets,
    capsys: pytest.CaptureFixture[str],
    groups: list[dict[str, Any]],
    zones: dict[str, str | None],
    wanted: str,
) -> None:
    reader = FakeReader(zones=dict(zones))
    shuffler = FakeShuffler(groups)
    async with serving({sockets.reader: reader.handle, sockets.shuffler: shuffler.handle}):
        assert await tablectl(*deal_args(sockets)) == 2
    assert wanted in one_line(capsys, "deal")
    assert reader.placed == []


async def test_deal_of_a_group_on_the_table_already_waits_then_says_so(
    sockets: Sockets, capsys: pytest.CaptureFixture[str]
) -> None:
    reader = FakeReader()
    reader.tags[0] = [uid("Ah"), uid("Kd")]
    shuffler = FakeShuffler([hole(1, 1, "Ah", "Kd")])
    async with serving({sockets.reader: reader.handle, sockets.shuffler: shuffler.handle}):
        assert await tablectl(*deal_args(sockets, "--wait", "0.1")) == 2
    line = one_line(capsys, "deal")
    assert "group 1 (hole, seat 1) is on the table already" in line
    assert reader.placed == []


async def test_deal_without_the_simulators_says_which_socket(
    sockets: Sockets, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await tablectl(*deal_args(sockets)) == 2
    assert f"--shuffler-control {sockets.shuffler}: no shuffler simulator" in one_line(
        capsys, "deal"
    )
    shuffler = FakeShuffler([hole(1, 1, "Ah", "Kd")])
    async with serving({sockets.shuffler: shuffler.handle}):
        assert await tablectl(*deal_args(sockets)) == 2
    assert f"--control {sockets.reader}: no reader simulator" in one_line(capsys, "deal")


async def test_deal_with_a_deck_that_does_not_load(
    sockets: Sockets, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await tablectl(*deal_args(sockets, "--deck", "house-z")) == 2
    assert "--deck: no deck manifest named 'house-z'" in one_line(capsys, "deal")
    assert await tablectl(*deal_args(sockets, "--wait", "-1")) == 2
    assert "--wait" in one_line(capsys, "deal")


async def test_place_puts_cards_and_tags_of_any_deck_on_a_zone(
    sockets: Sockets, capsys: pytest.CaptureFixture[str]
) -> None:
    reader = FakeReader()
    unknown = "04:DE:AD:BE:EF:00:01"
    async with serving({sockets.reader: reader.handle}):
        place = ["sim", "rfid", "place", "--control", str(sockets.reader)]
        assert await tablectl(*place, "--zone", "seat:3", "Ah", unknown) == 0
        assert await tablectl(*place, "--deck", "house-b", "--zone", "board", "As") == 0
    assert reader.placed == [
        (2, [uid("Ah"), "04deadbeef0001"]),
        (10, [HOUSE_B.uid("As")]),  # type: ignore[arg-type]
    ]
    out, _ = capsys.readouterr()
    assert out.splitlines() == [
        "Ah (house-a), 04deadbeef0001 on seat:3 (antenna 2)",
        "As (house-b) on board (antenna 10)",
    ]


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["--zone", "seat:11", "Ah"], "--zone: bad seat zone 'seat:11'"),
        (["--zone", "table", "Ah"], "--zone: unknown zone 'table'"),
        (["--zone", "seat:1", "Zz"], "'Zz' is neither a card"),
        (["--zone", "seat:1", "04a1b2"], "'04a1b2' is neither a card"),
        (["--zone", "seat:1", "--deck", "nowhere/deck.toml", "Ah"], "--deck: nowhere/deck.toml"),
        (["--zone", "muck", "Ah"], "the reader has no antenna under muck (it has seat:1, "),
    ],
)
async def test_place_refuses_bad_input_in_one_line(
    sockets: Sockets, capsys: pytest.CaptureFixture[str], args: list[str], wanted: str
) -> None:
    reader = FakeReader()
    async with serving({sockets.reader: reader.handle}):
        code = await tablectl("sim", "rfid", "place", "--control", str(sockets.reader), *args)
    assert code == 2
    assert wanted in one_line(capsys, "place")
    assert reader.placed == []


async def test_place_without_the_reader_says_so(
    sockets: Sockets, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await tablectl(
        "sim", "rfid", "place", "--control", str(sockets.reader), "--zone", "board", "Ah"
    )
    assert code == 2
    assert f"--control {sockets.reader}: no reader simulator listens there" in one_line(
        capsys, "place"
    )


def test_without_an_action_sim_rfid_still_runs_the_simulator() -> None:
    args = build_parser("sim").parse_args(["sim", "rfid", "--link", "/tmp/r", "--antennas", "8"])
    assert (args.rfid_action, args.handler.__module__, args.antennas) == (None, "simulators.cli", 8)
    args = build_parser("sim").parse_args(
        ["sim", "rfid", "place", "--control", "/tmp/r.ctl", "--zone", "board", "As"]
    )
    assert (args.rfid_action, args.handler.__name__) == ("place", "run_place")


def test_the_actions_say_what_they_do(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sim", "rfid", "--help"])
    listed = " ".join(capsys.readouterr().out.split())
    assert "deal put the group the shuffler simulator dispensed last on its zone" in listed
    assert "place put cards or tags on a zone of the reader simulator" in listed
    for name, opening in (("deal", "Put the cards of the group"), ("place", "Put cards (named")):
        with pytest.raises(SystemExit):
            main(["sim", "rfid", name, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert opening in text
        assert "lie." in text or "moves." in text  # the description is whole sentences
