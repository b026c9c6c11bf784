"""The physical world of the rig: the shuffler's buttons and the cards' tags on the table.

:class:`ShufflerUnit` is what the dealer does to the shuffler (load a deck, press shuffle, deliver
a group from the keypad, open the lid, pull the power) through the simulator's control channel;
:class:`TableTags` is where every card's tag lies on the reader's antennas. Both only act: the
rig learns what the table made of it from the daemon's journal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from controller.cards import Card
from controller.table.inputs import Purpose, Zone
from controller.uids import normalize_uid
from simulators.control_client import ControlClient, ControlError
from simulators.errors import RefusedError
from simulators.rig.setup import ZONE_ANTENNA
from simulators.shuffler.faults import fault_severity

#: Scenario deck-check verdicts → the simulator's deck-check faults.
VERDICTS = {
    "ok": "ok",
    "short": "short",
    "extra": "extra",
    "duplicate": "duplicate",
    "foreign_back": "foreign",
    "unreadable": "unreadable",
    "wrong_profile": "wrong_profile",
}
JAMS = frozenset({"JAM_INPUT", "JAM_PATH", "JAM_OUTPUT", "MISFEED"})


@dataclass(frozen=True)
class Dealt:
    """A group the dealer took from the shuffler: its deck, its number and its cards."""

    shuffle_id: int
    group: int
    cards: tuple[Card, ...]


class ShufflerUnit:
    """The shuffler, as the dealer operates it."""

    def __init__(self, control: ControlClient) -> None:
        self.control = control
        self.raised: list[str] = []  # faults the dealer caused and has not undone yet

    async def _send(self, command: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.control.send(command)
        except ControlError as exc:
            raise RefusedError(None, f"the shuffler refused {next(iter(command))}: {exc}") from None

    async def shuffle(
        self, order: Sequence[Card], verdict: str = "ok", count: int | None = None
    ) -> int:
        """Load ``order`` (52 cards, top first), press shuffle; return the new shuffle id.

        ``verdict`` makes the deck check find that problem; ``count`` makes it count that many
        cards (the device also raises COUNT_MISMATCH).
        """
        await self.arm(order, verdict, count)
        await self._send({"press": "shuffle"})
        status = await self.control.status()
        return int(status["shuffle_id"])

    async def reshuffle(self, added: Sequence[Card], seed: int) -> int:
        """Put ``added`` back and reshuffle them with the stub; return the new shuffle id."""
        reply = await self._send({"reshuffle": {"add": list(added), "seed": seed}})
        return int(reply["shuffle_id"])

    async def dispense(self, purpose: Purpose, seat: int | None, count: int) -> Dealt:
        """Deliver the next group from the keypad."""
        spec: dict[str, Any] = {"purpose": purpose.value, "count": count}
        if seat is not None:
            spec["seat"] = seat
        reply = await self._send({"dispense": spec})
        cards = tuple(Card(str(c)) for c in reply["cards"])
        return Dealt(int(reply["shuffle_id"]), int(reply["group"]), cards)

    async def tray(self, gated: bool) -> None:
        """A host-paced table's tray sensor: host groups wait for the dealer (gated) or not."""
        await self._send({"tray": "gated" if gated else "open"})

    async def host_groups(self) -> list[dict[str, Any]]:
        """The groups the host asked for that wait in the gated tray, oldest first."""
        status = await self.control.status()
        return list(status.get("host_groups", []))

    async def deliver(self, count: int | None = None) -> Dealt:
        """Take the oldest group the host asked for (``count`` cards instead: a misfeed)."""
        reply = await self._send({"deliver": {} if count is None else {"count": count}})
        cards = tuple(Card(str(c)) for c in reply["cards"])
        return Dealt(int(reply["shuffle_id"]), int(reply["group"]), cards)

    async def arm(
        self, order: Sequence[Card], verdict: str = "ok", count: int | None = None
    ) -> None:
        """Load ``order`` for the next shuffle, whoever starts it (the host, on a host-paced
        table), with the deck check's ``verdict`` and ``count``."""
        await self._send({"deck": {"order": list(order)}})
        await self._send({"deck_check": VERDICTS[verdict]})
        if count is not None:
            await self._send({"fault": "count_mismatch", "count": count})

    async def fault(self, code: str) -> None:
        """Cause fault ``code``: open the lid, jam the input, or raise it as the device would."""
        if code == "LID_OPEN":
            await self._send({"fault": "lid_open"})
        elif code in JAMS:
            await self._send({"fault": "jam", "code": code})
        else:
            try:
                await self._send({"fault": "raise", "code": code, "severity": fault_severity(code)})
            except RefusedError as exc:
                raise RefusedError(None, f"{code} is not a TSP/1 shuffler fault ({exc})") from None
        self.raised.append(code)

    async def clear(self, code: str) -> None:
        """Undo fault ``code``: close the lid, or clear it at the device."""
        if code == "LID_OPEN":
            await self._send({"fault": "lid_close"})
        else:
            await self._send({"clear": code})
        if code in self.raised:
            self.raised.remove(code)

    async def power_loss(self) -> None:
        """Cut the power and restore it (a new boot id; the deck in the tray is retired)."""
        await self._send({"fault": "power_loss"})
        self.raised.clear()

    async def unplug(self) -> None:
        """Pull the cable."""
        await self._send({"fault": "unplug"})

    async def replug(self) -> None:
        """Plug the cable back in."""
        await self._send({"fault": "replug"})

    async def unapproved(self) -> None:
        """Flash a firmware that is not on the approved list, and reboot into it."""
        await self._send({"fault": "unapproved_firmware"})


class TableTags:
    """Where each card's tag lies on the reader's antennas."""

    def __init__(self, control: ControlClient, first_antenna: int = 0) -> None:
        self.control = control
        self.first_antenna = first_antenna
        self.where: dict[str, Zone] = {}

    async def place(self, zone: Zone, uid: str) -> bool:
        """Put the tag at ``zone`` (moving it from where it lies); False when it lies there."""
        uid = normalize_uid(uid)
        if self.where.get(uid) == zone:
            return False
        antenna = ZONE_ANTENNA.get(zone)
        if antenna is None:
            raise ValueError(f"the rig's reader has no antenna under {zone}")
        await self.control.send({"place": [uid], "antenna": antenna + self.first_antenna})
        self.where[uid] = zone
        return True

    async def lift(self, uid: str) -> Zone | None:
        """Lift the tag off the table; return where it lay (None: it was not on the table)."""
        uid = normalize_uid(uid)
        zone = self.where.pop(uid, None)
        if zone is not None:
            await self.control.send({"remove": [uid]})
        return zone

    async def lift_all(self, uids: Iterable[str] | None = None) -> list[tuple[Zone, str]]:
        """Lift these tags (every tag: None) at once; return the (zone, uid) that were lying."""
        chosen = list(self.where) if uids is None else [normalize_uid(u) for u in uids]
        lifted = [(self.where.pop(uid), uid) for uid in chosen if uid in self.where]
        if lifted:
            await self.control.send({"remove": [uid for _, uid in lifted]})
        return lifted

    async def reset(self) -> None:
        """Clear every antenna, whatever the rig believes lies there."""
        await self.control.send({"tags": {}})
        self.where.clear()
