"""The station's settings as the table config gives them, with the defaults filled in and checked
against the table's keyring: every problem named in one line, before anything listens.

* the console socket: ``[station] console``, else the daemon's ``[daemon] console``;
* the roster: ``[station] roster``, else ``roster.toml`` beside the keyring;
* the station's key: ``[station] key``, else ``station.key`` beside the keyring; its id is
  ``[station] key_id``, else the file's name. The keyring must know that id for this table, with
  the same public key and the dealer (or floor) role: the station signs every request with it
  on behalf of the dealer logged in (``acts_for``, docs/security.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.authority import Role
from controller.config import StationSection, TableConfig
from controller.keyring import Keyring, KeyringError
from controller.signing import SigningError, load_private_key, public_text


class StationSetupError(ValueError):
    """The station cannot run with this config; the message says what to do."""


@dataclass(frozen=True)
class StationSettings:
    """Everything the station needs, resolved."""

    table: str
    section: StationSection
    console: Path
    roster: Path
    key_path: Path
    key_id: str
    private: Ed25519PrivateKey
    keyring: Keyring | None


def roster_path(config: TableConfig) -> Path:
    """Where the roster is (StationSetupError: nowhere said)."""
    station = config.station
    if station.roster is not None:
        return station.roster
    if config.security.keyring is None:
        raise StationSetupError(
            "station.roster: give the roster's path (there is no keyring to put it beside)"
        )
    return config.security.keyring.parent / "roster.toml"


def station_settings(config: TableConfig) -> StationSettings:
    """The station's settings of ``config`` (StationSetupError: why it cannot run)."""
    station = config.station
    console = station.console or config.daemon.console
    if console is None:
        raise StationSetupError(
            "station.console: no console socket: set [daemon] console (the daemon listens "
            "there) or [station] console"
        )
    keyring_path = config.security.keyring
    key_path = station.key
    if key_path is None:
        if keyring_path is None:
            raise StationSetupError("station.key: give the station's private key file")
        key_path = keyring_path.parent / "station.key"
    try:
        private = load_private_key(key_path)
    except SigningError as exc:
        raise StationSetupError(
            f"station.key: {exc} (tablectl keys new station --role dealer --acts-for …)"
        ) from None
    key_id = station.key_id or key_path.stem
    try:
        keyring = config.security.load_keyring()
    except KeyringError as exc:
        raise StationSetupError(f"security.keyring: {exc}") from None
    if keyring is not None:
        _check_key(keyring, key_id, public_text(private.public_key()), config.table.id)
    return StationSettings(
        config.table.id,
        station,
        console,
        roster_path(config),
        key_path,
        key_id,
        private,
        keyring,
    )


def _check_key(keyring: Keyring, key_id: str, public: str, table: str) -> None:
    entry = keyring.keys.get(key_id)
    if entry is None:
        raise StationSetupError(
            f"station.key: the keyring has no key {key_id!r}: add the block "
            "`tablectl keys new` printed for it"
        )
    if entry.public_key != public:
        raise StationSetupError(f"station.key: not the key the keyring names {key_id!r}")
    if entry.revoked:
        raise StationSetupError(f"station.key: {key_id!r} is revoked in the keyring")
    if not entry.serves(table):
        raise StationSetupError(f"station.key: {key_id!r} is not for table {table}")
    if not {Role.DEALER, Role.FLOOR} & set(entry.roles):
        raise StationSetupError(
            f"station.key: {key_id!r} has neither the dealer nor the floor role"
        )


def keyring_problems(settings: StationSettings, person: str, roles: tuple[Role, ...]) -> list[str]:
    """What the table's keyring lacks for the station to sign for ``person`` (empty: nothing)."""
    keyring = settings.keyring
    if keyring is None:
        return []
    problems = []
    entry = keyring.keys.get(settings.key_id)
    if entry is not None and not entry.may_act_for(person):
        problems.append(f"the station's key {settings.key_id!r} may not act for {person!r}")
    held = keyring.roles_of(person)
    missing = [r.value for r in roles if r not in held]
    if missing:
        problems.append(f"the keyring gives {person!r} no {', '.join(missing)} role")
    return problems
