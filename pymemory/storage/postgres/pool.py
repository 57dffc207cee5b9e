"""PgPool: the connections (and one LISTEN connection) shared by namespaces.

:class:`~.database.PostgresDatabase` is this pool plus the namespaced stores; a
:class:`~.kv.PostgresKv` opened on its own has a pool of its own. Every call borrows a
connection (autocommit, :mod:`.connections`: made by the call that needs one, so the
first call after a server restart connects at once) for one statement or one
transaction. A write transaction (:meth:`PgPool.write`) takes two round trips: ``BEGIN``,
the namespace's advisory lock and the reads in one pipeline, then the writes and
``COMMIT`` in another. A connection that turns out dead in the first (a server restart
left the pool holding closed connections) is replaced and the call tried again, since
nothing has been written; any later failure becomes a typed error (:mod:`.errors`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ...errors import SchemaError, StorageError, StoreClosedError, ValidationError
from .connections import Connections, Watchdog, discard
from .errors import CommitUnknownError, ServerUnavailableError, translate
from .listen import Listener
from .sql import CREATE, MIGRATIONS, SCHEMA_LOCK, SCHEMA_TABLE, SCHEMA_VERSION, channel, lock_id

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    Conn = AsyncConnection[Any]

#: One statement and its parameters.
Query = tuple[str, Sequence[Any]]

log = logging.getLogger("pymemory")
T = TypeVar("T")

# Tries of the first statement of a call on a pooled connection that turns out dead.
_STALE_TRIES = 3
# The most statements opening runs (the encoding, the lock, the checks, a migration).
_SCHEMA_STATEMENTS = 12


def _import_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise ImportError(
            "PostgresKv needs psycopg 3: pip install 'pymemory-agent[postgres]'"
        ) from None


def check_dsn(dsn: object) -> str:
    """``dsn`` if it is a libpq connection string or ``postgresql://`` URL that parses
    (ValidationError otherwise; no I/O). An empty one is refused: ``postgresql://``
    takes everything from libpq's environment variables (PGHOST, ...) instead."""
    if not isinstance(dsn, str):
        raise ValidationError(
            f"the PostgreSQL DSN must be a str (a libpq connection string such as"
            f" 'host=db dbname=app user=app', or a postgresql:// URL), got {type(dsn).__name__}"
        )
    if not dsn.strip():
        raise ValidationError(
            "the PostgreSQL DSN is empty: give 'host=... dbname=... user=...' or a"
            " postgresql:// URL ('postgresql://' alone uses libpq's PG* environment variables)"
        )
    _import_psycopg()
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise ValidationError(f"the PostgreSQL DSN is malformed: {str(exc).strip()}") from None
    return dsn


def _dead(conn: Conn, exc: BaseException) -> bool:
    """Whether ``exc`` means the connection itself is gone (not a statement's error)."""
    import psycopg

    return isinstance(exc, psycopg.OperationalError) and (conn.closed or conn.broken)


class PgPool:
    """Connections to a PostgreSQL database holding pymemory stores (see module doc)."""

    def __init__(self, connections: Connections, conninfo: str, statement_timeout_ms: int) -> None:
        self._connections = connections
        self._conninfo = conninfo
        self._statement_timeout_s = statement_timeout_ms / 1000
        self._listener = Listener(conninfo, connect_timeout_s=connections.connect_timeout_s)
        self.closed = False

    @classmethod
    async def open(
        cls,
        dsn: str,
        *,
        min_connections: int = 1,
        max_connections: int = 10,
        statement_timeout_ms: int = 30_000,
        connect_timeout_s: float = 10.0,
    ) -> Self:
        """Connect, create or migrate the table, and keep that connection for the calls.

        A setup mistake raises at once and is not retryable: a DSN that is not a
        non-empty str or does not parse (ValidationError), wrong credentials
        (AuthenticationError), an unknown database, TLS the server does not offer or a
        server that is not PostgreSQL (ConfigurationError). A server that refuses or
        does not answer is a retryable ServerUnavailableError (it may be starting; a
        wrong port looks the same).

        ``max_connections`` bounds the open connections (made on demand; the idle ones
        beyond ``min_connections`` close after 10 minutes unused).
        ``statement_timeout_ms`` bounds every statement, waiting for a namespace's write
        lock included (StatementTimeoutError, nothing written; 0: no bound).
        ``connect_timeout_s`` bounds connecting and waiting for a free connection
        (ServerUnavailableError). A call whose server stops answering (a network that
        drops everything, a frozen server) has its connection cut once it ran longer
        than its statements may run plus ``connect_timeout_s`` (ServerUnavailableError,
        or CommitUnknownError while committing); with ``statement_timeout_ms=0`` the
        client sets no bound either."""
        dsn = check_dsn(dsn)
        import psycopg

        for name, value in (("min_connections", min_connections),
                            ("max_connections", max_connections),
                            ("statement_timeout_ms", statement_timeout_ms)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(f"{name} must be an int >= 0")
        if max_connections < max(1, min_connections):
            raise ValidationError("max_connections must be >= max(1, min_connections)")
        if (
            isinstance(connect_timeout_s, bool)
            or not isinstance(connect_timeout_s, (int, float))
            or not connect_timeout_s > 0
        ):
            raise ValidationError("connect_timeout_s must be a number of seconds > 0")

        async def configure(conn: Conn) -> None:
            await conn.execute(
                "SELECT set_config('statement_timeout', %s, false)", (str(statement_timeout_ms),)
            )

        connections = Connections(
            dsn,
            min_size=min_connections,
            max_size=max_connections,
            connect_timeout_s=float(connect_timeout_s),
            configure=configure,
        )
        pool = cls(connections, dsn, statement_timeout_ms)
        conn = await connections.connect()
        dog = Watchdog(conn, pool._bound(_SCHEMA_STATEMENTS))
        try:
            with dog:
                await _ensure_schema(conn)
        except psycopg.Error as exc:
            discard(conn)
            raise _cut_error(dog, "creating the table") or translate(
                exc, "creating the table"
            ) from None
        except BaseException:
            discard(conn)
            raise
        connections.adopt(conn)
        return pool

    # --- calls on pooled connections ----------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise StoreClosedError("this PostgreSQL database is closed")

    def _bound(self, statements: int) -> float | None:
        """How long a call of ``statements`` statements may wait on the server before its
        connection is cut: each may run ``statement_timeout_ms``, plus
        ``connect_timeout_s`` for the round trips (None: statements are unbounded)."""
        if self._statement_timeout_s <= 0:
            return None
        return statements * self._statement_timeout_s + self._connections.connect_timeout_s

    @contextlib.asynccontextmanager
    async def _connection(self, where: str, statements: int) -> AsyncIterator[Watchdog]:
        """A pooled connection, watched for ``statements`` statements (a closed pool:
        StoreClosedError; none free in time or the server unreachable:
        ServerUnavailableError; a setup mistake: ConfigurationError). It goes back to the
        pool without a wait; one broken, cut or left in a transaction is closed."""
        self._check_open()
        try:
            conn = await self._connections.acquire()
        except StoreClosedError:
            raise StoreClosedError("this PostgreSQL database is closed") from None
        try:
            with Watchdog(conn, self._bound(statements)) as dog:
                yield dog
        finally:
            self._connections.release(conn)

    def _recover(self) -> None:
        """After a dead connection: drop the idle ones too (a server restart killed them
        all), so the retry connects afresh."""
        dropped = self._connections.discard_idle()
        log.info("PostgreSQL: a connection was dead; dropped %d idle ones", dropped)

    async def read(self, where: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn`` (one read statement) on a pooled connection; a dead connection is
        replaced and ``fn`` run again, since reading twice is harmless."""
        import psycopg

        for attempt in range(_STALE_TRIES):
            async with self._connection(where, 1) as dog:
                try:
                    return await fn(dog.conn)
                except psycopg.Error as exc:
                    cut = _cut_error(dog, where)
                    if cut is not None:
                        raise cut from None
                    if attempt + 1 == _STALE_TRIES or not _dead(dog.conn, exc):
                        raise translate(exc, where) from None
            self._recover()
        raise AssertionError("unreachable")

    async def write(
        self,
        namespace: str,
        where: str,
        reads: Sequence[Query],
        decide: Callable[[list[list[tuple[Any, ...]]]], tuple[Sequence[Query], T]],
    ) -> T:
        """One transaction holding ``namespace``'s advisory lock, in two round trips:
        BEGIN, the lock and ``reads`` go in one pipeline; ``decide(rows)`` (the rows of
        each read; it may raise, which rolls back) returns the statements to run and the
        result, and they go with COMMIT in a second. No other writer of the namespace, in
        any process, runs between the reads and the COMMIT."""
        import psycopg

        lock = lock_id(namespace)
        # BEGIN, the lock, the reads, then at most a DELETE, a PUT, a NOTIFY and COMMIT.
        statements = len(reads) + 6
        for attempt in range(_STALE_TRIES):
            async with self._connection(where, statements) as dog:
                conn = dog.conn
                try:
                    rows = await _begin(conn, lock, reads)
                except psycopg.Error as exc:
                    cut = _cut_error(dog, where)
                    if cut is not None:
                        raise cut from None
                    if attempt + 1 == _STALE_TRIES or not _dead(conn, exc):
                        await _rollback(conn)
                        raise translate(exc, where) from None
                else:
                    return await _finish(dog, where, rows, decide)
            self._recover()  # nothing was written: try again on another connection
        raise AssertionError("unreachable")

    def listen(self, namespace: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` after commits through ``namespace``'s change log (see
        :mod:`.listen`); returns its remover."""
        self._check_open()
        return self._listener.add(channel(namespace), callback)

    async def close(self) -> None:
        """Close the listener and the connections (those in use close as their calls
        end); every store using them is closed too."""
        if self.closed:
            return
        self.closed = True
        self._connections.close()
        await self._listener.close()


def _cut_error(dog: Watchdog, where: str, *, committing: bool = False) -> Exception | None:
    """The error of a call whose watchdog cut its connection (None if it did not)."""
    if not dog.fired:
        return None
    said = f"PostgreSQL ({where}): the server did not answer within {dog.seconds:g} s"
    if committing:
        return CommitUnknownError(
            f"{said} while committing; the write landed whole or not at all. Read before"
            " writing again."
        )
    return ServerUnavailableError(f"{said}; nothing was written. Retry when it answers.")


async def _begin(conn: Conn, lock: int, reads: Sequence[Query]) -> list[list[tuple[Any, ...]]]:
    """BEGIN, wait for the lock, run ``reads``: one round trip. Each read is a statement
    of its own, so its snapshot is taken once the lock is held (READ COMMITTED)."""
    async with conn.pipeline():
        await conn.execute("BEGIN")
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
        cursors = [await conn.execute(query, args) for query, args in reads]
    return [await cur.fetchall() for cur in cursors]


async def _finish(
    dog: Watchdog,
    where: str,
    rows: list[list[tuple[Any, ...]]],
    decide: Callable[[list[list[tuple[Any, ...]]]], tuple[Sequence[Query], T]],
) -> T:
    """Decide, then write and COMMIT in one round trip (or roll back if ``decide``
    raises). A connection lost during that round trip leaves the outcome unknown. A
    cancellation rolls nothing back itself: the connection, left in its transaction,
    is closed when it goes back to the pool, and the server rolls back."""
    import psycopg

    conn = dog.conn
    try:
        statements, result = decide(rows)
    except Exception:
        await _rollback(conn)
        raise
    try:
        async with conn.pipeline():
            for query, args in statements:
                await conn.execute(query, args)
            await conn.execute("COMMIT")
    except psycopg.Error as exc:
        lost = dog.fired or _dead(conn, exc)
        if not lost:
            await _rollback(conn)  # a statement failed: the pipeline skipped the COMMIT
        raise _cut_error(dog, where, committing=True) or translate(
            exc, where, committing=lost
        ) from None
    return result


async def _rollback(conn: Conn) -> None:
    """Roll back an open transaction (bounded by the call's watchdog)."""
    if not conn.closed:
        with contextlib.suppress(Exception):
            await conn.execute("ROLLBACK")


async def column(conn: Conn, query: str) -> list[Any]:
    cur = await conn.execute(query)
    return [row[0] for row in await cur.fetchall()]


async def _ensure_schema(conn: Conn) -> None:
    """Create the table, or migrate it to :data:`SCHEMA_VERSION`, under a lock."""
    cur = await conn.execute("SHOW server_encoding")
    row = await cur.fetchone()
    if row is None or row[0].upper() not in ("UTF8", "UTF-8"):
        raise StorageError(
            f"pymemory needs a UTF8 PostgreSQL database (this one is {row and row[0]}):"
            " create it with ENCODING 'UTF8'"
        )
    async with conn.transaction():
        await conn.execute(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")
        cur = await conn.execute("SELECT to_regclass(%s)", (SCHEMA_TABLE,))
        row = await cur.fetchone()
        if row is None or row[0] is None:
            for statement in CREATE:
                await conn.execute(statement)
            log.info("created the pymemory table (schema version %d)", SCHEMA_VERSION)
            return
        cur = await conn.execute(f"SELECT version FROM {SCHEMA_TABLE} WHERE id = 1")
        row = await cur.fetchone()
        version = 0 if row is None else int(row[0])
        if version > SCHEMA_VERSION:
            raise SchemaError(
                f"the PostgreSQL table was written by a newer pymemory (schema {version},"
                f" this one knows {SCHEMA_VERSION}): upgrade pymemory"
            )
        while version < SCHEMA_VERSION:
            if version not in MIGRATIONS:
                raise SchemaError(f"no migration from PostgreSQL schema version {version}")
            for statement in MIGRATIONS[version]:
                await conn.execute(statement)
            version += 1
            await conn.execute(f"UPDATE {SCHEMA_TABLE} SET version = %s WHERE id = 1", (version,))
            log.info("migrated the pymemory table to schema version %d", version)
