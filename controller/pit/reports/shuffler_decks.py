"""SHF-RAND: each shuffler's revealed decks in the pit's store, for its randomness audit.

A retired deck's order comes in the secure view of ``deck.revealed`` (docs/events.md: only a pit
that takes the secure stream, ``[pit] secure = true``, has it). When that view is stored, the
ingest keeps the deck in ``shuffler_decks``, in the same transaction (one statement for the
batch, only when the batch has a reveal): its table, epoch and seq, its ``ts``, the shuffler
that dealt it, the order as 52 card names, the first 16 bytes of the order's SHA-256, and, when
an earlier deck had the same order, that deck (``repeat_of``: a finding, however long ago).

Which shuffler: a table names its shuffler by its device id (``[table] shuffler``, default
``shuffler``), and says so in ``device.status`` events with ``kind: "shuffler"`` whenever the
device's health changes (at every connection). ``shufflers`` keeps, per table and device id, the
first such event's ``ts``; a deck is the shuffler's whose name is the latest one at or before
the deck's ``ts`` (the earliest known when none is before it; ``shuffler`` when the table named
none). A shuffler is thus its table and device id (``T7/shuffler``): a machine moved to another
table starts an audit of its own there.

Only whole decks are kept: a reshuffled stub (a deck of its own number with fewer cards) is not
a shuffle of the 52 and is left out. ``shufflers.decks`` counts each shuffler's decks as they
are stored: the audit's cue (controller/pit/reports/shuffler_audit.py); ``shuffler_hours`` by
the hour, for the report (controller/pit/reports/shuffler_hours.py).

The events stored before pit schema 13 are read once, by the first audit round
(:meth:`ShufflerDecks.backfill_shuffler_decks`): a mark in ``pit_meta`` until it is done.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from controller.cards import STANDARD_DECK, Card, card_code, card_from_code
from controller.pit.batches import EventIn
from controller.pit.db import Db
from controller.pit.partitions import key_of
from controller.pit.reports.shuffler_hours import count_stored
from controller.table import event_types as et

#: The device id a table's shuffler has when the table never said (``[table] shuffler``).
DEFAULT_DEVICE = "shuffler"
#: The mark in pit_meta of the decks still to read from the events stored before schema 13.
BACKFILL_MARK = "derive_shuffler_decks"
#: Events read at once by the backfill.
_BACKFILL_BATCH = 2000


class DeckKey(NamedTuple):
    """Where a deck is in a shuffler's order: by ``ts``, then its event's epoch and seq."""

    ts: str
    epoch: str
    seq: int


class StoredDeck(NamedTuple):
    """One deck of a shuffler as the store keeps it."""

    key: DeckKey
    table_id: str
    order: bytes  # TSP/1 codes, top first
    repeat_of: str | None


def encode_order(codes: bytes) -> str:
    """The order as the store writes it: 52 card names, ``As7d…``."""
    return "".join(card_from_code(code) for code in codes)


def decode_order(text: str) -> bytes:
    """The codes of an order the store wrote."""
    return bytes(card_code(Card(text[i : i + 2])) for i in range(0, len(text), 2))


def digest(codes: bytes) -> str:
    """The order's identity for repeats: the first 16 bytes of its SHA-256, in hex (a collision
    among 10¹² decks has a chance of about 10⁻¹⁵)."""
    return hashlib.sha256(codes).hexdigest()[:32]


def whole_deck(order: Sequence[Card] | None) -> bytes | None:
    """The codes of a revealed order that is a whole deck (None: a stub, or not a deck)."""
    if order is None or len(order) != len(STANDARD_DECK):
        return None
    try:
        codes = bytes(card_code(card) for card in order)
    except (ValueError, IndexError):  # not a card (the decoder keeps only cards: never met)
        return None
    return codes if len(set(codes)) == len(STANDARD_DECK) else None


def shuffler_at(named: Sequence[tuple[str, str]], ts: str) -> str:
    """The device that dealt a deck revealed at ``ts``, of a table's ``named`` (since, device)
    sorted by since."""
    if not named:
        return DEFAULT_DEVICE
    at = bisect.bisect_right([since for since, _ in named], ts)
    return named[max(0, at - 1)][1]


class ShufflerDecks:
    """The revealed decks of a :class:`~controller.pit.store.Store`."""

    db: Db

    # ------------------------------------------------------------------ ingest

    def _shuffler_decks(self, events: Sequence[EventIn]) -> None:
        """The shufflers named and the whole decks revealed among newly stored events (either
        view), in the batch's transaction; nothing at all for a batch with neither."""
        names: dict[tuple[str, str], str] = {}
        reveals: list[tuple[EventIn, int | None, bytes]] = []
        for e in events:
            if e.type == et.DeviceStatus.TYPE:
                record = e.record
                if isinstance(record, et.DeviceStatus) and record.kind == "shuffler":
                    key = (e.table_id, record.device)
                    names[key] = min(names.get(key, e.ts), e.ts)
            elif e.type == et.DeckRevealed.TYPE and e.stream == "secure":
                record = e.record
                if isinstance(record, et.DeckRevealed):
                    codes = whole_deck(record.order)
                    if codes is not None:
                        reveals.append((e, record.shuffle_id, codes))
        if names:
            self._name_shufflers(names)
        if reveals:
            self._store_decks(reveals)

    def _name_shufflers(self, names: dict[tuple[str, str], str]) -> None:
        self.db.insert(
            "shufflers",
            (("table_id", "text"), ("device", "text"), ("named_since", "text")),
            [(t, d, since) for (t, d), since in sorted(names.items())],
            "ON CONFLICT (table_id, device) DO UPDATE SET named_since = CASE WHEN "
            "shufflers.named_since IS NULL OR excluded.named_since < shufflers.named_since "
            "THEN excluded.named_since ELSE shufflers.named_since END",
        )

    def _named(self, tables: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        """Each table's shufflers by name: (since, device), oldest first."""
        wanted = sorted(set(tables))
        marks = ", ".join("?" for _ in wanted)
        rows = self.db.all(
            "SELECT table_id, named_since, device FROM shufflers "  # noqa: S608
            f"WHERE named_since IS NOT NULL AND table_id IN ({marks}) "
            "ORDER BY table_id, named_since, device",
            wanted,
        )
        out: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for table, since, device in rows:
            out[str(table)].append((str(since), str(device)))
        return out

    def _store_decks(self, reveals: Sequence[tuple[EventIn, int | None, bytes]]) -> None:
        db = self.db
        named = self._named(e.table_id for e, _, _ in reveals)
        digests = sorted({digest(codes) for _, _, codes in reveals})
        marks = ", ".join("?" for _ in digests)
        earlier: dict[str, str] = {}
        for found, table, epoch, seq in db.all(
            "SELECT digest, table_id, epoch, seq FROM shuffler_decks "  # noqa: S608
            f"WHERE digest IN ({marks}) ORDER BY ts, table_id, epoch, seq",
            digests,
        ):
            earlier.setdefault(str(found), f"{table}:{epoch}:{seq}")
        rows = []
        for e, shuffle_id, codes in sorted(
            reveals, key=lambda r: (r[0].ts, r[0].table_id, r[0].seq)
        ):
            found = digest(codes)
            event_id = f"{e.table_id}:{e.epoch}:{e.seq}"
            repeat_of = earlier.get(found)
            earlier.setdefault(found, event_id)  # two of one order in one batch: the later
            rows.append(
                (
                    e.table_id,
                    e.epoch,
                    e.seq,
                    e.ts,
                    shuffler_at(named.get(e.table_id, []), e.ts),
                    shuffle_id,
                    encode_order(codes),
                    found,
                    None if repeat_of == event_id else repeat_of,
                )
            )
        stored = db.insert(
            "shuffler_decks",
            (
                ("table_id", "text"),
                ("epoch", "text"),
                ("seq", "bigint"),
                ("ts", "text"),
                ("device", "text"),
                ("shuffle_id", "bigint"),
                ("cards", "text"),
                ("digest", "text"),
                ("repeat_of", "text"),
            ),
            sorted(rows, key=lambda r: (r[0], r[1], r[2])),
            # on PostgreSQL the key holds the deck's ts, its event's (the same in every
            # delivery): a deck stored already meets its row in whatever month it comes
            f"ON CONFLICT {key_of(db, 'shuffler_decks')} DO NOTHING RETURNING table_id, device, ts",
        )
        count_stored(db, [(str(t), str(d), str(ts)) for t, d, ts in stored])
        counts: dict[tuple[str, str], list[Any]] = {}
        for table, device, ts in stored:
            entry = counts.setdefault((str(table), str(device)), [0, str(ts)])
            entry[0] += 1
            entry[1] = max(entry[1], str(ts))
        db.insert(
            "shufflers",
            (("table_id", "text"), ("device", "text"), ("decks", "bigint"), ("last_ts", "text")),
            [(t, d, n, last) for (t, d), (n, last) in sorted(counts.items())],
            "ON CONFLICT (table_id, device) DO UPDATE SET decks = shufflers.decks + "
            f"excluded.decks, last_ts = {db.greatest}(COALESCE(shufflers.last_ts, ''), "
            "excluded.last_ts)",
        )

    # ------------------------------------------------------------------ the events before

    def backfill_shuffler_decks(self) -> int:
        """Pit schema 13: the shufflers and decks of the events stored before it, read once (the
        mark in pit_meta goes when it is done; a process that comes meanwhile reads them again,
        and stores nothing twice). The decks stored."""
        db = self.db
        with db.transaction():
            if not db.one("SELECT 1 FROM pit_meta WHERE key = ?", (BACKFILL_MARK,)):
                return 0
        before = self._decks_stored()
        for kind, column, stream in (
            (et.DeviceStatus.TYPE, "public", "public"),
            (et.DeckRevealed.TYPE, "secure", "secure"),
        ):
            after: tuple[str, str, str, int] = ("", "", "", 0)
            while True:
                rows = db.all(
                    f"SELECT ts, table_id, epoch, seq, hand_id, severity, source, {column} "  # noqa: S608
                    f"FROM events WHERE type = ? AND {column} IS NOT NULL "
                    "AND (ts, table_id, epoch, seq) > (?, ?, ?, ?) "
                    "ORDER BY ts, table_id, epoch, seq LIMIT ?",
                    (kind, *after, _BACKFILL_BATCH),
                )
                if not rows:
                    break
                events = [
                    EventIn(
                        table_id=str(r[1]),
                        epoch=str(r[2]),
                        seq=int(r[3]),
                        ts=str(r[0]),
                        hand_id=r[4],
                        type=kind,
                        severity=str(r[5]),
                        stream=stream,  # type: ignore[arg-type]
                        source=r[6],
                        text=str(r[7]),
                        body=json.loads(r[7]),
                    )
                    for r in rows
                ]
                with db.transaction():
                    self._shuffler_decks(events)
                last = rows[-1]
                after = (str(last[0]), str(last[1]), str(last[2]), int(last[3]))
        with db.transaction():
            db.execute("DELETE FROM pit_meta WHERE key = ?", (BACKFILL_MARK,))
        return self._decks_stored() - before

    def _decks_stored(self) -> int:
        row = self.db.one("SELECT count(*) FROM shuffler_decks")
        return int(row[0]) if row else 0


# --------------------------------------------------------------------------- reading


def shuffler_decks(
    db: Db, table: str, device: str, since: str, until: str, after: DeckKey | None = None
) -> list[StoredDeck]:
    """A shuffler's decks revealed in ``[since, until)`` (and after ``after``), in order."""
    extra = ""
    params: list[object] = [table, device, since, until]
    if after is not None:
        extra = " AND (ts, epoch, seq) > (?, ?, ?)"
        params += [after.ts, after.epoch, after.seq]
    rows = db.all(
        "SELECT ts, epoch, seq, table_id, cards, repeat_of FROM shuffler_decks "  # noqa: S608
        f"WHERE table_id = ? AND device = ? AND ts >= ? AND ts < ?{extra} "
        "ORDER BY ts, epoch, seq",
        params,
    )
    return [_deck(r) for r in rows]


def last_shuffler_decks(db: Db, table: str, device: str, count: int) -> list[StoredDeck]:
    """A shuffler's last ``count`` decks, in order."""
    rows = db.all(
        "SELECT ts, epoch, seq, table_id, cards, repeat_of FROM shuffler_decks "
        "WHERE table_id = ? AND device = ? ORDER BY ts DESC, epoch DESC, seq DESC LIMIT ?",
        (table, device, count),
    )
    return [_deck(r) for r in reversed(rows)]


def _deck(row: Sequence[Any]) -> StoredDeck:
    return StoredDeck(
        DeckKey(str(row[0]), str(row[1]), int(row[2])),
        str(row[3]),
        decode_order(str(row[4])),
        None if row[5] is None else str(row[5]),
    )
