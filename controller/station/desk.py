"""Who works the station: one dealer at a time, changed only between hands, logged out when idle.

* **One at a time.** A log-in between hands replaces whoever was logged in (the next dealer of
  a rotation need not wait for the last one to log out).
* **Between hands.** While a hand is in progress the dealer who deals it stays its dealer: a log-in
  by anyone else is refused with the reason, unless they hold the floor role (a floor person may
  take over and finish the hand); the same dealer may log in again (after an idle log-out, say),
  and a log-out is refused until the hand is over.
* **Idle.** A session that has not been used for ``idle`` seconds ends (the station then sends
  nothing: every request needs a dealer logged in). Using it is asking for something: a log-in,
  a button; reading the table or following it live is not.

A session is a random token in an HttpOnly, SameSite=Strict cookie; the desk keeps only its
SHA-256. Pure: the time comes in as an argument, and so does the token.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, replace

from controller.station.roster import Person

COOKIE = "tablectl_station_session"


class DeskError(Exception):
    """A log-in or log-out the desk refuses; ``status`` is the HTTP status that says so."""

    def __init__(self, reason: str, status: int = 409) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class Session:
    """The dealer logged in, and when the session was last used."""

    digest: str
    person: Person
    started: float
    last_used: float


def digest(token: str) -> str:
    """What the desk keeps of a session token."""
    return hashlib.sha256(token.encode()).hexdigest()


class Desk:
    """The station's one session, and the dealer of the hand in progress."""

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self.session: Session | None = None
        #: (hand id, person id): who deals the hand in progress.
        self.dealing: tuple[str, str] | None = None
        #: Why the last session ended (for the pages: "logged out: idle").
        self.ended: str | None = None

    def hand(self, hand_id: str | None) -> None:
        """The hand in progress is ``hand_id`` (None: between hands)."""
        if hand_id is None:
            self.dealing = None
        elif self.session is not None and (self.dealing is None or self.dealing[0] != hand_id):
            self.dealing = (hand_id, self.session.person.id)

    def login(self, person: Person, token: str, now: float, hand_id: str | None) -> Session:
        """Log ``person`` in with a new session ``token`` (DeskError: not now)."""
        self.expire(now)
        if hand_id is not None:
            self.hand(hand_id)
            dealer = self.dealing[1] if self.dealing is not None else None
            if dealer is not None and dealer != person.id and not person.floor:
                raise DeskError(
                    f"hand {hand_id} is in progress, dealt by {dealer}: the dealer changes "
                    "between hands (or the floor takes over)"
                )
        self.session = Session(digest(token), person, now, now)
        self.ended = None
        if hand_id is not None:
            self.dealing = (hand_id, person.id)
        return self.session

    def current(self, token: str | None, now: float) -> Session | None:
        """The session ``token`` opens, used now (None: none, ended, or another's)."""
        session = self.holder(token, now)
        if session is None:
            return None
        self.session = replace(session, last_used=now)
        return self.session

    def holder(self, token: str | None, now: float) -> Session | None:
        """The session ``token`` opens, without using it: a page reading the table, or its live
        stream, keeps nobody logged in."""
        self.expire(now)
        session = self.session
        if token is None or session is None:
            return None
        if not hmac.compare_digest(session.digest, digest(token)):
            return None
        return session

    def logout(self, session: Session, hand_id: str | None) -> None:
        """End ``session`` (DeskError: a hand is in progress)."""
        if hand_id is not None:
            raise DeskError(
                f"hand {hand_id} is in progress: log out between hands (the floor may take over)"
            )
        if self.session is not None and self.session.digest == session.digest:
            self.session = None
            self.ended = "logged out"

    def deadline(self) -> float | None:
        """When the session ends if it is not used before (None: nobody is logged in)."""
        return self.session.last_used + self.idle if self.session is not None else None

    def expire(self, now: float) -> bool:
        """End the session if it has been idle too long; whether it ended now."""
        deadline = self.deadline()
        if deadline is None or now < deadline:
            return False
        self.session = None
        self.ended = "idle"
        return True
