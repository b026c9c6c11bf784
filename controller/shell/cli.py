"""The daemon's verbs: ``run``, ``config``, ``journal``, ``tail``, ``dealer`` and ``keys``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from controller.authority import Role
from controller.config import (
    DEFAULT_CONFIG,
    BrokerSection,
    ConfigError,
    TableConfig,
    _format,
    config_schema,
    load_config,
)
from controller.config_check import broker_problems
from controller.signing import Signer, SigningError

CONFIG_ENV = "TABLECTL_CONFIG"
KEY_ENV = "TABLECTL_KEY"


def add_parsers(subparsers: Any) -> None:
    """Register the verbs."""
    run = subparsers.add_parser("run", help="the table controller daemon (what systemd starts)")
    run.add_argument("--config", type=Path, default=None, help=f"config file ({DEFAULT_CONFIG})")
    run.set_defaults(handler=run_command)

    config = subparsers.add_parser("config", help="check a config file or print its schema")
    config_verbs = config.add_subparsers(dest="config_verb", metavar="check|schema", required=True)
    check = config_verbs.add_parser("check", help="validate a config file")
    check.add_argument("file", type=Path)
    check.set_defaults(handler=config_check)
    schema = config_verbs.add_parser("schema", help="print the config's JSON Schema")
    schema.set_defaults(handler=config_schema_command)

    journal = subparsers.add_parser("journal", help="verify, export or salvage the journal")
    journal_verbs = journal.add_subparsers(
        dest="journal_verb", metavar="verify|export|salvage", required=True
    )
    for name, handler, text in (
        ("verify", journal_verify, "check the journal's hash chain"),
        ("export", journal_export, "export events, or hands as PHH"),
        ("salvage", journal_salvage, "copy every intact row of a damaged journal to a new file"),
    ):
        sub = journal_verbs.add_parser(name, help=text)
        sub.add_argument("--journal", type=Path, default=None, help="journal file")
        sub.add_argument(
            "--config", type=Path, default=None, help="take the journal path from here"
        )
        if name == "export":
            sub.add_argument("--phh", action="store_true", help="completed hands as PHH")
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
            sub.add_argument("--out", type=Path, required=True, help="the new journal (a new file)")
        sub.set_defaults(handler=handler)

    tail = subparsers.add_parser("tail", help="print table events as they arrive")
    _broker_args(tail)
    tail.add_argument("--secure", action="store_true", help="the surveillance stream")
    tail.add_argument("--count", type=int, default=0, help="stop after N events")
    tail.add_argument(
        "--json", action="store_true", help="every envelope as a JSON line (default: pretty)"
    )
    tail.set_defaults(handler=tail_command)

    dealer = subparsers.add_parser("dealer", help="send a dealer command and print the response")
    _broker_args(dealer)
    dealer.add_argument("command", help="start_hand, action, award, …")
    dealer.add_argument("fields", nargs="*", help="key=value (values are JSON when they parse)")
    dealer.add_argument("--transaction", default=None, help="default: a new random id")
    dealer.add_argument("--timeout", type=float, default=10.0)
    dealer.add_argument(
        "--key",
        type=Path,
        default=os.environ.get(KEY_ENV),
        help=f"sign with this private key (tablectl keys new; or ${KEY_ENV})",
    )
    dealer.add_argument("--key-id", default=None, help="the key's id (default: the file's name)")
    dealer.add_argument(
        "--on-behalf-of", default=None, help="a console signing for this person (docs/security.md)"
    )
    dealer.set_defaults(handler=dealer_command)

    keys = subparsers.add_parser("keys", help="make a key pair for a person or a console")
    keys_verbs = keys.add_subparsers(dest="keys_verb", metavar="new", required=True)
    new = keys_verbs.add_parser(
        "new", help="write NAME.key (private) and print the keyring entry of its public key"
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
    new.add_argument("--table", action="append", default=None, help="a table it serves (all)")
    new.add_argument("--valid-until", default=None, help="expiry, RFC 3339 (none)")
    new.add_argument(
        "--acts-for", action="append", default=None, help="a person it may sign for (a console)"
    )
    new.add_argument("--dir", type=Path, default=Path("."), help="where NAME.key goes")
    new.set_defaults(handler=keys_new)

    broker = subparsers.add_parser("broker", help="the pit broker's users, passwords and ACL")
    broker_verbs = broker.add_subparsers(dest="broker_verb", metavar="setup", required=True)
    setup = broker_verbs.add_parser(
        "setup", help="write mosquitto's passwd, acl and mosquitto.conf from a users file"
    )
    setup.add_argument("users", type=Path, help="users file (config/mosquitto/users.example.toml)")
    setup.add_argument("--out", type=Path, required=True, help="where the files go")
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
    setup.add_argument("--ca-file", type=Path, default=None, help="the site's CA (PEM)")
    setup.add_argument(
        "--cert-file", type=Path, default=None, help="the site's certificate for the broker"
    )
    setup.add_argument("--key-file", type=Path, default=None, help="its key (PEM)")
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
        help="the table's config: its broker's address, login and TLS settings, its table id",
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
    """``tablectl config check FILE`` (a table's config, or a pit's: it has ``[pit]``)."""
    from controller.pit.config import is_pit_config, load_pit_config, read_toml  # noqa: PLC0415

    try:
        if is_pit_config(read_toml(args.file)):
            pit = load_pit_config(args.file)
            problems = broker_problems(pit.broker)
            if problems:
                raise ConfigError(str(args.file), problems)
            where = pit.store.url.split("://", 1)[0]
            print(f"{args.file}: ok (pit {pit.pit.id}, group {pit.pit.share_group}, store {where})")
            return 0
        config = checked_config(args.file)
    except ConfigError as exc:
        print(f"{exc}", file=sys.stderr)
        return 1
    devices = ", ".join(f"{d} ({s.driver})" for d, s in config.devices.items()) or "none"
    print(f"{args.file}: ok (table {config.table.id}, devices: {devices})")
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


def _journal_path(args: argparse.Namespace) -> Path:
    if args.journal is not None:
        return Path(args.journal)
    return load_config(_config_path(args.config)).journal.path


def journal_verify(args: argparse.Namespace) -> int:
    """``tablectl journal verify``: 0 when the chain is intact (breaks maintenance accepted are
    listed), 1 with every other break, or the one line that says the file is damaged."""
    from controller.shell.chain import damage_advice  # noqa: PLC0415
    from controller.shell.journal import Journal, JournalError  # noqa: PLC0415

    try:
        journal = Journal.open_existing(_journal_path(args))
    except (JournalError, ConfigError) as exc:
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
    except (JournalError, ConfigError) as exc:
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
            sys.stdout.write("\n".join(texts))
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
    except (SalvageError, ConfigError) as exc:
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
    from aiomqtt import MqttError  # noqa: PLC0415

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
    from aiomqtt import MqttError  # noqa: PLC0415

    from controller.shell.client import request  # noqa: PLC0415

    try:
        target = _broker_target(args)
    except (_TargetError, ConfigError) as exc:
        print(f"tablectl dealer: {exc}", file=sys.stderr)
        return 2
    table = target.table
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
    if args.key is not None:
        try:
            signer = Signer.from_file(Path(args.key), table, args.key_id)
        except SigningError as exc:
            print(f"tablectl dealer: {exc}", file=sys.stderr)
            return 2
        signer.on_behalf_of = args.on_behalf_of
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
    """``tablectl keys new NAME --role ROLE…``: the private key file and the keyring entry."""
    from controller.keyring import KeyringError, parse_keyring  # noqa: PLC0415
    from controller.signing import new_key, save_private_key  # noqa: PLC0415

    entry: dict[str, Any] = {
        "person": args.person or args.name,
        "roles": sorted(set(args.role)),
        "tables": args.table or ["*"],
        "public_key": "A" * 43 + "=",  # checked with the real key below
    }
    if args.valid_until:
        entry["valid_until"] = args.valid_until
    if args.acts_for:
        entry["acts_for"] = args.acts_for
    try:
        parse_keyring({"keys": {args.name: entry}}, "the new key")
    except KeyringError as exc:
        print(f"tablectl keys new: {exc}", file=sys.stderr)
        return 2
    path = args.dir / f"{args.name}.key"
    private, public = new_key()
    try:
        args.dir.mkdir(parents=True, exist_ok=True)
        save_private_key(private, path)
    except FileExistsError:
        print(f"tablectl keys new: {path} exists; not overwritten", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"tablectl keys new: {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    entry["public_key"] = public
    print(f"# private key: {path} (keep it on the console; never in the keyring)")
    print(keyring_entry(args.name, entry), end="")
    return 0


def keyring_entry(key_id: str, entry: dict[str, Any]) -> str:
    """A ``[keys.ID]`` block of the keyring file."""
    lines = [f"[keys.{key_id}]"]
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
