"""Snapshots of the table state between hands, so a start does not replay the whole journal.

Replaying runs at some tens of thousands of inputs a second; a table deals about sixty inputs a
hand, so a week of play would take seconds to replay at every start. At the end of each hand the
shell stores the state (pickled) in the same transaction as the input that ended the hand, and a
start replays only the inputs after the newest snapshot.

A snapshot is used only by the very core that wrote it: its fingerprint is the SHA-256 of the
core's source files (and the Python version), so after an upgrade the journal is replayed in full
and the state is again exactly what the current rules make of the inputs. Snapshots live in the
state directory with the journal, which only the service can write; their digest catches a
damaged row, which is then ignored.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
from functools import cache
from pathlib import Path

import controller
from controller.table.state import TableState

#: The engine's packages and the modules of controller/ they import: every file whose change
#: can change what the core makes of an input (tests/shell/test_replay.py checks the imports).
_CORE_PARTS = ("table", "rules", "game")
_CORE_FILES = ("authority.py", "cards.py", "decks.py", "paths.py", "profiles.py", "uids.py")


def core_files() -> list[Path]:
    """The source files the fingerprint covers."""
    root = Path(controller.__file__).parent
    # every module of each part, those of its subpackages too (the event records' families)
    files = [p for part in _CORE_PARTS for p in sorted((root / part).rglob("*.py"))]
    return files + [root / name for name in _CORE_FILES if (root / name).is_file()]


@cache
def core_fingerprint() -> str:
    """The SHA-256 of the core's source files and the Python version."""
    digest = hashlib.sha256(f"{sys.version_info[0]}.{sys.version_info[1]}".encode())
    for path in core_files():
        name = path.relative_to(Path(controller.__file__).parent).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def dump_state(state: TableState) -> bytes:
    """The state as bytes."""
    return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


def load_state(blob: bytes) -> TableState:
    """The state of a snapshot written by this core (see the module docstring for why it is
    safe to unpickle)."""
    state = pickle.loads(blob)  # noqa: S301
    if not isinstance(state, TableState):
        raise TypeError(f"a snapshot holds a {type(state).__name__}, not a TableState")
    return state
