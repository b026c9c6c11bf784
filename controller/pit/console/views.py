"""What each console page shows, built from the store's rows (pure functions: no I/O).

The same view data renders a page and each of its live updates, so a tile, a hold or an event
row looks the same whether it came with the page or over its stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.pit.console.rules import rule_text

#: Evidence and event fields naming cards: shown to the surveillance role only.
CARD_FIELDS = frozenset({"card", "cards", "hidden_card", "expected", "uid", "uids", "order"})

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


def tile(
    table: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    holds: Iterable[Mapping[str, Any]],
    devices: Mapping[str, Mapping[str, Any]],
    alarms: int,
) -> dict[str, Any]:
    """One table's tile on the floor map."""
    hand = (state or {}).get("hand") or {}
    device_rows = [
        {
            "name": name,
            "health": str(body.get("health") or "unknown"),
            "approved": body.get("approved"),
            "detail": str(body.get("detail") or ""),
            "fault": body.get("health") in DEVICE_FAULTS or body.get("approved") is False,
        }
        for name, body in sorted(devices.items())
    ]
    status_alarms = [str(a.get("alarm") or a.get("detail") or a) for a in table.get("alarms", [])]
    online = table.get("online")
    return {
        "table_id": table["table_id"],
        "online": online,
        "state": "online" if online else ("offline" if online is False else "unknown"),
        "degraded": bool(table.get("degraded")),
        "hand_id": hand.get("hand_id") or table.get("hand_id"),
        "phase": hand.get("phase") or table.get("phase"),
        "street": hand.get("street"),
        "pot": hand.get("pot"),
        "seq": (state or {}).get("seq", table.get("state_seq")),
        "holds": [
            {"hold": h["hold"], "rule": h["rule"], "raised_ts": h["raised_ts"]} for h in holds
        ],
        "devices": device_rows,
        "device_faults": sum(1 for d in device_rows if d["fault"]),
        "status_alarms": status_alarms,
        "alarms": alarms,
        "gaps": int(table.get("open_gaps") or 0),
    }


def hold_view(hold: Mapping[str, Any], viewer: Viewer) -> dict[str, Any]:
    """A hold of the queue: its rule's text, and its evidence as the viewer may see it."""
    evidence = {
        k: v
        for k, v in (hold.get("evidence") or {}).items()
        if viewer.sees_cards or k not in CARD_FIELDS
    }
    hidden = sorted(set(hold.get("evidence") or {}) & CARD_FIELDS - set(evidence))
    return {**hold, "rule_text": rule_text(hold.get("rule")), "shown": evidence, "hidden": hidden}


def event_view(envelope: Mapping[str, Any], viewer: Viewer) -> dict[str, Any]:
    """An event row of a table's stream or a hand's timeline."""
    data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
    assert isinstance(data, dict)
    shown = {k: v for k, v in data.items() if viewer.sees_cards or k not in CARD_FIELDS}
    by = envelope.get("by") if isinstance(envelope.get("by"), dict) else None
    return {
        "seq": envelope.get("seq"),
        "ts": envelope.get("ts"),
        "type": envelope.get("type"),
        "hand_id": envelope.get("hand_id"),
        "rules": [r for r in envelope.get("rules") or [] if isinstance(r, str)],
        "severity": envelope.get("severity", "info"),
        "needs_confirm": bool(envelope.get("needs_confirm")),
        "data": shown,
        "by": by,
    }


def hole_cards(events: Iterable[Mapping[str, Any]], hand_id: str | None) -> dict[str, list[str]]:
    """Seat → the hole cards the secure stream delivered in hand ``hand_id``."""
    cards: dict[str, list[str]] = {}
    if hand_id is None:
        return cards
    for e in events:
        data = e.get("data")
        if e.get("hand_id") != hand_id or not isinstance(data, dict):
            continue
        if e.get("type") == "deal.group.delivered" and isinstance(data.get("cards"), list):
            cards[str(data.get("seat"))] = [str(c) for c in data["cards"]]
    return cards


def table_view(
    table: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    devices: Mapping[str, Mapping[str, Any]],
    holes: Mapping[str, list[str]],
) -> dict[str, Any]:
    """The live table: seats, stacks, button, board, pots, device health."""
    state = state or {}
    hand = state.get("hand") or {}
    seats = []
    for seat, entry in sorted((state.get("seats") or {}).items(), key=lambda s: int(s[0])):
        seats.append(
            {
                "seat": seat,
                "stack": entry.get("stack"),
                "status": entry.get("status") or ("in hand" if entry.get("in_hand") else "out"),
                "committed": entry.get("committed"),
                "cards": entry.get("cards"),
                "hole": holes.get(seat),
                "button": str(state.get("button")) == seat,
                "to_act": str(hand.get("to_act")) == seat,
            }
        )
    return {
        "tile": tile(table, state, [], devices, 0),
        "seats": seats,
        "board": hand.get("board") or [],
        "pot": hand.get("pot"),
        "holds": hand.get("holds") or [],
        "blinds": state.get("blinds"),
        "last_hand": state.get("last_hand"),
    }
