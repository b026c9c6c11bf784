"""The retained public snapshot of the table (``{prefix}/{table}/state``).

Only what is public: the hand, its phase and street, the button, each seat's stack, what it has
in front of it and whether it is still in, the board, the pot, who acts. No hole card, no burn.
"""

from __future__ import annotations

from typing import Any

from controller.table.state import TableState

SNAPSHOT_SCHEMA = "tablectl.state/1"


def snapshot(state: TableState, *, seq: int, epoch: str) -> dict[str, Any]:
    """The public snapshot of ``state``; ``seq`` is the last event it reflects."""
    hand = state.hand
    seats: dict[str, dict[str, Any]] = {}
    stacks = hand.chips.stacks if hand is not None else state.stacks
    for seat in sorted(stacks):
        entry: dict[str, Any] = {"stack": stacks[seat]}
        if hand is not None:
            dealt_in = seat in hand.order
            entry["in_hand"] = dealt_in
            if dealt_in:
                folded = seat in hand.chips.folded or seat in hand.showdown.mucked
                entry["status"] = "folded" if folded else "live"
                entry["committed"] = hand.chips.committed.get(seat, 0)
                entry["cards"] = len(hand.deal.dealt.get(seat, ()))
        seats[str(seat)] = entry
    body: dict[str, Any] = {
        "schema": SNAPSHOT_SCHEMA,
        "table_id": state.table_id,
        "epoch": epoch,
        "seq": seq,
        "button": hand.button if hand is not None else state.button,
        "blinds": list(state.blinds),
        "ante": state.ante,
        "hands_started": state.hands_started,
        "deck": {"shuffle_id": state.deck.shuffle_id, "ready": state.deck.ready},
        "seats": seats,
        "hand": None,
    }
    if hand is not None:
        round_ = hand.chips.round
        body["hand"] = {
            "hand_id": hand.hand_id,
            "phase": hand.phase.value,
            "street": hand.street.name.lower(),
            "board": list(hand.cards.board),
            "pot": hand.total_pot,
            "to_act": round_.to_act if round_ is not None else None,
            "current_bet": round_.current if round_ is not None else None,
            "to_call": _to_call(state),
            "showdown_order": list(hand.showdown.order),
            "tabled": sorted(hand.showdown.tabled),
            # pending rulings the dealer must confirm or reject (no card identity: not public)
            "holds": [
                {
                    "id": hold.id,
                    "rule": hold.rule.value,
                    "ruling": hold.ruling,
                    "reason": hold.reason,
                    "seat": hold.seat,
                }
                for hold in hand.irregular.holds
            ],
        }
    last = state.last_hand
    body["last_hand"] = last.hand_id if last is not None else None
    return body


def _to_call(state: TableState) -> int | None:
    hand = state.hand
    round_ = hand.chips.round if hand is not None else None
    if round_ is None or round_.to_act is None:
        return None
    return round_.current - round_.bets.get(round_.to_act, 0)
