"""``tablectl pit``: ``run`` the pit service; ``user add``, ``user list`` and ``user remove``
the people who log in to it; ``archive run``, ``list`` and ``restore`` its older months
(:mod:`controller.pit.archive_cli`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from controller.config import ConfigError
from controller.pit.config import CONFIG_ENV
from controller.shell.cli import add_role_option, add_verb, add_verb_group, config_path, serve

if TYPE_CHECKING:
    from controller.pit.store import Store


def add_parsers(subparsers: Any) -> None:
    """Register ``tablectl pit``."""
    verbs = add_verb_group(
        subparsers, "pit", "run|user|archive", help="the pit service: ingest, store, repair, API"
    )
    run = add_verb(
        verbs,
        "run",
        run_command,
        help="run one pit process",
        description="Run one pit process: take every table's events from the broker and store "
        "each once, have the tables replay what never arrived, and serve the JSON API, the "
        "metrics and the web console. Needs the pit's config (--config, else "
        f"${CONFIG_ENV}, else /etc/tablectl/pit.toml). Exit status 2: the config or the "
        "store cannot be used.",
    )
    run.add_argument("--config", type=Path, default=None, help="pit config file")
    user_verbs = add_verb_group(
        verbs, "user", "add|list|remove", help="people who log in to the pit"
    )
    add = add_verb(
        user_verbs, "add", user_add, help="add a user (or change its password and roles)"
    )
    add.add_argument("name")
    add_role_option(add, "a role (repeat for several)")
    add.add_argument(
        "--password-stdin", action="store_true", required=True, help="read the password here"
    )
    listing = add_verb(
        user_verbs,
        "list",
        user_list,
        help="the users, one a line",
        description="List the people who log in to the pit, one a line: name, roles, when the "
        "user was made, when their password was last accepted, how many sessions they have "
        "open and the client addresses locked out of their password now.",
    )
    listing.add_argument(
        "--json", action="store_true", help="one JSON object a line instead of text"
    )
    remove = add_verb(
        user_verbs,
        "remove",
        user_remove,
        help="remove a user and end their sessions",
        description="Remove a user from the pit's store and end every session of theirs at "
        "once: an open console page of theirs is sent to the login page on its next request "
        "and their live updates stop; their HTTP Basic credentials are refused from then on.",
    )
    remove.add_argument("name", help="the user's name, as they log in")
    for on_store in (add, listing, remove):
        on_store.add_argument(
            "--config", type=Path, default=None, help="pit config file (its store)"
        )
    from controller.pit import archive_cli  # noqa: PLC0415 (its verbs, after the user's)

    archive_cli.add_parsers(verbs)


def _config_path(path: Path | None) -> Path:
    from controller.pit.config import DEFAULT_PIT_CONFIG  # noqa: PLC0415

    return config_path(path, CONFIG_ENV, DEFAULT_PIT_CONFIG)


def run_command(args: argparse.Namespace) -> int:
    """``tablectl pit run``."""
    from controller.config_check import broker_problems  # noqa: PLC0415
    from controller.pit.config import load_pit_config  # noqa: PLC0415
    from controller.pit.db import StoreError  # noqa: PLC0415
    from controller.pit.service import run_pit  # noqa: PLC0415

    path = _config_path(args.config)
    try:
        config = load_pit_config(path)
        problems = broker_problems(config.broker)
        if problems:  # a password file missing, plain TCP across the network…
            raise ConfigError(str(path), problems)
    except ConfigError as exc:
        print(f"tablectl pit run: {exc}", file=sys.stderr)
        return 2
    return serve(
        "pit run",
        config.log,
        run_pit(config),
        lambda exc: f"the store: {exc}" if isinstance(exc, StoreError) else None,
        2,
    )


def user_add(args: argparse.Namespace) -> int:
    """``tablectl pit user add NAME --role ROLE… --password-stdin``."""
    from controller.pit.config import load_pit_config  # noqa: PLC0415
    from controller.pit.db import StoreError  # noqa: PLC0415
    from controller.pit.store import Store  # noqa: PLC0415
    from controller.pit.users import UserError, add_user  # noqa: PLC0415

    try:
        config = load_pit_config(_config_path(args.config))
    except ConfigError as exc:
        print(f"tablectl pit user add: {exc}", file=sys.stderr)
        return 2
    password = sys.stdin.readline().rstrip("\r\n")
    try:
        store = Store(config.store.url)
        try:
            store.migrate()
            add_user(store, args.name, sorted(set(args.role)), password)
        finally:
            store.close()
    except (UserError, StoreError) as exc:
        print(f"tablectl pit user add: {exc}", file=sys.stderr)
        return 2
    print(f"user {args.name}: {', '.join(sorted(set(args.role)))}")
    return 0


def _existing_store(verb: str, path: Path | None) -> Store | int:
    """The store of the config at ``path``, migrated, for a command that reads or removes
    users: never created (a SQLite file that is not there, or a database without the pit's
    schema, is a mistake in the config, not a store to make). An int: the exit status, once
    the reason is printed."""
    from controller.pit.config import load_pit_config  # noqa: PLC0415
    from controller.pit.db import StoreError, dialect_of, sqlite_path, transient  # noqa: PLC0415
    from controller.pit.store import Store  # noqa: PLC0415

    try:
        config = load_pit_config(_config_path(path))
    except ConfigError as exc:
        print(f"tablectl pit user {verb}: {exc}", file=sys.stderr)
        return 2
    url = config.store.url
    if dialect_of(url) == "sqlite" and not sqlite_path(url).exists():
        print(f"tablectl pit user {verb}: no store at {sqlite_path(url)}", file=sys.stderr)
        return 2
    try:
        store = Store(url)
    except StoreError as exc:
        print(f"tablectl pit user {verb}: the store: {exc}", file=sys.stderr)
        return 2
    try:
        if store.schema_version() == 0:
            raise StoreError("it holds no pit schema (tablectl pit user add or pit run makes it)")
        store.migrate()  # as add and run do: an older schema gains what this code reads
    except Exception as exc:
        store.close()
        if not transient(exc):
            raise
        print(f"tablectl pit user {verb}: the store: {exc}", file=sys.stderr)
        return 2
    return store


def _utc(stamp: float) -> str:
    """A Unix time as RFC 3339 UTC, to the second."""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


T = TypeVar("T")


class _StoreUnusableError(Exception):
    """The store could not be used; the line saying why was printed."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _in_store(verb: str, path: Path | None, call: Callable[[Store], T]) -> T:
    """``call`` on the pit's existing store, closed after. :class:`_StoreUnusableError`
    (exit status 2, said in one line) when the store cannot be opened or its connection fails
    meanwhile."""
    from controller.pit.db import transient  # noqa: PLC0415

    store = _existing_store(verb, path)
    if isinstance(store, int):
        raise _StoreUnusableError(store)
    try:
        return call(store)
    except Exception as exc:
        if not transient(exc):  # the store's connection, not a bug: one line, no traceback
            raise
        print(f"tablectl pit user {verb}: the store: {exc}", file=sys.stderr)
        raise _StoreUnusableError(2) from None
    finally:
        store.close()


def user_list(args: argparse.Namespace) -> int:
    """``tablectl pit user list [--json]``."""
    try:
        users = _in_store("list", args.config, lambda store: store.users(time.time()))
    except _StoreUnusableError as refused:
        return refused.status
    for user in users:
        created, last = user["created_at"], user["last_login_at"]
        locked = [
            {"address": lock["address"], "until": _utc(lock["until"])}
            for lock in user["locked_out"]
        ]
        if args.json:
            print(
                json.dumps(
                    {
                        "name": user["username"],
                        "roles": user["roles"],
                        "created": _utc(created),
                        "last_login": None if last is None else _utc(last),
                        "sessions": user["sessions"],
                        "locked_out": locked,
                    }
                )
            )
            continue
        parts = [
            user["username"],
            ",".join(user["roles"]),
            f"created {_utc(created)}",
            "never logged in" if last is None else f"last login {_utc(last)}",
            f"{user['sessions']} session{'' if user['sessions'] == 1 else 's'} open",
        ]
        parts += [f"locked out from {lock['address']} until {lock['until']}" for lock in locked]
        print("  ".join(parts))
    return 0


def user_remove(args: argparse.Namespace) -> int:
    """``tablectl pit user remove NAME``."""
    try:
        ended = _in_store(
            "remove", args.config, lambda store: store.remove_user(args.name, time.time())
        )
    except _StoreUnusableError as refused:
        return refused.status
    if ended is None:
        print(f"tablectl pit user remove: no user {args.name!r}", file=sys.stderr)
        return 2
    print(f"user {args.name} removed: {ended} session{'' if ended == 1 else 's'} ended")
    return 0
