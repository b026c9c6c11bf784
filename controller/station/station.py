"""The dealer's station: who is logged in, what the table looks like, and what the dealer asks.

One object the web app (controller/station/api.py) calls: it logs dealers in and out (the
roster, the PIN, the lock-out, the desk), keeps the daemon's view (controller/station/link.py),
turns the action pad's buttons into signed requests for the dealer logged in (checked before
they are sent, controller/station/legal.py) and tells the live pages when anything changed.
Nothing is sent unless a dealer is logged in: every request takes the session's person.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from controller.passwords import verify
from controller.pit.lockout import LockOut
from controller.station.desk import Desk, DeskError, Session
from controller.station.legal import IllegalError, check_action
from controller.station.link import DaemonLink, LinkError
from controller.station.lockout import Lockouts
from controller.station.roster import Person, Roster, RosterError, load_roster
from controller.station.settings import StationSettings
from controller.uids import UidError, normalize_uid

log = structlog.get_logger("tablectl.station")

#: Seconds a badge read waits for its PIN.
BADGE_WAIT = 60.0


@dataclass(frozen=True)
class Badge:
    """A tag read on the badge zone: whose badge it is (None: nobody's), or a playing card."""

    uid: str
    at: float
    person: Person | None
    card: bool


class StationError(Exception):
    """A request of the pages the station refuses; ``status`` is the HTTP status, ``retry``
    the seconds to wait (429)."""

    def __init__(self, reason: str, status: int = 409, retry: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry = retry


class Station:
    """The station of one table."""

    def __init__(
        self,
        settings: StationSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        link: DaemonLink | None = None,
    ) -> None:
        self.settings = settings
        section = settings.section
        self.clock = clock
        self.desk = Desk(section.idle_logout)
        self.lockouts = Lockouts(
            LockOut(attempts=section.lockout_attempts, minutes=section.lockout_max / 60)
        )
        self.link = link or DaemonLink(
            settings.console,
            settings.private,
            settings.key_id,
            settings.table,
            timeout=section.request_timeout,
        )
        self.link.on_change = self._table_changed
        self.link.on_badge = self._badge
        self.names: dict[int, str] = {}  # seat → the player's name, as the dealer set it
        self.badge: Badge | None = None  # the last badge read, waiting for its PIN
        self.version = 0
        self._changed = asyncio.Event()
        self._roster = Roster()
        self._roster_stamp: tuple[int, int] | None = None

    # ------------------------------------------------------------------ changes

    def changed(self) -> None:
        """Something the pages show changed: wake every live page."""
        self.version += 1
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    async def wait_change(self, version: int, timeout: float) -> None:
        """Until the version is past ``version`` (or ``timeout`` seconds)."""
        if self.version != version:
            return
        event = self._changed
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            pass

    def _table_changed(self) -> None:
        self.desk.hand(self.hand_id)
        self.changed()

    @property
    def hand_id(self) -> str | None:
        """The hand in progress, as the daemon last said."""
        view = self.link.view or {}
        hand = view.get("table", {}).get("hand")
        return hand.get("hand_id") if isinstance(hand, dict) else None

    async def idle_logout(self) -> None:
        """End the session when it has been idle ``[station] idle_logout`` seconds."""
        while True:
            deadline = self.desk.deadline()
            version = self.version
            if deadline is None:
                await self.wait_change(version, 3600.0)
                continue
            now = self.clock()
            if self.desk.expire(now):
                log.info("station.idle_logout")
                self.changed()
                continue
            await self.wait_change(version, max(0.05, deadline - now))

    # ------------------------------------------------------------------ who

    def roster(self) -> Roster:
        """The roster, read again whenever its file changed (``person add`` while running)."""
        path = self.settings.roster
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._roster_stamp:
            try:
                self._roster = load_roster(path)
            except RosterError as exc:
                log.error("station.roster_unreadable", error=str(exc))
                raise StationError(f"the roster cannot be read: {exc}", 503) from None
            self._roster_stamp = stamp
        return self._roster

    def _badge(self, message: dict[str, Any]) -> None:
        """A tag on the badge zone: whose it is waits for the PIN (a card never logs in)."""
        uid = str(message.get("uid", ""))
        card = message.get("card") is True
        person = None
        if card:
            log.warning("station.card_on_badge_reader")
        else:
            try:
                person = self.roster().by_badge(uid)
            except StationError:
                person = None
        self.badge = Badge(uid, self.clock(), person, card)
        self.changed()

    def pending_badge(self) -> Badge | None:
        """The badge read last, if it still waits for its PIN."""
        if self.badge is None or self.clock() - self.badge.at > BADGE_WAIT:
            return None
        return self.badge

    async def login(self, dealer: str | None, pin: str) -> tuple[Session, str]:
        """Log in whom ``dealer`` names (their id or a badge; None: the badge read last) with
        ``pin``; the session and its token (StationError: why not)."""
        now = self.clock()
        roster = self.roster()
        if dealer is None or not dealer.strip():
            pending = self.pending_badge()
            if pending is None:
                raise StationError("Dealer: give your id, or present your badge", 422)
            if pending.card:
                raise StationError("a playing card is on the badge reader, not a badge", 422)
            dealer = pending.uid
        person = roster.named(dealer)
        who = person.id if person is not None else f"unknown:{_spelling(dealer)}"
        wait = self.lockouts.wait(who, now)
        if wait > 0:
            raise StationError(f"too many wrong PINs: try again in {wait:.0f} s", 429, retry=wait)
        right = await asyncio.to_thread(verify, person.pin if person is not None else None, pin)
        if not right or person is None:
            wait = self.lockouts.failed(who, self.clock())
            log.warning(
                "station.login_failed", dealer=who, failures=self.lockouts.failures(who, now)
            )
            if wait > 0:
                raise StationError(
                    f"unknown dealer or wrong PIN: try again in {wait:.0f} s", 401, retry=wait
                )
            raise StationError("unknown dealer or wrong PIN", 401)
        self.lockouts.succeeded(who)
        token = secrets.token_urlsafe(32)
        try:
            session = self.desk.login(person, token, self.clock(), self.hand_id)
        except DeskError as exc:
            raise StationError(exc.reason, exc.status) from None
        self.badge = None
        log.info("station.login", dealer=person.id)
        self.changed()
        return session, token

    def session(self, token: str | None, *, use: bool = True) -> Session:
        """The session of ``token``, used now unless ``use`` is false (a read); StationError
        401: nobody is logged in with it."""
        before = self.desk.session
        now = self.clock()
        session = self.desk.current(token, now) if use else self.desk.holder(token, now)
        if session is None:
            if before is not None and self.desk.session is None:
                self.changed()  # it ended idle just now
            raise StationError("log in first", 401)
        return session

    def logout(self, session: Session) -> None:
        """End ``session`` (StationError: a hand is in progress)."""
        try:
            self.desk.logout(session, self.hand_id)
        except DeskError as exc:
            raise StationError(exc.reason, exc.status) from None
        log.info("station.logout", dealer=session.person.id)
        self.changed()

    # ------------------------------------------------------------------ what the dealer asks

    def table(self) -> dict[str, Any]:
        """The table as the daemon last said (StationError 503: out of reach)."""
        view = self.link.view
        if view is None or not self.link.connected:
            raise StationError(
                f"the table is out of reach: {self.link.problem or 'not connected yet'}", 503
            )
        table: dict[str, Any] = view["table"]
        return table

    async def send(self, session: Session, command: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Send ``command`` for the dealer of ``session``; the daemon's answer, or StationError
        with the daemon's reason."""
        self.table()  # out of reach: said at once, not after a timeout
        try:
            answer = await self.link.request(command, fields, session.person.id)
        except LinkError as exc:
            raise StationError(str(exc), 503) from None
        if answer.get("status") != "ok":
            raise StationError(str(answer.get("error") or "refused by the table"), 409)
        data = answer.get("data") or {}
        return {"ok": True, "command": command, "events": data.get("events", [])}

    async def start_hand(
        self,
        session: Session,
        button: int | None,
        straddles: list[int] | None = None,
        seats: list[int] | None = None,
    ) -> dict[str, Any]:
        """``Start hand`` (``straddles``: the seats that straddle, in order, STRADDLE; ``seats``:
        the seats dealt in, the others sitting out, MISSED-BLINDS; the daemon judges both)."""
        table = self.table()
        if table.get("hand") is not None:
            raise StationError(f"hand {table['hand']['hand_id']} is in progress")
        fields: dict[str, Any] = {}
        for seat in ([button] if button is not None else []) + (straddles or []) + (seats or []):
            if str(seat) not in table.get("seats", {}):
                raise StationError(f"seat {seat} is not at this table", 422)
        if button is not None:
            fields["button"] = button
        if straddles:
            if len(set(straddles)) != len(straddles):
                raise StationError("a seat straddles once", 422)
            fields["straddles"] = straddles
        if seats is not None:
            if len(set(seats)) != len(seats):
                raise StationError("a seat is dealt in once", 422)
            fields["seats"] = sorted(seats)
        return await self.send(session, "start_hand", fields)

    async def post_blinds(self, session: Session, seat: int) -> dict[str, Any]:
        """A seat posts what it owes to play the next hand (MISSED-BLINDS)."""
        if str(seat) not in self.table().get("seats", {}):
            raise StationError(f"seat {seat} is not at this table", 422)
        return await self.send(session, "post", {"seat": seat})

    async def run_it_twice(self, session: Session) -> dict[str, Any]:
        """The players all in agree to run the rest of the board twice (RUN-TWICE; the daemon
        judges whether the hand allows it)."""
        if self.table().get("hand") is None:
            raise StationError("no hand is in progress")
        return await self.send(session, "run_it_twice", {})

    async def action(
        self, session: Session, action: str, seat: int | None, amount: int | None
    ) -> dict[str, Any]:
        """A button of the action pad, checked with the core's betting rules first."""
        try:
            seat, kind, amount = check_action(self.table(), seat, action, amount)
        except IllegalError as exc:
            raise StationError(exc.reason, exc.status) from None
        fields: dict[str, Any] = {"seat": seat, "action": kind.value}
        if amount is not None and kind.value in ("bet", "raise"):
            fields["amount"] = amount
        return await self.send(session, "action", fields)

    async def rule(self, session: Session, hold: str, verb: str) -> dict[str, Any]:
        """``Confirm`` or ``Reject`` a hold: only one the house lets the dealer rule on (floor
        rulings are made on the pit's console, never at the station, whoever is logged in)."""
        pending = self._hold(hold)
        if not pending.get("dealer_may_confirm"):
            raise StationError(f"{pending['rule']} is the floor's ruling: call the floor", 403)
        return await self.send(session, verb, {"hold": hold})

    async def call_floor(
        self, session: Session, hold: str | None, seat: int | None, reason: str
    ) -> dict[str, Any]:
        """``Call the floor``: the floor is called to the table (and the hold to its queue)."""
        if hold is not None:
            self._hold(hold)
        fields: dict[str, Any] = {"reason": reason}
        if hold is not None:
            fields["hold"] = hold
        if seat is not None:
            if str(seat) not in self.table().get("seats", {}):
                raise StationError(f"seat {seat} is not at this table", 422)
            fields["seat"] = seat
        return await self.send(session, "call_floor", fields)

    async def award(self, session: Session) -> dict[str, Any]:
        """Push the award proposal (§ 1552: only the dealer awards pots)."""
        hand = self.table().get("hand")
        if hand is None or hand.get("proposal") is None:
            raise StationError("no award is proposed")
        return await self.send(session, "award", {})

    async def showdown(self, session: Session, verb: str, seat: int) -> dict[str, Any]:
        """A showdown declaration: a seat's hand tabled or mucked."""
        table = self.table()
        if str(seat) not in table.get("seats", {}):
            raise StationError(f"seat {seat} is not at this table", 422)
        return await self.send(session, verb, {"seat": seat})

    def name_seat(self, seat: int, name: str) -> None:
        """The player at ``seat`` is ``name`` (empty: unnamed)."""
        if str(seat) not in self.table().get("seats", {}):
            raise StationError(f"seat {seat} is not at this table", 422)
        if name.strip():
            self.names[seat] = name.strip()
        else:
            self.names.pop(seat, None)
        self.changed()

    def _hold(self, hold: str) -> dict[str, Any]:
        hand = self.table().get("hand") or {}
        for pending in hand.get("holds", ()):
            if pending.get("id") == hold:
                return dict(pending)
        raise StationError(f"no pending hold {hold!r}", 404)

    # ------------------------------------------------------------------ what the pages show

    def state(self, session: Session | None) -> dict[str, Any]:
        """What the pages show: who is logged in, and (to them) the table."""
        body: dict[str, Any] = {
            "table_id": self.settings.table,
            "daemon": {"connected": self.link.connected, "problem": self.link.problem},
            "dealer": _person(session.person) if session is not None else None,
            "ended": self.desk.ended if session is None else None,
        }
        pending = self.pending_badge()
        if session is None and pending is not None:
            body["badge"] = {
                "known": pending.person is not None,
                "name": pending.person.name if pending.person is not None else None,
                "card": pending.card,
            }
        if session is not None and self.link.view is not None:
            body["view"] = self._view(self.link.view)
        return body

    def _view(self, view: dict[str, Any]) -> dict[str, Any]:
        table = dict(view.get("table", {}))
        seats = {}
        for seat, entry in table.get("seats", {}).items():
            name = self.names.get(int(seat))
            seats[seat] = {**entry, "name": name or f"Seat {seat}"}
        table["seats"] = seats
        hand = table.get("hand")
        if isinstance(hand, dict):
            hand = dict(hand)
            hand["holds"] = [
                {**h, "may_rule": bool(h.get("dealer_may_confirm"))} for h in hand.get("holds", ())
            ]
            hand["pad"] = _pad(hand, seats)
            table["hand"] = hand
        return {
            "epoch": view.get("epoch"),
            "seq": view.get("seq"),
            "table": table,
            "devices": view.get("devices", {}),
            "link": view.get("link", {}),
        }


def _pad(hand: dict[str, Any], seats: dict[str, Any]) -> dict[str, Any] | None:
    """The action pad for the seat to act: the core's menu as the view carries it (the actions
    the daemon would take now, in pad order, and the quick sizes; controller/rules/menu.py)
    beside the betting options' figures. None while nobody may act (dealing, a hold)."""
    menu, options = hand.get("menu"), hand.get("options")
    if hand.get("phase") != "betting" or not isinstance(menu, dict):
        return None
    if not isinstance(options, dict) or options.get("seat") != menu.get("seat"):
        return None
    return {**options, "actions": list(menu["actions"]), "quick": list(menu.get("quick", ()))}


def _person(person: Person) -> dict[str, Any]:
    return {"id": person.id, "name": person.name, "roles": [r.value for r in person.roles]}


def _spelling(dealer: str) -> str:
    """How an unknown "Dealer" entry is counted: a UID in its one spelling, else as typed."""
    try:
        return normalize_uid(dealer)
    except UidError:
        return dealer.strip()[:64]
