"""``tablectl pit``: ``run`` the pit service, ``user add`` a person who logs in to it."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from controller.authority import Role
from controller.config import ConfigError

CONFIG_ENV = "TABLECTL_PIT_CONFIG"


def add_parsers(subparsers: Any) -> None:
    """Register ``tablectl pit``."""
    pit = subparsers.add_parser("pit", help="the pit service: ingest, store, repair, API")
    verbs = pit.add_subparsers(dest="pit_verb", metavar="run|user", required=True)
    run = verbs.add_parser("run", help="run one pit process")
    run.add_argument("--config", type=Path, default=None, help="pit config file")
    run.set_defaults(handler=run_command)
    user = verbs.add_parser("user", help="people who log in to the pit")
    user_verbs = user.add_subparsers(dest="user_verb", metavar="add", required=True)
    add = user_verbs.add_parser("add", help="add a user (or change its password and roles)")
    add.add_argument("name")
    add.add_argument(
        "--role",
        action="append",
        required=True,
        choices=[r.value for r in Role],
        help="a role (repeat for several)",
    )
    add.add_argument(
        "--password-stdin", action="store_true", required=True, help="read the password here"
    )
    add.add_argument("--config", type=Path, default=None, help="pit config file (its store)")
    add.set_defaults(handler=user_add)


def _config_path(path: Path | None) -> Path:
    from controller.pit.config import DEFAULT_PIT_CONFIG  # noqa: PLC0415

    if path is not None:
        return path
    return Path(os.environ.get(CONFIG_ENV, str(DEFAULT_PIT_CONFIG)))


def run_command(args: argparse.Namespace) -> int:
    """``tablectl pit run``."""
    from controller.config_check import broker_problems  # noqa: PLC0415
    from controller.pit.config import load_pit_config  # noqa: PLC0415
    from controller.pit.db import StoreError  # noqa: PLC0415
    from controller.pit.service import run_pit  # noqa: PLC0415
    from controller.shell import logging as shell_logging  # noqa: PLC0415

    path = _config_path(args.config)
    try:
        config = load_pit_config(path)
        problems = broker_problems(config.broker)
        if problems:  # a password file missing, plain TCP across the network…
            raise ConfigError(str(path), problems)
    except ConfigError as exc:
        print(f"tablectl pit run: {exc}", file=sys.stderr)
        return 2
    shell_logging.configure(config.log.level, config.log.format)
    try:
        return asyncio.run(run_pit(config))
    except StoreError as exc:
        print(f"tablectl pit run: the store: {exc}", file=sys.stderr)
        return 2


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
