"""PostgresKv: the KvBackend of one namespace in a PostgreSQL table.

Reads are single statements on a pooled autocommit connection (each sees everything
committed before it started). Every write (``put_many``, ``delete_many``, ``transact``)
is one transaction that first takes the namespace's transaction-scoped advisory lock, so
writers of one namespace, in any process on any machine, run one at a time and a
``transact`` reads and writes with nobody in between, while other namespaces write in
parallel. A transaction that writes the change log's ``meta:seq`` also sends a NOTIFY on
the namespace's channel (delivered on commit), which :meth:`PostgresKv.watch_changes`
turns into a callback: the hook a Memory uses to catch up while idle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import StoreClosedError
from ..base import TransactFn, check_items, check_key, check_prefixes, check_writes
from ..changes import SEQ_KEY
from ..sqlite import prefix_upper_bound
from .pool import PgPool
from .sql import (
    DELETE,
    GET,
    GET_MANY,
    NOTIFY,
    PUT,
    channel,
    check_entry_size,
    check_namespace,
    range_query,
)

if TYPE_CHECKING:
    from .pool import Conn, Query


class PostgresKv:
    """KvBackend over PostgreSQL. ``await PostgresKv.open(dsn, namespace="user-42")``
    opens a pool of its own (closed with the store); many namespaces in one process
    share one pool through ``PostgresDatabase.kv`` instead."""

    def __init__(self, database: PgPool, namespace: str, *, owns_database: bool) -> None:
        self.database = database
        self.namespace = check_namespace(namespace)
        self._owns = owns_database
        self._closed = False

    @classmethod
    async def open(cls, dsn: str, *, namespace: str, **options: Any) -> PostgresKv:
        """Open the store of ``namespace`` in the database at ``dsn`` (a libpq connection
        string or ``postgresql://`` URL). ``options`` go to ``PostgresDatabase.open``
        (pool size, ``statement_timeout_ms``, ``connect_timeout_s``)."""
        check_namespace(namespace)
        options.setdefault("max_connections", 4)
        database = await PgPool.open(dsn, **options)
        return cls(database, namespace, owns_database=True)

    def __repr__(self) -> str:
        return f"PostgresKv(namespace={self.namespace!r})"

    def _check_open(self) -> None:
        if self._closed or self.database.closed:
            raise StoreClosedError(f"the PostgreSQL store of namespace {self.namespace!r} closed")

    # --- reads ------------------------------------------------------------------------

    async def get(self, key: str) -> bytes | None:
        key = check_key(key)
        self._check_open()

        async def run(conn: Conn) -> bytes | None:
            cur = await conn.execute(GET, (self.namespace, key))
            row = await cur.fetchone()
            return None if row is None else bytes(row[0])

        return await self.database.read("get", run)

    def _fetch_query(self, keys: list[str]) -> Query:
        return GET_MANY, (self.namespace, list(dict.fromkeys(keys)))

    def _list_query(self, prefix: str) -> Query:
        query, args = range_query("key", prefix, prefix_upper_bound(prefix), None, None)
        return query, (self.namespace, *args)

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        checked = [check_key(k) for k in keys]
        self._check_open()
        if not checked:
            return []

        async def run(conn: Conn) -> list[bytes | None]:
            cur = await conn.execute(*self._fetch_query(checked))
            found = {k: bytes(v) for k, v in await cur.fetchall()}
            return [found.get(k) for k in checked]

        return await self.database.read("get_many", run)

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        if not isinstance(prefix, str):
            check_key(prefix)
        self._check_open()
        query, args = range_query(
            "key, value", prefix, prefix_upper_bound(prefix), start_after, limit
        )

        async def run(conn: Conn) -> list[tuple[str, bytes]]:
            cur = await conn.execute(query, (self.namespace, *args))
            return [(k, bytes(v)) for k, v in await cur.fetchall()]

        return await self.database.read("scan", run)

    # --- writes -----------------------------------------------------------------------

    def _statements(self, puts: list[tuple[str, bytes]], deletes: list[str]) -> list[Query]:
        """One batch as statements: puts win over deletes, later duplicates over earlier
        ones; a NOTIFY when it moves the change log (delivered only if it commits)."""
        latest = dict(puts)
        doomed = [k for k in dict.fromkeys(deletes) if k not in latest]
        out: list[Query] = []
        if doomed:
            out.append((DELETE, (self.namespace, doomed)))
        if latest:
            out.append((PUT, (self.namespace, list(latest), list(latest.values()))))
        seq = latest.get(SEQ_KEY)
        if seq is not None:
            payload = seq.decode("utf-8", "replace")[:100]
            out.append((NOTIFY, (channel(self.namespace), payload)))
        return out

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        pairs = check_items(items)
        doomed = [check_key(k) for k in deletes]
        check_entry_size(self.namespace, [k for k, _ in pairs])
        self._check_open()
        if not pairs and not doomed:
            return
        batch = self._statements(pairs, doomed)
        await self.database.write(self.namespace, "put_many", [], lambda _rows: (batch, None))

    async def delete_many(self, keys: Sequence[str]) -> None:
        doomed = [check_key(k) for k in keys]
        self._check_open()
        if not doomed:
            return
        batch = self._statements([], doomed)
        await self.database.write(self.namespace, "delete_many", [], lambda _rows: (batch, None))

    async def transact(
        self, keys: Sequence[str], fn: TransactFn, *, list_prefixes: Sequence[str] = ()
    ) -> Any:
        keys = [check_key(k) for k in keys]
        prefixes = check_prefixes(list_prefixes)
        self._check_open()
        reads = [self._fetch_query(keys)] if keys else []
        reads += [self._list_query(p) for p in prefixes]

        def decide(rows: list[list[tuple[Any, ...]]]) -> tuple[list[Query], Any]:
            # Read under the namespace's lock: no other writer runs until COMMIT.
            found = {k: bytes(v) for k, v in rows.pop(0)} if keys else {}
            values = [found.get(k) for k in keys]
            listed = [[k for (k,) in found_keys] for found_keys in rows]
            writes = fn(values, listed)
            puts, deletes = check_writes(writes)
            check_entry_size(self.namespace, [k for k, _ in puts])
            return self._statements(puts, deletes), writes.result

        return await self.database.write(self.namespace, "transact", reads, decide)

    async def purge(self) -> None:
        """Nothing PostgreSQL offers erases deleted rows on demand: they stay in the
        table's files until VACUUM reuses the space (autovacuum does, on its schedule),
        and in the write-ahead log and backups until those are recycled. Checks that the
        store is open; see docs/server-store.md for what forgetting means on a server."""
        self._check_open()

    # --- change notifications ---------------------------------------------------------

    def watch_changes(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (no arguments, on this event loop) soon after a transaction
        moves this namespace's change log, from this process or another, and once when
        the watch starts listening; returns a function that stops the watch."""
        self._check_open()
        return self.database.listen(self.namespace, callback)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owns:
            await self.database.close()
