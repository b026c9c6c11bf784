"""``tablectl journal``: ``verify`` the journal's hash chain, ``export`` its events, hands,
rulings or the house's take, ``salvage`` a damaged one."""

from __future__ import annotations

import argparse
import codecs
import json
import sqlite3
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.config import SQLITE_HEADER, ConfigError, load_config
from controller.shell.cli import (
    CONFIG_DEFAULT,
    add_verb,
    add_verb_group,
    config_path,
    journal_failure,
)

if TYPE_CHECKING:
    from controller.shell.journal import Journal

#: How much of a file tells a journal from a text file.
_SNIFF = 4096


def add_parsers(subparsers: Any) -> None:
    """Register ``journal``."""
    journal_verbs = add_verb_group(
        subparsers,
        "journal",
        "verify|export|salvage|snapshot",
        help="verify, export or salvage the journal",
        description="Work on a table's journal, the SQLite file of everything the table did: "
        "check its hash chain, export it (both safe while the daemon writes it), or salvage a "
        "damaged one.",
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
        (
            "snapshot",
            journal_snapshot,
            "print the table between hands that a start continues from",
            "Print the journal's newest snapshot this version reads (the table between hands, "
            "which a start or an upgrade continues from; docs/snapshots.md) as JSON, or with "
            "--schema the JSON Schema of the format this version writes. Exit status 1: no "
            "snapshot this version reads (each one found and why is named); 2: no journal "
            "there, or the file is not a journal.",
        ),
    ):
        sub = add_verb(
            journal_verbs,
            name,
            handler,
            help=text,
            description=f"{description} The journal is --journal FILE, else the one the "
            f"table's config names (--config, else {CONFIG_DEFAULT}).",
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
        if name == "snapshot":
            sub.add_argument(
                "--schema", action="store_true", help="the format's JSON Schema, no journal read"
            )
        if name == "salvage":
            sub.add_argument(
                "--out",
                type=Path,
                required=True,
                metavar="FILE",
                help="where the new journal goes (a new file)",
            )


class NotAJournalError(ValueError):
    """A file given as a journal that is no journal at all; the message says what it is."""


def _journal_path(args: argparse.Namespace) -> Path:
    """The journal the journal verbs work on: NotAJournalError when the file is something else
    (a config given as ``--journal``), which salvage could do nothing with."""
    path = Path(args.journal) if args.journal is not None else None
    if path is None:
        path = load_config(config_path(args.config)).journal.path
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


def _open_journal(args: argparse.Namespace, verb: str) -> Journal | None:
    """The journal ``journal VERB`` works on, opened on a connection that cannot write (the
    daemon's is the journal's one writer, docs/operations.md); None once the line saying why
    it cannot be (exit status 2) is printed."""
    from controller.shell.journal import Journal, JournalError  # noqa: PLC0415

    try:
        return Journal.open_existing(_journal_path(args), read_only=True)
    except (JournalError, ConfigError, NotAJournalError) as exc:
        print(f"tablectl journal {verb}: {exc}", file=sys.stderr)
        return None


def journal_verify(args: argparse.Namespace) -> int:
    """``tablectl journal verify``: 0 when the chain is intact (breaks maintenance accepted are
    listed), 1 with every other break, or the one line that says the file is damaged."""
    from controller.shell.chain import damage_advice  # noqa: PLC0415

    journal = _open_journal(args, "verify")
    if journal is None:
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
    from controller.phh import PhhError, bulk_phh  # noqa: PLC0415
    from controller.shell.export import (  # noqa: PLC0415
        export_drop,
        export_events,
        export_phh,
        export_rulings,
    )
    from controller.shell.journal import JournalError  # noqa: PLC0415
    from controller.table.codec import CodecError  # noqa: PLC0415

    journal = _open_journal(args, "export")
    if journal is None:
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
    except PhhError as exc:  # a hand PHH cannot say: the events can
        print(f"tablectl journal export: {exc}", file=sys.stderr)
        return 1
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
            section = load_config(config_path(args.config)).table
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


def journal_snapshot(args: argparse.Namespace) -> int:
    """``tablectl journal snapshot [--schema]``: the newest snapshot this version reads, as the
    format's document (a pickled one of an earlier version as its state, ``"format":
    "pickled"``)."""
    from controller.shell import checkpoint  # noqa: PLC0415
    from controller.shell.record_codec import encoder  # noqa: PLC0415
    from controller.table.state import TableState  # noqa: PLC0415

    if args.schema:
        print(json.dumps(checkpoint.schema(), indent=2))
        return 0
    journal = _open_journal(args, "snapshot")
    if journal is None:
        return 2
    refused = []
    try:
        for input_id, key, blob in journal.snapshots():
            try:
                if checkpoint.is_legacy(key):
                    state = encoder(TableState)(checkpoint.read_legacy(blob))
                    document = {"format": "pickled", "input_id": input_id, "state": state}
                else:
                    checkpoint.decode(blob)
                    document = json.loads(blob)
            except checkpoint.SnapshotUnreadableError as exc:
                refused.append(f"input {input_id}: {exc}")
                continue
            print(json.dumps(document, indent=2, ensure_ascii=False))
            return 0
    finally:
        journal.close()
    print(
        f"tablectl journal snapshot: {journal.path}: no snapshot this version reads",
        file=sys.stderr,
    )
    for line in refused:
        print(f"  {line}", file=sys.stderr)
    return 1
