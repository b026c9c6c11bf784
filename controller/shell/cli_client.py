"""The verbs that reach a table over the broker (``controller/shell/client.py``): ``tail`` its
events, send it a ``dealer`` request; and the broker options they share."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from controller.config import BrokerSection, ConfigError, _format, load_config
from controller.config_check import broker_problems
from controller.shell.cli import add_verb
from controller.signing import Signer, SigningError

SIGNING_KEY_ENV = "TABLECTL_SIGNING_KEY"
#: The older name of ``$TABLECTL_SIGNING_KEY``, still read when the new one is not set.
OLD_SIGNING_KEY_ENV = "TABLECTL_KEY"


def add_parsers(subparsers: Any) -> None:
    """Register ``tail`` and ``dealer``."""
    tail = add_verb(
        subparsers,
        "tail",
        tail_command,
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

    dealer = add_verb(
        subparsers,
        "dealer",
        dealer_command,
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
