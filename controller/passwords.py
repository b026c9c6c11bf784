"""Secrets people type, stored as argon2id hashes: the pit's passwords and the dealers' PINs.

argon2-cffi's :class:`~argon2.PasswordHasher` with its defaults (RFC 9106's second recommended
option, argon2id); the hash string carries its own parameters and salt, so a hash made with older
parameters still verifies and is made again at the next right answer (:func:`needs_rehash`).
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

hasher = PasswordHasher()


def hash_secret(secret: str) -> str:
    """The argon2id hash of ``secret`` (a new random salt each time)."""
    return hasher.hash(secret)


def verify(stored: str | None, secret: str) -> bool:
    """Whether ``secret`` is the one ``stored`` hashes (None: nobody has it, and it takes the
    same time, so the answer does not tell who exists). Slow on purpose: run it off the event
    loop."""
    if stored is None:
        hasher.hash(secret)
        return False
    try:
        return bool(hasher.verify(stored, secret))
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """Whether ``stored`` was made with other parameters than the hasher's now."""
    return hasher.check_needs_rehash(stored)
