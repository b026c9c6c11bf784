"""What a valid config still needs to run: the files it names, and its sections naming each other.

:func:`controller.config.parse_config` checks the config itself (every key, the profile, the
deck, the drivers' options, the keyring). :func:`run_problems` checks what ``tablectl run`` would
fail on later, on this machine: a password or certificate file that is missing or unreadable
(the broker link would retry for ever), a journal directory the daemon cannot create or write, a
console socket under a missing directory or on top of another file, an existing journal of
another table, a shuffler the table would command that is not configured or cannot deal.
``tablectl config check`` and ``tablectl run`` both print them, one line per problem naming the
key, and ``run`` stops before it starts anything (exit status 2).

What an existing journal holds is the journal's own to say: ``config check`` names a journal
that is another table's or not a journal at all, but ``run`` leaves that to opening the journal,
its very first step, which names a damaged journal with what to do (exit status 3,
docs/operations.md "A damaged journal").
"""

from __future__ import annotations

import os
import sqlite3
import ssl
import stat
from pathlib import Path

from pydantic import ValidationError

from controller.config import BrokerSection, TableConfig
from controller.paths import directory_problem
from drivers.contract import DISPENSE, SHUFFLE
from drivers.registry import DriverUnavailableError, load_driver


def run_problems(config: TableConfig, *, journal_content: bool = True) -> list[str]:
    """Every problem ``tablectl run`` would meet with ``config`` here, one line each (without
    ``journal_content``, not what an existing journal holds: ``run`` opens it to find out)."""
    return [
        *broker_problems(config.broker),
        *_journal(config, content=journal_content),
        *_console(config.daemon.console),
        *_shuffler(config),
        *_devices(config),
    ]


def _readable(key: str, path: Path) -> list[str]:
    """A file the daemon reads: present, a file, readable."""
    if not path.exists():
        return [f"{key}: no such file: {path}"]
    if not path.is_file():
        return [f"{key}: not a file: {path}"]
    if not os.access(path, os.R_OK):
        return [f"{key}: cannot be read (permissions): {path}"]
    return []


def broker_problems(broker: BrokerSection) -> list[str]:
    """What would keep a client from reaching this broker: files missing or not PEM, or plain
    TCP across the network (docs/operations.md, "The broker")."""
    if not broker.enabled:
        return []
    problems: list[str] = []
    if broker.password_file is not None:
        problems += _readable("broker.password_file", broker.password_file)
    tls = broker.tls
    if not tls.enabled:
        if not (broker.loopback() or broker.plain_tcp):
            problems.append(
                f"broker.tls.enabled: {broker.host} is another machine, reached over TLS only "
                "(set enabled = true and ca_file; plain_tcp = true on a closed bench network)"
            )
        return problems
    if tls.ca_file is not None:
        found = _readable("broker.tls.ca_file", tls.ca_file)
        problems += found
        if not found:
            try:
                ssl.create_default_context().load_verify_locations(cafile=str(tls.ca_file))
            except (ssl.SSLError, ValueError) as exc:
                problems.append(f"broker.tls.ca_file: not a PEM CA bundle: {tls.ca_file} ({exc})")
    if tls.cert_file is not None and tls.key_file is not None:
        cert = _readable("broker.tls.cert_file", tls.cert_file)
        key = _readable("broker.tls.key_file", tls.key_file)
        problems += cert + key
        if not cert and not key:
            try:
                ssl.create_default_context().load_cert_chain(str(tls.cert_file), str(tls.key_file))
            except (ssl.SSLError, ValueError) as exc:
                problems.append(
                    f"broker.tls.cert_file / broker.tls.key_file: not a certificate and its key "
                    f"(PEM): {exc}"
                )
    return problems


def _writable_directory(key: str, directory: Path, *, create: bool) -> list[str]:
    """A directory the daemon writes in; with ``create``, one it makes when it is missing."""
    problem = directory_problem(directory, create=create)
    return [f"{key}: {problem}"] if problem else []


def _archive_dir(config: TableConfig) -> list[str]:
    archive = config.journal.archive_dir
    if archive is None:
        return []
    if not archive.is_dir():
        return [f"journal.archive_dir: {archive} is not a directory (not mounted?)"]
    return _writable_directory("journal.archive_dir", archive, create=False)


def _journal(config: TableConfig, *, content: bool) -> list[str]:
    path = config.journal.path
    problems = _writable_directory("journal.path", path.parent, create=True)
    if content:  # `config check` only: a NAS not mounted yet must not keep the table down
        problems += _archive_dir(config)
    if problems or not path.exists():
        return problems
    if not path.is_file():
        return [f"journal.path: {path} is not a file"]
    if not os.access(path, os.R_OK | os.W_OK):
        return [f"journal.path: {path} cannot be read and written (permissions)"]
    if not content:
        return []
    owner = _journal_table(path)
    if isinstance(owner, str) and owner != config.table.id:
        return [
            f"journal.path: {path} is the journal of table {owner!r}, not {config.table.id!r} "
            "(table.id)"
        ]
    if isinstance(owner, sqlite3.DatabaseError):
        return [f"journal.path: {path} is not a journal ({owner}); {_damaged(path)}"]
    return []


def _journal_table(path: Path) -> str | sqlite3.DatabaseError | None:
    """The table id an existing journal records (read only); None when it cannot tell."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'table_id'").fetchone()
    except sqlite3.OperationalError:
        return None  # locked, or no room for its shared memory: not a verdict on the file
    except sqlite3.DatabaseError as exc:
        return exc
    finally:
        conn.close()
    return str(row[0]) if row else None


def _damaged(path: Path) -> str:
    from controller.shell.chain import damage_advice  # noqa: PLC0415  (the shell's, lazily)

    return f"if it is this table's journal, damaged: {damage_advice(path)}"


def _console(path: Path | None) -> list[str]:
    if path is None:
        return []
    problems = _writable_directory("daemon.console", path.parent, create=False)
    if not problems and path.exists() and not stat.S_ISSOCK(path.lstat().st_mode):
        problems.append(f"daemon.console: {path} exists and is not a socket (it would be replaced)")
    return problems


def _shuffler(config: TableConfig) -> list[str]:
    """A host-paced table commands ``table.shuffler``: it must be a device that deals."""
    table = config.table
    if table.dispense != "host":
        return []
    key = "table.shuffler"
    section = config.devices.get(table.shuffler)
    if section is None:
        configured = ", ".join(sorted(config.devices)) or "none"
        return [
            f"{key}: {table.shuffler!r} is not a configured device (devices: {configured}); "
            'a table whose dealer runs the shuffler sets dispense = "dealer"'
        ]
    if not section.enabled:
        return [f"{key}: device {table.shuffler!r} is disabled (devices.{table.shuffler}.enabled)"]
    try:
        driver = load_driver(section.driver)
    except DriverUnavailableError:
        return []  # named under devices.<id>.driver already
    if not {SHUFFLE, DISPENSE} <= driver.capabilities:
        return [
            f"{key}: device {table.shuffler!r} (driver {section.driver!r}) cannot shuffle and "
            "dispense"
        ]
    return []


def _devices(config: TableConfig) -> list[str]:
    """What each enabled device's driver says it would fail on (``Device.run_problems``)."""
    problems: list[str] = []
    for device_id, section in config.devices.items():
        if not section.enabled:
            continue
        try:
            driver = load_driver(section.driver)
            options = driver.options_model.model_validate(section.options)
        except (DriverUnavailableError, ValidationError):
            continue  # named under devices.<id> already
        problems += [f"devices.{device_id}.{p}" for p in driver.run_problems(options)]
    return problems
