"""Exports from a journal: every event as a JSON line, or completed hands as PHH.

PHH needs the hand as the core ended it, so the export replays the journal's inputs through the
core from the journal's genesis and writes each hand when it completes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC

from controller.envelope import CHAIN_STAMPED, chain_stamp, envelope
from controller.phh import table_phh
from controller.shell.journal import Journal, JournalError
from controller.shell.table import journal_table
from controller.table import event_types as et
from controller.table.codec import event_from_json, input_from_json
from controller.table.decoder import record_of
from controller.table.engine import apply
from controller.table.events import TableEvent


def export_events(journal: Journal, hand_id: str | None = None) -> Iterator[str]:
    """Every journaled event (of one hand) as a surveillance-view envelope, one JSON line each
    (archived and live rows read as the journal was when the export began)."""
    with journal.reading():
        yield from _export_events(journal, hand_id)


def _export_events(journal: Journal, hand_id: str | None) -> Iterator[str]:
    for row, place in journal.chained_events(hand_id):
        event = event_from_json(row.body)
        epoch, seq = journal.event_id(row.key)
        chain = place if event.type in CHAIN_STAMPED else None
        body = envelope(
            event,
            table_id=journal.table_id,
            epoch=epoch,
            seq=seq,
            secure=True,
            chain=None if chain is None else chain_stamp(event.type, chain.pos, chain.hash),
        )
        yield json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def export_phh(journal: Journal, hand_id: str | None = None) -> list[str]:
    """The PHH text of every completed hand (or of one), in order."""
    with journal.reading():
        return _export_phh(journal, hand_id)


def _export_phh(journal: Journal, hand_id: str | None) -> list[str]:
    pruned = journal.pruned()
    if pruned:
        raise JournalError(
            f"PHH replays every input from the journal's start, and {pruned[-1].span()} and "
            "before were pruned: export the events instead, or restore the segments from the "
            'archive (docs/operations.md, "Retention")'
        )
    state = journal_table(journal)
    texts = []
    for row in journal.inputs():
        before = state.last_hand
        state, _ = apply(state, input_from_json(row.body))
        done = state.last_hand
        if done is None or done is before:
            continue
        if hand_id is not None and done.hand_id != hand_id:
            continue
        texts.append(table_phh(state, journal.table_id))
    return texts


#: ``tablectl journal export --drop --period``: how a moment becomes its period's name (UTC).
PERIODS = {
    "day": "%Y-%m-%d",
    "hour": "%Y-%m-%dT%H:00Z",
    "month": "%Y-%m",
}


def export_drop(journal: Journal, period: str = "day") -> Iterator[str]:
    """The house's take per table and period (HOUSE-RAKE, HOUSE-DROP-JACKPOT, HOUSE-TIME): the
    rake, the jackpot drops and the time collected, and the hands that paid rake; a header line,
    then one line per period with any take, oldest first, and the table's total last."""
    fmt = PERIODS[period]
    totals: dict[str, list[int]] = {}
    with journal.reading():
        for row, _ in journal.chained_events():  # the archived hands' take too
            _add_take(totals, event_from_json(row.body), fmt)
    yield (
        f"{'table':<10} {period:<16} {'rake':>8} {'jackpot':>8} {'time':>8} {'total':>8} "
        f"{'raked':>6}"
    )
    whole = [0, 0, 0, 0]
    for name, (rake, jackpot, time, hands) in sorted(totals.items()):
        whole = [whole[0] + rake, whole[1] + jackpot, whole[2] + time, whole[3] + hands]
        yield _drop_line(journal.table_id, name, rake, jackpot, time, hands)
    yield _drop_line(journal.table_id, "total", *whole)


def _add_take(totals: dict[str, list[int]], event: TableEvent, fmt: str) -> None:
    """Count one event's take (rake, jackpot, time collected) in its period's line."""
    record = record_of(event)
    if isinstance(record, et.PotRakeTaken):
        line = totals.setdefault(event.ts.astimezone(UTC).strftime(fmt), [0, 0, 0, 0])
        line[0] += record.rake
        line[1] += record.jackpot
        line[3] += record.rake > 0
    elif isinstance(record, et.HouseTimeCollected):
        line = totals.setdefault(event.ts.astimezone(UTC).strftime(fmt), [0, 0, 0, 0])
        line[2] += record.total


def _drop_line(table: str, period: str, rake: int, jackpot: int, time: int, hands: int) -> str:
    total = rake + jackpot + time
    return f"{table:<10} {period:<16} {rake:>8} {jackpot:>8} {time:>8} {total:>8} {hands:>6}"


def export_rulings(journal: Journal, hand_id: str | None = None) -> Iterator[str]:
    """Who made each ruling: one line per ruling event (of one hand), oldest first."""
    with journal.reading():
        for row in journal.events(hand_id):
            line = _ruling_line(row.key, event_from_json(row.body))
            if line is not None:
                yield line


def _ruling_line(key: int, event: TableEvent) -> str | None:
    """One ruling as ``export --rulings`` writes it (None: the event is no ruling)."""
    record = record_of(event)
    if not record.RULING:  # the records say which events are rulings (EventData.RULING)
        return None
    by = event.by or {}
    who = f"{by['person']} ({by['role']})" if by else "the table (no command)"
    written = record.public()
    what = {
        k: written[k]
        for k in ("rule", "decision", "by", "hold", "reason", "payouts")
        if k in written
    }
    rules = ",".join(event.rules) or "-"
    detail = json.dumps(what, separators=(",", ":"), ensure_ascii=False)
    stamp = event.ts.isoformat(timespec="seconds")
    hand = event.hand_id or "-"
    return f"{key:>6} {stamp} {hand:<12} {event.type:<18} {rules:<14} {who}: {detail}"
