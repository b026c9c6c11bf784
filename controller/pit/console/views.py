"""What each console page shows, built from the store's rows (pure functions: no I/O).

The same view data renders a page and each of its live updates, so a tile, a hold or an event
row looks the same whether it came with the page or over its stream.

Every function here takes whatever the store holds, of any shape: the pit checks what the tables
publish before it stores it (:mod:`controller.pit.published`), but a row stored before that, or
of a shape nobody foresaw, must not break a page for everyone. A value of another type than the
page shows is left out and the view says ``malformed`` (the page marks it, visibly); the views
give the templates only what they can render.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from controller.pit.console.local_time import LocalTime
from controller.pit.console.rules import rule_text
from controller.pit.console.sentences import sentence
from controller.pit.health import Lost
from controller.table.decoder import decode
from controller.table.event_types import DealGroupDelivered

#: Evidence and event fields naming cards: shown to the surveillance role only.
CARD_FIELDS = frozenset({"card", "cards", "hidden_card", "expected", "uid", "uids", "order"})

#: The longest raw envelope a page shows of one event (a revealed deck's order is the longest).
RAW_CHARS = 20_000
#: Times in the host's time zone, where no other is configured.
HOST_TIME = LocalTime()

#: Device health that is a fault (shown as an alarm on the tile).
DEVICE_FAULTS = frozenset({"failed", "rejected", "reconnecting", "stale"})


@dataclass(frozen=True)
class Viewer:
    """Who looks: what the pages show them and which buttons they get."""

    username: str
    roles: frozenset[str]
    csrf: str | None

    @property
    def sees_cards(self) -> bool:
        """Hole cards and card identities: surveillance only."""
        return "surveillance" in self.roles

    @property
    def rules(self) -> bool:
        """Confirm, reject and override holds: the floor only."""
        return "floor" in self.roles

    @property
    def acknowledges(self) -> bool:
        """Acknowledge alarms."""
        return bool(self.roles & {"floor", "surveillance", "maintenance"})


class _Shape:
    """Takes values out of rows of any shape, and remembers whether one was not as expected."""

    def __init__(self) -> None:
        self.malformed = False

    def text(self, value: Any) -> str | None:
        """A string (None: absent; anything else is malformed, and left out)."""
        if value is None or isinstance(value, str):
            return value
        self.malformed = True
        return None

    def number(self, value: Any) -> int | None:
        """An integer, not a boolean (None: absent; anything else is malformed)."""
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        self.malformed = True
        return None

    def flag(self, value: Any) -> bool | None:
        """True, false or None (anything else is malformed)."""
        if value is None or isinstance(value, bool):
            return value
        self.malformed = True
        return None

    def mapping(self, value: Any) -> Mapping[str, Any]:
        """An object ({} when absent; anything else is malformed)."""
        if isinstance(value, Mapping):
            return value
        if value is not None:
            self.malformed = True
        return {}

    def items(self, value: Any) -> list[Any]:
        """A list ([] when absent; anything else is malformed)."""
        if isinstance(value, list):
            return value
        if value is not None:
            self.malformed = True
        return []


def shown(value: Any) -> str:
    """Any value as one bounded line of text (JSON for what is not a string)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:300]


def status_alarm(alarm: Any) -> dict[str, str | None]:
    """One alarm of a table's status: its name, detail and since (text), whatever it was."""
    if isinstance(alarm, Mapping) and isinstance(alarm.get("alarm"), str):
        detail, since = alarm.get("detail"), alarm.get("since")
        return {
            "alarm": alarm["alarm"],
            "detail": None if detail is None else shown(detail),
            "since": since if isinstance(since, str) else None,
        }
    return {"alarm": "malformed", "detail": shown(alarm), "since": None}


def tile(
    table: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    holds: Iterable[Mapping[str, Any]],
    devices: Mapping[str, Mapping[str, Any]],
    alarms: int,
    refused: int = 0,
) -> dict[str, Any]:
    """One table's tile on the floor map."""
    shape = _Shape()
    state_ = shape.mapping(state)
    hand = shape.mapping(state_.get("hand"))
    device_rows = []
    for name, body in sorted(devices.items()):
        health_body = shape.mapping(body)
        health = shape.text(health_body.get("health"))
        approved = shape.flag(health_body.get("approved"))
        device_rows.append(
            {
                "name": str(name),
                "health": health or "unknown",
                "approved": approved,
                "detail": shape.text(health_body.get("detail")) or "",
                "fault": health in DEVICE_FAULTS or approved is False,
            }
        )
    status_alarms = []
    for alarm in shape.items(table.get("alarms")):
        status_alarms.append(status_alarm(alarm)["alarm"])
    online = shape.flag(table.get("online"))
    seq = shape.number(state_.get("seq")) if state_ else shape.number(table.get("state_seq"))
    hold_rows = []
    for h in holds:
        hold_rows.append(
            {
                "hold": shape.text(h.get("hold")) or "?",
                "rule": shape.text(h.get("rule")) or "",
                "raised_ts": shape.text(h.get("raised_ts")) or "",
            }
        )
    gaps = shape.number(table.get("open_gaps")) or 0
    return {
        "table_id": str(table.get("table_id")),
        "online": online,
        "state": "online" if online else ("offline" if online is False else "unknown"),
        "degraded": bool(table.get("degraded")),
        "hand_id": shape.text(hand.get("hand_id")) or shape.text(table.get("hand_id")),
        "phase": shape.text(hand.get("phase")) or shape.text(table.get("phase")),
        "street": shape.text(hand.get("street")),
        "pot": shape.number(hand.get("pot")),
        "seq": seq,
        "holds": hold_rows,
        "devices": device_rows,
        "device_faults": sum(1 for d in device_rows if d["fault"]),
        "status_alarms": status_alarms,
        "alarms": alarms,
        "gaps": gaps,
        "refused": refused,
        "malformed": shape.malformed,
    }


def device_faults(
    devices: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """The devices at fault now (or not approved), table by table, for the alarms page."""
    faults = []
    for table, by_name in sorted(devices.items()):
        for row in tile({"table_id": table}, None, [], by_name, 0)["devices"]:
            if row["fault"]:
                faults.append({"table_id": table, "device": row["name"], **row})
    return faults


def degraded_view(table: Mapping[str, Any]) -> dict[str, Any]:
    """A table degraded or reporting alarms on its status topic, for the alarms page."""
    shape = _Shape()
    return {
        "table_id": str(table.get("table_id")),
        "degraded": bool(table.get("degraded")),
        "alarms": [status_alarm(a) for a in shape.items(table.get("alarms"))],
    }


def hold_view(
    hold: Mapping[str, Any], viewer: Viewer, clock: LocalTime = HOST_TIME
) -> dict[str, Any]:
    """A hold of the queue: its rule's text, and its evidence as the viewer may see it."""
    shape = _Shape()
    given = shape.mapping(hold.get("evidence"))
    evidence = {str(k): v for k, v in given.items() if viewer.sees_cards or k not in CARD_FIELDS}
    hidden = sorted(set(given) & CARD_FIELDS - set(evidence))
    rule = shape.text(hold.get("rule"))
    resolution = shape.mapping(hold.get("resolution"))
    return {
        "table_id": str(hold.get("table_id")),
        "epoch": str(hold.get("epoch")),
        "hold": str(hold.get("hold")),
        "hand_id": shape.text(hold.get("hand_id")),
        "rule": rule,
        "reason": shape.text(hold.get("reason")),
        "ruling": shape.text(hold.get("ruling")),
        "seat": shape.number(hold.get("seat")),
        "raised_ts": shape.text(hold.get("raised_ts")),
        "raised": clock.of(hold.get("raised_ts")),
        "resolution": {
            "ts": shape.text(resolution.get("ts")),
            "when": clock.of(resolution.get("ts")),
            "decision": shape.text(resolution.get("decision")),
            "by": shape.text(resolution.get("by")),
            "person": shape.text(resolution.get("person")),
            "role": shape.text(resolution.get("role")),
        },
        "rule_text": rule_text(rule),
        "shown": evidence,
        "hidden": hidden,
        "malformed": shape.malformed,
    }


def event_view(
    envelope: Mapping[str, Any], viewer: Viewer, clock: LocalTime = HOST_TIME
) -> dict[str, Any]:
    """An event row of a table's stream or a hand's timeline: its sentence, its time in the
    floor's zone (``clock``), and its raw envelope as the viewer may see it."""
    shape = _Shape()
    data = shape.mapping(envelope.get("data"))
    visible = {str(k): v for k, v in data.items() if viewer.sees_cards or k not in CARD_FIELDS}
    raw = {str(k): v for k, v in envelope.items() if k != "secret" or viewer.sees_cards}
    if "data" in raw:
        raw["data"] = visible
    by_given = envelope.get("by")
    by = None
    if by_given is not None:
        given = shape.mapping(by_given)
        by = {
            "person": shape.text(given.get("person")) or "?",
            "role": shape.text(given.get("role")) or "?",
        }
    return {
        "seq": shape.number(envelope.get("seq")),
        "ts": shape.text(envelope.get("ts")),
        "type": shape.text(envelope.get("type")),
        "hand_id": shape.text(envelope.get("hand_id")),
        "rules": [r for r in shape.items(envelope.get("rules")) if isinstance(r, str)],
        "severity": shape.text(envelope.get("severity")) or "info",
        "needs_confirm": bool(envelope.get("needs_confirm")),
        "data": visible,
        "by": by,
        "sentence": sentence(decode(envelope), cards=viewer.sees_cards),
        "when": clock.of(envelope.get("ts")),
        "raw": json.dumps(raw, indent=2, ensure_ascii=False, default=str)[:RAW_CHARS],
        "malformed": shape.malformed,
    }


def hole_cards(events: Iterable[Mapping[str, Any]], hand_id: str | None) -> dict[str, list[str]]:
    """Seat → the hole cards the secure stream delivered in hand ``hand_id``."""
    cards: dict[str, list[str]] = {}
    if hand_id is None:
        return cards
    for e in events:
        if e.get("hand_id") != hand_id:
            continue
        record = decode(e)
        if isinstance(record, DealGroupDelivered) and record.cards is not None:
            cards[str(record.seat)] = list(record.cards)
    return cards


def table_view(
    table: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    devices: Mapping[str, Mapping[str, Any]],
    holes: Mapping[str, list[str]],
) -> dict[str, Any]:
    """The live table: seats, stacks, button, board, pots, device health."""
    shape = _Shape()
    state_ = shape.mapping(state)
    hand = shape.mapping(state_.get("hand"))
    button = state_.get("button")
    to_act = hand.get("to_act")
    seats = []
    entries = shape.mapping(state_.get("seats"))
    numbered = sorted((int(k), k) for k in entries if isinstance(k, str) and k.isdigit())
    if len(numbered) != len(entries):
        shape.malformed = True
    for _, seat in numbered:
        entry = shape.mapping(entries[seat])
        status = shape.text(entry.get("status"))
        seats.append(
            {
                "seat": seat,
                "stack": shape.number(entry.get("stack")),
                "status": status or ("in hand" if entry.get("in_hand") is True else "out"),
                "committed": shape.number(entry.get("committed")),
                "cards": shape.number(entry.get("cards")),
                "hole": holes.get(seat),
                "button": str(button) == seat,
                "to_act": str(to_act) == seat,
            }
        )
    holds = []
    for h in shape.items(hand.get("holds")):
        held = shape.mapping(h)
        holds.append(
            {
                "rule": shape.text(held.get("rule")) or "?",
                "ruling": shape.text(held.get("ruling")),
                "reason": shape.text(held.get("reason")),
                "seat": shape.number(held.get("seat")),
            }
        )
    blinds = [b for b in shape.items(state_.get("blinds")) if shape.number(b) is not None]
    view_tile = tile(table, state_, [], devices, 0)
    return {
        "tile": view_tile,
        "running": bool(hand),  # a hand is being played (the snapshot's hand is null between)
        "button": shape.number(button),
        "to_act": shape.number(to_act),
        "seats": seats,
        "board": [str(c) for c in shape.items(hand.get("board"))],
        "pot": shape.number(hand.get("pot")),
        "holds": holds,
        "blinds": blinds or None,
        "last_hand": shape.text(state_.get("last_hand")),
        "malformed": shape.malformed or view_tile["malformed"],
    }


def hand_view(hand: Mapping[str, Any], clock: LocalTime = HOST_TIME) -> dict[str, Any]:
    """A hand of the search, or the head of its timeline (its times in ``clock``'s zone)."""
    shape = _Shape()
    payouts = shape.mapping(hand.get("payouts"))
    rulings = []
    for ruling in shape.items(hand.get("rulings")):
        given = shape.mapping(ruling)
        rulings.append(
            {"type": shape.text(given.get("type")), "person": shape.text(given.get("person"))}
        )
    outcome = shape.text(hand.get("outcome"))
    hand_id, table, epoch = (str(hand.get(k)) for k in ("hand_id", "table_id", "epoch"))
    # one hand is its table, epoch and id: a table whose journal started again numbers its
    # hands from 1 again, so each link names all three
    which = urlencode({"table": table, "epoch": epoch})
    return {
        "hand_id": hand_id,
        "table_id": table,
        "epoch": epoch,
        "href": f"/hands/{quote(hand_id, safe='')}?{which}",
        "phh_href": f"/api/hands/{quote(hand_id, safe='')}/phh?{which}",
        "started_ts": shape.text(hand.get("started_ts")),
        "ended_ts": shape.text(hand.get("ended_ts")),
        "started": clock.of(hand.get("started_ts")),
        "ended": clock.of(hand.get("ended_ts")),
        "outcome": outcome,
        "pot": shape.number(hand.get("pot")),
        "payouts": {str(k): shown(v) for k, v in payouts.items()},
        "rules": [r for r in shape.items(hand.get("rules")) if isinstance(r, str)],
        "rulings": rulings,
        "malformed": shape.malformed,
    }


def duration(seconds: float) -> str:
    """How long, as the console's script writes an age ("3 min 12 s")."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min {whole % 60} s"
    return f"{minutes // 60} h {minutes % 60} min"


def health_view(lost: Iterable[Lost], now: float, store: str) -> dict[str, Any]:
    """What every page says of the pit's own health: ``live`` when nothing is lost, else a
    line per lost part (which, since when, how long ago, why) and the live indicator's words.
    ``store`` names the database (``PostgreSQL``, ``SQLite``)."""
    parts = []
    for part in lost:
        if part.part == "broker":
            what = "the broker"
            effect = (
                "Nothing the tables send reaches the pit, and rulings cannot be sent: the tables "
                "and holds shown are as they were then, online states included."
            )
        elif part.part == "changes":
            what = "the other pit processes' changes"
            effect = (
                "What this process stores still shows at once; what the others store shows "
                "only at the next periodic re-read of the pages."
            )
        else:
            what = f"its store ({store})"
            effect = (
                "Nothing is stored and the pages are not updated: what they show is as it was then."
            )
        when = datetime.fromtimestamp(part.since, UTC)
        parts.append(
            {
                "part": part.part,
                "what": what,
                "since": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "since_text": when.strftime("%Y-%m-%d %H:%M:%S UTC"),
                "ago": duration(now - part.since),
                "reason": part.reason,
                "effect": effect,
            }
        )
    names = " and ".join(p["part"] for p in parts)
    return {
        "live": not parts,
        "lost": parts,
        "indicator": f"✕ not live: {names} lost" if parts else "",
    }
