"""``tablectl station``: ``run`` the dealer's station; ``person add``, ``person list`` and ``person
remove`` the people who log in to it (the roster, controller/station/roster.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.authority import Role
from controller.config import ConfigError, TableConfig, load_config
from controller.shell.cli import (
    CONFIG_DEFAULT,
    add_verb,
    add_verb_group,
    config_path,
    person_block,
    serve,
)


def add_parsers(subparsers: Any) -> None:
    """Register ``tablectl station``."""
    verbs = add_verb_group(
        subparsers,
        "station",
        "run|person",
        help="the dealer's station: a touchscreen app beside the table",
        description="The dealer's station on the table PC: a local web app for the table's "
        "touchscreen that logs dealers in and sends their commands to the daemon over its "
        "console socket, signed on their behalf (docs/station.md).",
    )
    run = add_verb(
        verbs,
        "run",
        run_command,
        help="serve the station's web app",
        description="Serve the station's web app on [station] listen (loopback by default) and "
        "follow the table over the daemon's console socket. Needs the table's config with "
        "[daemon] console (or [station] console) and the station's signing key. Exit status 2: "
        "the config, the key or the roster cannot be used.",
    )
    person_verbs = add_verb_group(
        verbs,
        "person",
        "add|list|remove",
        help="the people who log in to the station",
        description="The roster: the people who may log in at the station, with their badges "
        "and PINs (stored as argon2id hashes), beside the keyring unless [station] roster says.",
    )
    add = add_verb(
        person_verbs,
        "add",
        person_add,
        help="add a person (again: change their name, badges, roles and PIN)",
        description="Add a person to the roster, or replace their entry: a name, the badges "
        "they log in with and the PIN read from standard input (4 to 12 digits). Then says what "
        "the table's keyring still needs for the station to sign for them.",
    )
    add.add_argument("id", help="the person's id: what the events' by names")
    add.add_argument("--name", required=True, help="the person's name, as the station shows it")
    add.add_argument(
        "--badge",
        action="append",
        default=[],
        metavar="UID",
        help="a badge's tag UID (repeat for several)",
    )
    add.add_argument(
        "--role",
        action="append",
        default=None,
        choices=[Role.DEALER.value, Role.FLOOR.value],
        help="a role at the station: dealer (the default) or floor (repeat for both)",
    )
    add.add_argument("--pin-stdin", action="store_true", required=True, help="read the PIN here")
    listing = add_verb(
        person_verbs,
        "list",
        person_list,
        help="the roster, one person a line",
        description="List the roster, one person a line: id, name, roles and badges.",
    )
    listing.add_argument(
        "--json", action="store_true", help="one JSON object a line instead of text"
    )
    remove = add_verb(
        person_verbs,
        "remove",
        person_remove,
        help="remove a person from the roster",
        description="Remove a person from the roster: they can no longer log in (a session of "
        "theirs open at the station goes on until they log out or it is idle).",
    )
    remove.add_argument("id", help="the person's id")
    for command in (run, add, listing, remove):
        command.add_argument(
            "--config",
            type=Path,
            default=None,
            help=f"the table's config file ([station]; default {CONFIG_DEFAULT})",
        )


def _config(args: argparse.Namespace, verb: str) -> TableConfig | None:
    try:
        return load_config(config_path(args.config))
    except ConfigError as exc:
        print(f"tablectl station {verb}: {exc}", file=sys.stderr)
        return None


def run_command(args: argparse.Namespace) -> int:
    """``tablectl station run``."""
    from controller.station.service import run_station  # noqa: PLC0415

    config = _config(args, "run")
    if config is None:
        return 2
    return serve("station run", config.log, run_station(config), lambda _: None, 2)


def person_add(args: argparse.Namespace) -> int:
    """``tablectl station person add ID --name NAME --badge UID --pin-stdin``."""
    from controller.station.roster import (  # noqa: PLC0415
        RosterError,
        load_roster,
        new_person,
        save_roster,
    )
    from controller.station.settings import (  # noqa: PLC0415
        StationSetupError,
        keyring_problems,
        roster_path,
        station_settings,
    )

    config = _config(args, "person add")
    if config is None:
        return 2
    pin = sys.stdin.readline().rstrip("\r\n")
    try:
        path = roster_path(config)
        person = new_person(args.id, args.name, args.role or [], args.badge, pin)
        roster = load_roster(path).with_person(person)
        save_roster(roster, path)
    except (RosterError, StationSetupError, OSError) as exc:
        print(f"tablectl station person add: {exc}", file=sys.stderr)
        return 2
    roles = ", ".join(r.value for r in person.roles)
    badges = len(person.badges)
    print(f"{person.id}: {person.name} ({roles}), {badges} badge{'s' if badges != 1 else ''}")
    try:
        settings = station_settings(config)
    except StationSetupError as exc:
        print(f"# the station cannot run yet: {exc}")
        return 0
    problems = keyring_problems(settings, person.id, person.roles)
    if problems:
        print(f"# the keyring ({config.security.keyring}) still needs: " + "; ".join(problems))
        print(f'# add "{person.id}" to acts_for of [keys.{settings.key_id}], and:')
        print(person_block(person.id, {"roles": [r.value for r in person.roles]}), end="")
    return 0


def person_list(args: argparse.Namespace) -> int:
    """``tablectl station person list``."""
    from controller.station.roster import RosterError, load_roster  # noqa: PLC0415
    from controller.station.settings import StationSetupError, roster_path  # noqa: PLC0415

    config = _config(args, "person list")
    if config is None:
        return 2
    try:
        roster = load_roster(roster_path(config))
    except (RosterError, StationSetupError) as exc:
        print(f"tablectl station person list: {exc}", file=sys.stderr)
        return 2
    for person in sorted(roster.persons.values(), key=lambda p: p.id):
        roles = [r.value for r in person.roles]
        if args.json:
            entry = {"id": person.id, "name": person.name, "roles": roles, "badges": person.badges}
            print(json.dumps(entry))
        else:
            print(f"{person.id}\t{person.name}\t{','.join(roles)}\t{' '.join(person.badges)}")
    return 0


def person_remove(args: argparse.Namespace) -> int:
    """``tablectl station person remove ID``."""
    from controller.station.roster import RosterError, load_roster, save_roster  # noqa: PLC0415
    from controller.station.settings import StationSetupError, roster_path  # noqa: PLC0415

    config = _config(args, "person remove")
    if config is None:
        return 2
    try:
        path = roster_path(config)
        save_roster(load_roster(path).without(args.id), path)
    except (RosterError, StationSetupError, OSError) as exc:
        print(f"tablectl station person remove: {exc}", file=sys.stderr)
        return 2
    print(f"{args.id}: removed")
    return 0
