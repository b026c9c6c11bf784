"""The rig's keys: its dealer, floor, surveillance, pit and technician each sign what they send.

A rig's tables require signed requests, as a casino's do. The rig makes one key pair per role at
start (:func:`RigKeys.create`), writes the keyring its tables' daemons read, and signs each
request with the key of the role that gives that command at a real table: a ruling on a hold is
the floor's, a hold raised by surveillance is surveillance's, accepting the journal after an
integrity alarm maintenance's, everything else the dealer's (a dealer's misdeal after the cutoff
is refused, as it is at the table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.authority import Role
from controller.shell.cli import keyring_entry
from controller.signing import Signer, new_key, save_private_key

#: Who signs which command at the rig's tables (the rest: the dealer).
SIGNED_BY = {
    "confirm": Role.FLOOR,
    "reject": Role.FLOOR,
    "floor_override": Role.FLOOR,
    "hold": Role.SURVEILLANCE,
    "journal_accept": Role.MAINTENANCE,
    "stored": Role.PIT,
}
PERSONS = {
    Role.DEALER: "rig dealer",
    Role.FLOOR: "rig floor supervisor",
    Role.SURVEILLANCE: "rig surveillance",
    Role.PIT: "rig pit",
    Role.MAINTENANCE: "rig technician",
}


@dataclass(frozen=True)
class RigKeys:
    """The rig's private keys by role, and the keyring of their public halves."""

    directory: Path
    signers: Mapping[Role, Signer]

    @property
    def keyring(self) -> Path:
        """The keyring file the rig's tables trust."""
        return self.directory / "keyring.toml"

    @classmethod
    def create(cls, directory: Path) -> RigKeys:
        """A key per role in ``directory`` and the keyring that names them."""
        directory.mkdir(parents=True, exist_ok=True)
        blocks = []
        signers = {}
        for role, person in PERSONS.items():
            key_id = f"rig-{role.value}"
            private, public = new_key()
            path = directory / f"{key_id}.key"
            path.unlink(missing_ok=True)
            save_private_key(private, path)
            entry = {"person": person, "roles": [role.value], "public_key": public}
            blocks.append(keyring_entry(key_id, entry))
            signers[role] = Signer(private, key_id, "")
        (directory / "keyring.toml").write_text("\n".join(blocks))
        return cls(directory, signers)

    def sign(self, table: str, command: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` signed by the role that gives ``command`` at table ``table``."""
        signer = self.signers[SIGNED_BY.get(command, Role.DEALER)]
        return Signer(signer.private, signer.key_id, table).sign(command, body)

    def key_file(self, role: Role) -> Path:
        """The private key file of ``role`` (for ``tablectl dealer --key``)."""
        return self.directory / f"rig-{role.value}.key"
