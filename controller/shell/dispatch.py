"""Device commands: what the table needs from the shuffler, journaled, sent at most once.

The core says what the hand needs next (:func:`controller.table.plan.next_dispense`); this module
turns that into commands for the shuffler and keeps them honest:

* a command is journaled (in the same transaction as the input that made it necessary) before it
  is sent, with the identifiers the device will see: the deck's shuffle id and a group number
  the host picks (one more than the last group asked of that deck);
* while a command is outstanding the same need does not make another one;
* after a crash the outstanding commands come back from the journal with their identifiers; the
  device is asked where it is, and a command is resent only if the device has not done it, and
  a device that did it anyway refuses the duplicate group number. No card goes out twice.
* what a device reports is taken as a command done only for a command that was ever sent (by
  this run, or by the run that journaled it): a shuffle journaled before the shuffler was first
  reached is sent, whatever deck the device already has. One limit remains: a shuffle the last
  run journaled but never sent (killed in between), on a device whose last deck is not the one
  the table knows (shuffled from its keypad meanwhile), passes for done, and the hand waits for
  a deck (TSP/1's status does not say which host reference the last shuffle carried).

:func:`wanted` is pure: the commands a table state calls for.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from controller.table.event_types import DeckVerified
from controller.table.events import TableEvent
from controller.table.inputs import Purpose
from controller.table.plan import DispenseRequest, next_dispense
from controller.table.state import TableState


class Need(NamedTuple):
    """One thing the table needs a device to do; equal needs are the same need."""

    kind: str  # "shuffle", "dispense", "reveal"
    hand_id: str | None
    shuffle_id: int | None
    purpose: str | None = None
    seat: int | None = None
    size: int | None = None


class Dispatch(NamedTuple):
    """A journaled device command."""

    id: int
    device: str
    need: Need
    group: int | None

    def to_json(self) -> str:
        """The journal body (without the id, which is the row's key)."""
        return json.dumps({"need": list(self.need), "group": self.group}, separators=(",", ":"))

    @classmethod
    def from_row(cls, key: int, device: str, body: str) -> Dispatch:
        """A dispatch read back from the journal."""
        data = json.loads(body)
        return cls(key, device, Need(*data["need"]), data["group"])

    @property
    def request(self) -> DispenseRequest:
        """The dispense request of a dispense command."""
        need = self.need
        assert need.purpose is not None
        assert need.size is not None
        return DispenseRequest(Purpose(need.purpose), need.seat, need.size)


def wanted(state: TableState) -> list[Need]:
    """The shuffles and dispenses the table needs now (pure)."""
    hand = state.hand
    if hand is None:
        return []
    deck = state.deck
    if hand.deal.shuffle_id is None and (deck.shuffle_id is None or deck.used_by is not None):
        return [Need("shuffle", hand.hand_id, deck.shuffle_id)]
    request = next_dispense(state)
    # after a stub reshuffle the hand deals from the reshuffled stub, which has its own id
    shuffle_id = hand.deal.shuffle_id if hand.deal.shuffle_id is not None else deck.shuffle_id
    if request is None or shuffle_id is None:
        return []
    return [
        Need(
            "dispense",
            hand.hand_id,
            shuffle_id,
            request.purpose.value,
            request.seat,
            request.size,
        )
    ]


def reveals(in_play: list[int], events: list[TableEvent]) -> list[Need]:
    """The decks a hand dealt from are retired when another deck is verified: ask their orders.

    A stub reshuffle (``deck.verified`` with ``stub``) is the same deck going on in the same
    hand: nothing of it may be revealed while its cards can still be dealt.
    """
    for event in events:
        verified = event.payload
        if (
            isinstance(verified, DeckVerified)
            and not verified.stub
            and verified.shuffle_id not in in_play
        ):
            return [Need("reveal", None, sid) for sid in in_play]
    return []


_RETIRED_KEPT = 8  # decks a TSP/1 shuffler keeps for REVEAL_DECK after retiring them
# Decks whose group numbers and reveals are remembered. A table runs for years, one deck or more
# a hand: what the planner keeps per deck must be bounded, and no deck older than the ones a
# device still keeps is ever dispensed from or revealed again.
_DECKS_KEPT = 2 * _RETIRED_KEPT


def _keep_last(ids: dict[int, Any], n: int) -> None:
    """Forget all but the ``n`` most recently added keys (a dict keeps insertion order)."""
    for sid in list(ids)[:-n] if len(ids) > n else ():
        del ids[sid]


class Planner:
    """Tracks outstanding commands and group numbers; decides which needs are new.

    On a dealer-paced table (``host_paced`` false, config ``[table] dispense = "dealer"``) the
    dealer runs the shuffler from its keypad: the table asks it for nothing, and takes the
    shuffles and groups the device reports as they come.
    """

    def __init__(self, shuffler: str, *, host_paced: bool = True) -> None:
        self.shuffler = shuffler
        self.host_paced = host_paced
        self.outstanding: dict[Need, Dispatch] = {}
        #: The outstanding commands journaled before this process started: sent, perhaps, and
        #: perhaps carried out, by the run that journaled them.
        self.inherited: set[int] = set()
        self.last_group: dict[int, int] = {}
        self.in_play: list[int] = []  # the decks the current (or last) hand dealt from
        #: Decks revealed or asked for, most recent last (a dict used as an ordered set).
        self.revealed: dict[int, None] = {}

    def plan(self, after: TableState, events: list[TableEvent]) -> list[tuple[Need, int | None]]:
        """The needs of ``after`` not yet outstanding, with the group number each will use."""
        new: list[tuple[Need, int | None]] = []
        if not self.host_paced:
            return new
        groups = dict(self.last_group)
        for need in [*wanted(after), *reveals(self.in_play, events)]:
            if need in self.outstanding:
                continue
            group = None
            if need.kind == "dispense":
                assert need.shuffle_id is not None
                # a reshuffled stub keeps its deck's group numbers: each is dispensed once
                dealt = after.hand.deal.last_group if after.hand is not None else 0
                group = max(groups.get(need.shuffle_id, 0), dealt) + 1
                groups[need.shuffle_id] = group
            new.append((need, group))
        return new

    def adopt(
        self, dispatches: list[Dispatch], state: TableState, *, inherited: bool = False
    ) -> None:
        """Journaled commands become outstanding; needs the state no longer has are dropped.

        ``inherited``: the commands an earlier run journaled (read back at recovery). A
        dealer-paced table sends none, not even those a host-paced run journaled before.
        """
        if not self.host_paced:
            dispatches = []
        if inherited:
            self.inherited.update(dispatch.id for dispatch in dispatches)
        for dispatch in dispatches:
            self.outstanding[dispatch.need] = dispatch
            if dispatch.group is not None and dispatch.need.shuffle_id is not None:
                sid = dispatch.need.shuffle_id
                self.last_group[sid] = max(self.last_group.pop(sid, 0), dispatch.group)
            if dispatch.need.kind == "reveal" and dispatch.need.shuffle_id is not None:
                self.reveal_asked(dispatch.need.shuffle_id)
        current = set(wanted(state))
        reveals = [need for need in self.outstanding if need.kind == "reveal"]
        for need in list(self.outstanding):
            if need.kind != "reveal" and need not in current:
                del self.outstanding[need]
        # A reveal no device answered (none connected, or it never came back) is abandoned
        # once its deck is older than the retired decks a shuffler keeps: it would be refused.
        for need in reveals[:-_RETIRED_KEPT]:
            del self.outstanding[need]
        self.inherited.intersection_update(d.id for d in self.outstanding.values())
        _keep_last(self.last_group, _DECKS_KEPT)
        self.track(state)

    def reveal_asked(self, shuffle_id: int) -> None:
        """A deck was revealed or asked for: it leaves the decks to reveal."""
        self.revealed.pop(shuffle_id, None)
        self.revealed[shuffle_id] = None
        _keep_last(self.revealed, _DECKS_KEPT)

    def track(self, state: TableState) -> None:
        """Remember the deck in play, to reveal it once the next one is verified."""
        hand = state.hand if state.hand is not None else state.last_hand
        if (
            hand is not None
            and hand.deal.shuffle_id is not None
            and hand.deal.shuffle_id not in self.in_play
        ):
            self.in_play.append(
                hand.deal.shuffle_id
            )  # a stub reshuffle adds the hand's second deck
        # a device keeps a few retired decks: older ones can no longer be asked for
        self.in_play = [sid for sid in self.in_play if sid not in self.revealed][-_RETIRED_KEPT:]

    def done(self, need: Need) -> None:
        """A command that needs no more sending (a reveal came back, or was refused)."""
        self.outstanding.pop(need, None)
        if need.kind == "reveal" and need.shuffle_id is not None:
            self.reveal_asked(need.shuffle_id)
            if need.shuffle_id in self.in_play:
                self.in_play.remove(need.shuffle_id)

    def summary(self) -> list[dict[str, Any]]:
        """The outstanding commands, for logs."""
        return [
            {"id": d.id, "kind": d.need.kind, "shuffle": d.need.shuffle_id, "group": d.group}
            for d in self.outstanding.values()
        ]
