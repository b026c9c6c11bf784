"""Which build of tablectl is installed here, and whether its files are the ones it shipped with.

A wheel's ``RECORD`` (PEP 376, PEP 627) names every file the wheel holds with the SHA-256 of its
bytes (urlsafe base64, no padding); an installer copies those lines into the installed
``RECORD`` and adds its own (``INSTALLER``, ``REQUESTED``, ``direct_url.json``, bytecode). So:

* **the build identity** is the version and a SHA-256 over the wheel's own lines, each file's
  name and hash, sorted, the installer's additions left out and a data file named from its
  ``share/`` on (the wheel says ``tablectl-X.data/data/share/…``, an installation
  ``../../../share/…``). The same wheel gives the same identity wherever and however it is
  installed, and the wheel file gives it too (``tablectl version --wheel FILE``): a regulator
  compares a table's identity with the approved wheel's. The birth message carries it
  (docs/mqtt.md);
* **verifying** (``tablectl version --verify``) reads every file ``RECORD`` names and compares
  its hash: a file *changed* (its bytes are not the shipped ones), *missing*, or *added* (a file
  in one of the installed packages' directories that ``RECORD`` does not name: a dropped-in
  module is code that runs). Compiled bytecode (``__pycache__``) is left out: Python writes it.

Everything comes from :mod:`importlib.metadata`'s public API (``files``, ``hash``,
``locate_file``) and :mod:`zipfile`. An editable install (a development checkout) has no
``RECORD`` line for its modules: its identity says so, and there is nothing to verify.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from controller import __version__

#: The distribution this module identifies.
DISTRIBUTION = "tablectl"
#: The packages the wheel installs: their directories are searched for added files.
PACKAGES = ("controller", "drivers", "simulators")

#: ``tablectl version --verify``'s exit codes: the files are the shipped ones; some are not;
#: nothing to verify against (not installed from a wheel).
VERIFIED, MODIFIED, UNVERIFIABLE = 0, 1, 3


@dataclass(frozen=True, slots=True)
class BuildIdentity:
    """The version and the digest of the wheel's files (None: no ``RECORD`` found)."""

    version: str
    record_sha256: str | None
    editable: bool

    def as_json(self) -> dict[str, Any]:
        """As the birth message and ``tablectl version --json`` write it."""
        return {
            "version": self.version,
            "record_sha256": self.record_sha256,
            "editable": self.editable,
        }

    def __str__(self) -> str:
        if self.record_sha256 is None:
            return f"tablectl {self.version} (not installed from a wheel: no RECORD)"
        kind = " editable" if self.editable else ""
        return f"tablectl {self.version}{kind} build {self.record_sha256}"


@dataclass
class Verification:
    """What ``RECORD`` says against what is on disk."""

    checked: int = 0
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every file is as shipped and none was added."""
        return not (self.changed or self.missing or self.added)


def _distribution() -> metadata.Distribution | None:
    try:
        return metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def _editable(dist: metadata.Distribution) -> bool:
    """Installed from a checkout in development mode (PEP 660): RECORD names no module."""
    names = [str(p) for p in dist.files or ()]
    return not any(n.split("/", 1)[0] in PACKAGES and n.endswith(".py") for n in names)


#: What an installer adds to RECORD (PEP 376, PEP 610), beside the console scripts it generates
#: for the entry points: not the wheel's.
_INSTALLER_FILES = frozenset({"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"})


def files_digest(lines: Iterable[tuple[str, str]]) -> str:
    """The SHA-256 over the wheel's files: ``(name, hash)`` pairs as RECORD gives them (an
    installed RECORD or the wheel's own), installer files and unhashed entries left out."""
    kept = []
    for name, hashed in lines:
        if not hashed or name.rsplit("/", 1)[-1] in _INSTALLER_FILES:
            continue
        if name.startswith("../") and "/share/" not in name:
            continue  # outside the packages and the data: the console scripts it generates
        # a data file: named the same however deep the installation's prefix is
        shared = "share/" + f"/{name}".split("/share/", 1)[1] if "/share/" in f"/{name}" else name
        kept.append(f"{shared},{hashed}\n")
    return hashlib.sha256("".join(sorted(kept)).encode()).hexdigest()


@cache
def identity() -> BuildIdentity:
    """The build identity of the installed tablectl (read once a process: it is what was
    installed when the process started)."""
    dist = _distribution()
    if dist is None:
        return BuildIdentity(__version__, None, editable=True)
    lines = [
        (str(e), f"{e.hash.mode}={e.hash.value}" if e.hash is not None else "")
        for e in dist.files or ()
    ]
    return BuildIdentity(dist.version, files_digest(lines), editable=_editable(dist))


@cache
def birth_build() -> dict[str, Any]:
    """What the birth message says of the build: its identity, and how many installed files are
    not as shipped (``modified``: changed, missing or added, counted once a process, when the
    daemon first publishes its birth; null for a development checkout, which has nothing to
    verify against). The pit raises an alarm for a table whose files are not as shipped."""
    build = identity()
    dist = _distribution()
    if dist is None or build.editable:
        return {**build.as_json(), "modified": None}
    found = verify(dist)
    return {**build.as_json(), "modified": len(found.changed + found.missing + found.added)}


def wheel_identity(wheel: Path) -> BuildIdentity:
    """The build identity a wheel file gives wherever it is installed."""
    with zipfile.ZipFile(wheel) as archive:
        record = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
        text = archive.read(record).decode()
    version = record.split("/", 1)[0].removesuffix(".dist-info").rpartition("-")[2]
    lines = [tuple(row.split(",")[:2]) for row in text.splitlines() if row.count(",") >= 2]
    return BuildIdentity(version, files_digest((n, h) for n, h in lines), editable=False)


def _file_hash(path: Path) -> str:
    """``sha256=…`` as RECORD writes it: urlsafe base64 of the digest, without padding."""
    digest = hashlib.sha256(path.read_bytes()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def verify(dist: metadata.Distribution) -> Verification:
    """Every file ``RECORD`` names, hashed and compared; and the files added beside them."""
    found = Verification()
    named: set[Path] = set()
    for entry in dist.files or ():
        path = Path(str(dist.locate_file(entry))).resolve()
        named.add(path)
        if entry.hash is None:  # RECORD itself, and files an installer writes (INSTALLER)
            continue
        found.checked += 1
        if not path.is_file():
            found.missing.append(str(entry))
        elif f"{entry.hash.mode}={entry.hash.value}" != _file_hash(path):
            found.changed.append(str(entry))
    for root in _package_roots(dist):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.resolve() not in named:
                found.added.append(str(path))
    return found


def _package_roots(dist: metadata.Distribution) -> Iterator[Path]:
    """The installed packages' directories (site-packages/controller, …)."""
    seen: set[Path] = set()
    for entry in dist.files or ():
        top = str(entry).split("/", 1)[0]
        if top in PACKAGES:
            root = Path(str(dist.locate_file(top))).resolve()
            if root not in seen and root.is_dir():
                seen.add(root)
                yield root


# --------------------------------------------------------------------------- tablectl version


def add_parsers(verbs: Any) -> None:
    """``tablectl version [--verify] [--json]``."""
    parser = verbs.add_parser(
        "version",
        help="the installed build; --verify checks every installed file against the wheel",
        description=(
            "Print the version and the build identity (the SHA-256 of the wheel's RECORD). "
            "--verify compares every installed file with the hash RECORD gives it and names "
            "each changed, missing or added one. Exit: 0 every file as shipped, 1 some not, "
            "3 nothing to verify against (not installed from a wheel). --wheel FILE prints the "
            "identity a wheel gives once installed, to compare with a table's."
        ),
    )
    parser.add_argument("--verify", action="store_true", help="check the installed files")
    parser.add_argument(
        "--wheel", type=Path, metavar="FILE", help="the identity this wheel file gives, installed"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(handler=_version)


def _version(args: argparse.Namespace) -> int:
    if args.wheel is not None:
        try:
            build = wheel_identity(args.wheel)
        except (OSError, zipfile.BadZipFile, StopIteration) as exc:
            print(f"{args.wheel}: not a wheel ({exc or 'no RECORD'})", file=sys.stderr)
            return 2
        print(json.dumps(build.as_json()) if args.json else build)
        return VERIFIED
    build = identity()
    if not args.verify:
        print(json.dumps(build.as_json()) if args.json else build)
        return VERIFIED
    dist = _distribution()
    if dist is None or build.editable:
        print(f"{build}: nothing to verify against", file=sys.stderr)
        return UNVERIFIABLE
    found = verify(dist)
    if args.json:
        body = {**build.as_json(), "checked": found.checked, "changed": found.changed}
        print(json.dumps({**body, "missing": found.missing, "added": found.added}))
    else:
        print(build)
        for kind, names in (("changed", found.changed), ("missing", found.missing)):
            for name in names:
                print(f"{kind}: {name}")
        for name in found.added:
            print(f"added: {name}")
        verdict = "every file as shipped" if found.ok else "NOT as shipped"
        print(f"{found.checked} files checked: {verdict}")
    return VERIFIED if found.ok else MODIFIED
