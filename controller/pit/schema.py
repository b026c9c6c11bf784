"""The pit's database schema: one list of migrations for SQLite and PostgreSQL alike.

Each migration is applied once, in order, in one transaction, and recorded in ``pit_meta``
(``schema`` = the number of the last one applied). A database with a newer schema than this code
knows is refused rather than written. ``{id}`` is the dialect's auto-numbered primary key.

Times: ``ts`` columns are the tables' RFC 3339 UTC text (``2026-01-01T00:00:16.180Z``), which
sorts as time does; ``*_at`` columns are this machine's Unix time in seconds.
"""

from __future__ import annotations

from controller.pit.reports.quarters import MIGRATION as HAND_QUARTERS
from controller.pit.reports.quarters import MIGRATION_HOURS as HAND_HOURS
from controller.pit.reports.shuffler_hours import MIGRATION as SHUFFLER_HOURS

#: The store for years (controller/pit/partitions.py): the time each row of what grows with play
#: is filed under: an event's rule IDs and an alarm's acknowledgement by their event's ``ts``, a
#: hand (and its rule IDs) and a hold by the ``month`` (``YYYY-MM``) of the first of their events
#: the store took; the holds by when they were resolved (the console's last resolved, without
#: sorting a year of them); and the months each data kind has archived. On PostgreSQL the
#: migration then makes events, event_rules, hands, hand_rules, rulings, holds, alarms and
#: alarm_acks tables partitioned by month on those columns (their rows copied, their indexes
#: made again); SQLite keeps its tables whole.
BY_MONTH = """
    ALTER TABLE event_rules ADD COLUMN ts TEXT;
    ALTER TABLE alarm_acks ADD COLUMN ts TEXT;
    ALTER TABLE hands ADD COLUMN month TEXT;
    ALTER TABLE hand_rules ADD COLUMN month TEXT;
    ALTER TABLE holds ADD COLUMN month TEXT;
    CREATE INDEX holds_resolved ON holds (resolved_ts);
    CREATE TABLE archived (
        relation TEXT NOT NULL,
        month TEXT NOT NULL,
        kind TEXT NOT NULL,
        rows BIGINT NOT NULL,
        file TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        archived_at DOUBLE PRECISION NOT NULL,
        restored_at DOUBLE PRECISION,
        PRIMARY KEY (relation, month)
    )
    """

#: Pit schema 18: what it does is the store's procedure (controller/pit/store.py), on PostgreSQL.
REPORTS_BY_MONTH = ""

MIGRATIONS: list[str] = [
    # 1: the first schema
    """
    CREATE TABLE pit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TABLE tables (
        table_id TEXT PRIMARY KEY,
        online INTEGER,
        bdseq BIGINT NOT NULL DEFAULT 0,
        status_ts TEXT,
        version TEXT,
        epoch TEXT,
        last_seq BIGINT NOT NULL DEFAULT 0,
        state TEXT,
        state_seq BIGINT,
        hand_id TEXT,
        phase TEXT,
        updated_at DOUBLE PRECISION
    );

    CREATE TABLE births (
        table_id TEXT NOT NULL,
        bdseq BIGINT NOT NULL,
        state TEXT NOT NULL,
        ts TEXT,
        body TEXT NOT NULL,
        received_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (table_id, bdseq, state)
    );

    CREATE TABLE epochs (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        first_ts TEXT,
        first_seen DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (table_id, epoch)
    );

    CREATE TABLE streams (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        stream TEXT NOT NULL,
        contiguous BIGINT NOT NULL DEFAULT 0,
        max_seq BIGINT NOT NULL DEFAULT 0,
        known_last BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (table_id, epoch, stream)
    );

    CREATE TABLE events (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq BIGINT NOT NULL,
        ts TEXT NOT NULL,
        hand_id TEXT,
        type TEXT NOT NULL,
        severity TEXT NOT NULL,
        public TEXT,
        secure TEXT,
        source TEXT NOT NULL,
        committed_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (table_id, epoch, seq)
    );
    CREATE INDEX events_hand ON events (hand_id, seq);
    CREATE INDEX events_ts ON events (ts);
    CREATE INDEX events_type ON events (type, ts);

    CREATE TABLE event_rules (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq BIGINT NOT NULL,
        rule TEXT NOT NULL,
        PRIMARY KEY (table_id, epoch, seq, rule)
    );
    CREATE INDEX event_rules_rule ON event_rules (rule);

    CREATE TABLE hands (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        hand_id TEXT NOT NULL,
        started_ts TEXT,
        ended_ts TEXT,
        outcome TEXT,
        button INTEGER,
        seats TEXT,
        blinds TEXT,
        ante BIGINT,
        stacks_before TEXT,
        stacks_after TEXT,
        payouts TEXT,
        pot BIGINT,
        rake BIGINT,
        first_seq BIGINT NOT NULL,
        last_seq BIGINT NOT NULL,
        PRIMARY KEY (table_id, epoch, hand_id)
    );
    CREATE INDEX hands_id ON hands (hand_id);
    CREATE INDEX hands_table_started ON hands (table_id, started_ts);
    CREATE INDEX hands_started ON hands (started_ts);

    CREATE TABLE hand_rules (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        hand_id TEXT NOT NULL,
        rule TEXT NOT NULL,
        PRIMARY KEY (table_id, epoch, hand_id, rule)
    );
    CREATE INDEX hand_rules_rule ON hand_rules (rule);

    CREATE TABLE rulings (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq BIGINT NOT NULL,
        hand_id TEXT,
        ts TEXT NOT NULL,
        type TEXT NOT NULL,
        rule TEXT,
        hold TEXT,
        decision TEXT,
        person TEXT,
        role TEXT,
        PRIMARY KEY (table_id, epoch, seq)
    );
    CREATE INDEX rulings_hand ON rulings (hand_id);

    CREATE TABLE holds (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        hold TEXT NOT NULL,
        hand_id TEXT,
        rule TEXT,
        reason TEXT,
        ruling TEXT,
        seat INTEGER,
        evidence TEXT,
        raised_ts TEXT,
        raised_seq BIGINT,
        resolved_ts TEXT,
        resolved_seq BIGINT,
        decision TEXT,
        resolved_by TEXT,
        person TEXT,
        role TEXT,
        PRIMARY KEY (table_id, epoch, hold)
    );
    CREATE INDEX holds_id ON holds (hold);
    CREATE INDEX holds_open ON holds (resolved_seq, raised_ts);

    CREATE TABLE alarms (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq BIGINT NOT NULL,
        ts TEXT NOT NULL,
        hand_id TEXT,
        type TEXT NOT NULL,
        severity TEXT NOT NULL,
        rule TEXT,
        reason TEXT,
        PRIMARY KEY (table_id, epoch, seq)
    );
    CREATE INDEX alarms_ts ON alarms (ts);

    CREATE TABLE gaps (
        id {id},
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        stream TEXT NOT NULL,
        from_seq BIGINT NOT NULL,
        to_seq BIGINT NOT NULL,
        first_seen DOUBLE PRECISION NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        asked_at DOUBLE PRECISION,
        asked_by TEXT,
        reason TEXT,
        closed_at DOUBLE PRECISION
    );
    CREATE UNIQUE INDEX gaps_open ON gaps (table_id, epoch, stream, from_seq)
        WHERE closed_at IS NULL;

    CREATE TABLE rejects (
        id {id},
        topic TEXT NOT NULL,
        size INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        head TEXT NOT NULL,
        reason TEXT NOT NULL,
        received_at DOUBLE PRECISION NOT NULL
    );

    CREATE TABLE users (
        username TEXT PRIMARY KEY,
        password_hash TEXT NOT NULL,
        roles TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    );

    CREATE TABLE sessions (
        token_sha256 TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        expires_at DOUBLE PRECISION NOT NULL
    )
    """,
    # 2: the status topic's degraded state and alarms; how each epoch began (its
    # journal.epoch.started event); which views of an event its last write stored first.
    # (tables.last_seq is no longer written: the highest seq stored is read from streams.)
    """
    ALTER TABLE events ADD COLUMN fresh INTEGER;
    ALTER TABLE tables ADD COLUMN degraded INTEGER;
    ALTER TABLE tables ADD COLUMN alarms TEXT;
    ALTER TABLE epochs ADD COLUMN previous TEXT;
    ALTER TABLE epochs ADD COLUMN reason TEXT
    """,
    # 3: the house's money and the blind structures of each hand: the rake from each pot (main
    # pot first; hands.rake is their sum), the jackpot drop, why no rake was taken, the time
    # collected before the hand, the straddles, the seat that posted the table's ante and the
    # number of runouts.
    """
    ALTER TABLE hands ADD COLUMN rake_pots TEXT;
    ALTER TABLE hands ADD COLUMN jackpot BIGINT;
    ALTER TABLE hands ADD COLUMN rake_waived TEXT;
    ALTER TABLE hands ADD COLUMN time_collected BIGINT;
    ALTER TABLE hands ADD COLUMN straddles TEXT;
    ALTER TABLE hands ADD COLUMN ante_seat INTEGER;
    ALTER TABLE hands ADD COLUMN runouts INTEGER
    """,
    # 4: who acknowledged an alarm in the console, with which role, and when.
    """
    CREATE TABLE alarm_acks (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq BIGINT NOT NULL,
        person TEXT NOT NULL,
        roles TEXT NOT NULL,
        acked_at DOUBLE PRECISION NOT NULL,
        note TEXT,
        PRIMARY KEY (table_id, epoch, seq)
    )
    """,
    # 5: wrong passwords counted per user and client address, shared by every pit process of
    # the store (the console's lock-out, controller/pit/lockout.py); the table a refused
    # message came from, so the console can show it.
    """
    CREATE TABLE login_failures (
        username TEXT NOT NULL,
        address TEXT NOT NULL,
        failures INTEGER NOT NULL,
        first_at DOUBLE PRECISION NOT NULL,
        last_at DOUBLE PRECISION NOT NULL,
        locked_until DOUBLE PRECISION NOT NULL DEFAULT 0,
        PRIMARY KEY (username, address)
    );
    CREATE INDEX login_failures_last ON login_failures (last_at);
    ALTER TABLE rejects ADD COLUMN table_id TEXT;
    CREATE INDEX rejects_table ON rejects (table_id, received_at);
    CREATE INDEX rejects_received ON rejects (received_at)
    """,
    # 6: when each user's password was last accepted (a console login, or an API client's HTTP
    # Basic credentials), so `tablectl pit user list` can show who still uses the pit.
    """
    ALTER TABLE users ADD COLUMN last_login_at DOUBLE PRECISION
    """,
    # 7: the build each table runs, from its birth (controller/build_identity.py: version,
    # record_sha256, editable), as JSON.
    """
    ALTER TABLE tables ADD COLUMN build TEXT
    """,
    # 8: each table's devices as they last said they were (their retained health, as JSON, with
    # its ts), so every pit process of the store shows the same (controller/pit/devices.py).
    """
    CREATE TABLE devices (
        table_id TEXT NOT NULL,
        device TEXT NOT NULL,
        ts TEXT NOT NULL,
        body TEXT,
        received_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (table_id, device)
    )
    """,
    # 9: the journal of each birth and death: a connection is (journal, bdseq), and a table
    # whose journal starts again counts its bdseq from 1 (births stored before it are of journal
    # ''); the epoch each names; the journal of the table's current connection.
    """
    CREATE TABLE births_of_journals (
        table_id TEXT NOT NULL,
        journal TEXT NOT NULL DEFAULT '',
        bdseq BIGINT NOT NULL,
        state TEXT NOT NULL,
        epoch TEXT,
        ts TEXT,
        body TEXT NOT NULL,
        received_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (table_id, journal, bdseq, state)
    );
    INSERT INTO births_of_journals (table_id, journal, bdseq, state, ts, body, received_at)
        SELECT table_id, '', bdseq, state, ts, body, received_at FROM births;
    DROP TABLE births;
    ALTER TABLE births_of_journals RENAME TO births;
    ALTER TABLE tables ADD COLUMN journal TEXT
    """,
    # 10: the announcements of what each commit changed, for the live pages of every pit process
    # on one SQLite file (controller/pit/changes.py: a few thousand rows, the oldest pruned;
    # PostgreSQL announces with NOTIFY and leaves it empty).
    """
    CREATE TABLE live_changes (id {id}, payload TEXT NOT NULL)
    """,
    # 11: the store for years (BY_MONTH, above)
    BY_MONTH,
    # 12: the reports (docs/reports.md): who dealt each hand (the person of its hand.started's
    # `by`, when a dealer: null for the hands stored before, and for a hand the floor started),
    # the hands by their end (a report's period), the hands whose time was collected by their
    # start (HOUSE-TIME), the rulings but the pushes by their time (pot.awarded is a ruling of
    # every hand played: the irregularities are the few others).
    """
    ALTER TABLE hands ADD COLUMN dealer TEXT;
    CREATE INDEX hands_ended ON hands (ended_ts);
    CREATE INDEX hands_time ON hands (started_ts) WHERE time_collected IS NOT NULL;
    CREATE INDEX rulings_irregular ON rulings (ts) WHERE type <> 'pot.awarded'
    """,
    # 13: the shuffler randomness audit (SHF-RAND, docs/reports.md,
    # controller/pit/reports/shuffler_decks.py): each whole deck revealed (the order as 52 card
    # names, a digest to find repeated orders), by shuffler and time; each shuffler (a table's
    # device id): since when the table named it, the decks stored, the audit's last check and
    # its alarm; the tallies of a shuffler's floor days (controller/pit/reports/shufflers.py),
    # kept so that a month is not read again; and the decks of the events stored before, to read.
    """
    CREATE TABLE shuffler_decks (
        table_id TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq BIGINT NOT NULL,
        ts TEXT NOT NULL,
        device TEXT NOT NULL,
        shuffle_id BIGINT,
        cards TEXT NOT NULL,
        digest TEXT NOT NULL,
        repeat_of TEXT,
        PRIMARY KEY (table_id, epoch, seq)
    );
    CREATE INDEX shuffler_decks_order ON shuffler_decks (table_id, device, ts, epoch, seq);
    CREATE INDEX shuffler_decks_ts ON shuffler_decks (ts);
    CREATE INDEX shuffler_decks_digest ON shuffler_decks (digest);
    CREATE INDEX shuffler_decks_repeats ON shuffler_decks (ts) WHERE repeat_of IS NOT NULL;
    CREATE TABLE shufflers (
        table_id TEXT NOT NULL,
        device TEXT NOT NULL,
        named_since TEXT,
        decks BIGINT NOT NULL DEFAULT 0,
        last_ts TEXT,
        checked BIGINT NOT NULL DEFAULT 0,
        checked_at DOUBLE PRECISION,
        result TEXT,
        alarm TEXT,
        alarm_since DOUBLE PRECISION,
        PRIMARY KEY (table_id, device)
    );
    CREATE TABLE shuffler_rollups (
        table_id TEXT NOT NULL,
        device TEXT NOT NULL,
        start_ts TEXT NOT NULL,
        end_ts TEXT NOT NULL,
        decks BIGINT NOT NULL,
        upto_ts TEXT NOT NULL,
        upto_epoch TEXT NOT NULL,
        upto_seq BIGINT NOT NULL,
        tally BYTEA NOT NULL,
        made_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (table_id, device, start_ts, end_ts)
    );
    INSERT INTO pit_meta (key, value) VALUES ('derive_shuffler_decks', 'to do')
        ON CONFLICT (key) DO NOTHING
    """,
    # 14: the reports' hands by quarter hour, of each dealer (15 made it two tables, counted
    # again: the count of the hands stored before, here at first, is left to it)
    """
    CREATE TABLE hand_quarters (
        table_id TEXT NOT NULL,
        quarter TEXT NOT NULL,
        dealer TEXT NOT NULL DEFAULT '',
        started BIGINT NOT NULL DEFAULT 0,
        hands BIGINT NOT NULL DEFAULT 0,
        raked BIGINT NOT NULL DEFAULT 0,
        rake BIGINT NOT NULL DEFAULT 0,
        jackpot BIGINT NOT NULL DEFAULT 0,
        pots BIGINT NOT NULL DEFAULT 0,
        pot_total BIGINT NOT NULL DEFAULT 0,
        time_collected BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (table_id, quarter, dealer)
    );
    CREATE INDEX hand_quarters_quarter ON hand_quarters (quarter);
    CREATE INDEX hands_table_ended ON hands (table_id, ended_ts)
    """,
    # 15: the reports' hands by quarter hour (controller/pit/reports/quarters.py): the drop's
    # figures by table and quarter, the hands started by dealer apart (what the drop and the
    # dealers reports read), kept by the ingest; the hands stored before counted
    HAND_QUARTERS,
    # 16: the reports' quarters summed by clock hour (controller/pit/reports/quarters.py: what a
    # drop report over whole hours reads), kept by the ingest; the quarters before it summed
    HAND_HOURS,
    # 17: each shuffler's decks counted by clock hour (controller/pit/reports/shuffler_hours.py:
    # what the shufflers report reads to know each day's decks), kept by the ingest; the decks
    # stored before it counted
    SHUFFLER_HOURS,
    # 18: the store for years over the reports' tables (controller/pit/partitions.py REPORTS):
    # on PostgreSQL hand_quarters, dealer_quarters, hand_hours, shuffler_decks, shuffler_hours
    # and shuffler_rollups partitioned by month (their rows copied, their indexes made again,
    # a deck keyed by its event and ts); SQLite keeps its tables whole, and nothing changes
    REPORTS_BY_MONTH,
]

AUTO_ID = {
    "sqlite": "INTEGER PRIMARY KEY",
    "postgresql": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
}

SCHEMA_VERSION = len(MIGRATIONS)
