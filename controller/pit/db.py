"""One connection to the pit's database, SQLite or PostgreSQL, with one way to write SQL.

The store's SQL is written once, with ``?`` placeholders and what both databases understand
(``ON CONFLICT … DO UPDATE``, ``RETURNING``, ``excluded``, partial indexes); :class:`Db`
rewrites the placeholders for psycopg and names the few functions that differ
(:attr:`Db.greatest`). Many rows go in with :meth:`Db.insert`: one round trip to PostgreSQL for
a whole batch. Each :class:`Db` is used from one thread only (the store's writer or
reader thread).

A transaction that changes what the console's live pages show says which tables it concerned
(:meth:`Db.changed`); the connection's :attr:`Db.announcer` writes that into the transaction
itself, just before its commit, for every pit process of the store to hear
(:mod:`controller.pit.changes`).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

Dialect = Literal["sqlite", "postgresql"]
Row = tuple[Any, ...]
#: A column of :meth:`Db.insert`: its name and its PostgreSQL type (``text``, ``bigint``…).
Column = tuple[str, str]


#: Writes an announcement of changed tables (None: anything may have changed) on a connection,
#: in the transaction open on it, if any (:class:`controller.pit.changes.Announcer`).
Announcer = Callable[["Db", "frozenset[str] | None"], None]


class StoreError(RuntimeError):
    """The database cannot be used (unreachable, not the pit's, a newer schema)."""


def transient(exc: BaseException) -> bool:
    """An error that trying the same transaction again may not meet (a lock, a deadlock, a
    lost connection), as opposed to one the data itself causes."""
    if isinstance(exc, StoreError):
        return True
    if isinstance(exc, sqlite3.OperationalError):
        return True  # "database is locked", a full or vanished disk: not the batch's fault
    try:
        import psycopg  # noqa: PLC0415
    except ImportError:  # pragma: no cover - a SQLite-only install
        return False
    # a session the server ended for sitting idle in a transaction (IDLE_IN_TRANSACTION) is a
    # lost connection too, though PostgreSQL files it under "invalid transaction state"
    lost = (
        psycopg.errors.OperationalError
        | psycopg.errors.InterfaceError
        | psycopg.errors.IdleInTransactionSessionTimeout
    )
    return isinstance(exc, lost) or (
        isinstance(exc, psycopg.Error)
        and getattr(exc, "sqlstate", None) in ("40001", "40P01", "55P03")
    )


def unavailable(exc: BaseException) -> bool:
    """An error that says the store itself is away (unreachable, a lost connection, a lock that
    does not go, a vanished disk), as opposed to one transaction meeting another (a deadlock or
    a serialization failure: :func:`transient` too, but the store answers)."""
    if not transient(exc):
        return False
    return getattr(exc, "sqlstate", None) not in ("40001", "40P01", "55P03")


def dialect_of(url: str) -> Dialect:
    """Which database a store URL names."""
    return "sqlite" if url.startswith("sqlite:") else "postgresql"


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///PATH`` URL (``sqlite:////abs`` is ``/abs``)."""
    return Path(url[len("sqlite:///") :])


_PLACEHOLDER = re.compile(r"\?")
#: Seconds a PostgreSQL session of the pit may sit idle inside a transaction before the server
#: ends it (``idle_in_transaction_session_timeout``). A pit's transactions do their work between
#: statements in milliseconds; a session idle in one for seconds is a pit whose host went away
#: mid-transaction (its link cut, its power lost), and its row locks would hold every other
#: pit's commits until TCP gave up on the connection: hours, with Linux's keep-alive defaults.
IDLE_IN_TRANSACTION = 10.0
#: The server's own TCP settings for each pit session (PostgreSQL's ``tcp_keepalives_*`` and
#: ``tcp_user_timeout``, which a session may set for itself). ``IDLE_IN_TRANSACTION`` does not
#: cover a session waiting in the middle of a pipeline (psycopg's ``executemany`` sends its
#: statements and one Sync at the end): until the Sync the server is not "idle in transaction",
#: and a pit cut off right then held its row locks, and every other pit's commits of those
#: tables, until Linux's keep-alive gave up, hours later. With these the server finds the
#: vanished client after some 11 s of silence in any state and rolls its transaction back.
SERVER_TCP = {
    "tcp_keepalives_idle": 5,
    "tcp_keepalives_interval": 2,
    "tcp_keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}
#: libpq's TCP settings for every pit connection to PostgreSQL, unless its URL names them
#: (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-KEEPALIVES): a database host
#: gone without a word (its link cut, its power lost) is found after 10 s of silence and three
#: unanswered probes 5 s apart, and data left unacknowledged for 30 s ends the connection, instead
#: of Linux's defaults (two hours before the first probe; some 15 minutes of retransmissions), so a
#: pit waiting on a vanished store says so and connects again within a minute.
TCP_SETTINGS = {
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}


def postgresql_conninfo(url: str) -> str:
    """``url`` as a libpq connection string with :data:`TCP_SETTINGS` where it names none."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: PLC0415

    params = conninfo_to_dict(url.replace("postgres://", "postgresql://", 1))
    for key, value in TCP_SETTINGS.items():
        params.setdefault(key, value)
    return make_conninfo("", **params)


class Db:
    """A connection and its dialect."""

    def __init__(self, url: str, *, readonly: bool = False) -> None:
        self.url = url
        self.dialect: Dialect = dialect_of(url)
        self._converted: dict[str, str] = {}
        #: Announces what this connection's transactions change (None: nothing is announced).
        self.announcer: Announcer | None = None
        self._in_transaction = False
        self._changed: set[str] = set()
        self._changed_all = False
        self._conn: Any
        if self.dialect == "sqlite":
            path = sqlite_path(url)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = sqlite3.connect(
                    path, isolation_level=None, check_same_thread=False, timeout=30.0
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL" if readonly else "PRAGMA synchronous=FULL")
                conn.execute("PRAGMA foreign_keys=ON")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{path}: {exc}") from None
            self._conn = conn
        else:
            import psycopg  # noqa: PLC0415 (only a PostgreSQL store needs it)

            try:
                self._conn = psycopg.connect(postgresql_conninfo(url))
                self._conn.autocommit = True
                # ended by the server, the vanished pit's transaction is rolled back: what it
                # held was never acknowledged to the broker, which gives it to the pit again
                self._conn.execute(
                    f"SET idle_in_transaction_session_timeout = {int(IDLE_IN_TRANSACTION * 1000)}"
                )
                for name, value in SERVER_TCP.items():  # the store's own, never the URL's
                    self._conn.execute(f"SET {name} = {int(value)}")
            except psycopg.Error as exc:
                raise StoreError(f"{_safe(url)}: {exc}".strip()) from None

    @property
    def greatest(self) -> str:
        """The two-argument maximum: ``max`` in SQLite, ``GREATEST`` in PostgreSQL."""
        return "max" if self.dialect == "sqlite" else "GREATEST"

    @property
    def least(self) -> str:
        """The two-argument minimum: ``min`` in SQLite, ``LEAST`` in PostgreSQL."""
        return "min" if self.dialect == "sqlite" else "LEAST"

    def sql(self, text: str) -> str:
        """``text`` with the placeholders of this database."""
        if self.dialect == "sqlite":
            return text
        converted = self._converted.get(text)
        if converted is None:
            converted = self._converted[text] = _PLACEHOLDER.sub("%s", text)
        return converted

    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; the cursor."""
        return self._conn.execute(self.sql(text), params)

    def all(self, text: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of a query."""
        return list(self.execute(text, params).fetchall())

    def one(self, text: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row of a query, or None."""
        row = self.execute(text, params).fetchone()
        return tuple(row) if row is not None else None

    def many(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each parameter row."""
        if not rows:
            return
        if self.dialect == "sqlite":
            self._conn.executemany(text, rows)
        else:
            with self._conn.cursor() as cursor:
                cursor.executemany(self.sql(text), rows)

    def returning_many(self, text: str, rows: Sequence[Sequence[Any]]) -> list[Row | None]:
        """Run a statement with ``RETURNING`` once per row; the row each returned (or None)."""
        if not rows:
            return []
        if self.dialect == "sqlite":
            out: list[Row | None] = []
            for params in rows:
                row = self._conn.execute(text, params).fetchone()
                out.append(tuple(row) if row is not None else None)
            return out
        results: list[Row | None] = []
        with self._conn.cursor() as cursor:
            cursor.executemany(self.sql(text), rows, returning=True)
            while True:
                row = cursor.fetchone()
                results.append(tuple(row) if row is not None else None)
                if not cursor.nextset():
                    break
        return results

    def insert(
        self, table: str, columns: Sequence[Column], rows: Sequence[Sequence[Any]], tail: str = ""
    ) -> list[Row]:
        """Insert ``rows`` into ``table`` in one statement; the rows ``tail``'s ``RETURNING``
        gave (``tail``: what follows the values, ``ON CONFLICT …`` and ``RETURNING …``, with no
        parameters of its own).

        PostgreSQL gets the rows as one array per column (``unnest``): one round trip whatever
        their number, where a statement per row waits for the server once per row. SQLite runs
        in this process and takes them one by one. With ``ON CONFLICT … DO UPDATE`` give each
        key once: PostgreSQL updates a row at most once per statement.
        """
        if not rows:
            return []
        # table, columns and tail are the store's own text; only the rows come from outside
        names = ", ".join(name for name, _ in columns)
        returning = "RETURNING" in tail
        if self.dialect == "sqlite":
            marks = ", ".join("?" for _ in columns)
            text = f"INSERT INTO {table} ({names}) VALUES ({marks}) {tail}"  # noqa: S608
            if not returning:
                self._conn.executemany(text, rows)
                return []
            out: list[Row] = []
            for params in rows:
                out.extend(tuple(r) for r in self._conn.execute(text, params).fetchall())
            return out
        # %b: binary arrays; text goes as it is, where the text format escapes every quote
        arrays = ", ".join(f"%b::{kind}[]" for _, kind in columns)
        text = f"INSERT INTO {table} ({names}) SELECT * FROM unnest({arrays}) AS v {tail}"  # noqa: S608
        cursor = self._conn.execute(text, [list(column) for column in zip(*rows, strict=True)])
        return [tuple(r) for r in cursor.fetchall()] if returning else []

    def insert_from(
        self,
        table: str,
        targets: Sequence[str],
        columns: Sequence[Column],
        rows: Sequence[Sequence[Any]],
        select: str,
        tail: str = "",
        where: str = "true",
    ) -> list[Row]:
        """Insert into ``table``'s ``targets`` what ``select`` makes of each of ``rows`` (its
        values are ``v.<column>``, by ``columns``' names) where ``where`` holds of it: a value
        computed in the statement from what the table holds already. One statement as
        :meth:`insert` (``unnest`` on PostgreSQL, the rows one by one on SQLite); ``tail`` as
        there: the rows its ``RETURNING`` gave."""
        if not rows:
            return []
        names = ", ".join(name for name, _ in columns)
        into = f"INSERT INTO {table} ({', '.join(targets)}) SELECT {select}"
        returning = "RETURNING" in tail
        if self.dialect == "sqlite":
            values = ", ".join(f"? AS {name}" for name, _ in columns)
            # a WHERE: an upsert's INSERT … SELECT needs one (SQLite reads ON as a join's)
            text = f"{into} FROM (SELECT {values}) AS v WHERE {where} {tail}"
            if not returning:
                self._conn.executemany(text, rows)
                return []
            out: list[Row] = []
            for params in rows:
                out.extend(tuple(r) for r in self._conn.execute(text, params).fetchall())
            return out
        arrays = ", ".join(f"%b::{kind}[]" for _, kind in columns)
        cursor = self._conn.execute(
            f"{into} FROM unnest({arrays}) AS v ({names}) WHERE {where} {tail}",
            [list(column) for column in zip(*rows, strict=True)],
        )
        return [tuple(r) for r in cursor.fetchall()] if returning else []

    def copy_out(self, statement: str) -> Iterator[bytes]:
        """PostgreSQL: what ``COPY … TO STDOUT`` sends, a chunk at a time."""
        assert self.dialect == "postgresql"
        with self._conn.cursor() as cursor, cursor.copy(statement) as copy:
            yield from (bytes(chunk) for chunk in copy)

    def copy_in(self, statement: str, chunks: Iterable[bytes]) -> None:
        """PostgreSQL: ``chunks`` sent to ``COPY … FROM STDIN``."""
        assert self.dialect == "postgresql"
        with self._conn.cursor() as cursor, cursor.copy(statement) as copy:
            for chunk in chunks:
                copy.write(chunk)

    def script(self, text: str) -> None:
        """Run several statements separated by ``;`` (schema migrations)."""
        for statement in (s.strip() for s in text.split(";")):
            if statement:
                self._conn.execute(statement)

    def changed(self, tables: Iterable[str] | None = None) -> None:
        """``tables`` changed (None: anything may have), for every pit process's live pages:
        announced in the transaction open now, just before it commits (not at all when it rolls
        back), or at once outside one. Nothing without an :attr:`announcer`."""
        if self.announcer is None:
            return
        if tables is None:
            self._changed_all = True
        else:
            self._changed.update(tables)
        if not self._in_transaction:
            self._announce()

    def _announce(self) -> None:
        tables = None if self._changed_all else frozenset(self._changed)
        self._changed_all = False
        self._changed = set()
        if self.announcer is not None and (tables is None or tables):
            self.announcer(self, tables)

    def _forget_changes(self) -> None:
        self._changed_all = False
        self._changed = set()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction: committed when the block ends, rolled back when it raises. What
        :meth:`changed` named meanwhile is announced in it, last."""
        self._in_transaction = True
        try:
            if self.dialect == "sqlite":
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    self._announce()
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            else:
                with self._conn.transaction():
                    yield
                    self._announce()
        finally:
            self._in_transaction = False
            self._forget_changes()

    @property
    def broken(self) -> bool:
        """Whether the connection is gone for good (PostgreSQL restarted, the network cut): a
        new one is needed. A SQLite connection is a file's and never is."""
        if self.dialect == "sqlite":
            return False
        return bool(self._conn.closed or self._conn.broken)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


def _safe(url: str) -> str:
    """A database URL without its password (for error messages)."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)
