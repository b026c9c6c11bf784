"""What the command line's verbs share, the daemon's and the pit's: where a config file is, how a
verb and a verb of sub-verbs are declared (and ``--role``), running a service until it stops,
the one line saying a journal cannot be used, and the keyring's blocks as ``tablectl keys new``
prints them (the rig writes its keyrings with them too).

The daemon's verbs are in the modules beside this one, a group each: ``cli_run`` (``run``,
``config``), ``cli_journal`` (``journal``), ``cli_client`` (``tail``, ``dealer``) and
``cli_setup`` (``keys``, ``broker``); ``controller/cli.py`` names which has which.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from argparse import ArgumentParser, Namespace
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from controller.authority import Role
from controller.config import DEFAULT_CONFIG, LogSection

CONFIG_ENV = "TABLECTL_CONFIG"
#: Where the table's config is when ``--config`` does not say, as the help puts it.
CONFIG_DEFAULT = f"${CONFIG_ENV}, else {DEFAULT_CONFIG}"


def config_path(given: Path | None, env: str = CONFIG_ENV, default: Path = DEFAULT_CONFIG) -> Path:
    """The config file a verb works on: ``given`` (its ``--config``), else the one ``$env``
    names, else ``default`` (the table's; the pit's verbs give theirs)."""
    if given is not None:
        return given
    return Path(os.environ.get(env, str(default)))


def add_verb(
    subparsers: Any, name: str, handler: Callable[[Namespace], int], **texts: Any
) -> ArgumentParser:
    """The parser of the verb (or sub-verb) ``name``, which ``handler`` runs with the parsed
    arguments, returning the exit status; ``help`` and ``description`` in ``texts``."""
    parser: ArgumentParser = subparsers.add_parser(name, **texts)
    parser.set_defaults(handler=handler)
    return parser


def add_verb_group(subparsers: Any, name: str, metavar: str, **texts: Any) -> Any:
    """The verb ``name`` made of sub-verbs (``journal verify``, ``pit user add``): the action its
    sub-verbs are added to (``help`` and ``description`` in ``texts``). One of them must be
    given; which is ``NAME_verb`` of the parsed arguments."""
    verb = subparsers.add_parser(name, **texts)
    return verb.add_subparsers(dest=f"{name}_verb", metavar=metavar, required=True)


def add_role_option(parser: ArgumentParser, text: str) -> None:
    """``--role``, a role of :class:`~controller.authority.Role`, given once for each."""
    parser.add_argument(
        "--role", action="append", required=True, choices=[r.value for r in Role], help=text
    )


def serve(
    verb: str,
    log: LogSection,
    service: Coroutine[Any, Any, int],
    failure: Callable[[Exception], str | None],
    status: int,
) -> int:
    """Run ``service``, the daemon or a pit process, until it stops, logging as its config's
    ``[log]`` says: its exit status; or ``status`` (or the error's own ``exit_status``) once
    the line ``failure`` gives for the error that stopped it is printed (the errors it gives
    none for are raised: bugs)."""
    from controller.shell import logging as shell_logging  # noqa: PLC0415

    shell_logging.configure(log.level, log.format)
    try:
        return asyncio.run(service)
    except Exception as exc:
        line = failure(exc)
        if line is None:
            raise
        print(f"tablectl {verb}: {line}", file=sys.stderr)
        return exit_status(exc, status)


def exit_status(exc: BaseException, status: int) -> int:
    """The exit status an error names for itself (``exit_status``, a group's first that does),
    else ``status``."""
    if isinstance(exc, BaseExceptionGroup):
        named = (exit_status(inner, -1) for inner in exc.exceptions)
        return next((found for found in named if found != -1), status)
    found = getattr(exc, "exit_status", status)
    return found if isinstance(found, int) else status


def journal_failure(exc: BaseException, path: Path) -> str | None:
    """One line for an error that says the journal cannot be used (None: another error)."""
    from controller.shell.chain import JournalError, damaged, is_damage  # noqa: PLC0415

    if isinstance(exc, BaseExceptionGroup):
        found = (journal_failure(inner, path) for inner in exc.exceptions)
        return next((line for line in found if line is not None), None)
    if isinstance(exc, JournalError):
        return str(exc)
    if is_damage(exc):
        return str(damaged(path, exc))
    return None


def keyring_entry(key_id: str, entry: dict[str, Any]) -> str:
    """A ``[keys.ID]`` block of the keyring file."""
    return _table_block(f"keys.{key_id}", entry)


def person_block(person: str, entry: dict[str, Any]) -> str:
    """A ``[persons."NAME"]`` block of the keyring file (the name quoted: it has spaces)."""
    return _table_block(f"persons.{json.dumps(person)}", entry)


def _table_block(header: str, entry: dict[str, Any]) -> str:
    lines = [f"[{header}]"]
    for name, value in entry.items():
        if isinstance(value, list):
            rendered = "[" + ", ".join(json.dumps(v) for v in value) + "]"
        elif name == "valid_until":
            rendered = str(value)
        else:
            rendered = json.dumps(value)
        lines.append(f"{name} = {rendered}")
    return "\n".join(lines) + "\n"
