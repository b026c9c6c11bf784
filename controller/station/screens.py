"""What each part of the station's screen shows, from the station's state: pure functions.

The pages (controller/station/pages.py) render these into HTML; nothing here reads a socket or a
clock. Each button is a :class:`Button`: its visible text (also its accessible name, the words
the dealer taps and the tests look for), the API request it sends, and whether it may be tapped
now. The buttons a hand offers come from the core through the view: the action pad's from
:func:`controller.game.betting.options` (the view's ``pad``), the quick sizes from
:func:`controller.game.betting.quick_sizes` over the core's own round (:func:`.legal.round_of`).
No rule is decided here: the station checks an amount with the core before sending it, and the
daemon judges it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.game import betting
from controller.rules.ids import Rule
from controller.station.legal import limits_of, round_of
from controller.table.values import Ruling

#: The ruling each hold proposes, in plain words: what confirming it does at the table.
RULINGS: dict[str, str] = {
    Ruling.CONTINUE: "The hand goes on as it is.",
    Ruling.MISDEAL: "Misdeal: every card comes back, every chip bet goes back to its seat, and "
    "the hand is dealt again.",
    Ruling.VOID: "The hand is void: every chip bet goes back to its seat and nobody wins it.",
    Ruling.DEAD_HAND: "The seat's hand is dead: it can win nothing, and its chips stay in the pot.",
    Ruling.CARD_DEAD: "The card is dead, and so is a hand that holds it.",
    Ruling.MANUAL_BOARD: "The board is dealt by hand from the stub; the readers still read every "
    "card.",
    Ruling.REDEAL_BOARD: "The broken board group goes back into the stub, which is reshuffled, "
    "and the street is dealt again.",
    Ruling.BURN_CORRECT: "There was no burn: the first card dealt is the burn, and the street is "
    "dealt on from there.",
    Ruling.BURN_EXTRA_CORRECT: "The extra burn is the street's card: it goes to the board.",
    Ruling.CLAIM_UPHELD: "The claim stands: the claimant's hand is live again and the award is "
    "proposed anew.",
    Ruling.AWARD_AS_PROPOSED: "The losing hands are dead: the pots are pushed as proposed.",
}
#: What the quick sizes are called on the pad (:func:`controller.game.betting.quick_sizes`).
QUICK_LABELS = {"minimum": "Min", "half pot": "½ pot", "pot": "Pot", "fixed": "Fixed"}
#: The betting pad's buttons: the view's action, and the words on the button.
ACTIONS = (
    ("fold", "Fold"),
    ("check", "Check"),
    ("call", "Call"),
    ("bet", "Bet"),
    ("raise", "Raise"),
    ("allin", "All in"),
)
#: What the debts of MISSED-BLINDS are called.
DEBTS = {"small": "the small blind", "big": "the big blind", "both": "both blinds"}
#: The street each betting round is followed by.
NEXT_STREET = {"preflop": "flop", "flop": "turn", "turn": "river"}


@dataclass(frozen=True)
class Button:
    """A button of the screen: ``label`` is its visible text and its name; tapping it sends
    ``body`` to ``post`` (the Amount field's value as ``amount`` when ``amount`` is true)."""

    label: str
    post: str
    body: Mapping[str, Any] = field(default_factory=dict)
    enabled: bool = True
    amount: bool = False
    style: str = ""  # "primary", "danger", "floor": how it looks (it says what it does too)
    key: str = ""  # a stable id for the page (focus stays on it across live updates)


@dataclass(frozen=True)
class Pad:
    """The action panel: what the hand waits for and the buttons for it."""

    mode: str  # offline, start, dealing, betting, board, showdown, award, held
    title: str
    note: str = ""
    buttons: tuple[Button, ...] = ()
    quick: tuple[tuple[str, int], ...] = ()  # (label, "to")
    amount: tuple[int, int] | None = None  # the smallest and largest bet or raise "to"
    straddles: tuple[int, ...] = ()  # the seats the dealer may name as straddlers
    straddle_max: int = 0
    seated: tuple[int, ...] = ()  # the seats with chips, each of which may sit the hand out
    lines: tuple[str, ...] = ()  # the award proposal, in words


@dataclass(frozen=True)
class HoldView:
    """A hold waiting for a ruling, as the dealer reads it."""

    id: str
    rule: str
    ruling: str
    plain: str
    reason: str
    seat: int | None
    may_rule: bool
    buttons: tuple[Button, ...]


def seat_label(seats: Mapping[str, Any], seat: Any) -> str:
    """``Seat 3 · Ann`` (the player's name when the dealer gave one)."""
    name = (seats.get(str(seat)) or {}).get("name")
    plain = f"Seat {seat}"
    return f"{plain} · {name}" if name and name != plain else plain


def floor_button(body: Mapping[str, Any], key: str) -> Button:
    """**Call the floor** (the hold or the dispute in ``body``)."""
    return Button("Call the floor", "/api/floor", body, style="floor", key=key)


def pad(view: Mapping[str, Any] | None, problem: str | None = None) -> Pad:
    """The action panel of the station's ``view`` (None: the table is out of reach)."""
    if view is None:
        return Pad("offline", "The table is out of reach", problem or "not connected yet")
    table = view.get("table") or {}
    hand = table.get("hand")
    seats = table.get("seats") or {}
    if not isinstance(hand, Mapping):
        return _start(table)
    if hand.get("holds"):
        called = any(h.get("rule") == Rule.FLOOR_CALL for h in hand["holds"])
        return Pad(
            "held",
            f"Hand {hand.get('hand_id')} is held",
            "The floor is called: nothing goes on, the award's push included, until the floor "
            "rules."
            if called
            else "Nothing goes on until the hold is ruled on: see the hold.",
        )
    phase = hand.get("phase")
    if phase == "dealing":
        return Pad(
            "dealing",
            "Dealing the hole cards",
            "The shuffler deals; the readers see each card reach its seat.",
            (floor_button({}, "floor"),),
        )
    if phase == "betting" and isinstance(hand.get("pad"), Mapping):
        return _betting(hand, seats)
    if phase == "showdown":
        return _showdown(hand, seats)
    if phase == "award" and isinstance(hand.get("proposal"), Mapping):
        return _award(hand, seats)
    return _board(table, hand, seats)


def _start(table: Mapping[str, Any]) -> Pad:
    seats = table.get("seats") or {}
    buttons = [Button("Start hand", "/api/hand/start", style="primary", key="start")]
    owes = table.get("owes") or {}
    posting = set(table.get("posting") or ())
    notes = []
    for seat, debt in sorted(owes.items(), key=lambda kv: int(kv[0])):
        if int(seat) in posting:
            notes.append(f"{seat_label(seats, seat)} has posted {DEBTS.get(debt, debt)}.")
            continue
        buttons.append(
            Button(
                f"Post {DEBTS.get(debt, debt)}: seat {seat}",
                "/api/post",
                {"seat": int(seat)},
                key=f"post-{seat}",
            )
        )
    buttons.append(floor_button({}, "floor"))
    straddles = table.get("straddles") or {}
    allowed = straddles.get("mode") not in (None, "none")
    chipped = tuple(int(s) for s, e in seats.items() if (e or {}).get("stack", 0) > 0)
    return Pad(
        "start",
        "Between hands",
        " ".join(notes),
        tuple(buttons),
        straddles=tuple(sorted(chipped)) if allowed else (),
        straddle_max=int(straddles.get("max", 0)) if allowed else 0,
        seated=tuple(sorted(chipped)),
    )


def _betting(hand: Mapping[str, Any], seats: Mapping[str, Any]) -> Pad:
    options = hand["pad"]
    seat = options["seat"]
    allowed = set(options.get("actions", ()))
    buttons = []
    for action, label in ACTIONS:
        amount = action in ("bet", "raise")
        buttons.append(
            Button(
                label,
                f"/api/actions/{action}",
                {"seat": seat},
                enabled=action in allowed,
                amount=amount,
                style="danger" if action == "fold" else "primary" if amount else "",
                key=f"act-{action}",
            )
        )
    quick: tuple[tuple[str, int], ...] = ()
    amount_range = None
    if options.get("can_raise"):
        amount_range = (int(options["min_to"]), int(options["max_to"]))
        quick = quick_sizes(hand, seats, seat)
    to_call = options.get("to_call", 0)
    note = f"{to_call} to call" if to_call else "Nothing to call: check or bet"
    if amount_range is not None:
        low, high = amount_range
        note += f" · a bet or raise is to {low}" + (f" … {high}" if high != low else "")
    elif betting.capped(limits_of(hand.get("limits"))):
        note += " · the betting is capped: call or fold"
    buttons.append(floor_button({"seat": seat}, "floor"))
    return Pad(
        "betting",
        f"{seat_label(seats, seat)} to act",
        note,
        tuple(buttons),
        quick=quick,
        amount=amount_range,
    )


def quick_sizes(
    hand: Mapping[str, Any], seats: Mapping[str, Any], seat: int
) -> tuple[tuple[str, int], ...]:
    """The pad's quick amounts ("to") for ``seat``: the core's menu's as the view carries them
    (controller/rules/menu.py), else the core's :func:`~controller.game.betting.quick_sizes`
    over the round and the structure's limits as the core keeps them (pot-limit: the pot is the
    most; fixed-limit: the one fixed size)."""
    given = (hand.get("pad") or {}).get("quick")
    if isinstance(given, list):
        return tuple(
            (QUICK_LABELS.get(str(q.get("label")), str(q.get("label"))), int(q["to"]))
            for q in given
            if isinstance(q, Mapping) and isinstance(q.get("to"), int)
        )
    order = hand.get("order", ())
    stacks = {int(s): int(e["stack"]) for s, e in seats.items() if int(s) in order}
    limits = limits_of(hand.get("limits"))._replace(pot=int(hand.get("pot", 0)))
    sizes = betting.quick_sizes(round_of(hand["round"]), seat, stacks, limits)
    return tuple((QUICK_LABELS.get(label, label), to) for label, to in sizes)


def _showdown(hand: Mapping[str, Any], seats: Mapping[str, Any]) -> Pad:
    buttons = []
    for seat in hand.get("showdown_order", ()):
        entry = seats.get(str(seat)) or {}
        if entry.get("status") not in ("live", "all_in") or "shown" in entry:
            continue
        buttons.append(
            Button(
                f"Table seat {seat}",
                "/api/showdown/table",
                {"seat": seat},
                style="primary",
                key=f"table-{seat}",
            )
        )
        buttons.append(
            Button(f"Muck seat {seat}", "/api/showdown/muck", {"seat": seat}, key=f"muck-{seat}")
        )
    buttons.append(floor_button({}, "floor"))
    return Pad(
        "showdown",
        "Showdown",
        "Each live hand is tabled or mucked, in the order of the showdown.",
        tuple(buttons),
    )


def _award(hand: Mapping[str, Any], seats: Mapping[str, Any]) -> Pad:
    return Pad(
        "award",
        "The award",
        "Push the pots as proposed; if a player disputes it, call the floor.",
        (
            Button("Push award", "/api/award", style="primary", key="award"),
            floor_button({"reason": "the award is disputed"}, "floor"),
        ),
        lines=award_lines(hand["proposal"], hand.get("house_take"), seats),
    )


def award_lines(
    proposal: Mapping[str, Any], take: Mapping[str, Any] | None, seats: Mapping[str, Any]
) -> tuple[str, ...]:
    """The award proposal in words: who wins which pot, the odd chips, the house's take."""
    lines = []
    for index, pot in enumerate(proposal.get("pots", ())):
        name = "Main pot" if index == 0 else f"Side pot {index}"
        winners = pot.get("winners") or {}
        won = ", ".join(
            f"{seat_label(seats, s)} wins {c}" for s, c in sorted(winners.items(), key=_by_seat)
        )
        line = f"{name} {pot.get('amount')}: {won or 'no winner'}"
        odd = pot.get("odd_chips") or {}
        if odd:
            line += " (odd chips: " + ", ".join(
                f"{c} to seat {s}" for s, c in sorted(odd.items(), key=_by_seat)
            )
            line += ")"
        if pot.get("house"):
            line += f"; the house takes {pot['house']}"
        lines.append(line + ".")
    lines.append(house_words(take))
    return tuple(lines)


def house_words(take: Mapping[str, Any] | None) -> str:
    """What the house takes from the hand, in words."""
    if not take or not take.get("total"):
        return "The house takes nothing from this hand."
    parts = []
    rake = sum(take.get("rake") or ())
    if rake:
        parts.append(f"rake {rake}")
    if take.get("jackpot"):
        parts.append(f"jackpot drop {take['jackpot']}")
    words = f"The house takes {take['total']}" + (f" ({', '.join(parts)})" if parts else "")
    return words + "."


def take_words(take: Mapping[str, Any] | None) -> str:
    """The house's take, short: ``3 (rake 3)``, or ``none``."""
    if not take or not take.get("total"):
        return "none"
    parts = [f"rake {sum(take.get('rake') or ())}"] if sum(take.get("rake") or ()) else []
    if take.get("jackpot"):
        parts.append(f"jackpot {take['jackpot']}")
    return f"{take['total']}" + (f" ({', '.join(parts)})" if parts else "")


def _board(table: Mapping[str, Any], hand: Mapping[str, Any], seats: Mapping[str, Any]) -> Pad:
    street = str(hand.get("street", ""))
    coming = NEXT_STREET.get(street)
    buttons = []
    live = [
        s
        for s in hand.get("order", ())
        if (seats.get(str(s)) or {}).get("status") in ("live", "all_in")
    ]
    with_chips = [s for s in live if (seats.get(str(s)) or {}).get("stack", 0) > 0]
    # RUN-TWICE: the players all in may agree before the next street's burn, where the house
    # allows it (the daemon judges whether the street has begun)
    if (
        table.get("run_twice")
        and coming is not None
        and hand.get("runs", 1) < 2
        and len(live) > 1
        and len(with_chips) <= 1
    ):
        buttons.append(Button("Run it twice", "/api/run_it_twice", key="run-twice"))
    buttons.append(floor_button({}, "floor"))
    title = f"Dealing the {coming}" if coming else "Waiting for the table"
    note = "The betting is over: the shuffler deals the next street." if coming else ""
    if hand.get("runs", 1) > 1:
        note += " The board is run twice."
    return Pad("board", title, note.strip(), tuple(buttons))


def facts(view: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """The hand's numbers beside the drawing: whose turn, to call, the minimum raise, the
    pots, the house's take (each in words too, never by colour alone)."""
    if view is None:
        return ()
    table = view.get("table") or {}
    hand = table.get("hand")
    seats = table.get("seats") or {}
    blinds = table.get("blinds") or []
    shown: list[tuple[str, str]] = []
    structure = structure_words(table.get("betting"))
    if not isinstance(hand, Mapping):
        shown.append(("Hand", "none in progress"))
        if len(blinds) == 2:
            shown.append(("Blinds", f"{blinds[0]} / {blinds[1]}"))
        if structure:
            shown.append(("Betting", structure))
        if table.get("last_hand"):
            shown.append(("Last hand", str(table["last_hand"])))
        return tuple(shown)
    shown.append(("Hand", str(hand.get("hand_id"))))
    shown.append(("Street", str(hand.get("street"))))
    if structure:
        shown.append(("Betting", structure))
    options = hand.get("options")
    if hand.get("to_act") is not None:
        shown.append(("To act", f"▶ {seat_label(seats, hand['to_act'])}"))
    if isinstance(options, Mapping):
        shown.append(("To call", str(options.get("to_call", 0))))
        if options.get("can_raise"):
            shown.append(("Minimum raise", f"to {options.get('min_to')}"))
        else:
            shown.append(("Minimum raise", "no raise possible"))
    pots = hand.get("pots") or []
    if pots:
        shown.append(
            (
                "Pots",
                "; ".join(
                    f"{'Main' if i == 0 else f'Side {i}'} {p.get('amount')}"
                    for i, p in enumerate(pots)
                ),
            )
        )
    shown.append(("Pot, bets included", str(hand.get("pot", 0))))
    shown.append(("House take", take_words(hand.get("house_take"))))
    return tuple(shown)


#: The betting structures in words (the profile's ``betting.structure``).
STRUCTURES = {"no_limit": "No-limit", "pot_limit": "Pot-limit", "fixed_limit": "Fixed-limit"}


def structure_words(betting_: Mapping[str, Any] | None) -> str:
    """The table's betting structure in words: ``Pot-limit``; fixed-limit with its bets and
    cap, ``Fixed-limit 2 / 4, a bet and 3 raises``."""
    if not isinstance(betting_, Mapping) or "structure" not in betting_:
        return ""
    name = str(betting_["structure"])
    words = STRUCTURES.get(name, name.replace("_", "-"))
    bets = betting_.get("bets")
    if isinstance(bets, list) and len(bets) == 2:
        words += f" {bets[0]} / {bets[1]}"
        cap = betting_.get("cap")
        if isinstance(cap, int):
            words += f", a bet and {cap - 1} raises"
    return words


def holds(view: Mapping[str, Any] | None) -> tuple[HoldView, ...]:
    """The holds waiting for a ruling: rule ID, the ruling in plain words, what the dealer may
    do (Confirm and Reject only where the house lets the dealer: ``dealer_may_confirm``)."""
    hand = ((view or {}).get("table") or {}).get("hand")
    if not isinstance(hand, Mapping):
        return ()
    shown = []
    for hold in hand.get("holds", ()):
        hold_id = str(hold.get("id"))
        ruling = str(hold.get("ruling"))
        may = bool(hold.get("may_rule"))
        buttons: list[Button] = []
        if may:
            buttons += [
                Button(
                    "Confirm",
                    f"/api/holds/{hold_id}/confirm",
                    style="primary",
                    key=f"confirm-{hold_id}",
                ),
                Button("Reject", f"/api/holds/{hold_id}/reject", key=f"reject-{hold_id}"),
            ]
        rule = str(hold.get("rule"))
        # a floor call's own hold: calling again reminds the floor it is still awaited
        wanted = (
            "the floor is still awaited"
            if rule == Rule.FLOOR_CALL
            else f"a ruling on {rule} is needed"
        )
        asked = {"hold": hold_id, "reason": wanted}
        buttons.append(floor_button(asked, f"floor-{hold_id}"))
        shown.append(
            HoldView(
                hold_id,
                rule,
                ruling,
                RULINGS.get(ruling, ruling.replace("_", " ")),
                str(hold.get("reason") or ""),
                hold.get("seat"),
                may,
                tuple(buttons),
            )
        )
    return tuple(shown)


@dataclass(frozen=True)
class Status:
    """The status strip: the table, who is logged in, the daemon, the broker, the pit and the
    devices, each as words and a symbol (never by colour alone)."""

    table: str
    dealer: str | None
    items: tuple[tuple[str, str, str], ...]  # (what, how it is, "ok" | "bad" | "unknown")


def status(state: Mapping[str, Any]) -> Status:
    """The status strip of the station's ``state`` (:meth:`.station.Station.state`)."""
    items: list[tuple[str, str, str]] = []
    daemon = state.get("daemon") or {}
    if daemon.get("connected"):
        items.append(("Table", "connected", "ok"))
    else:
        items.append(("Table", f"out of reach: {daemon.get('problem') or 'connecting'}", "bad"))
    view = state.get("view") or state.get("public") or {}
    link = view.get("link") or {}
    broker = link.get("broker")
    if broker is not None:
        said = {"up": "up", "down": "down (events kept)", "off": "off (journal only)"}
        items.append(("Broker", said.get(broker, str(broker)), "bad" if broker == "down" else "ok"))
    pit = link.get("pit")
    if isinstance(pit, Mapping):
        items.append(("Pit", f"stored to #{pit.get('seq', '?')}", "ok"))
    elif broker == "up":
        items.append(("Pit", "no confirmation yet", "unknown"))
    for alarm in link.get("alarms") or ():
        items.append(("Alarm", str(alarm), "bad"))
    for name, reported in sorted((view.get("devices") or {}).items()):
        device = reported or {}
        health = str(device.get("health") or "unknown")
        refused = device.get("approved") is False
        level = "bad" if refused else {"online": "ok", "unknown": "unknown"}.get(health, "bad")
        items.append((name.capitalize(), health + (" (not approved)" if refused else ""), level))
    dealer = state.get("dealer")
    return Status(
        str(state.get("table_id", "")),
        str(dealer.get("name")) if isinstance(dealer, Mapping) else None,
        tuple(items),
    )


def _by_seat(item: tuple[str, Any]) -> int:
    key = item[0]
    return int(key) if str(key).isdigit() else 0
