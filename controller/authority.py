"""Who may do what at the table: the roles and the one table of the commands each may give.

docs/security.md. A request is signed by a key of the table's keyring (``controller/keyring.py``);
the key names a person and the roles that person holds. The shell picks, among those roles, the
first this table lists for the command and refuses the request when there is none. What depends
on the hand (a dealer confirming only the holds the house lets dealers confirm, a misdeal after
the cutoff) is decided by the core, which gets the :class:`Authority` with the command.

The same table covers the commands that are not table requests (deck enrollment and device
approval are the maintenance role's, on the table PC's command line) so that ``docs/security.md``
and this module cannot disagree: ``tests/core/test_authority.py`` checks the doc against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    """What a person (or a console acting for one) is trusted with."""

    DEALER = "dealer"  # the hand's flow
    FLOOR = "floor"  # rulings: holds, overrides, a misdeal after the cutoff, a deck's service
    SURVEILLANCE = "surveillance"  # reads the secure stream; may raise a hold
    PIT = "pit"  # reads the public stream; asks a table to replay its journal; confirms storing
    MAINTENANCE = "maintenance"  # deck enrollment, device approval, the journal after an alarm


_DEALER_AND_FLOOR = (Role.DEALER, Role.FLOOR)

#: Each command and the roles that may give it, in the order a role is chosen for a person who
#: holds several (the least powerful that may). Table requests are ``COMMANDS`` of the core.
COMMAND_ROLES: dict[str, tuple[Role, ...]] = {
    # the hand's flow
    "start_hand": _DEALER_AND_FLOOR,
    "post": _DEALER_AND_FLOOR,
    "run_it_twice": _DEALER_AND_FLOOR,
    "action": _DEALER_AND_FLOOR,
    "round_closed": _DEALER_AND_FLOOR,
    "correction": _DEALER_AND_FLOOR,
    "exposed": _DEALER_AND_FLOOR,
    "boxed": _DEALER_AND_FLOOR,
    "off_table": _DEALER_AND_FLOOR,
    "table": _DEALER_AND_FLOOR,
    "muck": _DEALER_AND_FLOOR,
    "plays_board": _DEALER_AND_FLOOR,
    "concede": _DEALER_AND_FLOOR,
    "request_to_see": _DEALER_AND_FLOOR,
    "claim": _DEALER_AND_FLOOR,
    "award": _DEALER_AND_FLOOR,
    "button": _DEALER_AND_FLOOR,
    "stub_disorder": _DEALER_AND_FLOOR,
    # a dealer may call a misdeal before the cutoff; after it only the floor (the core decides)
    "misdeal": _DEALER_AND_FLOOR,
    # rulings: the floor's; a dealer only for the holds the house names (dealer_may_confirm)
    "confirm": (Role.FLOOR, Role.DEALER),
    "reject": (Role.FLOOR, Role.DEALER),
    "floor_override": (Role.FLOOR,),
    # the dealer calls the floor to the table: the hand held for the floor (FLOOR-CALL), an
    # alert on the pit's console; no ruling
    "call_floor": _DEALER_AND_FLOOR,
    # surveillance raises a hold for the floor to rule on
    "hold": (Role.SURVEILLANCE, Role.FLOOR),
    # the pit repairs gaps in what it received from the table's journal
    "replay": (Role.PIT,),
    # the pit confirms what it stored, so the table may prune its archive (docs/mqtt.md)
    "stored": (Role.PIT,),
    # after an integrity alarm, maintenance accepts the journal as it is (docs/operations.md)
    "journal_accept": (Role.MAINTENANCE,),
    # on the table PC's command line, not table requests
    "deck_enroll": (Role.MAINTENANCE,),
    "device_approve": (Role.MAINTENANCE,),
}

#: Commands a dealer gives only under a condition the core checks with the hand in front of it.
CONDITIONAL: dict[str, str] = {
    "confirm": "a dealer confirms only the holds of rules in dealer_may_confirm",
    "reject": "a dealer rejects only the holds of rules in dealer_may_confirm",
    "misdeal": "after the misdeal cutoff only the floor calls a misdeal",
}


@dataclass(frozen=True, slots=True)
class Authority:
    """Who gave a command: the person, the role they gave it in, and the key that signed it.

    ``key`` is None for an unsigned request (accepted only with ``require_signed = false``);
    ``via`` names the console key that signed for the person (``on_behalf_of``).
    """

    person: str
    role: Role
    key: str | None = None
    via: str | None = None

    def attribution(self) -> dict[str, str]:
        """``by`` in the event envelope: who, and in which role."""
        return {"person": self.person, "role": self.role.value}


def role_for(command: str, roles: Iterable[Role]) -> Role | None:
    """The role a person holding ``roles`` gives ``command`` in, or None: not theirs to give."""
    held = set(roles)
    return next((role for role in COMMAND_ROLES.get(command, ()) if role in held), None)
