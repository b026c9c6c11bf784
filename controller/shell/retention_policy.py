"""What retention may do: which rows a round may archive and which segments it may prune, and
what a round reports (controller/shell/retention.py runs the rounds, and its docstring says what
must stay live and why).

Nothing here writes: the planning reads the journal, the pruning's decisions read the segments'
records and the pit's confirmations the round hands them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from controller.shell.journal import Journal
from controller.shell.journal_segments import segment_confirmed
from controller.shell.segments import ARCHIVED, STATES, Segment
from controller.shell.table import RECENT_INPUTS
from controller.table.event_types import HandCompleted, HandMisdeal, HandVoid

#: The events that close a hand: its rows may be archived once enough hands followed.
ENDS = (HandCompleted.TYPE, HandMisdeal.TYPE, HandVoid.TYPE)


@dataclass(frozen=True)
class RetentionConfig:
    """``[journal]`` retention keys (docs/operations.md, "Retention")."""

    live_hands: int = 50
    keep_days: float | None = None
    max_bytes: int | None = None
    archive_dir: Path | None = None
    interval: float = 60.0
    inbox_seconds: float = 3600.0
    segment_rows: int = 5000
    recent_inputs: int = RECENT_INPUTS  # inputs before the snapshot kept for de-duplication


@dataclass
class RoundReport:
    """What one round did, and where the journal stands."""

    archived: int = 0  # segments written
    copied: int = 0  # segments copied to the archive directory
    pruned: int = 0  # segments whose files were deleted
    compacted: int = 0  # pruned segments' records folded into their runs
    live_bytes: int = 0  # database, WAL and shared memory
    segment_bytes: int = 0  # local segment files
    by_state: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    waiting_bytes: int = 0  # over the budget, waiting for the pit or the archive
    over_budget: bool = False

    @property
    def total_bytes(self) -> int:
        """What the budget counts."""
        return self.live_bytes + self.segment_bytes

    def alarm(self) -> str | None:
        """The retention alarm's reason (None: the budget is kept, or nothing waits)."""
        if self.over_budget and self.waiting_bytes > 0:
            return f"retention: {self.waiting_bytes} bytes waiting for the pit/archive"
        return None


# ---------------------------------------------------------------------- archiving


def archive_limit(journal: Journal, config: RetentionConfig, now: datetime) -> int:
    """The last position a round may archive: the end of the newest closed hand that is not one
    of the last ``live_hands``, and before everything a start or a redelivered request needs
    (controller/shell/retention.py's docstring)."""
    newest = journal.read(
        "SELECT input_id FROM events WHERE type IN (?, ?, ?) AND input_id IS NOT NULL "
        "ORDER BY seq DESC LIMIT 1 OFFSET ?",
        (*ENDS, config.live_hands),
    )
    if not newest:
        return 0
    return min(_transaction_end(journal, int(newest[0][0])), _keep_from(journal, config, now) - 1)


def plan_archive(journal: Journal, config: RetentionConfig, limit: int) -> tuple[int, int] | None:
    """The next positions to archive, ``(first, last)``, or None: nothing up to ``limit``.

    ``last`` is the end of a closed hand's last transaction (the rows up to the next input),
    a segment holds at most ``segment_rows`` rows (or one hand that has more).
    """
    archived = journal.archived_head()
    if limit <= archived.pos:
        return None
    ends = journal.read(
        "SELECT DISTINCT input_id FROM events WHERE type IN (?, ?, ?) AND pos > ? AND pos <= ? "
        "AND input_id IS NOT NULL ORDER BY input_id LIMIT ?",
        (*ENDS, archived.pos, limit, config.segment_rows),
    )
    best = None
    for (input_id,) in ends:
        cut = _transaction_end(journal, int(input_id))
        if cut > limit or (best is not None and cut - archived.pos > config.segment_rows):
            break
        best = cut
    return None if best is None else (archived.pos + 1, best)


def _transaction_end(journal: Journal, input_id: int) -> int:
    """The last position before the input after ``input_id`` (the head: none yet)."""
    following = journal.read("SELECT MIN(pos) FROM inputs WHERE id > ?", (input_id,))
    return journal.head.pos if following[0][0] is None else int(following[0][0]) - 1


def _keep_from(journal: Journal, config: RetentionConfig, now: datetime) -> int:
    """The first position that must stay live."""
    head = journal.head.pos
    keep = [head + 1]
    snapshot = journal.read("SELECT MAX(input_id) FROM snapshots")[0][0]
    if snapshot is None:
        return 0  # a start replays from the genesis: every input stays
    first_input = max(1, int(snapshot) - config.recent_inputs + 1)
    for query, params in (
        ("SELECT MIN(pos) FROM inputs WHERE id >= ?", (first_input,)),
        (
            "SELECT MIN(e.pos) FROM events e WHERE e.seq = (SELECT MIN(seq) FROM outbox)",
            (),
        ),
        (
            "SELECT MIN(pos) FROM inputs WHERE ts >= ?",
            ((now - timedelta(seconds=config.inbox_seconds)).isoformat(),),
        ),
    ):
        row = journal.read(query, params)
        if row and row[0][0] is not None:
            keep.append(int(row[0][0]))
    return min(keep)


# ---------------------------------------------------------------------- pruning


def prune_reason(segment: Segment, confirmed: dict[str, int]) -> str | None:
    """Why the segment may be pruned (None: it may not: it is stored nowhere else)."""
    if segment.state == ARCHIVED:
        return segment.reason or "archived"
    if segment_confirmed(segment, confirmed):
        through = ", ".join(
            f"epoch {epoch} through seq {confirmed.get(epoch, 0)}" for epoch in segment.epochs
        )
        return f"confirmed stored by the pit ({through or 'no events'})"
    return None


def _ended_before(segment: Segment, moment: datetime) -> bool:
    last = segment.header.get("last_ts")
    if not isinstance(last, str):
        return False
    try:
        return datetime.fromisoformat(last) < moment
    except ValueError:
        return False


def prunable(
    kept: Iterable[Segment],
    confirmed: dict[str, int],
    config: RetentionConfig,
    now: datetime,
    *,
    over: int,
    pressed: bool,
) -> Iterator[tuple[Segment, str]]:
    """The segments a round prunes, oldest first, each with why it may go (``kept``: the
    records of the segments whose files are here, oldest first; read no further than needed).

    A segment goes while the journal is ``over`` its budget (by fewer bytes after each one), when
    it ended more than ``keep_days`` ago, or while the disk is ``pressed``; and only a segment
    stored elsewhere (:func:`prune_reason`): the first that is not ends the list, so a younger
    segment never goes before an older one. Each is decided once the one before it was pruned.
    """
    oldest = None
    if config.keep_days is not None:
        oldest = now - timedelta(days=config.keep_days)
    for segment in kept:
        aged = oldest is not None and _ended_before(segment, oldest)
        if over <= 0 and not aged and not pressed:
            return
        why = prune_reason(segment, confirmed)
        if why is None:
            return
        yield segment, why
        over -= segment.bytes
