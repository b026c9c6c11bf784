"""How a TSP/1 shuffler rates its faults: a door or a tray is a warning, the rest stop it.

The simulator raises the lid's fault as a warning (it clears itself when the lid closes); a jam,
a failed self-test or anything else stops the device (error). The scenario runner's virtual
shuffler rates the faults it injects the same way, so a fault reads the same in both modes.
"""

from __future__ import annotations

from typing import Literal

Severity = Literal["info", "warn", "error", "critical"]

#: Faults a TSP/1 shuffler raises as warnings: the device pauses, nothing is lost.
WARNINGS = frozenset({"LID_OPEN", "SERVICE_COVER_OPEN", "TRAY_NOT_SEATED", "COUNT_MISMATCH"})


def fault_severity(code: str) -> Severity:
    """The severity a TSP/1 shuffler raises fault ``code`` with."""
    return "warn" if code in WARNINGS else "error"
