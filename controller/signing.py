"""Ed25519 signatures over table requests (docs/security.md).

A signed request carries ``auth = {key, ts, nonce, sig}`` (and ``on_behalf_of`` when a console
signs for a person). The signature covers the canonical JSON of::

    {"command", "table", "transaction", "fields", "ts", "nonce", "on_behalf_of"}

``fields`` being the command's own fields (everything in the request but ``transaction`` and
``auth``): keys sorted, no spaces, UTF-8, so any implementation can rebuild the same bytes.
``docs/security.md`` gives a worked example; ``tests/shell/test_signing.py`` checks it.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey


class SigningError(ValueError):
    """A key file that cannot be used."""


def canonical(
    command: str,
    table: str,
    transaction: str,
    fields: Mapping[str, Any],
    ts: str,
    nonce: str,
    on_behalf_of: str | None = None,
) -> bytes:
    """The bytes a request's signature covers."""
    document = {
        "command": command,
        "table": table,
        "transaction": transaction,
        "fields": dict(fields),
        "ts": ts,
        "nonce": nonce,
        "on_behalf_of": on_behalf_of,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def new_key() -> tuple[Ed25519PrivateKey, str]:
    """A new key pair: the private key and the public key in base64 (the keyring's form)."""
    private = Ed25519PrivateKey.generate()
    return private, public_text(private.public_key())


def public_text(public: Ed25519PublicKey) -> str:
    """A public key as the keyring writes it: its 32 raw bytes in base64."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def save_private_key(private: Ed25519PrivateKey, path: Path) -> None:
    """Write the private key (PKCS#8 PEM) readable by its owner only; never overwrite one."""
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """Read a private key file written by ``tablectl keys new``."""
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise SigningError(f"{path}: no such key file") from None
    except (OSError, ValueError, TypeError) as exc:
        raise SigningError(f"{path}: not a private key file ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{path}: not an Ed25519 key")
    return key


def sign_request(
    private: Ed25519PrivateKey,
    key_id: str,
    command: str,
    table: str,
    body: Mapping[str, Any],
    *,
    now: datetime | None = None,
    on_behalf_of: str | None = None,
) -> dict[str, Any]:
    """``body`` (the command's fields and its ``transaction``) with its ``auth`` added."""
    fields = {k: v for k, v in body.items() if k not in ("transaction", "auth")}
    ts = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="milliseconds")
    ts = ts.replace("+00:00", "Z")
    nonce = secrets.token_hex(16)
    transaction = str(body["transaction"])
    message = canonical(command, table, transaction, fields, ts, nonce, on_behalf_of)
    auth: dict[str, Any] = {
        "key": key_id,
        "ts": ts,
        "nonce": nonce,
        "sig": base64.b64encode(private.sign(message)).decode(),
    }
    if on_behalf_of is not None:
        auth["on_behalf_of"] = on_behalf_of
    return {**body, "auth": auth}


def signature_holds(public_key: bytes, signature: str, message: bytes) -> bool:
    """Whether ``signature`` (base64) is the key's signature of ``message``."""
    try:
        raw = base64.b64decode(signature, validate=True)
        Ed25519PublicKey.from_public_bytes(public_key).verify(raw, message)
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True


class Signer:
    """Signs a console's requests to one table with one key (``tablectl dealer --key``)."""

    def __init__(
        self,
        private: Ed25519PrivateKey,
        key_id: str,
        table: str,
        *,
        on_behalf_of: str | None = None,
    ) -> None:
        self.private = private
        self.key_id = key_id
        self.table = table
        self.on_behalf_of = on_behalf_of

    @classmethod
    def from_file(cls, path: Path, table: str, key_id: str | None = None) -> Signer:
        """The key written by ``tablectl keys new NAME`` (its id is NAME unless given)."""
        return cls(load_private_key(path), key_id or path.stem, table)

    def sign(self, command: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` (with its ``transaction``) signed for ``command``."""
        return sign_request(
            self.private,
            self.key_id,
            command,
            self.table,
            body,
            on_behalf_of=self.on_behalf_of,
        )
