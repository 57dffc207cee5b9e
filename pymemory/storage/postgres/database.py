"""PostgresDatabase: one PostgreSQL database, one pool, a KV store per namespace.

A server process opens one database and takes a namespaced KV store from it per user::

    db = await PostgresDatabase.open("host=... dbname=app user=app")
    kv = db.kv("user-42")          # cheap: no connection of its own
"""

from __future__ import annotations

from .kv import PostgresKv
from .pool import PgPool, column
from .sql import COUNT_NAMESPACE, DROP_NAMESPACE, NAMESPACES, check_namespace


class PostgresDatabase(PgPool):
    """A PostgreSQL database holding pymemory stores, one per namespace. Open with
    ``await PostgresDatabase.open(dsn, ...)`` (the options: :meth:`PgPool.open`)."""

    def kv(self, namespace: str) -> PostgresKv:
        """The KV store of ``namespace`` (no I/O; closing it leaves the database open)."""
        self._check_open()
        return PostgresKv(self, namespace, owns_database=False)

    async def namespaces(self) -> list[str]:
        """Every namespace holding at least one record, ascending."""
        return await self.read("listing namespaces", lambda conn: column(conn, NAMESPACES))

    async def drop_namespace(self, namespace: str) -> int:
        """Delete every record of ``namespace`` (a user's whole store) in one transaction
        under its write lock; how many records. Instances open on it see an empty store
        only after reopening: close them first."""
        namespace = check_namespace(namespace)
        return await self.write(
            namespace,
            "dropping a namespace",
            [(COUNT_NAMESPACE, (namespace,))],
            lambda rows: ([(DROP_NAMESPACE, (namespace,))], int(rows[0][0][0])),
        )
