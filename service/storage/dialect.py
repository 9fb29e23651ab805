"""SQLite and PostgreSQL, side by side: everything the two backends do differently.

A service's storage is written once over a :class:`Dialect`: its statements use
``?`` placeholders (:meth:`Dialect.sql` rewrites them), and what the SQL cannot
say the same way on both is an attribute or a method here:

=====================  ==============================  ===============================
                       :class:`SqliteDialect`          :class:`PostgresDialect`
=====================  ==============================  ===============================
placeholder            ``?``                           ``%s``
row locks              none: a writer holds the        ``FOR SHARE`` / ``FOR UPDATE`` /
                       database lock (BEGIN            ``FOR NO KEY UPDATE``
                       IMMEDIATE)
text aggregate         ``group_concat``                ``string_agg``
no LIMIT               ``-1``                          NULL
timestamps             ISO text (:func:`iso`)          ``timestamptz`` (a datetime)
integer arrays         JSON text                       ``bigint[]``
many rows              ``executemany``                 pipelined; new rows by COPY
transactions           one connection per thread,      a pool (opened lazily, per
                       BEGIN DEFERRED / IMMEDIATE      process), READ COMMITTED; a
                                                       lone statement in autocommit
errors                 :class:`StorageError`           :class:`StorageError`; a value
                                                       the database cannot hold
                                                       (DataError): InvalidParameter
migrations             statement by statement, the     the whole script, under an
                       write lock held                 advisory lock
=====================  ==============================  ===============================

Both spell an upsert ``INSERT ... ON CONFLICT ... DO NOTHING | DO UPDATE`` and
both take ``RETURNING`` (SQLite since 3.35), so neither is a difference.

Acknowledgements: a write transaction returns only after its COMMIT (SQLite:
WAL and ``synchronous=FULL``, so the commit is on disk).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from deniable.errors import DeniableError, InvalidParameter, StorageError

from ..datadir import check_private_file, private_directory
from .migrations import migrate
from .timestamps import iso, utc_now

__all__ = [
    "POSTGRES_SCHEMES",
    "Dialect",
    "PostgresDialect",
    "SqliteDialect",
    "is_postgres",
    "split_statements",
]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SIDE_FILES = ("-wal", "-shm")  # SQLite's own files beside the database
# Below this much free space on the database's file system, ping() fails (degraded health).
MIN_FREE_BYTES = 8 << 20


def is_postgres(database: str) -> bool:
    """Whether a DATABASE setting names PostgreSQL (a DSN) rather than an SQLite file."""
    return database.startswith(POSTGRES_SCHEMES)


class Dialect(ABC):
    """One database, as a service's storage runs statements on it."""

    backend: str  # the migrations folder: "sqlite" or "postgresql"
    placeholder: str
    for_share: str
    for_update: str
    for_no_key_update: str
    concatenate: str  # the aggregate that concatenates text
    no_limit: Any  # a LIMIT parameter meaning "all rows"
    _version_types: tuple[str, str]  # a version table's text and time column types

    def sql(self, text: str) -> str:
        """``text`` with this backend's placeholders for ``?``."""
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def run(self, connection: Any, text: str, parameters: Sequence[Any] = ()) -> Any:
        """Execute one statement written with ``?`` placeholders; return its cursor."""
        return connection.execute(self.sql(text), parameters)

    @abstractmethod
    def write(self) -> contextlib.AbstractContextManager[Any]:
        """A write transaction; yields a connection (``execute(sql, parameters)``)."""

    @abstractmethod
    def read(self) -> contextlib.AbstractContextManager[Any]:
        """A transaction that only reads (SQLite: takes no write lock)."""

    def lone_read(self) -> contextlib.AbstractContextManager[Any]:
        """For one read statement (PostgreSQL: autocommit, no BEGIN and COMMIT)."""
        return self.read()

    @abstractmethod
    def now(self) -> Any:
        """The current time as this backend stores it."""

    @abstractmethod
    def int_array(self, values: Iterable[int]) -> Any:
        """An integer vector as an array column holds it."""

    @abstractmethod
    def read_int_array(self, value: Any) -> list[int]:
        """An array column's value as a list."""

    def execute_many(self, connection: Any, text: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement (``?`` placeholders) for each row, in the caller's transaction."""
        connection.executemany(self.sql(text), rows)

    def insert_rows(
        self, connection: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> None:
        """Insert many new rows at once, in the caller's transaction (no conflict handling)."""
        marks = ", ".join("?" * len(columns))
        self.execute_many(
            connection, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows
        )

    @abstractmethod
    def stream(self, text: str, parameters: Sequence[Any]) -> Iterator[tuple]:
        """The rows of one query, from one snapshot, fetched a batch at a time on a
        connection of their own (other work may run on this thread meanwhile)."""

    @abstractmethod
    def ping(self) -> None:
        """Raise StorageError unless the database answers and would accept writes."""

    @abstractmethod
    def close(self) -> None:
        """Release this process's connections (each reopens on its next use)."""

    # -- migrations (the runner: migrations.migrate) ---------------------------------------
    def migrate(self, root: Path, *, table: str = "schema_version", stamped: bool = True) -> int:
        """Apply the migrations under ``root`` not yet in ``table``; return the version
        (:func:`~deniable.service.storage.migrations.migrate`)."""
        return migrate(self, root, table=table, stamped=stamped)

    def schema_version(self, table: str = "schema_version") -> int:
        """The highest applied migration (0 for an empty database)."""
        with self.read() as connection:
            if not self.has_table(connection, table):
                return 0
            row = connection.execute(f"SELECT COALESCE(MAX(version), 0) FROM {table}").fetchone()
            return row[0]

    def version_columns(self, stamped: bool) -> str:
        """The columns of a version table (``stamped``: with the time each was applied)."""
        text, stamp = self._version_types
        return f"version integer PRIMARY KEY, name {text} NOT NULL" + (
            f", applied_at {stamp} NOT NULL" if stamped else ""
        )

    @abstractmethod
    def create_version_table(self, table: str, stamped: bool) -> None:
        """Before migrating, outside any transaction."""

    @abstractmethod
    def lock_migrations(self, connection: Any, table: str, stamped: bool) -> None:
        """First in the migrating transaction: one migrator at a time."""

    @abstractmethod
    def run_script(self, connection: Any, script: str) -> None: ...

    @abstractmethod
    def stamp(self, stamped: bool) -> tuple[Any, ...]:
        """The applied_at value a version row is inserted with, if any."""

    @abstractmethod
    def has_table(self, connection: Any, table: str) -> bool: ...


# -- SQLite -------------------------------------------------------------------------------------
def split_statements(script: str) -> list[str]:
    """A script as single statements (sqlite3 can only run a script by committing first)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip() and not current.strip().startswith("--"):
        statements.append(current.strip())
    return [s for s in statements if s]


def connect(path: Path, busy_timeout_ms: int, pragmas: Sequence[str] = ()) -> sqlite3.Connection:
    """A connection to the database file ``path``: private (in a 0700 directory, the file
    and its ``-wal``/``-shm`` 0600, as the data directory requires), waiting up to
    ``busy_timeout_ms`` for a lock, fsync'ed commits, foreign keys, then ``pragmas``.
    StorageError (UnsafeFiles) if it cannot be opened so."""
    # Why: raw reports are for the server's user only: a directory others may write in,
    # or a database others may read, is refused like a readable key.
    private_directory(path.parent)
    for side in (path, *(path.with_name(path.name + s) for s in SIDE_FILES)):
        check_private_file(side, "database file")
    connection = None
    try:
        if not path.exists():
            # Why: SQLite would create it 0644 under the usual umask; its -wal and -shm
            # files copy the database file's mode, so they are 0600 too.
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        connection = sqlite3.connect(
            path,
            timeout=busy_timeout_ms / 1000,
            isolation_level=None,  # Why: we issue BEGIN/COMMIT ourselves.
            check_same_thread=False,
        )
        connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        connection.execute("PRAGMA synchronous = FULL")
        connection.execute("PRAGMA foreign_keys = ON")
        for pragma in pragmas:
            connection.execute(f"PRAGMA {pragma}")
    except (OSError, sqlite3.Error) as error:
        if connection is not None:
            connection.close()
        raise StorageError(f"sqlite {path}: {error}") from None
    return connection


class SqliteDialect(Dialect):
    """One SQLite file: WAL, ``synchronous=FULL``, one long-lived connection per thread.

    Writers take the database lock up front (``BEGIN IMMEDIATE``) and wait up to
    ``busy_timeout_ms`` for it.  Connections are kept per thread (and per process:
    a forked worker opens its own) because closing the last connection to a WAL
    database checkpoints and syncs it, which cost more than the write itself.  A
    connection that saw an error is closed and replaced.

    ``write_turn``: an optional lock (``held(wait=seconds)`` yielding whether it is
    held) every write transaction takes first, so writers queue on it rather than
    on SQLite's busy handler.
    """

    backend = "sqlite"
    placeholder = "?"
    for_share = for_update = for_no_key_update = ""
    concatenate = "group_concat"
    no_limit = -1
    _version_types = ("TEXT", "TEXT")

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = 30_000,
        pragmas: Sequence[str] = (),
        write_turn: Any = None,
    ) -> None:
        self.path = Path(str(path).removeprefix("sqlite:///").removeprefix("sqlite://"))
        self.busy_timeout_ms = busy_timeout_ms
        self.pragmas = tuple(pragmas)
        self.write_turn = write_turn
        self._local = threading.local()

    def connect(self) -> sqlite3.Connection:
        """A new connection of its own (the caller closes it)."""
        return connect(self.path, self.busy_timeout_ms, self.pragmas)

    def thread_connection(self) -> sqlite3.Connection:
        """The calling thread's connection, opened on first use in this process (a
        connection must not cross a fork)."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.connection = self.connect()
            local.pid = os.getpid()
        return local.connection

    def drop_thread_connection(self) -> None:
        """Close the calling thread's connection; its next use opens a new one."""
        connection = getattr(self._local, "connection", None)
        self._local.pid = None
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.close()

    @contextlib.contextmanager
    def transaction(
        self, mode: str = "IMMEDIATE", *, fresh: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """One transaction: COMMIT on success, else ROLLBACK.

        ``fresh`` uses a connection of its own (closed afterwards), for a
        transaction that stays open while other work runs on this thread, such
        as a streamed export.
        """
        turn = (
            self.write_turn.held(wait=self.busy_timeout_ms / 1000)
            if mode == "IMMEDIATE" and self.write_turn is not None
            else contextlib.nullcontext(True)
        )
        with turn as ours:
            if not ours:
                raise StorageError(f"sqlite {self.path}: database is locked (write turn)")
            connection = self.connect() if fresh else self.thread_connection()
            healthy = False
            try:
                connection.execute(f"BEGIN {mode}")
                try:
                    yield connection
                except BaseException:
                    connection.execute("ROLLBACK")
                    healthy = True
                    raise
                connection.execute("COMMIT")
                healthy = True
            except sqlite3.Error as error:
                raise StorageError(f"sqlite {self.path}: {error}") from None
            finally:
                if fresh:
                    connection.close()
                elif not healthy:
                    self.drop_thread_connection()

    def write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self.transaction("IMMEDIATE")

    def read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self.transaction("DEFERRED")

    def stream(self, text: str, parameters: Sequence[Any]) -> Iterator[tuple]:
        # Why: one read transaction is one WAL snapshot for the whole stream.
        with self.transaction("DEFERRED", fresh=True) as connection:
            cursor = connection.execute(self.sql(text), parameters)
            while rows := cursor.fetchmany(1000):
                yield from rows

    def now(self) -> str:
        return iso(utc_now())

    def int_array(self, values: Iterable[int]) -> str:
        return json.dumps(list(values))

    def read_int_array(self, value: Any) -> list[int]:
        return json.loads(value)

    def ping(self) -> None:
        with self.read() as connection:
            connection.execute("SELECT 1").fetchone()
        # Why: a read answers on a full disk or a read-only file too; writes would not.
        folder = self.path.parent
        if not os.access(self.path, os.W_OK) or not os.access(folder, os.W_OK):
            raise StorageError(f"sqlite {self.path}: the database file is not writable")
        if shutil.disk_usage(folder).free < MIN_FREE_BYTES:
            raise StorageError(f"sqlite {self.path}: the disk is full")

    def close(self) -> None:
        self.drop_thread_connection()
        if self.write_turn is not None:
            self.write_turn.close()

    def create_version_table(self, table: str, stamped: bool) -> None:
        connection = self.connect()
        try:
            # Why: WAL is a property of the file; set once, outside any transaction.
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {table} ({self.version_columns(stamped)})"
            )
        except sqlite3.Error as error:
            raise StorageError(f"sqlite {self.path}: {error}") from None
        finally:
            connection.close()

    def lock_migrations(self, connection: Any, table: str, stamped: bool) -> None:
        """Nothing more: BEGIN IMMEDIATE holds the database lock."""

    def run_script(self, connection: Any, script: str) -> None:
        for statement in split_statements(script):
            connection.execute(statement)

    def stamp(self, stamped: bool) -> tuple[Any, ...]:
        return (self.now(),) if stamped else ()

    def has_table(self, connection: Any, table: str) -> bool:
        return (
            connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            is not None
        )


# -- PostgreSQL -----------------------------------------------------------------------------------
class PostgresDialect(Dialect):
    """A PostgreSQL database through psycopg 3 and a connection pool (``postgres`` extra).

    The pool opens on first use in each process, so workers forked after the app is
    created (gunicorn ``--preload``) each own theirs.  Its connections are in
    autocommit: a lone statement is its own transaction, one round trip instead of
    three (BEGIN, it, COMMIT); blocks of several statements run in a transaction.
    """

    backend = "postgresql"
    placeholder = "%s"
    for_share = " FOR SHARE"
    for_update = " FOR UPDATE"
    for_no_key_update = " FOR NO KEY UPDATE"
    concatenate = "string_agg"
    no_limit = None
    _version_types = ("text", "timestamptz")

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = 10,
        pool_timeout: float = 10,
        name: str = "deniable",
        migration_lock: int = 0x6465_6E69,
    ) -> None:
        self.dsn = dsn
        self.pool_size = pool_size
        self.pool_timeout = pool_timeout
        self.name = name
        # An arbitrary constant per service: the advisory lock that serializes migrators.
        self.migration_lock = migration_lock
        self._pool: Any = None
        self._pid = os.getpid()
        self._pool_lock = threading.Lock()

    def pool(self) -> Any:
        """This process's connection pool (opened on first use)."""
        from psycopg_pool import ConnectionPool, PoolTimeout

        with self._pool_lock:
            if self._pool is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._pool = ConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self.pool_size,
                    timeout=self.pool_timeout,
                    open=False,
                    name=self.name,
                    kwargs={"autocommit": True},
                )
                try:
                    self._pool.open(wait=True, timeout=self.pool_timeout)
                except PoolTimeout as error:
                    self._pool.close()
                    self._pool = None
                    raise StorageError(f"postgresql: cannot connect ({error})") from None
            return self._pool

    @contextlib.contextmanager
    def transaction(
        self, *, passing: tuple[type[BaseException], ...] = (), single: bool = False
    ) -> Iterator[Any]:
        """One committed-or-rolled-back transaction on a pooled connection.

        ``single``: the caller runs one statement, which is its own transaction
        (autocommit), so no BEGIN and COMMIT travel.  Database errors of the
        ``passing`` types (deadlocks and serialization failures, say) propagate
        as they are, for the caller to handle.
        """
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with self.pool().connection() as connection:
                if single:
                    yield connection
                else:
                    with connection.transaction():
                        yield connection
        except DeniableError:
            raise
        except PoolTimeout as error:
            raise StorageError(f"postgresql: no connection available ({error})") from None
        except psycopg.DataError as error:
            # Why: a value the database cannot hold (a NUL byte in text, say) came from the
            # request; it is the caller's mistake, not an outage to retry.
            raise InvalidParameter(
                f"a value of this request cannot be stored ({error.sqlstate})"
            ) from None
        except psycopg.Error as error:
            if isinstance(error, passing):
                raise
            raise StorageError(f"postgresql: {type(error).__name__}: {error}") from None

    def write(self) -> contextlib.AbstractContextManager[Any]:
        return self.transaction()

    def read(self) -> contextlib.AbstractContextManager[Any]:
        return self.transaction()

    def lone_read(self) -> contextlib.AbstractContextManager[Any]:
        return self.transaction(single=True)

    def now(self) -> Any:
        return utc_now()

    def int_array(self, values: Iterable[int]) -> list[int]:
        return list(values)

    def read_int_array(self, value: Any) -> list[int]:
        return value

    def execute_many(self, connection: Any, text: str, rows: Iterable[Sequence[Any]]) -> None:
        # Why a cursor: psycopg's executemany pipelines the statements.
        with connection.cursor() as cursor:
            cursor.executemany(self.sql(text), rows)

    def insert_rows(
        self, connection: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> None:
        # Why COPY: a million enrolment tokens are one stream, not a million statements.
        with (
            connection.cursor() as cursor,
            cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)

    def stream(self, text: str, parameters: Sequence[Any]) -> Iterator[tuple]:
        with self.transaction() as connection:
            # Why: one snapshot for the whole stream, read through a server-side cursor.
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            with connection.cursor(name=f"{self.name}_stream") as cursor:
                cursor.itersize = 2000
                cursor.execute(self.sql(text), parameters)
                yield from cursor

    def ping(self) -> None:
        with self.transaction() as connection:
            (read_only,) = connection.execute(
                "SELECT current_setting('transaction_read_only') = 'on' OR pg_is_in_recovery()"
            ).fetchone()
        if read_only:
            raise StorageError("postgresql: the database refuses writes (read-only)")

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close()
            self._pool = None

    def create_version_table(self, table: str, stamped: bool) -> None:
        """In the migrating transaction, under its lock (:meth:`_lock_migrations`)."""

    def lock_migrations(self, connection: Any, table: str, stamped: bool) -> None:
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (self.migration_lock,))
        columns = self.version_columns(stamped)
        if stamped:
            columns += " DEFAULT now()"
        connection.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")

    def run_script(self, connection: Any, script: str) -> None:
        connection.execute(script.encode("utf-8"))

    def stamp(self, stamped: bool) -> tuple[Any, ...]:
        return ()  # applied_at defaults to now()

    def has_table(self, connection: Any, table: str) -> bool:
        return connection.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None
