"""The pit's users, their sessions and the log-in lock-out, kept in the store so that every pit
process sharing it decides the same, from the next request on (docs/pit.md): nothing of who may
log in is kept in a process but the proof that a password matches a stored hash
(:class:`controller.pit.users.PasswordProofs`), which a changed hash no longer matches.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from controller.pit.db import Db
from controller.pit.lockout import LockOut


class Credentials(NamedTuple):
    """What one request's password is judged by, read at once: the user's stored hash and
    roles, and their wrong passwords from the request's address."""

    password_hash: str
    roles: list[str]
    last_login_at: float | None
    #: seconds the address must still wait before trying this user's password (0: it may)
    wait: float
    #: wrong passwords of this user from this address are being counted
    counted: bool


class Accounts:
    """Users, sessions and lock-out of a :class:`~controller.pit.store.Store`."""

    db: Db

    # ------------------------------------------------------------------ users and sessions

    def add_user(self, username: str, password_hash: str, roles: Sequence[str]) -> None:
        """Create a user, or replace its password and roles."""
        self.db.execute(
            "INSERT INTO users (username, password_hash, roles, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (username) DO UPDATE SET password_hash = excluded.password_hash, "
            "roles = excluded.roles",
            (username, password_hash, json.dumps(sorted(roles)), time.time()),
        )

    def user(self, username: str) -> tuple[str, list[str]] | None:
        """A user's password hash and roles."""
        row = self.db.one("SELECT password_hash, roles FROM users WHERE username = ?", (username,))
        return (row[0], json.loads(row[1])) if row else None

    def set_password_hash(self, username: str, password_hash: str) -> None:
        """Store a re-hashed password (stronger parameters)."""
        self.db.execute(
            "UPDATE users SET password_hash = ? WHERE username = ?", (password_hash, username)
        )

    def credentials(self, username: str, address: str, now: float) -> Credentials | None:
        """The user's stored hash, roles and last login with the lock-out of ``address`` for
        them at ``now``, in one statement (None: no such user)."""
        row = self.db.one(
            "SELECT u.password_hash, u.roles, u.last_login_at, f.locked_until FROM users u "
            "LEFT JOIN login_failures f ON f.username = u.username AND f.address = ? "
            "WHERE u.username = ?",
            (address, username),
        )
        if row is None:
            return None
        locked_until = None if row[3] is None else float(row[3])
        return Credentials(
            row[0],
            json.loads(row[1]),
            None if row[2] is None else float(row[2]),
            max(0.0, locked_until - now) if locked_until is not None else 0.0,
            locked_until is not None,
        )

    def add_session(self, token_sha256: str, username: str, expires_at: float) -> None:
        """Remember a logged-in session (by its token's digest; forget expired ones)."""
        with self.db.transaction():
            self.db.execute("DELETE FROM sessions WHERE expires_at < ?", (time.time(),))
            self.db.execute(
                "INSERT INTO sessions (token_sha256, username, expires_at) VALUES (?, ?, ?)",
                (token_sha256, username, expires_at),
            )

    def users(self, now: float) -> list[dict[str, Any]]:
        """Every user, by name: ``username``, ``roles``, ``created_at``, ``last_login_at`` (None:
        not recorded), ``sessions`` (how many are open at ``now``) and ``locked_out`` (each
        client address that must still wait before trying their password, with until when)."""
        db = self.db
        sessions = {
            str(name): int(count)
            for name, count in db.all(
                "SELECT username, COUNT(*) FROM sessions WHERE expires_at > ? GROUP BY username",
                (now,),
            )
        }
        locked: dict[str, list[dict[str, Any]]] = {}
        for name, address, until in db.all(
            "SELECT username, address, locked_until FROM login_failures WHERE locked_until > ? "
            "ORDER BY username, address",
            (now,),
        ):
            locked.setdefault(name, []).append({"address": address, "until": float(until)})
        return [
            {
                "username": name,
                "roles": json.loads(roles),
                "created_at": float(created),
                "last_login_at": None if last is None else float(last),
                "sessions": sessions.get(name, 0),
                "locked_out": locked.get(name, []),
            }
            for name, roles, created, last in db.all(
                "SELECT username, roles, created_at, last_login_at FROM users ORDER BY username"
            )
        ]

    def remove_user(self, username: str, now: float) -> int | None:
        """Remove a user with every session of theirs and their wrong-password counts, in one
        transaction; the number of their sessions that were open at ``now`` (None: no such
        user). A session's next request finds no session and is sent to log in."""
        db = self.db
        with db.transaction():
            row = db.one(
                "SELECT COUNT(*) FROM sessions WHERE username = ? AND expires_at > ?",
                (username, now),
            )
            db.execute("DELETE FROM sessions WHERE username = ?", (username,))
            db.execute("DELETE FROM login_failures WHERE username = ?", (username,))
            removed = db.all("DELETE FROM users WHERE username = ? RETURNING username", (username,))
        if not removed:
            return None
        return int(row[0]) if row else 0

    def end_session(self, token_sha256: str) -> None:
        """Forget a session (logging out)."""
        self.db.execute("DELETE FROM sessions WHERE token_sha256 = ?", (token_sha256,))

    def session_login(self, token_sha256: str, now: float) -> tuple[str, list[str]] | None:
        """The user of a live session and their roles, in one statement."""
        row = self.db.one(
            "SELECT s.username, u.roles FROM sessions s JOIN users u ON u.username = s.username "
            "WHERE s.token_sha256 = ? AND s.expires_at > ?",
            (token_sha256, now),
        )
        return (row[0], json.loads(row[1])) if row else None

    def session_user(self, token_sha256: str, now: float) -> str | None:
        """The user of a live session."""
        row = self.db.one(
            "SELECT username FROM sessions WHERE token_sha256 = ? AND expires_at > ?",
            (token_sha256, now),
        )
        return row[0] if row else None

    # ------------------------------------------------------------------ lock-out

    def login_attempt(self, username: str, address: str, now: float, policy: LockOut) -> float:
        """A password is about to be checked for ``username`` from ``address``: 0 when it may
        be (the attempt is counted now, and cleared by :meth:`login_succeeded`), or the seconds
        the address must still wait for that user (the attempt is refused and not counted).

        Counted before the password is checked, in one transaction every pit process of the
        store sees: attempts made at once cannot slip past the count together.
        """
        db = self.db
        with db.transaction():
            db.execute("DELETE FROM login_failures WHERE last_at < ?", (now - policy.forget,))
            row = db.all(
                "INSERT INTO login_failures (username, address, failures, first_at, last_at) "
                "VALUES (?, ?, 1, ?, ?) ON CONFLICT (username, address) DO UPDATE SET "
                "failures = CASE WHEN login_failures.locked_until > excluded.last_at "
                "THEN login_failures.failures ELSE login_failures.failures + 1 END, "
                "last_at = CASE WHEN login_failures.locked_until > excluded.last_at "
                "THEN login_failures.last_at ELSE excluded.last_at END "
                "RETURNING failures, locked_until",
                (username, address, now, now),
            )[0]
            failures, locked_until = int(row[0]), float(row[1])
            if locked_until > now:
                return locked_until - now
            wait = policy.delay(failures)
            if wait > 0:
                db.execute(
                    "UPDATE login_failures SET locked_until = ? WHERE username = ? AND address = ?",
                    (now + wait, username, address),
                )
            counted = db.one("SELECT COUNT(*) FROM login_failures")
            over = int(counted[0]) - policy.keep if counted else 0
            if over > 0:  # the longest quiet first
                db.execute(
                    "DELETE FROM login_failures WHERE (username, address) IN (SELECT username, "
                    "address FROM login_failures ORDER BY last_at LIMIT ?)",
                    (over,),
                )
        return 0.0

    def login_succeeded(self, username: str, address: str, now: float | None = None) -> None:
        """The right password for ``username`` from ``address`` (at ``now``, by default the
        time now): its count starts again, and the user's last login is then."""
        with self.db.transaction():
            self.db.execute(
                "DELETE FROM login_failures WHERE username = ? AND address = ?",
                (username, address),
            )
            self.db.execute(
                "UPDATE users SET last_login_at = ? WHERE username = ?",
                (time.time() if now is None else now, username),
            )

    def password_known(
        self, username: str, address: str, now: float, *, record_login: bool = True
    ) -> float:
        """The right password for ``username`` from ``address``, known without checking it
        again (its proof matches the stored hash just read): its count starts again unless the
        address was locked out meanwhile (then the seconds it must still wait: the password is
        refused), and with ``record_login`` the user's last login is ``now``. One transaction:
        a lock-out another process commits meanwhile is never cleared."""
        db = self.db
        with db.transaction():
            cleared = db.all(
                "DELETE FROM login_failures WHERE username = ? AND address = ? "
                "AND locked_until <= ? RETURNING failures",
                (username, address, now),
            )
            if not cleared:
                row = db.one(
                    "SELECT locked_until FROM login_failures WHERE username = ? AND address = ?",
                    (username, address),
                )
                if row is not None and float(row[0]) > now:
                    return float(row[0]) - now
            if record_login:
                db.execute("UPDATE users SET last_login_at = ? WHERE username = ?", (now, username))
        return 0.0

    def login_failures(self) -> list[tuple[str, str, int, float]]:
        """``(username, address, failures, locked_until)`` of every count kept."""
        rows = self.db.all(
            "SELECT username, address, failures, locked_until FROM login_failures "
            "ORDER BY username, address"
        )
        return [(r[0], r[1], int(r[2]), float(r[3])) for r in rows]
