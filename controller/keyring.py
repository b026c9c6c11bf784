"""The table's keyring: the public keys it trusts, whose they are, and what they may do.

A TOML file of public keys only (private keys never leave the person's console)::

    [keys.ann-dealer]                 # the key id a signed request names
    person = "Ann Example"
    roles = ["dealer"]
    tables = ["T1", "T2"]             # or ["*"]
    public_key = "Ed25519 public key, 32 bytes in base64"
    valid_until = 2027-06-30T00:00:00Z    # optional
    revoked = false                   # true: refused from now on (kept, so the journal's past
                                      # signatures still name a known key)

    [keys.pit-console]                # a console that acts for the people logged in to it
    person = "pit web console"
    roles = ["floor", "dealer"]       # what it may relay
    acts_for = ["*"]                  # the people it may sign for (on_behalf_of)

    [persons."Bob Floor"]             # a person who acts only through a console
    roles = ["floor"]

A request signed by a console for a person gets the roles both the console and the person hold:
the person's come from their own keys and their ``[persons]`` entry. ``tablectl keys new`` prints
a ``[keys.…]`` block for a new key pair; ``tablectl config check`` validates the file.
"""

from __future__ import annotations

import base64
import binascii
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from controller.authority import Role

KeyId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
Person = Annotated[str, StringConstraints(min_length=1, max_length=120)]


class KeyringError(ValueError):
    """A keyring that cannot be used; the message names the key and the problem."""


class KeyEntry(BaseModel):
    """One public key and what its holder may do."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    person: Person
    roles: list[Role] = Field(min_length=1)
    tables: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    public_key: str
    valid_until: datetime | None = None
    revoked: bool = False
    acts_for: list[Person] = Field(default_factory=list)

    @field_validator("public_key")
    @classmethod
    def _ed25519(cls, value: str) -> str:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not base64") from None
        if len(raw) != 32:
            raise ValueError(f"an Ed25519 public key is 32 bytes, this one is {len(raw)}")
        return value

    @field_validator("valid_until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("give a time zone (e.g. 2027-06-30T00:00:00Z)")
        return value

    @property
    def raw_public_key(self) -> bytes:
        """The 32 bytes of the public key."""
        return base64.b64decode(self.public_key)

    def serves(self, table: str) -> bool:
        """Whether the key may be used at ``table``."""
        return "*" in self.tables or table in self.tables

    def may_act_for(self, person: str) -> bool:
        """Whether the key may sign on behalf of ``person``."""
        return "*" in self.acts_for or person in self.acts_for


class PersonEntry(BaseModel):
    """A person who acts through a console and has no key of their own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roles: list[Role] = Field(min_length=1)


class Keyring(BaseModel):
    """Every key the table trusts, by id, and the people consoles may act for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keys: dict[KeyId, KeyEntry] = Field(default_factory=dict)
    persons: dict[Person, PersonEntry] = Field(default_factory=dict)

    def roles_of(self, person: str) -> set[Role]:
        """Every role ``person`` holds: through their own keys and their ``[persons]`` entry."""
        held = {
            r for k in self.keys.values() if k.person == person and not k.revoked for r in k.roles
        }
        entry = self.persons.get(person)
        if entry is not None:
            held.update(entry.roles)
        return held


def parse_keyring(data: dict[str, Any], source: str = "keyring") -> Keyring:
    """Validate a keyring document; KeyringError names the key and the problem."""
    try:
        return Keyring.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise KeyringError(f"{source}: {problems}") from None


def load_keyring(path: Path) -> Keyring:
    """Read and validate the keyring at ``path``."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KeyringError(f"{path}: no such keyring file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KeyringError(f"{path}: {exc}") from None
    return parse_keyring(data, str(path))
