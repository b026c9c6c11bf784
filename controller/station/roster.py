"""The roster: the people who may log in at the dealer's station (a TOML file beside the keyring).

.. code-block:: toml

    [persons.ann]                       # the person's id: what the events' ``by`` names
    name = "Ann Example"
    roles = ["dealer"]
    badges = ["04a1b2c3d4e5f6"]         # tag UIDs (controller/uids.py spelling)
    pin = "$argon2id$v=19$m=65536,t=3,p=4$…"   # the PIN's argon2id hash, never the PIN

``tablectl station person add ID --name NAME --badge UID --pin-stdin`` writes an entry (again:
replaces it), ``person remove`` removes one. The file holds no secret in the clear, but it is
written readable by its owner only (the hashes need not be handed to anyone), atomically (a new
file renamed over the old one), so the running station never reads half of it.

A badge is one person's: the same UID for two persons is refused, as is a UID that is a card of a
deck the table knows (a card laid on the badge reader must never log anyone in).
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from controller.authority import Role
from controller.decks import known_decks
from controller.passwords import hash_secret
from controller.uids import UidError, normalize_uid

#: A person's id: what the station signs ``on_behalf_of``, and what the events' ``by`` names.
PERSON_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
#: A PIN: digits only (a touchscreen's keypad), 4 to 12 of them.
PIN = re.compile(r"^[0-9]{4,12}$")
#: The roles that may work at the station.
STATION_ROLES = frozenset({Role.DEALER, Role.FLOOR})
MAX_NAME = 120


class RosterError(ValueError):
    """A roster, or a change to it, that cannot be used; the message says why."""


@dataclass(frozen=True)
class Person:
    """Someone who may log in at the station."""

    id: str
    name: str
    roles: tuple[Role, ...]
    badges: tuple[str, ...]
    pin: str  # the argon2id hash

    @property
    def floor(self) -> bool:
        """Whether the person holds the floor role (may finish another dealer's hand)."""
        return Role.FLOOR in self.roles


@dataclass(frozen=True)
class Roster:
    """Every person of the roster, by id."""

    persons: Mapping[str, Person] = field(default_factory=dict)

    def by_badge(self, uid: str) -> Person | None:
        """The person whose badge ``uid`` is (None: nobody's, or not a UID)."""
        try:
            uid = normalize_uid(uid)
        except UidError:
            return None
        return next((p for p in self.persons.values() if uid in p.badges), None)

    def named(self, text: str) -> Person | None:
        """The person a "Dealer" field names: their id, or one of their badges."""
        return self.persons.get(text.strip()) or self.by_badge(text)

    def with_person(self, person: Person) -> Roster:
        """The roster with ``person`` added (or replacing the entry of the same id)."""
        for other in self.persons.values():
            if other.id == person.id:
                continue
            shared = sorted(set(other.badges) & set(person.badges))
            if shared:
                raise RosterError(f"badge {shared[0]} is {other.id}'s already")
        return Roster({**self.persons, person.id: person})

    def without(self, person_id: str) -> Roster:
        """The roster without ``person_id`` (RosterError: no such person)."""
        if person_id not in self.persons:
            raise RosterError(f"no person {person_id!r} in the roster")
        return Roster({k: v for k, v in self.persons.items() if k != person_id})


def new_person(person_id: str, name: str, roles: list[str], badges: list[str], pin: str) -> Person:
    """A person from what ``person add`` was given (RosterError: what is wrong with it)."""
    if not PERSON_ID.fullmatch(person_id):
        raise RosterError(f"{person_id!r}: an id is letters, digits and . _ @ -, at most 64")
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise RosterError(f"--name: 1 to {MAX_NAME} characters")
    held = _roles(roles)
    uids = _badges(badges)
    if not pin:
        raise RosterError("the PIN is empty: give 4 to 12 digits on standard input")
    if not PIN.fullmatch(pin):
        raise RosterError("a PIN is 4 to 12 digits (0-9), nothing else")
    return Person(person_id, name, held, uids, hash_secret(pin))


def _roles(roles: list[str]) -> tuple[Role, ...]:
    allowed = ", ".join(sorted(STATION_ROLES))
    held = []
    for role in roles or [Role.DEALER.value]:
        try:
            held.append(Role(role))
        except ValueError:
            raise RosterError(f"--role {role!r}: one of {allowed}") from None
        if held[-1] not in STATION_ROLES:
            raise RosterError(f"--role {role}: the station is for {allowed}")
    return tuple(dict.fromkeys(held))


def _badges(badges: list[str]) -> tuple[str, ...]:
    cards = known_decks()
    uids: list[str] = []
    for badge in badges:
        try:
            uid = normalize_uid(badge)
        except UidError as exc:
            raise RosterError(f"--badge: {exc}") from None
        if uid in cards:
            deck, card = cards[uid]
            raise RosterError(f"--badge {uid} is the card {card} of deck {deck}, not a badge")
        if uid in uids:
            raise RosterError(f"--badge {uid} is given twice")
        uids.append(uid)
    return tuple(uids)


# ------------------------------------------------------------------ the file


def load_roster(path: Path) -> Roster:
    """The roster in ``path`` (an absent file is an empty roster; RosterError: a bad one)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Roster()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RosterError(f"{path}: {exc}") from None
    persons = data.pop("persons", {})
    if data:
        raise RosterError(f"{path}: only [persons.ID] tables, not {', '.join(sorted(data))}")
    if not isinstance(persons, dict):
        raise RosterError(f"{path}: persons: a table of persons")
    roster = Roster()
    for person_id, entry in persons.items():
        try:
            person = _read(person_id, entry)
            roster = roster.with_person(person)
        except RosterError as exc:
            raise RosterError(f"{path}: persons.{person_id}: {exc}") from None
    return roster


def _read(person_id: str, entry: object) -> Person:
    if not isinstance(entry, dict):
        raise RosterError("a table with name, roles, badges and pin")
    extra = sorted(set(entry) - {"name", "roles", "badges", "pin"})
    if extra:
        raise RosterError(f"unknown keys {', '.join(extra)}")
    if not PERSON_ID.fullmatch(person_id):
        raise RosterError("an id is letters, digits and . _ @ -, at most 64")
    name, roles, badges, pin = (entry.get(k) for k in ("name", "roles", "badges", "pin"))
    if not isinstance(name, str) or not name.strip():
        raise RosterError("name: a non-empty string")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles) or not roles:
        raise RosterError("roles: a list of roles")
    if not isinstance(badges, list) or not all(isinstance(b, str) for b in badges):
        raise RosterError("badges: a list of tag UIDs")
    if not isinstance(pin, str) or not pin.startswith("$argon2"):
        raise RosterError("pin: an argon2 hash (tablectl station person add --pin-stdin)")
    return Person(person_id, name, _roles(roles), _badges(badges), pin)


def roster_text(roster: Roster) -> str:
    """The roster as its file says it."""
    lines = [
        "# The people who may log in at the dealer's station (docs/station.md).",
        "# Written by `tablectl station person add|remove`; PINs are argon2id hashes.",
    ]
    for person in sorted(roster.persons.values(), key=lambda p: p.id):
        lines += [
            "",
            f"[persons.{_quoted(person.id)}]",
            f"name = {_quoted(person.name)}",
            f"roles = [{', '.join(_quoted(r.value) for r in person.roles)}]",
            f"badges = [{', '.join(_quoted(b) for b in person.badges)}]",
            f"pin = {_quoted(person.pin)}",
        ]
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    """A TOML basic string (the escapes TOML shares with JSON: backslash, quote, controls)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return (
        '"' + "".join(c if c >= " " and c != "\x7f" else f"\\u{ord(c):04x}" for c in escaped) + '"'
    )


def save_roster(roster: Roster, path: Path) -> None:
    """Write ``roster`` to ``path`` at once: a new file, owner-only, renamed over the old one."""
    text = roster_text(roster)
    fd, temporary = tempfile.mkstemp(prefix=".roster-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
