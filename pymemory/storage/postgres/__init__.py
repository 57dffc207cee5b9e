"""A server store: KvBackends in one PostgreSQL table, one namespace per user.

``pip install 'pymemory-agent[postgres]'`` (psycopg 3)::

    from pymemory.storage.postgres import PostgresDatabase, PostgresKv

    kv = await PostgresKv.open("postgresql://app@db/app", namespace="user-42")
    memory = await Memory.open(kv)

    db = await PostgresDatabase.open(dsn)        # a server with many users: one pool
    memory = await Memory.open(db.kv("user-42"))

:mod:`.sql` has the table and its schema version, :mod:`.connections` the connections,
:mod:`.pool` the calls on them and the write transaction, :mod:`.database` the
namespaced stores, :mod:`.kv` the KvBackend, :mod:`.listen` the LISTEN/NOTIFY side and
:mod:`.errors` what server failures become.
docs/server-store.md tells how to run it.
"""

from __future__ import annotations

from .database import PostgresDatabase
from .errors import (
    AuthenticationError,
    CommitUnknownError,
    ConfigurationError,
    ServerUnavailableError,
    StatementTimeoutError,
)
from .kv import PostgresKv

__all__ = [
    "AuthenticationError",
    "CommitUnknownError",
    "ConfigurationError",
    "PostgresDatabase",
    "PostgresKv",
    "ServerUnavailableError",
    "StatementTimeoutError",
]
