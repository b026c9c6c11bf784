"""The table between hands, written in a versioned format that later versions read.

At the end of each hand the shell writes the table state, in the same transaction as the input
that ended the hand, so a start replays only the inputs after the newest snapshot; and after an
upgrade the new version continues from it: the same journal, the same chain, the same epoch, with
or without the journal's oldest segments pruned.

A snapshot is one JSON document (``docs/snapshots.md``)::

    {"format": "tablectl.snapshot/2", "written_by": "0.2.0",
     "table_id": "T1", "epoch": "…", "seq": 1234, "input_id": 567,
     "chain": {"pos": 4321, "hash": "…"}, "state": {…}}

``state`` is the whole table state written by the rules of ``controller/shell/record_codec.py``:
seats and stacks, the button, the blinds, missed blinds and posts owed, the house's total, the
shuffler's deck and the decks awaiting their audit, the devices, the last hand. Its structure is
the format: ``tests/shell/test_snapshot_format.py`` pins the JSON Schema of each format number, so
a change to the state's records fails there until the format number goes up and a migration from
the one before is added to :data:`MIGRATIONS` (what a later version needs to read every older
snapshot). A snapshot of a newer format than this version knows is not read
(:class:`SnapshotUnreadableError`): a start then replays from the journal's genesis, or, when the
journal's start was pruned, stops with one line and exit status 5 (docs/cli.md).

Journals written before this format hold *pickled* snapshots, keyed by a fingerprint of the
core's source instead of a format name; a start reads them too (:func:`read_legacy`), once, and
the next hand's end writes the format.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller import __version__
from controller.shell.chain import Head, JournalError
from controller.shell.record_codec import CodecError, decoder, describe, encoder
from controller.table.state import TableState

#: The format this version writes; it reads this one and every one before (through MIGRATIONS).
#: 2: the rules profile has its betting structure (``betting.structure``, ``betting.cap``).
FORMAT = 2
FORMAT_PREFIX = "tablectl.snapshot/"
FORMAT_NAME = f"{FORMAT_PREFIX}{FORMAT}"


def _betting_structure(document: dict[str, Any]) -> dict[str, Any]:
    """Format 1 to 2: the rules profile gained its betting structure. Every table of format 1
    played no-limit (its profile had no such key), and the cap a fixed-limit table would have
    had is the default's; both written out as format 1 meant them, whatever later defaults are."""
    state = document["state"]
    profile = {"betting.structure": "no_limit", "betting.cap": 4, **state["profile"]}
    return {**document, "format": f"{FORMAT_PREFIX}2", "state": {**state, "profile": profile}}


#: ``MIGRATIONS[n]`` turns a format-``n`` document into a format-``n + 1`` one. A change to the
#: state's structure adds one (and bumps FORMAT): without it, later versions could not read the
#: snapshots of journals already in the field.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _betting_structure}

#: A snapshot row written before the format: the hex SHA-256 of the core that pickled it.
_LEGACY_KEY = re.compile(r"[0-9a-f]{64}")


class SnapshotUnreadableError(ValueError):
    """A snapshot this version cannot read; the message says why in one line."""


class SnapshotNeededError(JournalError):
    """No snapshot this version reads, and no replay from the journal's start instead (it was
    pruned): ``tablectl run`` exits with :data:`EXIT_STATUS`."""

    #: ``tablectl run``'s exit status for it (docs/cli.md; the unit does not restart it)
    exit_status = 5


@dataclass(frozen=True)
class Snapshot:
    """A table between hands and where it stands in its journal."""

    input_id: int  # the input that ended the hand
    epoch: str  # the journal's epoch at that input
    seq: int  # the last event that input gave
    chain: Head  # the chain's head after that input's transaction
    state: TableState
    format: str = FORMAT_NAME
    written_by: str = __version__


def encode(snapshot: Snapshot) -> bytes:
    """The snapshot as the format's bytes (compact JSON, UTF-8)."""
    document = {
        "format": FORMAT_NAME,
        "written_by": snapshot.written_by,
        "table_id": snapshot.state.table_id,
        "epoch": snapshot.epoch,
        "seq": snapshot.seq,
        "input_id": snapshot.input_id,
        "chain": {"pos": snapshot.chain.pos, "hash": snapshot.chain.hash},
        "state": encoder(TableState)(snapshot.state),
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def decode(blob: bytes) -> Snapshot:
    """A snapshot of this format or an older one; :class:`SnapshotUnreadableError` otherwise."""
    try:
        document = json.loads(blob)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotUnreadableError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise SnapshotUnreadableError("not a snapshot document")
    number = format_number(document.get("format"))
    if number > FORMAT:
        raise SnapshotUnreadableError(
            f"written in {FORMAT_PREFIX}{number} by tablectl {document.get('written_by', '?')}; "
            f"tablectl {__version__} reads {FORMAT_PREFIX}1 to {FORMAT}"
        )
    while number < FORMAT:
        try:
            document = MIGRATIONS[number](document)
        except (KeyError, TypeError) as exc:  # a document of that format without what it had
            raise SnapshotUnreadableError(f"{FORMAT_PREFIX}{number}: no {exc}") from None
        number += 1
    try:
        chain = document["chain"]
        state = decoder(TableState)(document["state"], "state")
        snapshot = Snapshot(
            input_id=_integer(document["input_id"]),
            epoch=str(document["epoch"]),
            seq=_integer(document["seq"]),
            chain=Head(_integer(chain["pos"]), str(chain["hash"])),
            state=state,
            format=str(document["format"]),
            written_by=str(document.get("written_by", "?")),
        )
    except (KeyError, TypeError) as exc:
        raise SnapshotUnreadableError(f"{FORMAT_NAME}: no {exc}") from None
    except CodecError as exc:
        raise SnapshotUnreadableError(f"{FORMAT_NAME}: {exc}") from None
    if snapshot.state.table_id != document.get("table_id"):
        raise SnapshotUnreadableError("its table_id is not its state's")
    return snapshot


def format_number(name: Any) -> int:
    """The number of a format name (``tablectl.snapshot/3`` → 3)."""
    if not isinstance(name, str) or not name.startswith(FORMAT_PREFIX):
        raise SnapshotUnreadableError(f"not a {FORMAT_PREFIX}N document: format {name!r}")
    number = name.removeprefix(FORMAT_PREFIX)
    if not number.isdigit() or int(number) < 1:
        raise SnapshotUnreadableError(f"an unknown format {name!r}")
    return int(number)


def is_legacy(key: str) -> bool:
    """Whether a snapshot row's key names a pickled snapshot (written before the format)."""
    return _LEGACY_KEY.fullmatch(key) is not None


def read_legacy(blob: bytes) -> TableState:
    """The state of a pickled snapshot, checked to be whole under this version's records.

    Pickles are loaded only from the journal, in the service's own state directory, which only
    the service can write (docs/security.md); the state is then written and read back through
    the format, so a record pickled with fields this version's records do not have (or without
    one they need) is refused here rather than met halfway through a hand.
    """
    try:
        state = pickle.loads(blob)  # noqa: S301 (the journal's own rows: see the docstring)
    except Exception as exc:  # an unpickling error of any kind: a class moved, a field renamed
        raise SnapshotUnreadableError(
            f"a pickled snapshot this version cannot load: {exc!r}"
        ) from None
    if not isinstance(state, TableState):
        raise SnapshotUnreadableError(f"a pickled snapshot holds a {type(state).__name__}")
    try:
        written = encoder(TableState)(state)
        return decoder(TableState)(json.loads(json.dumps(written)), "state")  # type: ignore[no-any-return]
    except (AttributeError, TypeError, ValueError) as exc:
        raise SnapshotUnreadableError(f"a pickled snapshot of other records: {exc}") from None


def schema() -> dict[str, Any]:
    """The JSON Schema of this format's documents (config/schemas/snapshot.schema.json; its
    digest pins the format's structure to its number)."""
    state = describe(TableState)
    defs = state.pop("$defs")
    state.pop("$schema")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:tablectl:schema:snapshot",
        "title": FORMAT_NAME,
        "type": "object",
        "properties": {
            "format": {"const": FORMAT_NAME},
            "written_by": {"type": "string", "description": "the version that wrote it"},
            "table_id": {"type": "string"},
            "epoch": {"type": "string", "description": "the journal's epoch at input_id"},
            "seq": {"type": "integer", "description": "the last event of input_id"},
            "input_id": {"type": "integer", "description": "the input that ended the hand"},
            "chain": {
                "type": "object",
                "description": "the chain's head after input_id's transaction",
                "properties": {"pos": {"type": "integer"}, "hash": {"type": "string"}},
                "required": ["pos", "hash"],
                "additionalProperties": False,
            },
            "state": state,
        },
        "required": ["format", "table_id", "epoch", "seq", "input_id", "chain", "state"],
        "additionalProperties": False,
        "$defs": defs,
    }


def _integer(value: Any) -> int:
    if type(value) is not int:
        raise CodecError(f"an integer expected, not {value!r}")
    return value
