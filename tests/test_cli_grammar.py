"""One grammar for the whole command line: every verb and sub-verb says what it does, an option's
name means one thing wherever it appears, and ``docs/cli.md`` names the verbs there are and the
options they take.

The tree is read from what a person reads, each command's ``--help``: argparse has no public way
to list a parser's sub-parsers or its options (``_actions`` and ``_SubParsersAction`` are its
internals), and the help is what the grammar is for anyway. ``COLUMNS`` is set wide so that no
line wraps: an option and its help, a sub-verb and its help, a description, one line each.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from unittest import mock

import pytest

from controller.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

#: What each option name that several commands share means, as a pattern its help matches
#: wherever it appears. A name not here may be used by one command only; docs/cli.md's
#: "Shared options" table has a row for each of these names, and only for them.
MEANINGS: dict[str, str] = {
    "--config": r"config file",  # a table's, or under `pit` the pit's: never a journal
    "--journal": r"\bjournal file\b",
    "--out": r"^where .+ go(es)?\b",  # a new file, or the directory of the files written
    "--json": r"\bJSON\b",
    "--broker": r"mqtt://host:port",
    "--table": r"\btable id\b",
    "--prefix": r"\btopic prefix\b",
    "--username": r"\bbroker user\b",
    "--password-file": r"\bpassword\b",
    # TLS only: the signing key that sat beside them is --signing-key now
    "--ca-file": r"^TLS: ",
    "--cert-file": r"^TLS: ",
    "--key-file": r"^TLS: ",
    "--signing-key": r"\bsign\b",
    "--signing-key-id": r"\bsigning key's id\b",
    "--role": r"\brole\b",
    "--profile": r"\brules profile\b",
    "--hand": r"\bhand\b",
    "--core": r"\bpure core\b",
    "--reader": r"\breader\b",
    "--seed": r"\bseed\b",
    "--order": r"\border\b",
    "--link": r"\bsymlink\b",
    "--control": r"\bJSON-line\b|\bcontrol socket\b",
    "--scenario": r"\bTOML\b",
    "--baud": r"\bpace\b",
    "--serial": r"\bserial number\b",
    "--chunk": r"\blargest write\b",
    "--antennas": r"\bantennas\b",
    "--tag": r"\btag\b",
    "--deck": r"\bdeck manifest\b",
    "--trace": r"\bevery byte\b",
}

#: Names given up because they sat beside a name meaning something else (``dealer --key``, the
#: signing key, beside ``--key-file``, the TLS key): none may come back.
RETIRED = ("--key", "--key-id", "--dir")

#: Commands whose parsers are another piece of work's to describe (the pit's users, being
#: changed beside this): held to everything but the description until then; take each out
#: once it has one.
UNDESCRIBED = {("pit",), ("pit", "user"), ("pit", "user", "add")}


@dataclass
class Command:
    """One verb or sub-verb, as its ``--help`` shows it."""

    path: tuple[str, ...]
    description: str = ""
    options: dict[str, str] = field(default_factory=dict)  # name -> help, -h/--help included
    subverbs: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " ".join(self.path)


def help_of(path: tuple[str, ...]) -> str:
    out = io.StringIO()
    with (
        mock.patch.dict(os.environ, {"COLUMNS": "2000"}),
        contextlib.redirect_stdout(out),
        pytest.raises(SystemExit) as stopped,
    ):
        main([*path, "--help"])
    assert stopped.value.code == 0, path
    return out.getvalue()


def _is_section(block: list[str]) -> bool:
    return block[0].endswith(":") and all(line.startswith(" ") for line in block[1:])


def parse_help(path: tuple[str, ...], text: str) -> Command:
    """The description, options and sub-verbs of a ``--help``."""
    command = Command(path)
    blocks = [block.splitlines() for block in text.strip("\n").split("\n\n")]
    assert blocks[0][0].startswith("usage: tablectl"), text
    rest = blocks[1:]
    if rest and not _is_section(rest[0]):
        command.description = " ".join(rest[0])
        rest = rest[1:]
    for block in rest:
        assert _is_section(block), (path, block)
        last: list[str] = []  # the names the next continuation line is help for
        for line in block[1:]:
            if match := re.match(r"^  (-\S.*?)(?:\s{2,}(\S.*))?$", line):
                last = [part.split()[0] for part in match.group(1).split(", ")]
                for name in last:
                    command.options[name] = match.group(2) or ""
            elif match := re.match(r"^    (\S+)(?:\s{2,}\S.*)?$", line):
                command.subverbs.append(match.group(1))
                last = []
            elif line.startswith(" " * 5) and last:  # help too long to share the line
                for name in last:
                    command.options[name] = (command.options[name] + " " + line.strip()).strip()
            else:
                last = []  # a positional argument, or the sub-verbs' own heading
    return command


@cache
def commands() -> dict[tuple[str, ...], Command]:
    """Every command from ``tablectl`` down, by its path."""
    found: dict[tuple[str, ...], Command] = {}

    def walk(path: tuple[str, ...]) -> None:
        command = parse_help(path, help_of(path))
        found[path] = command
        for sub in command.subverbs:
            walk((*path, sub))

    walk(())
    return found


def verbs() -> dict[tuple[str, ...], Command]:
    return {path: c for path, c in commands().items() if path}


def shared_options() -> dict[str, list[Command]]:
    """Every option name on more than one command (help aside), and the commands."""
    having: dict[str, list[Command]] = {}
    for command in verbs().values():
        for name in command.options:
            having.setdefault(name, []).append(command)
    return {n: cs for n, cs in having.items() if len(cs) > 1 and n not in ("-h", "--help")}


def doc_sections() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    title = ""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
        sections.setdefault(title, []).append(line)
    return sections


def table_rows(section: str) -> Iterator[list[str]]:
    """The cells of each row of the table in ``section`` of docs/cli.md, header aside."""
    rows = [line for line in doc_sections()[section] if line.startswith("|")]
    for row in rows[2:]:
        yield [cell.strip() for cell in row.strip("|").split(" | ")]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def options_in(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))


def test_the_help_is_read_whole() -> None:
    # the reading of --help itself: a parser that missed the tree would pass everything below
    tree = commands()
    assert ("journal", "verify") in tree
    assert ("sim", "shuffler") in tree
    assert tree[("dealer",)].options["--key-file"].startswith("TLS: ")
    assert tree[("tail",)].options["--config"].startswith("the table's config file")
    assert len(tree) > 30


def test_every_verb_and_sub_verb_says_what_it_does_in_sentences() -> None:
    missing = [c.name for p, c in verbs().items() if not c.description and p not in UNDESCRIBED]
    assert not missing, f"no description=: {missing}"
    fragments = [
        f"{c.name}: {c.description!r}"
        for c in commands().values()
        if c.description and not (c.description[0].isupper() and c.description.endswith("."))
    ]
    assert not fragments, "a description is sentences:\n" + "\n".join(fragments)


def test_an_option_name_means_one_thing_wherever_it_appears() -> None:
    unreviewed = sorted(set(shared_options()) - set(MEANINGS))
    assert not unreviewed, f"shared by several verbs, but not in MEANINGS: {unreviewed}"
    wrong = [
        f"{c.name} {name}: {c.options[name]!r} is not {pattern!r}"
        for name, pattern in MEANINGS.items()
        for c in verbs().values()
        if name in c.options and not re.search(pattern, c.options[name])
    ]
    assert not wrong, "\n".join(wrong)
    back = [f"{c.name} {n}" for c in verbs().values() for n in RETIRED if n in c.options]
    assert not back, f"a retired name is back: {back}"


def test_dealer_takes_no_part_of_an_option_for_the_whole() -> None:
    # `--key` would otherwise be read as --key-file: the signing key taken for the TLS key
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stopped:
        main(["dealer", "--key", "me.key", "start_hand"])
    assert stopped.value.code == 2
    assert "unrecognized arguments: --key" in err.getvalue()


def test_docs_cli_names_every_verb_there_is_and_only_those() -> None:
    documented = {tuple(ticked(row[0])[0].split()[1:]) for row in table_rows("Verbs")}
    there = set(verbs())
    assert not there - documented, f"not in docs/cli.md: {sorted(there - documented)}"
    assert not documented - there, f"no such verb: {sorted(documented - there)}"


def test_the_options_docs_cli_gives_a_verb_are_that_verbs() -> None:
    for row in table_rows("Verbs"):
        command = verbs()[tuple(ticked(row[0])[0].split()[1:])]
        unknown = options_in(row[1]) - set(command.options)
        assert not unknown, f"docs/cli.md: {command.name} has no {sorted(unknown)}"


def test_the_shared_options_table_is_the_verbs_that_have_each() -> None:
    rows = {ticked(row[0])[0].split()[0]: row for row in table_rows("Shared options")}
    assert set(rows) == set(MEANINGS), "docs/cli.md's shared options are MEANINGS' names"
    for name, row in rows.items():
        listed = {tuple(verb.split()) for verb in ticked(row[2])}
        having = {c.path for c in verbs().values() if name in c.options}
        assert listed == having, f"{name}: documented for {listed ^ having} wrongly"


def test_every_option_docs_cli_names_exists() -> None:
    known = {name for c in commands().values() for name in c.options}
    named = options_in(DOC.read_text(encoding="utf-8")) - set(RETIRED)
    assert not named - known, f"docs/cli.md names options nothing has: {sorted(named - known)}"
