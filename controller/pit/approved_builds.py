"""The builds of tablectl a floor lets its tables run, and the alarm for a table running another.

A regulator approves a build: the identity a wheel gives (``tablectl version --wheel FILE``,
controller/build_identity.py), not a version string, which any modified copy can carry. The
pit's ``[pit] approved_builds`` names a TOML file listing them, like the table's approved-device
list::

    [[build]]
    version = "0.1.0"
    record_sha256 = "3f0c…"   # 64 hex digits
    note = "GLI letter 2026-117"   # optional: why it is on the list

Each table's birth names the build it runs (``build`` in its status) and how many of its installed
files are not as shipped (``modified``); a table whose build is not on the list, whose files are
not as shipped, a development checkout, or an older table whose birth names none gets the alarm
``build.unapproved`` beside the alarms of its own status: on the floor map, the alarms page and
``GET /api/tables`` (docs/pit.md). Without the setting, no build is judged.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.pit.query_rows import TableRow

#: The alarm a table running a build not on the list gets.
UNAPPROVED = "build.unapproved"
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class ApprovedBuildsError(ValueError):
    """An approved-builds file that cannot be read, or an entry not of its shape."""


@dataclass(frozen=True, slots=True)
class ApprovedBuild:
    """One build a regulator approved."""

    version: str
    record_sha256: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class ApprovedBuilds:
    """The list, by identity."""

    builds: Mapping[str, ApprovedBuild]

    def alarm_for(self, build: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The ``build.unapproved`` alarm for a table whose birth named ``build`` (None: the
        build is approved)."""
        if build is None:
            detail = "its birth names no build (a tablectl older than build identities)"
        elif build.get("editable") is True:
            detail = f"a development checkout of {build.get('version')}, not an installed wheel"
        elif build.get("record_sha256") in self.builds and build.get("modified"):
            count = build["modified"]
            detail = (
                f"an approved build ({build.get('version')}) whose installed files are not as "
                f"shipped: {count} changed, missing or added (`tablectl version --verify` there)"
            )
        elif build.get("record_sha256") in self.builds:
            return None
        else:
            digest = str(build.get("record_sha256"))
            detail = f"build {digest[:16]}… ({build.get('version')}) is not on the approved list"
        return {"alarm": UNAPPROVED, "detail": detail, "since": None}

    def judge(self, tables: Sequence[TableRow]) -> list[TableRow]:
        """The tables, each running a build not approved with the alarm added to its own."""
        judged = []
        for table in tables:
            alarm = self.alarm_for(table["build"])
            alarms = table["alarms"] if alarm is None else [*table["alarms"], alarm]
            judged.append(TableRow(**{**table, "alarms": alarms}))
        return judged


def load_approved_builds(path: Path) -> ApprovedBuilds:
    """The approved builds a file lists (ApprovedBuildsError: why it cannot be used)."""
    try:
        document = tomllib.loads(path.read_text("utf-8"))
    except OSError as exc:
        raise ApprovedBuildsError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ApprovedBuildsError(f"{path}: not valid TOML ({exc})") from None
    entries = document.get("build", [])
    unknown = set(document) - {"build"}
    if unknown or not isinstance(entries, list):
        raise ApprovedBuildsError(f"{path}: a list of [[build]] entries and nothing else")
    builds: dict[str, ApprovedBuild] = {}
    for number, entry in enumerate(entries, 1):
        where = f"{path}: build {number}"
        if not isinstance(entry, dict) or set(entry) - {"version", "record_sha256", "note"}:
            raise ApprovedBuildsError(f"{where}: version, record_sha256 and an optional note")
        version, digest = entry.get("version"), entry.get("record_sha256")
        note = entry.get("note", "")
        if not isinstance(version, str) or not version:
            raise ApprovedBuildsError(f"{where}: version is a non-empty string")
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise ApprovedBuildsError(
                f"{where}: record_sha256 is the 64 hex digits `tablectl version --wheel` prints"
            )
        if not isinstance(note, str):
            raise ApprovedBuildsError(f"{where}: note is a string")
        builds[digest] = ApprovedBuild(version, digest, note)
    return ApprovedBuilds(builds)


def judged(approved: ApprovedBuilds | None, tables: Sequence[TableRow]) -> list[TableRow]:
    """The tables as the console and the API show them: with ``build.unapproved`` where a list
    is set and a table's build is not on it."""
    return list(tables) if approved is None else approved.judge(tables)
