"""Whether a FEIG reader on the line is one the Board approved (``[[reader]]`` entries).

A FEIG ID ISC reader cannot prove what firmware it runs; what it can be held to is what it says
it is: its ``[0x65]`` answer's SW-TYPE (the reader type, ID ISC.M02 manual Annex K p. 106) and
firmware revision (SW-REV and D-REV, §6.4 p. 47). A reader is refused unless an entry of
``config/approved-devices.toml`` names its vendor FEIG, its SW-TYPE and, when the entry lists
revisions, its revision.
"""

from __future__ import annotations

from pathlib import Path

from drivers.approvals import ReaderEntry, read_approval_file
from drivers.errors import DeviceRejectedError
from drivers.rfid.feig.protocol import SoftwareVersion

VENDOR = "FEIG ELECTRONIC"


class ReaderApprovals:
    """The FEIG reader models a table may use."""

    def __init__(self, entries: list[ReaderEntry]) -> None:
        self.entries = [entry for entry in entries if entry.vendor == VENDOR]

    @classmethod
    def load(cls, path: Path) -> ReaderApprovals:
        """Read the table's approved-device list (an unusable file: ApprovalConfigError)."""
        return cls(read_approval_file(path).reader)

    def check(self, address: int, version: SoftwareVersion) -> ReaderEntry:
        """The entry this reader matches; :class:`DeviceRejectedError` in one line if none."""
        same_type = [entry for entry in self.entries if entry.sw_type == version.sw_type]
        where = f"the reader at COM-ADR {address}"
        if not same_type:
            raise DeviceRejectedError(
                f"{where} is a {version.reader_type} (SW-TYPE {version.sw_type}), "
                f"not an approved {VENDOR} reader"
            )
        for entry in same_type:
            if not entry.firmware or version.firmware in entry.firmware:
                return entry
        allowed = ", ".join(sorted({r for entry in same_type for r in entry.firmware}))
        raise DeviceRejectedError(
            f"{where} runs {version.reader_type} firmware {version.firmware}, "
            f"not an approved revision ({allowed})"
        )
