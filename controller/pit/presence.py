"""Pit presence: each pit process says it is there, and the others take over its share when not.

Every pit process of a share group publishes its own retained status on
``{prefix}/_pit/{pit id}/status`` (QoS 1), made again on every connection, with the same
message saying ``offline`` as its Last Will; a clean stop publishes that itself. It subscribes
to ``{prefix}/_pit/+/status`` and so hears every member of the group come and go::

    {"pit": "pit-1", "state": "online", "group": "pit", "connected": "2026-12-04T15:02:11.250Z",
     "incarnation": "3f9c1a2b7d0e", "session_expiry": 86400, "ts": "…", "version": "…"}

``connected`` is when the connection the message speaks for was made and ``incarnation`` names
that connection (random, new at each attempt), so a Will that comes late (a connection the
broker found dead only after the process connected again) is known as an older connection's and
changes nothing; ``ts`` is when the message was made (the Will's: when its connection was).

**A member's share** is what the member would have done that nobody else does, as the code
divides the work:

* the messages the broker gives it out of the shared subscription (``$share/{group}/…/events``):
  the broker goes on giving it its turn while it is away, keeping them in its session until it
  comes back; the other members see their seqs missing;
* the gaps it claimed (:meth:`~controller.pit.gaps.Gaps.claim_gap`: ``asked_by``): their replays
  come on ``replay/{its id}``, which no other member reads, and another member would ask again
  only after ``[repair] retry`` seconds (more for a gap asked often).

Every member scans every table for holes; a hole becomes a gap after ``[repair] after`` seconds
because another member may simply not have committed it yet. When a member's Will arrives (or
its clean stop's ``offline``), that reason is gone for the seqs it held, so the others:

1. release the gaps it claimed, which are asked again at once;
2. ask for every hole at once, without waiting ``after``, as long as it is away (a scan runs at
   once, then every ``scan`` seconds);
3. one of them, the live member whose id sorts first (each member decides it from what it
   heard, the same way), also subscribes to every table's events directly, outside the share
   group, so that what the broker keeps giving the away member's session reaches a live member
   at once; it ends that subscription ``[repair] after`` seconds after the member is back (the
   time it gets to catch up on what its session kept), or when its session has expired.

A member that comes back announces itself again (a new ``connected``), and the others go back
to waiting ``after`` seconds.

**Telling the tables what is stored** is divided too: each table is confirmed by one member, the
live one of the highest rendezvous weight for it (:meth:`Members.confirmer_of`), so the group
sends each table one confirmation a round whatever its size. A member that goes hands its tables
to the others at its Will; while two members' views differ (one not heard yet), a table may be
told twice, which is harmless (it keeps the highest).

Whatever reaches the status topics that is not such a message (not JSON, another shape, a
``pit`` other than the topic's, another share group's member) changes nothing; an empty retained
message (an operator clearing a pit taken out of service) forgets the member.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import structlog

from controller import __version__
from controller.pit.published import RejectedError, load_object

log = structlog.get_logger("tablectl.pit.presence")

#: The topic level under the prefix that holds the pit processes' statuses (no table id begins
#: with ``_``: controller/config.py).
LEVEL = "_pit"
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_INCARNATION = re.compile(r"^[A-Za-z0-9]{1,64}$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")

State = Literal["online", "offline"]


def presence_topic(prefix: str, pit_id: str) -> str:
    """The retained status topic of pit process ``pit_id``."""
    return f"{prefix}/{LEVEL}/{pit_id}/status"


def presence_filter(prefix: str) -> str:
    """The subscription that hears every pit process's status."""
    return f"{prefix}/{LEVEL}/+/status"


def member_of(topic: str, prefix: str) -> str | None:
    """The pit id of a status topic (None: not a pit's status topic)."""
    head = f"{prefix}/{LEVEL}/"
    if not topic.startswith(head) or not topic.endswith("/status"):
        return None
    member = topic[len(head) : -len("/status")]
    return member if member and "/" not in member else None


def now_text(stamp: float | None = None) -> str:
    """RFC 3339 UTC with milliseconds (as the tables write times)."""
    moment = datetime.fromtimestamp(time.time() if stamp is None else stamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Announcement:
    """One member's status message, as checked."""

    pit: str
    state: State
    group: str
    connected: str
    incarnation: str
    session_expiry: int | None = None


@dataclass(frozen=True)
class Connection:
    """This process's connection, as its messages name it."""

    pit: str
    group: str
    session_expiry: int
    connected: str = field(default_factory=now_text)
    incarnation: str = field(default_factory=lambda: secrets.token_hex(6))

    def message(self, state: State) -> bytes:
        """The status message of this connection (``offline``: the Will's and a stop's)."""
        body: dict[str, Any] = {
            "pit": self.pit,
            "state": state,
            "group": self.group,
            "connected": self.connected,
            "incarnation": self.incarnation,
            "session_expiry": self.session_expiry,
            "ts": self.connected if state == "offline" else now_text(),
            "version": __version__,
        }
        return json.dumps(body, separators=(",", ":")).encode()


def parse_presence(member: str, payload: bytes) -> Announcement:
    """A member's status message (RejectedError: not one, or not the topic's member)."""
    body = load_object(payload)
    pit, state, group = body.get("pit"), body.get("state"), body.get("group")
    connected, incarnation = body.get("connected"), body.get("incarnation")
    expiry = body.get("session_expiry")
    if not isinstance(pit, str) or not _ID.match(pit):
        raise RejectedError("pit: a pit id (1 to 64 letters, digits and _ . -)")
    if pit != member:
        raise RejectedError(f"pit: {pit!r} on the status topic of {member!r}")
    if state not in ("online", "offline"):
        raise RejectedError("state: 'online' or 'offline'")
    if not isinstance(group, str) or not _ID.match(group):
        raise RejectedError("group: a share group's name")
    if not isinstance(connected, str) or not _TIME.match(connected):
        raise RejectedError("connected: an RFC 3339 UTC time")
    if not isinstance(incarnation, str) or not _INCARNATION.match(incarnation):
        raise RejectedError("incarnation: 1 to 64 letters and digits")
    if expiry is not None and (
        isinstance(expiry, bool) or not isinstance(expiry, int) or not 0 <= expiry < 2**32
    ):
        raise RejectedError("session_expiry: seconds, an integer")
    return Announcement(pit, state, group, connected, incarnation, expiry)


@dataclass
class Member:
    """What this process knows of another member: its newest connection and its state."""

    pit: str
    state: State
    connected: str
    incarnation: str
    session_expiry: int | None
    changed: float  # this process's clock when the state began
    returned: bool = False  # online again after being heard away


@dataclass(frozen=True)
class Change:
    """What a status message changed: a member ``lost`` (away now) or ``back``."""

    pit: str
    kind: Literal["lost", "back"]


class Members:
    """The members of this process's share group as their statuses tell (no I/O).

    ``grace`` is how long a member that came back still counts as catching up (the takeover
    goes on meanwhile): ``[repair] after``.
    """

    def __init__(self, own: str, group: str, grace: float) -> None:
        self.own = own
        self.group = group
        self.grace = grace
        self.members: dict[str, Member] = {}

    def observe(self, member: str, payload: bytes, now: float) -> Change | None:
        """Take one message of ``member``'s status topic; what it changed (RejectedError: not a
        status message, or one of another member's name; nothing changes)."""
        if member == self.own:
            return None
        if not payload:  # the retained status cleared: a member taken out of service
            self.members.pop(member, None)
            return None
        said = parse_presence(member, payload)
        if said.group != self.group:
            return None  # another share group's member: not ours to take over
        known = self.members.get(member)
        if known is None:
            self.members[member] = Member(
                member, said.state, said.connected, said.incarnation, said.session_expiry, now
            )
            return Change(member, "lost") if said.state == "offline" else None
        if said.connected < known.connected:
            return None  # an older connection's word (a late Will): the newer one stands
        same = said.incarnation == known.incarnation and said.connected == known.connected
        if same and known.state in (said.state, "offline"):
            return None  # said again, or a connection that ended cannot come back
        was = known.state
        known.connected, known.incarnation = said.connected, said.incarnation
        known.session_expiry = said.session_expiry
        if said.state == was:
            if was == "offline":
                known.changed = now  # another connection that ended: its session begins again
            return None  # a newer connection in the same state (a reconnect heard late)
        known.state, known.changed = said.state, now
        known.returned = said.state == "online"
        return Change(member, "lost" if said.state == "offline" else "back")

    def away(self, now: float) -> list[str]:
        """The members away whose session may still hold messages (their Will is their last
        word, and their session has not expired since it was heard)."""
        return sorted(
            m.pit
            for m in self.members.values()
            if m.state == "offline"
            and (m.session_expiry is None or now - m.changed < m.session_expiry)
        )

    def catching_up(self, now: float) -> list[str]:
        """The members back for less than ``grace`` seconds."""
        return sorted(
            m.pit
            for m in self.members.values()
            if m.state == "online" and m.returned and now - m.changed < self.grace
        )

    def taker(self, now: float) -> str:
        """The live member whose id sorts first (this process included), leaving out those
        still catching up: the one that takes over the away members' share of the events."""
        settling = set(self.catching_up(now))
        live = [m.pit for m in self.members.values() if m.state == "online"]
        return min([self.own, *(pit for pit in live if pit not in settling)])

    def confirmer_of(self, table: str) -> str:
        """The member that tells ``table`` how far the store holds its journal
        (controller/pit/confirm.py): of the members online, this process included, the one of
        the highest rendezvous weight for the table (highest random weight hashing, Thaler and
        Ravishankar 1998). Every member works it out the same way from what it heard; a
        member that comes or goes moves only its own tables."""
        live = [self.own, *(m.pit for m in self.members.values() if m.state == "online")]
        return max(live, key=lambda pit: (rendezvous_weight(pit, table), pit))

    def takes_over(self, now: float) -> bool:
        """Whether this process subscribes to every table's events directly now: a member is
        away or catching up, and this process is the taker."""
        if not self.away(now) and not self.catching_up(now):
            return False
        return self.taker(now) == self.own


def rendezvous_weight(pit: str, table: str) -> int:
    """``pit``'s weight for ``table``: the same in every process (a keyed hash, not Python's
    per-process ``hash``)."""
    digest = hashlib.blake2b(f"{pit}\x00{table}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class Presence:
    """This process's side of the presence: its messages, what it hears, what follows.

    ``on_lost(pit)`` is called when a member is heard away (the repair releases its claims and
    scans at once); ``direct(on)`` when this process starts or stops subscribing to every
    table's events itself; ``announce()`` when its own retained status is not its current
    connection's (a late Will of an older one): it publishes it again.
    """

    def __init__(
        self,
        pit: str,
        group: str,
        session_expiry: int,
        grace: float,
        *,
        on_lost: Callable[[str], None],
        direct: Callable[[bool], None],
        announce: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pit, self.group, self.session_expiry = pit, group, session_expiry
        self.members = Members(pit, group, grace)
        self.on_lost, self.direct, self.announce = on_lost, direct, announce
        self.clock = clock
        self.connection: Connection | None = None
        self.refused = 0
        self._taking_over = False

    def connect(self) -> Connection:
        """A new connection of this process (its Will and its status name it)."""
        self.connection = Connection(self.pit, self.group, self.session_expiry)
        return self.connection

    def take(self, member: str, payload: bytes) -> None:
        """A message on ``member``'s status topic."""
        if member == self.pit:
            self._own(payload)
            return
        try:
            change = self.members.observe(member, payload, self.clock())
        except RejectedError as exc:
            self.refused += 1
            log.warning("pit.presence.refused", member=member[:64], reason=str(exc))
            return
        if change is not None:
            log.warning(
                "pit.member.lost" if change.kind == "lost" else "pit.member.back",
                member=change.pit,
                taker=self.members.taker(self.clock()),
            )
            if change.kind == "lost":
                self.on_lost(change.pit)
        self.evaluate()

    def _own(self, payload: bytes) -> None:
        """This process's own status topic: announced again unless it is this connection's
        ``online`` (a late Will of an older connection overwrote it)."""
        current = self.connection
        if current is None:
            return
        try:
            said = parse_presence(self.pit, payload) if payload else None
        except RejectedError:
            said = None
        if said is not None and said.state == "online" and said.incarnation == current.incarnation:
            return
        log.info("pit.presence.announced_again", pit=self.pit)
        self.announce()

    def evaluate(self) -> None:
        """Start or end the takeover as the members' states say (called on every change and
        periodically: a member's catching up and its session's expiry end with time)."""
        now = self.clock()
        taking = self.members.takes_over(now)
        if taking != self._taking_over:
            self._taking_over = taking
            log.warning(
                "pit.takeover.started" if taking else "pit.takeover.ended",
                away=self.members.away(now),
                catching_up=self.members.catching_up(now),
            )
            self.direct(taking)

    @property
    def taking_over(self) -> bool:
        """Whether this process subscribes to every table's events itself now."""
        return self._taking_over

    def away(self) -> list[str]:
        """The members away now."""
        return self.members.away(self.clock())

    def confirms(self, table: str) -> bool:
        """Whether this process is the one that tells ``table`` what is stored."""
        return self.members.confirmer_of(table) == self.pit
