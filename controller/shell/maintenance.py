"""Requests the shell answers itself: maintenance's decision after an integrity alarm and the
pit's confirmation that it stored the table's events (the journal's retention). The dealer's
``call_floor`` is a core input (FLOOR-CALL, controller/rules/floor_call.py): it may hold the hand.

They travel like the dealer's (a request topic, or a line on the console socket; signed, at
most once per transaction) but never reach the core: the shell acts on the journal itself
(controller/shell/integrity.py, docs/operations.md "The journal's integrity").
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.table.inputs import COMMANDS, DealerInput


@dataclass(frozen=True, slots=True)
class JournalAccept(DealerInput):
    """Accept the journal as it is after an integrity alarm; the table goes on in a new epoch.

    ``reason`` is maintenance's own account (what was checked, why the journal is kept), and is
    journaled with the decision.
    """

    reason: str


@dataclass(frozen=True, slots=True)
class Stored(DealerInput):
    """The pit ``pit`` has committed every event of epoch ``epoch`` numbered 1..``seq``.

    Recorded outside the chain (the journal's ``confirmations``); a segment whose events are
    all confirmed may be pruned (controller/shell/retention.py, docs/mqtt.md).
    """

    pit: str
    epoch: str
    seq: int


#: The shell's own request verbs.
SHELL_COMMANDS: dict[str, type[DealerInput]] = {
    "journal_accept": JournalAccept,
    "stored": Stored,
}

#: Every request verb a table takes: the core's commands and the shell's.
REQUESTS: dict[str, type[DealerInput]] = {**COMMANDS, **SHELL_COMMANDS}
