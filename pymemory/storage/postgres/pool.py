"""PgPool: one connection pool (and one LISTEN connection) shared by namespaces.

:class:`~.database.PostgresDatabase` is this pool plus the namespaced stores; a
:class:`~.kv.PostgresKv` opened on its own has a pool of its own. Every call borrows a
pooled connection (autocommit) for one statement or one transaction. A write
transaction (:meth:`PgPool.write`) takes two round trips: ``BEGIN``, the namespace's
advisory lock and the reads in one pipeline, then the writes and ``COMMIT`` in another.
A connection that turns out dead in the first (a server restart left the pool holding
closed connections) is replaced and the call tried again, since nothing has been
written; any later failure becomes a typed error (:mod:`.errors`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ...errors import SchemaError, StorageError, StoreClosedError
from .errors import translate
from .listen import Listener
from .sql import CREATE, MIGRATIONS, SCHEMA_LOCK, SCHEMA_TABLE, SCHEMA_VERSION, channel, lock_id

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

    Conn = AsyncConnection[Any]

#: One statement and its parameters.
Query = tuple[str, Sequence[Any]]

log = logging.getLogger("pymemory")
T = TypeVar("T")

# Tries of the first statement of a call on a pooled connection that turns out dead.
_STALE_TRIES = 3


def _import_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise ImportError(
            "PostgresKv needs psycopg 3 and psycopg_pool: pip install 'pymemory-agent[postgres]'"
        ) from None


def _dead(conn: Conn, exc: BaseException) -> bool:
    """Whether ``exc`` means the connection itself is gone (not a statement's error)."""
    import psycopg

    return isinstance(exc, psycopg.OperationalError) and (conn.closed or conn.broken)


class PgPool:
    """Connections to a PostgreSQL database holding pymemory stores (see module doc)."""

    def __init__(
        self, pool: AsyncConnectionPool[Any], conninfo: str, connect_timeout_s: float
    ) -> None:
        self._pool = pool
        self._conninfo = conninfo
        self._listener = Listener(conninfo, connect_timeout_s=connect_timeout_s)
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
        """Connect (raising AuthenticationError or ServerUnavailableError at once when the
        server refuses), create or migrate the table, and start the pool.

        ``statement_timeout_ms`` bounds every statement, waiting for a namespace's write
        lock included (StatementTimeoutError, nothing written; 0: no bound).
        ``connect_timeout_s`` bounds connecting and waiting for a free pooled connection
        (ServerUnavailableError)."""
        _import_psycopg()
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        for name, value in (("min_connections", min_connections),
                            ("max_connections", max_connections),
                            ("statement_timeout_ms", statement_timeout_ms)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0")
        if max_connections < max(1, min_connections):
            raise ValueError("max_connections must be >= max(1, min_connections)")
        if not connect_timeout_s > 0:
            raise ValueError("connect_timeout_s must be > 0")
        options = {"autocommit": True, "client_encoding": "UTF8"}
        connect_s = max(1, round(connect_timeout_s))  # libpq takes whole seconds
        try:
            conn = await psycopg.AsyncConnection.connect(dsn, connect_timeout=connect_s, **options)
        except psycopg.Error as exc:
            raise translate(exc, "connecting") from None
        try:
            await _ensure_schema(conn)
        except psycopg.Error as exc:
            raise translate(exc, "creating the table") from None
        finally:
            await conn.close()

        async def configure(conn: Conn) -> None:
            await conn.execute(
                "SELECT set_config('statement_timeout', %s, false)", (str(statement_timeout_ms),)
            )

        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            dsn,
            kwargs={**options, "connect_timeout": connect_s},
            min_size=min_connections,
            max_size=max_connections,
            timeout=connect_timeout_s,
            configure=configure,
            open=False,
            name="pymemory",
        )
        await pool.open(wait=False)
        return cls(pool, dsn, connect_timeout_s)

    # --- calls on pooled connections ----------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise StoreClosedError("this PostgreSQL database is closed")

    @contextlib.asynccontextmanager
    async def _connection(self, where: str) -> AsyncIterator[Conn]:
        """A pooled connection (a closed pool: StoreClosedError; none free in time:
        ServerUnavailableError). The pool drops it if it comes back broken or busy."""
        self._check_open()
        try:
            conn = await self._pool.getconn()
        except Exception as exc:
            raise translate(exc, where) from None
        try:
            yield conn
        finally:
            await self._pool.putconn(conn)

    async def _recover(self) -> None:
        """After a dead connection: drop the pool's other dead ones before a retry."""
        with contextlib.suppress(Exception):
            await self._pool.check()

    async def read(self, where: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn`` (reads only) on a pooled connection; a dead connection is replaced
        and ``fn`` run again, since reading twice is harmless."""
        import psycopg

        for attempt in range(_STALE_TRIES):
            async with self._connection(where) as conn:
                try:
                    return await fn(conn)
                except psycopg.Error as exc:
                    if attempt + 1 == _STALE_TRIES or not _dead(conn, exc):
                        raise translate(exc, where) from None
            await self._recover()
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
        for attempt in range(_STALE_TRIES):
            async with self._connection(where) as conn:
                try:
                    rows = await _begin(conn, lock, reads)
                except psycopg.Error as exc:
                    if attempt + 1 == _STALE_TRIES or not _dead(conn, exc):
                        await _rollback(conn)
                        raise translate(exc, where) from None
                else:
                    return await _finish(conn, where, rows, decide)
            await self._recover()  # nothing was written: try again on another connection
        raise AssertionError("unreachable")

    def listen(self, namespace: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` after commits through ``namespace``'s change log (see
        :mod:`.listen`); returns its remover."""
        self._check_open()
        return self._listener.add(channel(namespace), callback)

    async def close(self) -> None:
        """Close the listener and the pool; every store using them is closed too."""
        if self.closed:
            return
        self.closed = True
        await self._listener.close()
        await self._pool.close()


async def _begin(conn: Conn, lock: int, reads: Sequence[Query]) -> list[list[tuple[Any, ...]]]:
    """BEGIN, wait for the lock, run ``reads``: one round trip. Each read is a statement
    of its own, so its snapshot is taken once the lock is held (READ COMMITTED)."""
    async with conn.pipeline():
        await conn.execute("BEGIN")
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
        cursors = [await conn.execute(query, args) for query, args in reads]
    return [await cur.fetchall() for cur in cursors]


async def _finish(
    conn: Conn,
    where: str,
    rows: list[list[tuple[Any, ...]]],
    decide: Callable[[list[list[tuple[Any, ...]]]], tuple[Sequence[Query], T]],
) -> T:
    """Decide, then write and COMMIT in one round trip (or roll back if ``decide``
    raises). A connection lost during that round trip leaves the outcome unknown."""
    import psycopg

    try:
        statements, result = decide(rows)
    except BaseException:
        await _rollback(conn)
        raise
    try:
        async with conn.pipeline():
            for query, args in statements:
                await conn.execute(query, args)
            await conn.execute("COMMIT")
    except psycopg.Error as exc:
        lost = _dead(conn, exc)
        if not lost:
            await _rollback(conn)  # a statement failed: the pipeline skipped the COMMIT
        raise translate(exc, where, committing=lost) from None
    except BaseException:
        await _rollback(conn)
        raise
    return result


async def _rollback(conn: Conn) -> None:
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
