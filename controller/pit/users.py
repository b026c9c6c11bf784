"""People who log in to the pit: passwords stored hashed (argon2id), roles as in §3.10.

``tablectl pit user add NAME --role floor --password-stdin`` writes a user into the store. The
API takes HTTP Basic credentials, or the session cookie ``POST /login`` sets (a random token;
the store keeps only its SHA-256, with the user and when it expires). A session's forms carry a
CSRF token derived from it (:func:`csrf_token`). Whether HTTP Basic credentials are right is
decided on every request by what the store holds then (:class:`PasswordProofs`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections import OrderedDict

from controller import passwords
from controller.authority import Role
from controller.passwords import hash_secret, needs_rehash
from controller.pit.store import Store

SESSION_COOKIE = "tablectl_pit_session"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"


class UserError(ValueError):
    """A user that cannot be added (the message says why)."""


def add_user(store: Store, name: str, roles: list[str], password: str) -> None:
    """Create or replace a user (the password hashed with argon2id)."""
    if not re.fullmatch(NAME_PATTERN, name):
        raise UserError(f"{name!r}: letters, digits and . _ @ -, at most 64")
    known = {r.value for r in Role}
    unknown = sorted(set(roles) - known)
    if unknown or not roles:
        raise UserError(f"roles must be among {', '.join(sorted(known))} (got {roles})")
    if len(password) < 8:
        raise UserError("the password must have at least 8 characters")
    store.add_user(name, hash_secret(password), roles)


def check_password(store: Store, name: str, password: str) -> list[str] | None:
    """The user's roles when the password is theirs, None otherwise."""
    found = store.user(name)
    if not verify(found[0] if found else None, password):
        return None
    assert found is not None
    if needs_rehash(found[0]):
        store.set_password_hash(name, hash_secret(password))
    return found[1]


def verify(stored: str | None, password: str) -> bool:
    """Whether ``password`` is the one ``stored`` hashes (None: no such user, and it takes
    the same time; controller/passwords.py, shared with the dealers' PINs)."""
    return passwords.verify(stored, password)


class PasswordProofs:
    """Which password each stored hash was seen to match, so that HTTP Basic credentials sent
    again need no second argon2 check (slow on purpose): by user *and stored hash*, an HMAC of
    the password under a key of this process (never the password, nor a fast hash of it).

    It proves only that a password matches a hash. Whether that hash is still the user's, and
    whether the client's address may try it, is read from the store at every request
    (:meth:`controller.pit.accounts.Accounts.credentials`): a password changed or a user
    removed, whichever process did it, leaves the proof matching nothing from the next request
    on. Nothing expires by time; at most ``size`` proofs are kept (the least used forgotten
    first)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._key = secrets.token_bytes(32)
        self._known: OrderedDict[tuple[str, str], bytes] = OrderedDict()

    def _proof(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode(), hashlib.sha256).digest()

    def matches(self, name: str, stored_hash: str, password: str) -> bool:
        """Whether ``password`` was seen to match ``stored_hash``, ``name``'s hash now."""
        known = self._known.get((name, stored_hash))
        if known is None or not hmac.compare_digest(known, self._proof(password)):
            return False
        self._known.move_to_end((name, stored_hash))
        return True

    def remember(self, name: str, stored_hash: str, password: str) -> None:
        """``password`` matched ``stored_hash``, ``name``'s hash (argon2 said so)."""
        self._known[(name, stored_hash)] = self._proof(password)
        self._known.move_to_end((name, stored_hash))
        while len(self._known) > self.size:
            self._known.popitem(last=False)

    def __len__(self) -> int:
        return len(self._known)


def new_session(store: Store, name: str, expires_at: float) -> str:
    """A new session token for ``name`` (the store keeps its digest only)."""
    token = secrets.token_urlsafe(32)
    store.add_session(token_digest(token), name, expires_at)
    return token


def token_digest(token: str) -> str:
    """What the store keeps of a session token."""
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_token(session_token: str) -> str:
    """The token every state-changing request of a session must carry (a form's ``csrf`` field
    or the ``X-CSRF-Token`` header): derived from the session's secret, so a page of another
    site, which cannot read the cookie, cannot know it; the store keeps neither."""
    return hashlib.sha256(b"tablectl-pit-csrf\0" + session_token.encode()).hexdigest()[:40]
