"""People who log in to the pit: passwords stored hashed (argon2id), roles as in §3.10.

``tablectl pit user add NAME --role floor --password-stdin`` writes a user into the store. The
API takes HTTP Basic credentials, or the session cookie ``POST /login`` sets (a random token;
the store keeps only its SHA-256, with the user and when it expires). A session's forms carry a
CSRF token derived from it (:func:`csrf_token`).
"""

from __future__ import annotations

import hashlib
import re
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from controller.authority import Role
from controller.pit.store import Store

SESSION_COOKIE = "tablectl_pit_session"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"

_hasher = PasswordHasher()


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
    store.add_user(name, _hasher.hash(password), roles)


def check_password(store: Store, name: str, password: str) -> list[str] | None:
    """The user's roles when the password is theirs, None otherwise."""
    found = store.user(name)
    if not verify(found[0] if found else None, password):
        return None
    assert found is not None
    if _hasher.check_needs_rehash(found[0]):
        store.set_password_hash(name, _hasher.hash(password))
    return found[1]


def verify(stored: str | None, password: str) -> bool:
    """Whether ``password`` is the one ``stored`` hashes (None: no such user, and it takes
    the same time). Slow on purpose: run it off the event loop."""
    if stored is None:
        _hasher.hash(password)
        return False
    try:
        return bool(_hasher.verify(stored, password))
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


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
