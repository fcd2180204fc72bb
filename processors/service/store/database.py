"""The two databases under the diagnosis store: SQLite in one file, PostgreSQL shared by replicas.

:class:`~mast_otel.processors.service.store.diagnoses.DiagnosisStore` writes its SQL once, with ``?``
placeholders, and runs it in a :class:`Session` (one transaction) that either database hands
out. What differs lives here: how a session is opened, the placeholder style, which errors
mean "the store refused", and how migrations are kept to one writer at a time (PostgreSQL: an
advisory lock, so replicas starting together apply each migration once).

psycopg is imported only when a ``postgresql://`` URL is configured: the agent-side install
and the embedded default never load it.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol, Sequence, cast

from mast_otel.processors.service.store import schema as store_schema
from mast_otel.processors.usage import UsageError

Params = Sequence[object]
log = logging.getLogger(__name__)


class StoreUnavailable(UsageError):
    """The store cannot be opened (a SQLite path that cannot hold a database, a PostgreSQL server
    that cannot be reached or refuses the credentials)."""


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...  # a row, None past the last (the drivers' own typing says Any)

    def fetchall(self) -> list[tuple]: ...

    def __iter__(self) -> Iterator[tuple]: ...


class Session(Protocol):
    """One transaction (a write session) or a read, on one connection."""

    def execute(self, sql: str, params: Params = ()) -> Cursor: ...

    def executemany(self, sql: str, rows: Iterable[Params]) -> None: ...


class Database(Protocol):
    """What the store's tables are written through: SQLite in one process, PostgreSQL shared."""

    @property
    def shared(self) -> bool:
        """Other processes write the same store (their rows appear without this one's writes)."""
        ...

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """What a refused read or write raises."""
        ...

    @property
    def data_errors(self) -> tuple[type[Exception], ...]:
        """What a write raises when it is a value the store refuses."""
        ...

    @property
    def where(self) -> str:
        """The store's location for messages (a PostgreSQL URL without its password)."""
        ...

    def session(self, write: bool = False, api: bool = False) -> AbstractContextManager[Session]: ...

    def close(self) -> None: ...


class SQLiteDatabase:
    """One connection guarded by a lock (WAL journal); this process is the file's only writer."""

    shared = False
    errors = (sqlite3.Error,)
    data_errors = (sqlite3.DataError, sqlite3.IntegrityError)  # a value refused, not the store

    def __init__(self, path: str | Path) -> None:
        self.where = str(path)
        self._lock = threading.RLock()
        try:
            if str(path) != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self.session(write=True) as s:
                migrate(s, lock=None, without_rowid=self.without_rowid)
        except (OSError, sqlite3.DatabaseError) as exc:
            named = getattr(exc, "filename", None)
            where = f"{named}: " if named and str(named) != str(path) else ""
            raise StoreUnavailable(f"cannot open the store {path}: {where}{getattr(exc, 'strerror', None) or exc}") from None
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(diagnoses)")}
        if "attribution" not in columns:  # a store written before attribution was kept
            self._db.execute("ALTER TABLE diagnoses ADD COLUMN attribution TEXT")

    without_rowid = " WITHOUT ROWID"
    migration_lock = None

    @contextmanager
    def session(self, write: bool = False, api: bool = False) -> Iterator[Session]:
        with self._lock:
            if not write:
                yield cast(Session, self._db)  # sqlite3's parameters are typed narrower than Params
                return
            self._db.execute("BEGIN")
            try:
                yield cast(Session, self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


class PostgresDatabase:
    """A connection pool on one PostgreSQL database that every replica shares."""

    shared = True
    without_rowid = ""
    # one key for the whole schema: a replica that starts while another migrates waits for it
    migration_lock = "SELECT pg_advisory_xact_lock(7361827364518273)"

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 4, open_timeout: float = 30.0,
                 wait_timeout: float = 5.0, connect_timeout: float = 0.0, api_size: int = 4,
                 api_statement_timeout: float = 10.0) -> None:
        """``wait_timeout``: how long a read or write waits for a connection before it counts as
        refused (the database gone away must not hold the API or the sweeper for long).
        ``connect_timeout``: how long the first connection is retried, with backoff, before the
        store counts as unreachable (a database that starts after the processor, as in compose).
        The pipeline and the API draw from separate pools (``max_size`` and ``api_size``
        connections), so readers never hold the connections the pipeline needs; an API query
        runs at most ``api_statement_timeout`` seconds."""
        import psycopg
        from psycopg_pool import ConnectionPool

        self.where = redact_url(url)
        self.errors = (psycopg.Error,)
        self.data_errors = (psycopg.DataError, psycopg.IntegrityError)  # a value refused, not the store
        options = {"application_name": "mast-otel", "connect_timeout": 10}
        api_options = {**options, "application_name": "mast-otel-api",
                       "options": f"-c statement_timeout={max(1, int(api_statement_timeout * 1000))}"}
        try:  # one connection first: it says why when it fails, and applies the migrations
            self._first_connection(psycopg, url, options, connect_timeout)
            self._pool = ConnectionPool(url, min_size=min_size, max_size=max_size, timeout=wait_timeout, open=False,
                                        kwargs=options, name="mast-otel-pipeline")
            self._pool.open(wait=True, timeout=open_timeout)
            self._api_pool = ConnectionPool(url, min_size=1, max_size=api_size, timeout=wait_timeout, open=False,
                                            kwargs=api_options, name="mast-otel-api",
                                            check=ConnectionPool.check_connection)  # a reader after an outage gets a live one
            self._api_pool.open(wait=False)
        except psycopg.Error as exc:
            for pool in ("_pool", "_api_pool"):
                if hasattr(self, pool):
                    getattr(self, pool).close()
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreUnavailable(f"cannot open the store {self.where}: {reason}") from None

    def _first_connection(self, psycopg, url: str, options: dict, connect_timeout: float) -> None:
        """Connect and migrate, retrying a refused connection with backoff (0.5 s doubling to 5 s)
        for ``connect_timeout`` seconds; the last error when the time is up."""
        deadline = time.monotonic() + connect_timeout
        pause = 0.5
        waited = False
        while True:
            try:
                with psycopg.connect(url, **options) as conn:
                    migrate(_PostgresSession(conn), lock=self.migration_lock, without_rowid=self.without_rowid)
                if waited:
                    log.info("the store %s accepts connections", self.where)
                return
            except psycopg.OperationalError as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                if not waited:
                    waited = True
                    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    log.warning("the store %s is not reachable yet (%s); retrying for up to %.0f s "
                                "(store.connect_timeout_seconds)", self.where, reason, connect_timeout)
                time.sleep(min(pause, left))
                pause = min(pause * 2, 5.0)

    @contextmanager
    def session(self, write: bool = False, api: bool = False) -> Iterator[Session]:
        """``api``: a read for the API or the web view, from their own pool, under the statement timeout."""
        with (self._api_pool if api else self._pool).connection() as conn:  # commits on leaving, rolls back on an exception
            yield _PostgresSession(conn)

    def close(self) -> None:
        self._api_pool.close()
        self._pool.close()


class _PostgresSession:
    __slots__ = ("conn",)

    def __init__(self, conn) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        return self.conn.execute(_placeholders(sql), params or None)

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """An ``INSERT ... VALUES (?, ...)`` of many rows as one statement over arrays (a column
        each): one round trip and the adaptation done in C, where a row per message costs the
        driver about as much as everything else the store does; other statements row by row."""
        rows = list(rows)
        if not rows:
            return
        insert = _INSERT.fullmatch(sql)
        if insert is None:
            with self.conn.cursor() as cur:
                cur.executemany(_placeholders(sql), rows)
            return
        table, columns, rest = insert.groups()
        names = [c.strip() for c in columns.split(",")]
        types = _column_types(self.conn, table)
        arrays = ", ".join(f"%b::{types[n]}[]" for n in names)
        self.conn.execute(f"INSERT INTO {table} ({columns}) SELECT * FROM unnest({arrays}){_placeholders(rest)}",
                          [list(column) for column in zip(*rows)])


_INSERT = re.compile(r"INSERT INTO (\w+) \(([^)]*)\) VALUES \([?, ]+\)(.*)", re.DOTALL)
_TYPES: dict[str, dict[str, str]] = {}


def _column_types(conn, table: str) -> dict[str, str]:
    """The table's column types as PostgreSQL names them (read once per process)."""
    if table not in _TYPES:
        rows = conn.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
                            (table,)).fetchall()
        _TYPES[table] = dict(rows)
    return _TYPES[table]


@lru_cache(maxsize=256)
def _placeholders(sql: str) -> str:
    """SQLite's ``?`` as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def redact_url(url: str) -> str:
    """``url`` without its password, for logs and errors."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def migrate(s: Session, *, lock: str | None, without_rowid: str) -> list[int]:
    """Apply the migrations the store lacks, in the session's transaction, one migrating process
    at a time (``lock``, held to the end of the transaction); the versions applied."""
    if lock:
        s.execute(lock)
    s.execute(store_schema.VERSIONS_TABLE)
    applied = {row[0] for row in s.execute("SELECT version FROM schema_migrations")}
    done = []
    for migration in store_schema.pending(applied):
        for statement in store_schema.statements(migration, without_rowid=without_rowid):
            s.execute(statement)
        s.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", (migration.version, time.time()))
        done.append(migration.version)
    return done


def open_database(url: str | None, path: str | Path, *, pool_size: int = 4, api_pool_size: int = 4,
                  connect_timeout: float = 0.0, api_statement_timeout: float = 10.0) -> SQLiteDatabase | PostgresDatabase:
    """PostgreSQL for a ``postgresql://`` (or ``postgres://``) URL, else SQLite at ``path``."""
    if url:
        if not url.startswith(("postgresql://", "postgres://")):
            raise StoreUnavailable(f"store.url {redact_url(url)!r}: only postgresql:// URLs are supported "
                                   "(leave it unset for the embedded SQLite store at store.path)")
        return PostgresDatabase(url, max_size=pool_size, api_size=api_pool_size, connect_timeout=connect_timeout,
                                api_statement_timeout=api_statement_timeout)
    return SQLiteDatabase(path)
