"""The daemon's verbs: ``run``, ``config``, ``journal``, ``tail`` and ``dealer``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from controller.config import DEFAULT_CONFIG, ConfigError, config_schema, load_config

CONFIG_ENV = "TABLECTL_CONFIG"


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

    journal = subparsers.add_parser("journal", help="verify or export the journal")
    journal_verbs = journal.add_subparsers(
        dest="journal_verb", metavar="verify|export", required=True
    )
    for name, handler, text in (
        ("verify", journal_verify, "check the journal's hash chain"),
        ("export", journal_export, "export events, or hands as PHH"),
    ):
        sub = journal_verbs.add_parser(name, help=text)
        sub.add_argument("--journal", type=Path, default=None, help="journal file")
        sub.add_argument(
            "--config", type=Path, default=None, help="take the journal path from here"
        )
        if name == "export":
            sub.add_argument("--phh", action="store_true", help="completed hands as PHH")
            sub.add_argument("--hand", default=None, help="only this hand id")
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
    dealer.set_defaults(handler=dealer_command)


def _broker_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", default="mqtt://localhost:1883", help="mqtt://host:port")
    parser.add_argument("--table", default=None, help="table id (default: from --config)")
    parser.add_argument("--prefix", default="tables")
    parser.add_argument("--config", type=Path, default=None)


def _config_path(path: Path | None) -> Path:
    if path is not None:
        return path
    return Path(os.environ.get(CONFIG_ENV, str(DEFAULT_CONFIG)))


def run_command(args: argparse.Namespace) -> int:
    """``tablectl run``."""
    from controller.shell import logging as shell_logging  # noqa: PLC0415
    from controller.shell.daemon import run_daemon  # noqa: PLC0415

    try:
        config = load_config(_config_path(args.config))
    except ConfigError as exc:
        print(f"tablectl run: {exc}", file=sys.stderr)
        return 2
    shell_logging.configure(config.log.level, config.log.format)
    return asyncio.run(run_daemon(config))


def config_check(args: argparse.Namespace) -> int:
    """``tablectl config check FILE``."""
    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print(f"{exc}", file=sys.stderr)
        return 1
    devices = ", ".join(f"{d} ({s.driver})" for d, s in config.devices.items()) or "none"
    print(f"{args.file}: ok (table {config.table.id}, devices: {devices})")
    return 0


def config_schema_command(args: argparse.Namespace) -> int:
    """``tablectl config schema``."""
    print(json.dumps(config_schema(), indent=2))
    return 0


def _journal_path(args: argparse.Namespace) -> Path:
    if args.journal is not None:
        return Path(args.journal)
    return load_config(_config_path(args.config)).journal.path


def journal_verify(args: argparse.Namespace) -> int:
    """``tablectl journal verify``: 0 when the chain is intact, 1 with every break otherwise."""
    from controller.shell.journal import Journal, JournalError  # noqa: PLC0415

    try:
        journal = Journal.open_existing(_journal_path(args))
    except (JournalError, ConfigError) as exc:
        print(f"tablectl journal verify: {exc}", file=sys.stderr)
        return 2
    report = journal.verify()
    journal.close()
    if report.ok:
        where = f"table {journal.table_id}, epoch {journal.epoch}"
        print(f"{journal.path}: ok ({report.rows} rows, {where})")
        return 0
    print(f"{journal.path}: {len(report.problems)} problem(s)", file=sys.stderr)
    for problem in report.problems:
        print(f"  {problem}", file=sys.stderr)
    return 1


def journal_export(args: argparse.Namespace) -> int:
    """``tablectl journal export [--phh] [--hand ID]``."""
    from controller.shell.export import export_events, export_phh  # noqa: PLC0415
    from controller.shell.journal import Journal, JournalError  # noqa: PLC0415

    try:
        journal = Journal.open_existing(_journal_path(args))
    except (JournalError, ConfigError) as exc:
        print(f"tablectl journal export: {exc}", file=sys.stderr)
        return 2
    try:
        if args.phh:
            texts = export_phh(journal, args.hand)
            if args.hand and not texts:
                print(f"no completed hand {args.hand} in the journal", file=sys.stderr)
                return 1
            sys.stdout.write("\n".join(texts))
        else:
            for line in export_events(journal, args.hand):
                print(line)
    finally:
        journal.close()
    return 0


def tail_command(args: argparse.Namespace) -> int:
    """``tablectl tail``."""
    from controller.shell.client import tail  # noqa: PLC0415

    host, port, table, prefix = _broker_target(args)
    return asyncio.run(
        tail(host, port, prefix, table, secure=args.secure, count=args.count, as_json=args.json)
    )


def dealer_command(args: argparse.Namespace) -> int:
    """``tablectl dealer COMMAND key=value…``."""
    from controller.shell.client import request  # noqa: PLC0415

    host, port, table, prefix = _broker_target(args)
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
    body = asyncio.run(
        request(host, port, prefix, table, args.command, fields, transaction, args.timeout)
    )
    print(json.dumps(body))
    return 0 if body.get("status") == "ok" else 1


def _broker_target(args: argparse.Namespace) -> tuple[str, int, str, str]:
    table, prefix = args.table, args.prefix
    host, port = "localhost", 1883
    if args.config is not None:
        config = load_config(args.config)
        table = table or config.table.id
        prefix = config.broker.prefix
        host, port = config.broker.host, config.broker.port
    url = args.broker.removeprefix("mqtt://")
    if args.config is None or args.broker != "mqtt://localhost:1883":
        host, _, port_text = url.partition(":")
        port = int(port_text) if port_text else 1883
    if not table:
        raise SystemExit("give --table or --config")
    return host, port, table, prefix
