"""What a site makes once and hands to its tables: ``keys new``, a signing key and its keyring
block; ``broker setup``, the mosquitto broker's users, ACL, config and TLS files."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import Any

from controller.authority import Role
from controller.shell.cli import (
    add_role_option,
    add_verb,
    add_verb_group,
    keyring_entry,
    person_block,
)


def add_parsers(subparsers: Any) -> None:
    """Register ``keys`` and ``broker``."""
    keys_verbs = add_verb_group(
        subparsers,
        "keys",
        "new",
        help="make a key pair for a person or a console",
        description="Make the signing keys of the people and consoles who send requests to "
        "the tables (docs/security.md).",
    )
    new = add_verb(
        keys_verbs,
        "new",
        keys_new,
        help="write NAME.key (private) and print the keyring entry of its public key",
        description="Write a new Ed25519 private key to OUT/NAME.key (never overwritten) and "
        "print the block every table's keyring needs for it: its [keys.NAME] entry and, for "
        "the people a console signs for (--acts-for PERSON=ROLE), their [persons] entries. "
        "A pit key (--role pit) also gets the floor role, for the rulings the pit's console "
        "relays, and acts for anyone unless --acts-for names its people.",
    )
    new.add_argument("name", help="the key id (letters, digits, . _ -)")
    add_role_option(new, "a role the key's holder has (repeat for several)")
    new.add_argument("--person", default=None, help="whose key it is (default: the name)")
    new.add_argument(
        "--table", action="append", default=None, help="a table id it serves (repeat; default: all)"
    )
    new.add_argument("--valid-until", default=None, help="expiry, RFC 3339 (none)")
    new.add_argument(
        "--acts-for",
        action="append",
        default=None,
        metavar="PERSON[=ROLE,…]",
        help="a person the key may sign for, as a console (repeat; * for anyone); with =ROLE,… "
        'also their [persons."PERSON"] entry, the roles the tables give them',
    )
    new.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where NAME.key goes (a directory; default: .)",
    )

    broker_verbs = add_verb_group(
        subparsers,
        "broker",
        "setup",
        help="the pit broker's users, passwords and ACL",
        description="Set up the mosquitto broker the tables and the pit share.",
    )
    setup = add_verb(
        broker_verbs,
        "setup",
        broker_setup,
        help="write mosquitto's passwd, acl and mosquitto.conf from a users file",
        description="Write mosquitto's password file, ACL, config and (unless --no-tls) its "
        "TLS files into the --out directory, from a users file that names who connects and "
        "with which roles. The site's CA, certificate and key are used when given, else a CA "
        "of its own is made (and kept: a second run reuses it).",
    )
    setup.add_argument("users", type=Path, help="users file (config/mosquitto/users.example.toml)")
    setup.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="where the files go (a directory)"
    )
    setup.add_argument(
        "--listener",
        default="1883 127.0.0.1",
        help="the plain TCP listener, 'port address', on loopback only (1883 127.0.0.1)",
    )
    setup.add_argument(
        "--tls-listener", default="8883", help="the TLS listener, 'port [address]' (8883)"
    )
    setup.add_argument(
        "--hostname",
        action="append",
        default=None,
        help="a name or address clients use for the broker, in its certificate (repeat; "
        "default: this machine's name, localhost, 127.0.0.1)",
    )
    setup.add_argument("--ca-file", type=Path, default=None, help="TLS: the site's CA (PEM)")
    setup.add_argument(
        "--cert-file", type=Path, default=None, help="TLS: the site's certificate for the broker"
    )
    setup.add_argument("--key-file", type=Path, default=None, help="TLS: its key (PEM)")
    setup.add_argument(
        "--renew-server-cert",
        action="store_true",
        help="a new key and certificate for the broker, from the same CA",
    )
    setup.add_argument(
        "--renew-ca",
        action="store_true",
        help="a new CA (the old one stays in ca.crt until every client trusts the new one)",
    )
    setup.add_argument(
        "--no-tls",
        action="store_true",
        help="no TLS listener: a broker for this machine's own clients only",
    )
    setup.add_argument(
        "--run-as",
        default=None,
        help="the user mosquitto runs as when started as root, who is given the files it reads "
        "(default, as root: mosquitto)",
    )


def keys_new(args: argparse.Namespace) -> int:
    """``tablectl keys new NAME --role ROLE…``: the private key file and the keyring block."""
    from controller.keyring import KeyringError, parse_keyring  # noqa: PLC0415
    from controller.signing import new_key, save_private_key  # noqa: PLC0415

    roles = set(args.role)
    if Role.PIT.value in roles:
        # The pit's console relays the floor's rulings with the pit's key, and a request
        # signed for a person gets the roles both hold: without floor nobody could rule there.
        roles.add(Role.FLOOR.value)
    try:
        acts_for, persons = _acts_for(args.acts_for or [])
    except ValueError as exc:
        print(f"tablectl keys new: --acts-for {exc}", file=sys.stderr)
        return 2
    if not acts_for and Role.PIT.value in roles:
        acts_for = ["*"]  # whoever logs in to the pit's console; their roles are the tables'
    entry: dict[str, Any] = {
        "person": args.person or args.name,
        "roles": sorted(roles),
        "tables": args.table or ["*"],
        "public_key": "A" * 43 + "=",  # checked with the real key below
    }
    if args.valid_until:
        entry["valid_until"] = args.valid_until
    if acts_for:
        entry["acts_for"] = acts_for
    try:
        parse_keyring({"keys": {args.name: entry}, "persons": persons}, "the new key")
    except KeyringError as exc:
        print(f"tablectl keys new: {exc}", file=sys.stderr)
        return 2
    path = args.out / f"{args.name}.key"
    private, public = new_key()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        save_private_key(private, path)
    except FileExistsError:
        print(f"tablectl keys new: {path} exists; not overwritten", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"tablectl keys new: {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    entry["public_key"] = public
    print(f"# private key: {path} (keep it on the console; never in the keyring)")
    print("# for every table's keyring:")
    print(keyring_entry(args.name, entry), end="")
    for person, person_entry in persons.items():
        print()
        print(person_block(person, person_entry), end="")
    if acts_for and not persons:
        # Said because a console's request gets only the roles its person holds too: people
        # the keyring does not know can do nothing through it.
        print("# the people it signs for need roles at every table: keys of their own, or a")
        print('# [persons."NAME"] entry each (tablectl keys new … --acts-for NAME=ROLE prints it)')
    return 0


def _acts_for(items: list[str]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """``--acts-for PERSON[=ROLE,…]``: the people a console signs for, and the ``[persons]``
    entries of those given roles (ValueError naming the bad one)."""
    known = {r.value for r in Role}
    people: list[str] = []
    persons: dict[str, dict[str, Any]] = {}
    for item in items:
        # the roles follow the last "=": a name may have one of its own (PERSON=X=floor)
        person, sep, listed = item.rpartition("=") if "=" in item else (item, "", "")
        person = person.strip()
        if not person:
            raise ValueError(f"{item!r}: give PERSON or PERSON=ROLE,…")
        if person not in people:
            people.append(person)
        if not sep:
            continue
        if person == "*":
            raise ValueError(f"{item!r}: * is anyone, who has no [persons] entry of their own")
        roles = {r.strip() for r in listed.split(",") if r.strip()}
        unknown = sorted(roles - known)
        if unknown or not roles:
            choices = ", ".join(sorted(known))
            raise ValueError(f"{item!r}: the roles are {choices}")
        held = persons.setdefault(person, {"roles": []})
        held["roles"] = sorted(set(held["roles"]) | roles)
    return (["*"] if "*" in people else people), persons


def broker_setup(args: argparse.Namespace) -> int:
    """``tablectl broker setup USERS --out DIR``."""
    from controller.broker_setup import (  # noqa: PLC0415
        BrokerSetupError,
        load_users,
        mosquitto_user,
        write_setup,
    )
    from controller.broker_tls import (  # noqa: PLC0415
        TlsSetupError,
        certificate_names,
        ensure_tls,
        site_tls,
    )

    site = (args.ca_file, args.cert_file, args.key_file)
    try:
        users = load_users(args.users)
        tls = None
        if args.no_tls:
            if any(site) or args.renew_ca or args.renew_server_cert:
                raise BrokerSetupError("--no-tls takes no TLS files or renewals")
        elif any(site):
            if not all(site):
                raise BrokerSetupError("the site's TLS: give --ca-file, --cert-file and --key-file")
            tls = site_tls(args.ca_file, args.cert_file, args.key_file)
        else:
            names = args.hostname or [socket.getfqdn(), "localhost", "127.0.0.1"]
            tls = ensure_tls(
                args.out / "tls",
                names,
                renew_server=args.renew_server_cert,
                renew_ca=args.renew_ca,
            )
        written = write_setup(
            users,
            args.out,
            listener=args.listener,
            tls_listener=None if args.no_tls else args.tls_listener,
            tls=tls,
            run_as=args.run_as or mosquitto_user(),
        )
    except (BrokerSetupError, TlsSetupError) as exc:
        print(f"tablectl broker setup: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"tablectl broker setup: {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print(f"{args.out / 'passwords'}/USER: each user's password (0600)")
    if tls is not None:
        print(f"{tls.ca_file}: the CA clients trust ([broker.tls] ca_file)")
        names = ", ".join(certificate_names(tls.cert_file))
        print(f"{tls.cert_file}: the broker's certificate, for {names}")
    return 0
