"""The daemon's verbs: ``run``, ``config``, ``journal``, ``tail``, ``dealer`` and ``keys``."""

from __future__ import annotations

import argparse
import asyncio
import codecs
import json
import os
import socket
import sqlite3
import sys
import tomllib
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from controller.authority import Role
from controller.config import (
    DEFAULT_CONFIG,
    SQLITE_HEADER,
    BrokerSection,
    ConfigError,
    NotAConfigError,
    TableConfig,
    _format,
    config_schema,
    load_config,
)
from controller.config_check import broker_problems
from controller.signing import Signer, SigningError

CONFIG_ENV = "TABLECTL_CONFIG"
SIGNING_KEY_ENV = "TABLECTL_SIGNING_KEY"
#: The older name of ``$TABLECTL_SIGNING_KEY``, still read when the new one is not set.
OLD_SIGNING_KEY_ENV = "TABLECTL_KEY"

_CONFIG_HELP = f"the table's config file (default: ${CONFIG_ENV}, else {DEFAULT_CONFIG})"


def add_parsers(subparsers: Any) -> None:
    """Register the verbs."""
    run = subparsers.add_parser(
        "run",
        help="the table controller daemon (what systemd starts)",
        description="Run the table controller: read the table's config, lock and open its "
        "journal, start the devices' drivers, the dealer console and the broker connection, "
        "and serve until stopped (SIGTERM). Needs the table's config (--config, else "
        f"${CONFIG_ENV}, else {DEFAULT_CONFIG}). Exit status 2: the config cannot run here; "
        "3: the journal cannot be used; 4: another daemon runs on the journal.",
    )
    run.add_argument("--config", type=Path, default=None, metavar="FILE", help=_CONFIG_HELP)
    run.set_defaults(handler=run_command)

    config = subparsers.add_parser(
        "config",
        help="check a config file or print its schema",
        description="Validate a config file as the daemon would, or print the table config's "
        "JSON Schema.",
    )
    config_verbs = config.add_subparsers(dest="config_verb", metavar="check|schema", required=True)
    check = config_verbs.add_parser(
        "check",
        help="validate a config file",
        description="Validate a table's config (every key, the profile, the devices' options, "
        "the keyring, the paths it needs here) or a pit's (it has [pit]), naming each problem "
        f"on a line of its own. The file is --config FILE (default: ${CONFIG_ENV}, else "
        f"{DEFAULT_CONFIG}). Exit status 0: it can run; 1: it cannot, or there is no such "
        "file; 2: the file is not a config at all (a journal), or given twice.",
    )
    check.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"the config file, a table's or a pit's (default: ${CONFIG_ENV}, else "
        f"{DEFAULT_CONFIG})",
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
    check.set_defaults(handler=config_check)
    schema = config_verbs.add_parser(
        "schema",
        help="print the config's JSON Schema",
        description="Print the JSON Schema of the table config file (for editors and "
        "generators); it needs nothing.",
    )
    schema.set_defaults(handler=config_schema_command)

    journal = subparsers.add_parser(
        "journal",
        help="verify, export or salvage the journal",
        description="Work on a table's journal, the SQLite file of everything the table did: "
        "check its hash chain, export it (both safe while the daemon writes it), or salvage a "
        "damaged one.",
    )
    journal_verbs = journal.add_subparsers(
        dest="journal_verb", metavar="verify|export|salvage", required=True
    )
    for name, handler, text, description in (
        (
            "verify",
            journal_verify,
            "check the journal's hash chain",
            "Check every row of the journal against its hash chain and print the breaks, those "
            "maintenance accepted included. Exit status 0: intact; 1: broken or damaged; 2: no "
            "journal there, one that cannot be opened, or a file that is not a journal.",
        ),
        (
            "export",
            journal_export,
            "export events, or hands as PHH",
            "Print the journal's events as JSON lines, or its completed hands as PHH (--phh), "
            "its rulings (--rulings) or the house's take per period (--drop). Exit status 1: a "
            "row cannot be read back; 2: no journal there, or the file is not a journal.",
        ),
        (
            "salvage",
            journal_salvage,
            "copy every intact row of a damaged journal to a new file",
            "Copy every intact row of a damaged journal into a new journal (--out) for the "
            "daemon to run on (when rows were lost, it holds the table until maintenance "
            "accepts the journal). With --config, the table's id and "
            "genesis come from the config. Exit status 0: every row kept; 1: some lost; 2: "
            "nothing could be written, or the file is not a journal.",
        ),
    ):
        sub = journal_verbs.add_parser(
            name,
            help=text,
            description=f"{description} The journal is --journal FILE, else the one the "
            f"table's config names (--config, else ${CONFIG_ENV}, else {DEFAULT_CONFIG}).",
        )
        sub.add_argument(
            "--journal", type=Path, default=None, metavar="FILE", help="the journal file (SQLite)"
        )
        sub.add_argument(
            "--config",
            type=Path,
            default=None,
            metavar="FILE",
            help="the table's config file, which names the journal ([journal] path)",
        )
        if name == "export":
            sub.add_argument(
                "--phh",
                action="store_true",
                help="completed hands as PHH: one bulk .phhs, or one .phh with --hand",
            )
            sub.add_argument(
                "--rulings", action="store_true", help="who made each ruling, one line each"
            )
            sub.add_argument("--hand", default=None, help="only this hand id")
            sub.add_argument(
                "--drop",
                action="store_true",
                help="the house's take (rake, jackpot drops, time) per period",
            )
            sub.add_argument(
                "--period",
                choices=("day", "hour", "month"),
                default="day",
                help="with --drop: the period totals are kept by (UTC)",
            )
        if name == "salvage":
            sub.add_argument(
                "--out",
                type=Path,
                required=True,
                metavar="FILE",
                help="where the new journal goes (a new file)",
            )
        sub.set_defaults(handler=handler)

    tail = subparsers.add_parser(
        "tail",
        help="print table events as they arrive",
        description="Subscribe to a table's event stream on the broker and print each event as "
        "it arrives (--secure: the surveillance stream, hole cards included). Needs the broker "
        "and the table: --config, or --broker and --table, with a login of the tool's own.",
    )
    _broker_args(tail)
    tail.add_argument("--secure", action="store_true", help="the surveillance stream")
    tail.add_argument("--count", type=int, default=0, help="stop after N events")
    tail.add_argument(
        "--json", action="store_true", help="every envelope as a JSON line (default: pretty)"
    )
    tail.set_defaults(handler=tail_command)

    dealer = subparsers.add_parser(
        "dealer",
        help="send a dealer command and print the response",
        description="Send one request to a table as its dealer console would (start_hand, "
        "action, award, a ruling…), signed with --signing-key, and print the table's answer "
        "as JSON. Needs the broker and the table (--config, or --broker and --table) and, at "
        "a table that takes signed requests only, a key its keyring knows. Exit status 0: "
        "the table said ok; 1: it refused; 2: bad input or no broker.",
        # Without this, an old `--key FILE` would be taken as the prefix of --key-file (the
        # TLS key) and fail far from the cause: it is refused as unknown instead.
        allow_abbrev=False,
    )
    _broker_args(dealer)
    dealer.add_argument("command", help="start_hand, action, award, …")
    dealer.add_argument("fields", nargs="*", help="key=value (values are JSON when they parse)")
    dealer.add_argument("--transaction", default=None, help="default: a new random id")
    dealer.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the answer (10)"
    )
    dealer.add_argument(
        "--signing-key",
        type=Path,
        default=os.environ.get(SIGNING_KEY_ENV, os.environ.get(OLD_SIGNING_KEY_ENV)),
        metavar="FILE",
        help="sign the request with this private key (tablectl keys new; default: "
        f"${SIGNING_KEY_ENV}, unsigned when unset)",
    )
    dealer.add_argument(
        "--signing-key-id",
        default=None,
        metavar="ID",
        help="the signing key's id in the keyring (default: the key file's name)",
    )
    dealer.add_argument(
        "--on-behalf-of", default=None, help="a console signing for this person (docs/security.md)"
    )
    dealer.add_argument(
        "--print",
        action="store_true",
        help="print the request (signed with --signing-key) as one JSON line instead of sending "
        "it, for another client (mosquitto_pub -s); needs only the table's id",
    )
    dealer.set_defaults(handler=dealer_command)

    keys = subparsers.add_parser(
        "keys",
        help="make a key pair for a person or a console",
        description="Make the signing keys of the people and consoles who send requests to "
        "the tables (docs/security.md).",
    )
    keys_verbs = keys.add_subparsers(dest="keys_verb", metavar="new", required=True)
    new = keys_verbs.add_parser(
        "new",
        help="write NAME.key (private) and print the keyring entry of its public key",
        description="Write a new Ed25519 private key to OUT/NAME.key (never overwritten) and "
        "print the block every table's keyring needs for it: its [keys.NAME] entry and, for "
        "the people a console signs for (--acts-for PERSON=ROLE), their [persons] entries. "
        "A pit key (--role pit) also gets the floor role, for the rulings the pit's console "
        "relays, and acts for anyone unless --acts-for names its people.",
    )
    new.add_argument("name", help="the key id (letters, digits, . _ -)")
    new.add_argument(
        "--role",
        action="append",
        required=True,
        choices=[r.value for r in Role],
        help="a role the key's holder has (repeat for several)",
    )
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
    new.set_defaults(handler=keys_new)

    broker = subparsers.add_parser(
        "broker",
        help="the pit broker's users, passwords and ACL",
        description="Set up the mosquitto broker the tables and the pit share.",
    )
    broker_verbs = broker.add_subparsers(dest="broker_verb", metavar="setup", required=True)
    setup = broker_verbs.add_parser(
        "setup",
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
    setup.set_defaults(handler=broker_setup)


def _broker_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--broker",
        default=None,
        help="mqtt://host:port, or mqtts://host:port for TLS (default: the --config's broker, "
        "else mqtt://localhost:1883)",
    )
    parser.add_argument("--table", default=None, help="table id (default: from --config)")
    parser.add_argument(
        "--prefix", default=None, help="topic prefix (default: from --config, else tables)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the table's config file: its broker's address, login and TLS settings, its table id",
    )
    parser.add_argument("--username", default=None, help="the broker user (its ACL decides)")
    parser.add_argument(
        "--password-file", type=Path, default=None, help="the broker user's password, in a file"
    )
    parser.add_argument(
        "--ca-file", type=Path, default=None, help="TLS: the CA bundle (default: system CAs)"
    )
    parser.add_argument(
        "--cert-file", type=Path, default=None, help="TLS: a client certificate (PEM)"
    )
    parser.add_argument("--key-file", type=Path, default=None, help="TLS: its key (PEM)")


class _Target(NamedTuple):
    """Where a command-line tool connects: the broker, and the table's topics on it."""

    broker: BrokerSection
    table: str
    prefix: str


class _TargetError(Exception):
    """Command-line broker options that cannot be used; the message says which and why."""


def _broker_target(args: argparse.Namespace) -> _Target:
    """The table config's broker (``--config``), with what the command line gives over it."""
    config = load_config(args.config) if args.config is not None else None
    settings = config.broker.model_dump() if config is not None else {}
    tls = dict(settings.get("tls", {}))
    if args.broker is not None:
        scheme, sep, address = args.broker.partition("://")
        if not sep or scheme not in ("mqtt", "mqtts"):
            raise _TargetError(
                f"--broker {args.broker}: give mqtt://host:port or mqtts://host:port"
            )
        host, _, port_text = address.partition(":")
        if port_text and not port_text.isdigit():
            raise _TargetError(f"--broker {args.broker}: the port is not a number")
        settings["host"] = host
        settings["port"] = int(port_text) if port_text else (8883 if scheme == "mqtts" else 1883)
        tls["enabled"] = scheme == "mqtts"
    files = {"ca_file": args.ca_file, "cert_file": args.cert_file, "key_file": args.key_file}
    given = {key: path for key, path in files.items() if path is not None}
    if given and not tls.get("enabled"):
        options = ", ".join("--" + key.replace("_", "-") for key in given)
        raise _TargetError(f"{options}: TLS files for a broker without TLS (use mqtts://)")
    own_login = args.username is not None or args.password_file is not None
    own_certificate = "cert_file" in given
    if config is not None and not (own_login or own_certificate):
        own = config.broker
        identity = (
            f"user {own.username}"
            if own.username is not None
            else "its client certificate"
            if own.tls.cert_file is not None
            else None
        )
        if identity is not None:
            # The broker binds a client id to its user (docs/operations.md, "The broker"): a
            # tool logged in as the table would replace the daemon's own connection.
            raise _TargetError(
                f"--config gives the table's own broker login ({identity}); a tool logs in as "
                "someone else: --username USER --password-file FILE (a console's login), or "
                "--cert-file and --key-file"
            )
    # What the command line names replaces the table's identity whole: never a mix of the
    # tool's password with the table's certificate, or the other way round.
    if not own_certificate:
        tls.pop("cert_file", None)
        tls.pop("key_file", None)
    tls.update(given)
    settings["username"] = args.username
    settings["password"] = None
    settings["password_file"] = args.password_file
    try:
        broker = BrokerSection.model_validate({**settings, "tls": tls, "enabled": True})
    except ValidationError as exc:
        raise _TargetError("; ".join(_format(exc))) from None
    problems = broker_problems(broker)
    if problems:
        raise _TargetError("; ".join(problems))
    table = args.table or (config.table.id if config is not None else None)
    if not table:
        raise _TargetError("give --table or --config")
    prefix = args.prefix or (config.broker.prefix if config is not None else "tables")
    return _Target(broker, table, prefix)


def _broker_failed(verb: str, broker: BrokerSection, exc: Exception) -> int:
    """A broker that could not be reached or refused us: said in one line, exit status 2."""
    hint = ""
    if broker.username is None:
        hint = " (a broker with an ACL takes only its users: --username and --password-file)"
    print(f"tablectl {verb}: the broker at {broker.url()}: {exc}{hint}", file=sys.stderr)
    return 2


def _config_path(path: Path | None) -> Path:
    if path is not None:
        return path
    return Path(os.environ.get(CONFIG_ENV, str(DEFAULT_CONFIG)))


def run_command(args: argparse.Namespace) -> int:
    """``tablectl run``."""
    from controller.config_check import run_problems  # noqa: PLC0415
    from controller.shell import logging as shell_logging  # noqa: PLC0415
    from controller.shell.daemon import run_daemon  # noqa: PLC0415
    from controller.shell.journal_lock import JournalInUseError, JournalLock  # noqa: PLC0415

    path = _config_path(args.config)
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
        shell_logging.configure(config.log.level, config.log.format)
        try:
            return asyncio.run(run_daemon(config))
        except Exception as exc:
            line = journal_failure(exc, config.journal.path)
            if line is None:
                raise
            print(f"tablectl run: {line}", file=sys.stderr)
            return JOURNAL_UNUSABLE


#: ``tablectl run``'s exit status when the journal cannot be used; the unit does not restart
#: it (``RestartPreventExitStatus=``): someone has to look.
JOURNAL_UNUSABLE = 3
#: ``tablectl run``'s exit status when another daemon runs on the same journal (nor is it
#: restarted: the other one is the table's daemon).
JOURNAL_IN_USE = 4


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


def config_check(args: argparse.Namespace) -> int:
    """``tablectl config check [--config FILE]`` (a table's config, or a pit's: it has
    ``[pit]``); ``config check FILE`` is the older form."""
    from controller.pit.config import is_pit_config, load_pit_config, read_toml  # noqa: PLC0415

    if args.config is not None and args.file is not None:
        print("tablectl config check: give the file once, as --config FILE", file=sys.stderr)
        return 2
    path = _config_path(args.config if args.file is None else args.file)
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


class NotAJournalError(ValueError):
    """A file given as a journal that is no journal at all; the message says what it is."""


def _journal_path(args: argparse.Namespace) -> Path:
    """The journal the journal verbs work on: NotAJournalError when the file is something else
    (a config given as ``--journal``), which salvage could do nothing with."""
    path = Path(args.journal) if args.journal is not None else None
    if path is None:
        path = load_config(_config_path(args.config)).journal.path
    kind = _not_a_journal(path)
    if kind is not None:
        raise NotAJournalError(f"{path} is not a journal ({kind})")
    return path


def _not_a_journal(path: Path) -> str | None:
    """What the file at ``path`` is when it is surely not a journal: text, or empty. None for
    a SQLite file, a file that is not there, and binary bytes: a journal whose first page was
    damaged is binary too, and salvage is what it needs."""
    try:
        with path.open("rb") as file:
            head = file.read(_SNIFF)
    except OSError:
        return None  # not there, or unreadable: opening it says which
    if head.startswith(SQLITE_HEADER):
        return None
    if not head:
        return "it is empty"
    try:
        # final=False: the sniffed bytes may end inside a character
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "it is a text file, not SQLite: give --journal with the journal's path"
    elsewhere = "--journal with the journal's path"
    if "table" in data:
        return f"it looks like a config: give --config {path}, or {elsewhere}"
    return f"it is a TOML file, not SQLite: give {elsewhere}"


#: How much of a file tells a journal from a text file.
_SNIFF = 4096


def journal_verify(args: argparse.Namespace) -> int:
    """``tablectl journal verify``: 0 when the chain is intact (breaks maintenance accepted are
    listed), 1 with every other break, or the one line that says the file is damaged."""
    from controller.shell.chain import damage_advice  # noqa: PLC0415
    from controller.shell.journal import Journal, JournalError  # noqa: PLC0415

    try:
        journal = Journal.open_existing(_journal_path(args))
    except (JournalError, ConfigError, NotAJournalError) as exc:
        print(f"tablectl journal verify: {exc}", file=sys.stderr)
        return 2
    try:
        report = journal.verify(segments=True)
    finally:
        journal.close()
    epochs = ", ".join(e.name for e in journal.epochs)
    where = f"table {journal.table_id}, epoch{'s' if len(journal.epochs) > 1 else ''} {epochs}"
    if report.segments or report.pruned:
        where += f", {report.segments} archive segment(s)"
    for pruned in report.pruned:
        print(f"  {pruned}")
    if report.ok:
        print(f"{journal.path}: ok ({report.rows} rows, {where})")
        if report.accepted:
            print(f"  {len(report.accepted)} break(s) accepted by maintenance (journal.accepted):")
            for accepted in report.accepted:
                print(f"  accepted: {accepted.text}")
        return 0
    others = [b.text for b in report.breaks if b.text != report.damaged]
    if others:
        print(f"{journal.path}: {len(others)} problem(s)", file=sys.stderr)
        for problem in others:
            print(f"  {problem}", file=sys.stderr)
    if report.damaged is not None:
        print(f"{journal.path}: {report.damaged}: {damage_advice(journal.path)}", file=sys.stderr)
    return 1


def journal_export(args: argparse.Namespace) -> int:
    """``tablectl journal export [--phh | --rulings | --drop [--period P]] [--hand ID]``."""
    from controller.phh import bulk_phh  # noqa: PLC0415
    from controller.shell.export import (  # noqa: PLC0415
        export_drop,
        export_events,
        export_phh,
        export_rulings,
    )
    from controller.shell.journal import Journal, JournalError  # noqa: PLC0415
    from controller.table.codec import CodecError  # noqa: PLC0415

    try:
        journal = Journal.open_existing(_journal_path(args))
    except (JournalError, ConfigError, NotAJournalError) as exc:
        print(f"tablectl journal export: {exc}", file=sys.stderr)
        return 2
    try:
        if args.drop:
            for line in export_drop(journal, args.period):
                print(line)
        elif args.phh:
            texts = export_phh(journal, args.hand)
            if args.hand and not texts:
                print(f"no completed hand {args.hand} in the journal", file=sys.stderr)
                return 1
            # one hand: a .phh; the journal's hands: one bulk .phhs (pokerkit's load_all)
            sys.stdout.write(texts[0] if args.hand else bulk_phh(texts))
        else:
            for segment in journal.pruned():  # said first: the lines below lack these rows
                print(
                    f"tablectl journal export: {segment.span()} were pruned ({segment.reason}); "
                    "their events are not in this export",
                    file=sys.stderr,
                )
            lines = export_rulings if args.rulings else export_events
            for line in lines(journal, args.hand):
                print(line)
    except (sqlite3.DatabaseError, UnicodeDecodeError, CodecError, JournalError) as exc:
        failure = journal_failure(exc, journal.path)
        if failure is None:  # a row SQLite reads but that is not what the table wrote
            failure = (
                f"{journal.path} holds a row that cannot be read back ({exc}); `tablectl "
                "journal verify` names the rows, `tablectl journal salvage` keeps the others"
            )
        print(f"tablectl journal export: {failure}", file=sys.stderr)
        return 1
    finally:
        journal.close()
    return 0


def journal_salvage(args: argparse.Namespace) -> int:
    """``tablectl journal salvage --out NEW``: 0 when every row was kept, 1 when some were not
    (the new journal holds the rest), 2 when nothing could be written."""
    from controller.shell.salvage import SalvageError, salvage  # noqa: PLC0415

    table = None
    try:
        source = _journal_path(args)
        if args.config is not None:
            section = load_config(_config_path(args.config)).table
            table = {"table_id": section.id, "genesis": section.genesis()}
        report = salvage(source, args.out, table)
    except (SalvageError, ConfigError, NotAJournalError) as exc:
        print(f"tablectl journal salvage: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"tablectl journal salvage: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    if report.complete:
        print(f"the journal is whole: point [journal] path at {args.out}")
        return 0
    print(
        f"point [journal] path at {args.out}: the daemon will hold the table with an integrity "
        "alarm until maintenance accepts the journal (journal_accept, docs/operations.md)"
    )
    return 1


def tail_command(args: argparse.Namespace) -> int:
    """``tablectl tail``."""
    from controller.mqtt import MqttError  # noqa: PLC0415
    from controller.shell.client import tail  # noqa: PLC0415

    try:
        target = _broker_target(args)
    except (_TargetError, ConfigError) as exc:
        print(f"tablectl tail: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(
            tail(
                target.broker,
                target.prefix,
                target.table,
                secure=args.secure,
                count=args.count,
                as_json=args.json,
            )
        )
    except MqttError as exc:
        return _broker_failed("tail", target.broker, exc)


def dealer_command(args: argparse.Namespace) -> int:
    """``tablectl dealer COMMAND key=value…``."""
    from controller.mqtt import MqttError  # noqa: PLC0415
    from controller.shell.client import request, request_body  # noqa: PLC0415

    target: _Target | None = None
    try:
        if args.print:
            # nothing is sent: the table's id is all it needs (its topic is the sender's)
            table = args.table or (load_config(args.config).table.id if args.config else "")
            if not table:
                raise _TargetError("give --table or --config")
        else:
            target = _broker_target(args)
            table = target.table
    except (_TargetError, ConfigError) as exc:
        print(f"tablectl dealer: {exc}", file=sys.stderr)
        return 2
    fields: dict[str, Any] = {}
    for item in args.fields:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"tablectl dealer: {item!r} is not key=value", file=sys.stderr)
            return 2
        try:
            fields[key] = json.loads(value)
        except json.JSONDecodeError:
            fields[key] = value
    transaction = args.transaction or uuid.uuid4().hex
    signer = None
    if args.signing_key is not None:
        try:
            signer = Signer.from_file(Path(args.signing_key), table, args.signing_key_id)
        except SigningError as exc:
            print(f"tablectl dealer: {exc}", file=sys.stderr)
            return 2
        signer.on_behalf_of = args.on_behalf_of
    if target is None:
        sign = signer.sign if signer is not None else None
        print(json.dumps(request_body(args.command, fields, transaction, sign)))
        return 0
    try:
        body = asyncio.run(
            request(
                target.broker,
                target.prefix,
                table,
                args.command,
                fields,
                transaction,
                args.timeout,
                signer=signer,
            )
        )
    except MqttError as exc:
        return _broker_failed("dealer", target.broker, exc)
    print(json.dumps(body))
    return 0 if body.get("status") == "ok" else 1


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
