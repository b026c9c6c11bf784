"""``tablectl sim rfid deal`` and ``tablectl sim rfid place``: the dealer's hands on a bench.

On a bench table the shuffler simulator dispenses groups and the reader simulator reads tags, but
nothing carries a card from one to the other: at a real table the dealer does. ``deal`` takes the
group the shuffler simulator delivered last (its ``groups`` control command) and puts each card's
tag on the antenna under the group's zone (a hole group's seat, the board, the burn), through the
reader simulator's control socket; ``place`` puts any card or tag on any zone, a wrong one
included. A card becomes its tag's UID through the deck manifest, and a zone becomes an antenna
through the map the table's driver gave the reader (SET_ANTENNA_MAP), as the reader reports it:
the same map the table reads the cards with.

Both print one line saying what they did; bad input (an unknown card or zone, a socket nobody
listens on, nothing to deal) is one line on standard error and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from controller.cards import Card, CardError, parse_card
from controller.decks import DeckManifest, ManifestError, load_deck, load_manifest
from controller.table.inputs import Purpose, Zone
from controller.uids import UidError, normalize_uid
from simulators.control_client import ControlClient, ControlError

#: Where the cards of a group go, by purpose (hole and extra cards go to the group's seat).
PURPOSE_ZONE: dict[str, str] = {
    Purpose.FLOP: "board",
    Purpose.TURN: "board",
    Purpose.RIVER: "board",
    Purpose.BOARD_OTHER: "board",
    Purpose.BURN: "burn",
}
#: How often ``deal --wait`` looks for a new group.
POLL = 0.02


class HandsError(Exception):
    """Bad input, or nothing to do: one line for the operator."""


def add_parsers(parser: argparse.ArgumentParser) -> None:
    """``deal`` and ``place`` under ``tablectl sim rfid``; without them the simulator runs."""
    actions = parser.add_subparsers(
        dest="rfid_action",
        metavar="ACTION",
        title="actions on a running reader simulator (without one, the simulator runs)",
    )
    deal = actions.add_parser(
        "deal",
        help="put the group the shuffler simulator dispensed last on its zone",
        description=(
            "Put the cards of the group the shuffler simulator delivered last on the reader "
            "simulator's antenna under the group's zone: a hole group on its seat, a board group "
            "on the board, a burn on the burn. The table must have mapped the reader's antennas "
            "(tablectl run does when it connects). Cards already on the table stay where they "
            "lie."
        ),
    )
    _common(deal)
    deal.add_argument(
        "--shuffler-control",
        type=Path,
        required=True,
        metavar="PATH",
        help="the shuffler simulator's control socket (its --control)",
    )
    deal.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="S",
        help="wait up to S seconds for a group whose cards are not on the table yet (default 0)",
    )
    deal.set_defaults(handler=run_deal)
    place = actions.add_parser(
        "place",
        help="put cards or tags on a zone of the reader simulator",
        description=(
            "Put cards (named as in As or Td, looked up in the deck manifest) or raw tag UIDs on "
            "the reader simulator's antenna under a zone, whatever the table expects there: a "
            "card moved by hand, or a wrong card on purpose. A tag lying elsewhere moves."
        ),
    )
    _common(place)
    place.add_argument(
        "--zone",
        required=True,
        metavar="ZONE",
        help="seat:N (1-10), board, burn, muck or shuffler_in",
    )
    place.add_argument(
        "items", nargs="+", metavar="CARD|UID", help="a card of the deck (Ah) or a tag UID"
    )
    place.set_defaults(handler=run_place)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--control",
        type=Path,
        required=True,
        metavar="PATH",
        help="the reader simulator's control socket (its --control)",
    )
    parser.add_argument(
        "--deck",
        default="house-a",
        metavar="NAME|PATH",
        help="the deck manifest, as [table] deck names it (default: house-a)",
    )


def run_deal(args: argparse.Namespace) -> int:
    """``tablectl sim rfid deal``."""
    return _report("deal", lambda: deal(args.control, args.shuffler_control, args.deck, args.wait))


def run_place(args: argparse.Namespace) -> int:
    """``tablectl sim rfid place``."""
    return _report("place", lambda: place(args.control, args.zone, args.items, args.deck))


def _report(verb: str, work: Callable[[], Coroutine[Any, Any, str]]) -> int:
    try:
        line = asyncio.run(work())
    except HandsError as exc:
        print(f"tablectl sim rfid {verb}: {exc}", file=sys.stderr)
        return 2
    except ControlError as exc:
        print(f"tablectl sim rfid {verb}: the simulator refused: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the simulator went away mid-command
        print(f"tablectl sim rfid {verb}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(line, flush=True)
    return 0


def manifest(deck: str) -> DeckManifest:
    """The deck manifest ``deck`` names: a shipped deck, or a path (as ``[table] deck``)."""
    try:
        if "/" in deck or deck.endswith(".toml"):
            return load_manifest(Path(deck))
        return load_deck(deck)
    except ManifestError as exc:
        raise HandsError(f"--deck: {exc}") from None


def parse_zone(text: str) -> Zone:
    """A zone as the table names it, or HandsError."""
    try:
        return Zone.parse(text)
    except ValueError as exc:
        raise HandsError(f"--zone: {exc}") from None


async def _connect(path: Path, what: str, option: str) -> ControlClient:
    client = ControlClient(path)
    try:
        await client.connect()
    except (FileNotFoundError, ConnectionRefusedError):
        raise HandsError(
            f"{option} {path}: no {what} simulator listens there (is it running with --control?)"
        ) from None
    except OSError as exc:
        raise HandsError(f"{option} {path}: {exc.strerror or exc}") from None
    return client


def antenna_of(status: dict[str, Any], zone: Zone) -> int:
    """The reader's antenna under ``zone``, from its status (the map the table's driver set)."""
    antennas: dict[str, Any] = status.get("antennas", {})
    for number, antenna in antennas.items():
        if antenna.get("zone") == str(zone):
            return int(number)
    mapped = [a["zone"] for _, a in sorted(antennas.items(), key=lambda n: int(n[0])) if a["zone"]]
    if not mapped:
        raise HandsError(
            f"the reader has no antenna under {zone}: no zone is mapped yet "
            "(the table maps the reader's antennas when tablectl run connects to it)"
        )
    raise HandsError(f"the reader has no antenna under {zone} (it has {', '.join(mapped)})")


def on_table(status: dict[str, Any]) -> set[str]:
    """Every tag lying on one of the reader's antennas."""
    antennas: dict[str, Any] = status.get("antennas", {})
    return {uid for antenna in antennas.values() for uid in antenna.get("tags", [])}


def group_zone(group: dict[str, Any]) -> Zone:
    """Where a dispensed group's cards go."""
    purpose = str(group["purpose"])
    if purpose in PURPOSE_ZONE:
        return Zone.parse(PURPOSE_ZONE[purpose])
    seat = group.get("seat")
    if seat is None:
        raise HandsError(
            f"group {group['group']} ({purpose}) names no seat: put its cards on their seat "
            "with tablectl sim rfid place"
        )
    return Zone.parse(f"seat:{seat}")


def describe(group: dict[str, Any]) -> str:
    """``group 3 (hole, seat 2)``."""
    seat = f", seat {group['seat']}" if group.get("seat") else ""
    return f"group {group['group']} ({group['purpose']}{seat})"


async def deal(reader_path: Path, shuffler_path: Path, deck: str, wait: float) -> str:
    """Put the last delivered group's cards that are not on the table yet on its zone."""
    if wait < 0:
        raise HandsError("--wait: give seconds, 0 or more")
    cards = manifest(deck)
    shuffler = await _connect(shuffler_path, "shuffler", "--shuffler-control")
    try:
        reader = await _connect(reader_path, "reader", "--control")
        try:
            return await _deal(reader, shuffler, cards, wait)
        finally:
            await reader.close()
    finally:
        await shuffler.close()


async def _deal(
    reader: ControlClient, shuffler: ControlClient, cards: DeckManifest, wait: float
) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        groups = (await _groups(shuffler))["groups"]
        status = await reader.status()
        lying = on_table(status)
        last: dict[str, Any] | None = groups[-1] if groups else None
        if last is not None:
            uids = [cards.uid(parse_card(card)) for card in last["cards"]]
            missing = [uid for uid in uids if uid not in lying]
            if missing:
                break
        if loop.time() >= deadline:
            if last is None:
                raise HandsError("the shuffler has dispensed nothing from the deck in its tray")
            raise HandsError(
                f"{describe(last)} is on the table already; the shuffler has dispensed nothing "
                "since"
            )
        await asyncio.sleep(POLL)
    zone = group_zone(last)
    antenna = antenna_of(status, zone)
    await reader.send({"place": missing, "antenna": antenna})
    placed = [str(cards.card(uid)) for uid in missing]
    return f"{describe(last)}: {' '.join(placed)} on {zone} (antenna {antenna})"


async def _groups(shuffler: ControlClient) -> dict[str, Any]:
    try:
        return await shuffler.send({"groups": True})
    except ControlError as exc:
        # a shuffler simulator older than the groups command refuses it by name
        raise HandsError(f"--shuffler-control: cannot list the dispensed groups: {exc}") from None


def tag(cards: DeckManifest, text: str) -> tuple[str, str]:
    """The UID ``text`` names (a card of the deck, or a UID), and how to call it."""
    try:
        card = parse_card(text)
    except CardError:
        card = None
    if card is not None:
        return cards.uid(Card(card)), f"{card} ({cards.deck_id})"
    try:
        uid = normalize_uid(text)
    except UidError:
        raise HandsError(
            f"{text!r} is neither a card (As, Td, 2c…) nor a tag UID (hex, 4, 7, 8 or 10 bytes)"
        ) from None
    known = cards.card(uid)
    return uid, f"{uid} ({known} of {cards.deck_id})" if known else uid


async def place(reader_path: Path, zone_text: str, items: list[str], deck: str) -> str:
    """Put the named cards or tags on ``zone``."""
    zone = parse_zone(zone_text)
    cards = manifest(deck)
    tags = [tag(cards, item) for item in items]
    reader = await _connect(reader_path, "reader", "--control")
    try:
        antenna = antenna_of(await reader.status(), zone)
        await reader.send({"place": [uid for uid, _ in tags], "antenna": antenna})
    finally:
        await reader.close()
    return f"{', '.join(name for _, name in tags)} on {zone} (antenna {antenna})"
