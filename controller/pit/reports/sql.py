"""The few pieces of a report's SQL that SQLite and PostgreSQL write differently, and the read
every report runs in.

Both stores answer the same statements otherwise (:class:`controller.pit.db.Db` rewrites the
placeholders). A report reads in one snapshot (PostgreSQL: a ``REPEATABLE READ READ ONLY``
transaction; SQLite: a deferred one, which in WAL mode neither waits for the ingest's writes nor
makes them wait), and on PostgreSQL with a statement timeout, so a report asked for too much
ends with an error instead of holding a connection for minutes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

from controller.pit.db import Db
from controller.pit.reports.periods import Buckets

#: Seconds one statement of a report may run on PostgreSQL.
STATEMENT_TIMEOUT = 60


@contextlib.contextmanager
def snapshot(db: Db) -> Iterator[None]:
    """Every statement of the block reads the same moment of the store, and writes nothing."""
    if db.dialect == "postgresql":
        db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        db.execute(f"SET LOCAL statement_timeout = '{STATEMENT_TIMEOUT}s'")
        # A pit's session ends a transaction idle for IDLE_IN_TRANSACTION (controller/pit/db.py:
        # the locks of a pit gone mid-write must not hold the others); a report's reads lock no
        # row, and it may work on what it read between two statements as long as one may run.
        db.execute(f"SET LOCAL idle_in_transaction_session_timeout = '{STATEMENT_TIMEOUT}s'")
    else:
        db.execute("BEGIN DEFERRED")
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):  # a connection lost: its transaction is gone too
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def bucket_table(db: Db) -> str:
    """A relation ``(k, p)``, one row per bucket of the report's span and the index of its
    period, from one JSON parameter (:func:`bucket_param`): one value whatever the span."""
    if db.dialect == "postgresql":
        return "SELECT value->>0 AS k, (value->>1)::integer AS p FROM json_array_elements(?::json)"
    return (
        "SELECT json_extract(value, '$[0]') AS k, json_extract(value, '$[1]') AS p "
        "FROM json_each(?)"
    )


def bucket_param(found: Buckets) -> str:
    return json.dumps(found.keys, separators=(",", ":"))


def json_field(db: Db, column: str, *path: str) -> str:
    """The text (SQLite: the value) at ``path`` in a column of JSON text; NULL when absent."""
    if db.dialect == "postgresql":
        return f"(({column})::jsonb #>> '{{{','.join(path)}}}')"
    return f"json_extract({column}, '$.{'.'.join(path)}')"


def json_value(db: Db, text: str) -> str:
    """JSON text as a value to read several fields of (:func:`json_path`): parsed once."""
    return f"CAST({text} AS jsonb)" if db.dialect == "postgresql" else text


def json_path(db: Db, value: str, *path: str) -> str:
    """The text (SQLite: the value) at ``path`` in a :func:`json_value`; NULL when absent."""
    if db.dialect == "postgresql":
        return f"({value} #>> '{{{','.join(path)}}}')"
    return f"json_extract({value}, '$.{'.'.join(path)}')"


def seconds_between(db: Db, earlier: str, later: str) -> str:
    """The seconds from one RFC 3339 text column to another."""
    if db.dialect == "postgresql":
        return f"EXTRACT(EPOCH FROM (({later})::timestamptz - ({earlier})::timestamptz))"
    return f"((julianday({later}) - julianday({earlier})) * 86400.0)"


def among(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
    """`` AND column IN (…)`` and its parameters (nothing when ``values`` is empty: every one)."""
    if not values:
        return "", []
    marks = ", ".join("?" for _ in values)
    return f" AND {column} IN ({marks})", list(values)
