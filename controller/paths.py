"""Where the shipped data files (profiles, deck manifests, schemas) are.

In a checkout they sit in ``config/`` beside the packages. An installed wheel puts them under
``<prefix>/share/tablectl/config``: ``sys.prefix`` in a virtual environment (the supported way),
but another prefix when pip installs into one that is not the interpreter's (``--prefix``,
``--user``, a system pip writing to ``/usr/local``). The installed distribution's own file list
(its RECORD) says where they went, so that is asked first; ``sys.prefix`` is the fallback.
``TABLECTL_CONFIG_DIR`` overrides all of these.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent / "config"
_INSTALLED = Path(sys.prefix) / "share" / "tablectl" / "config"
_MARKER = ("share", "tablectl", "config", "table.example.toml")


def config_dir() -> Path:
    """The directory holding ``profiles/``, ``decks/`` and the example configs."""
    override = os.environ.get("TABLECTL_CONFIG_DIR")
    if override:
        return Path(override)
    if (_CHECKOUT / "profiles").is_dir():
        return _CHECKOUT
    return _recorded() or _INSTALLED


@cache
def _recorded() -> Path | None:
    """The config directory as the installed distribution's RECORD lists it, if it does."""
    try:
        dist = metadata.distribution("tablectl")
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.parts[-len(_MARKER) :] == _MARKER:
            return Path(str(dist.locate_file(file))).resolve().parent
    return None


def directory_problem(directory: Path, *, create: bool) -> str | None:
    """Why a process could not write files in ``directory`` here (None: it can).

    With ``create``, a missing directory is fine when it can be made (its nearest existing
    ancestor is a writable directory), as the daemon makes its journal's.
    """
    if directory.is_dir():
        if not os.access(directory, os.W_OK | os.X_OK):
            return f"directory {directory} is not writable"
        return None
    if directory.exists():
        return f"{directory} is not a directory"
    if not create:
        return f"directory {directory} does not exist"
    ancestor = directory.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        return (
            f"directory {directory} does not exist and cannot be made "
            f"({ancestor} is not a writable directory)"
        )
    return None
