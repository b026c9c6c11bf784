"""The daemon's own verbs: ``run``, and ``config`` (``check`` and ``schema``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.config import (
    ConfigError,
    NotAConfigError,
    TableConfig,
    config_schema,
    load_config,
)
from controller.config_check import broker_problems
from controller.shell.cli import (
    CONFIG_DEFAULT,
    add_verb,
    add_verb_group,
    config_path,
    journal_failure,
    serve,
)

#: ``tablectl run``'s exit status when the journal cannot be used; the unit does not restart
#: it (``RestartPreventExitStatus=``): someone has to look.
JOURNAL_UNUSABLE = 3
#: ``tablectl run``'s exit status when another daemon runs on the same journal (nor is it
#: restarted: the other one is the table's daemon).
JOURNAL_IN_USE = 4


def add_parsers(subparsers: Any) -> None:
    """Register ``run`` and ``config``."""
    run = add_verb(
        subparsers,
        "run",
        run_command,
        help="the table controller daemon (what systemd starts)",
        description="Run the table controller: read the table's config, lock and open its "
        "journal, start the devices' drivers, the dealer console and the broker connection, "
        "and serve until stopped (SIGTERM). Needs the table's config (--config, else "
        f"{CONFIG_DEFAULT}). Exit status 2: the config cannot run here; "
        "3: the journal cannot be used; 4: another daemon runs on the journal; 5: this version "
        "cannot read the journal's snapshot and its start was pruned (an upgrade to roll back).",
    )
    run.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"the table's config file (default: {CONFIG_DEFAULT})",
    )

    config_verbs = add_verb_group(
        subparsers,
        "config",
        "check|schema",
        help="check a config file or print its schema",
        description="Validate a config file as the daemon would, or print the table config's "
        "JSON Schema.",
    )
    check = add_verb(
        config_verbs,
        "check",
        config_check,
        help="validate a config file",
        description="Validate a table's config (every key, the profile, the devices' options, "
        "the keyring, the paths it needs here) or a pit's (it has [pit]), naming each problem "
        f"on a line of its own. The file is --config FILE (default: {CONFIG_DEFAULT}). Exit "
        "status 0: it can run; 1: it cannot, or there is no such file; 2: the file is not a "
        "config at all (a journal), or given twice.",
    )
    check.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"the config file, a table's or a pit's (default: {CONFIG_DEFAULT})",
    )
    # The older form, `config check FILE`, still works: scripts written for it keep running.
    check.add_argument(
        "file",
        type=Path,
        nargs="?",
        default=None,
        metavar="FILE",
        help="the older form of --config FILE",
    )
    add_verb(
        config_verbs,
        "schema",
        config_schema_command,
        help="print the config's JSON Schema",
        description="Print the JSON Schema of the table config file (for editors and "
        "generators); it needs nothing.",
    )


def run_command(args: argparse.Namespace) -> int:
    """``tablectl run``."""
    from controller.config_check import run_problems  # noqa: PLC0415
    from controller.shell.daemon import run_daemon  # noqa: PLC0415
    from controller.shell.journal_lock import JournalInUseError, JournalLock  # noqa: PLC0415

    path = config_path(args.config)
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"tablectl run: {exc}", file=sys.stderr)
        return 2
    try:
        # before anything else: a second daemon on this journal changes nothing
        lock = JournalLock(config.journal.path)
    except JournalInUseError as exc:
        print(f"tablectl run: {exc}", file=sys.stderr)
        return JOURNAL_IN_USE
    except OSError as exc:
        print(
            f"tablectl run: journal.path: cannot lock {config.journal.path}: {exc}", file=sys.stderr
        )
        return 2
    with lock:
        # an existing journal's content is the journal's to judge: exit 3, with what to do
        problems = run_problems(config, journal_content=False)
        if problems:
            print(f"tablectl run: {ConfigError(str(path), problems)}", file=sys.stderr)
            return 2
        return serve(
            "run",
            config.log,
            run_daemon(config),
            lambda exc: journal_failure(exc, config.journal.path),
            JOURNAL_UNUSABLE,
        )


def config_check(args: argparse.Namespace) -> int:
    """``tablectl config check [--config FILE]`` (a table's config, or a pit's: it has
    ``[pit]``); ``config check FILE`` is the older form."""
    from controller.pit.config import is_pit_config, load_pit_config, read_toml  # noqa: PLC0415

    if args.config is not None and args.file is not None:
        print("tablectl config check: give the file once, as --config FILE", file=sys.stderr)
        return 2
    path = config_path(args.config if args.file is None else args.file)
    try:
        data = read_toml(path)
    except NotAConfigError as exc:
        # bad input, not a config with problems: a journal given where the config goes
        print(f"{exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"{exc}", file=sys.stderr)
        return 1
    try:
        if is_pit_config(data):
            pit = load_pit_config(path)
            problems = broker_problems(pit.broker)
            if problems:
                raise ConfigError(str(path), problems)
            where = pit.store.url.split("://", 1)[0]
            print(f"{path}: ok (pit {pit.pit.id}, group {pit.pit.share_group}, store {where})")
            return 0
        config = checked_config(path)
    except ConfigError as exc:
        print(f"{exc}", file=sys.stderr)
        return 1
    devices = ", ".join(f"{d} ({s.driver})" for d, s in config.devices.items()) or "none"
    print(f"{path}: ok (table {config.table.id}, devices: {devices})")
    return 0


def checked_config(path: Path, *, journal_content: bool = True) -> TableConfig:
    """The config at ``path``, valid and runnable here (ConfigError naming every problem; what
    an existing journal holds too, with ``journal_content``)."""
    from controller.config_check import run_problems  # noqa: PLC0415

    config = load_config(path)
    problems = run_problems(config, journal_content=journal_content)
    if problems:
        raise ConfigError(str(path), problems)
    return config


def config_schema_command(args: argparse.Namespace) -> int:
    """``tablectl config schema``."""
    print(json.dumps(config_schema(), indent=2))
    return 0
