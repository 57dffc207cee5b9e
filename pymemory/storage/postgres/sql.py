"""The table, its schema version and migrations, and the statements PostgresKv runs.

One table holds every namespace's records::

    pymemory_kv (namespace text COLLATE "C", key text COLLATE "C", value bytea,
                 PRIMARY KEY (namespace, key))

``COLLATE "C"`` on a UTF-8 database compares the bytes, which is code point order, the
order the KvBackend protocol promises; a prefix scan is a range over the primary key
(``key >= prefix AND key < next(prefix)``), never ``LIKE``. ``pymemory_kv_schema`` holds
the version; :data:`MIGRATIONS` upgrades a database step by step under a
transaction-scoped advisory lock, so servers opening one database at once migrate it once.
"""

from __future__ import annotations

import hashlib

from ...errors import ValidationError

TABLE = "pymemory_kv"
SCHEMA_TABLE = "pymemory_kv_schema"
SCHEMA_VERSION = 1

#: The advisory lock (one bigint) that serializes schema creation and migration.
SCHEMA_LOCK = 0x706D656D6F727900  # "pmemory\0"

CREATE = [
    f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} ("
    " id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    ' namespace text COLLATE "C" NOT NULL,'
    ' key text COLLATE "C" NOT NULL,'
    " value bytea NOT NULL,"
    " PRIMARY KEY (namespace, key))",
    f"INSERT INTO {SCHEMA_TABLE} (id, version) VALUES (1, {SCHEMA_VERSION})",
]

#: MIGRATIONS[v]: the statements that upgrade a version-v database to v + 1 (run in one
#: transaction with the version bump).
MIGRATIONS: dict[int, list[str]] = {}

# A btree entry must fit in a third of a page (2704 bytes): the namespace and the key
# together stay below that, whatever their characters.
MAX_NAMESPACE_BYTES = 256
MAX_ENTRY_BYTES = 2600

GET = f"SELECT value FROM {TABLE} WHERE namespace = %s AND key = %s"
GET_MANY = f"SELECT key, value FROM {TABLE} WHERE namespace = %s AND key = ANY(%s::text[])"
PUT = (
    f"INSERT INTO {TABLE} (namespace, key, value)"
    " SELECT %s, k, v FROM unnest(%s::text[], %s::bytea[]) AS t(k, v)"
    " ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value"
)
DELETE = f"DELETE FROM {TABLE} WHERE namespace = %s AND key = ANY(%s::text[])"
NOTIFY = "SELECT pg_notify(%s, %s)"
NAMESPACES = f"SELECT DISTINCT namespace FROM {TABLE} ORDER BY namespace"
DROP_NAMESPACE = f"DELETE FROM {TABLE} WHERE namespace = %s"
COUNT_NAMESPACE = f"SELECT count(*) FROM {TABLE} WHERE namespace = %s"


def range_query(columns: str, prefix: str, upper: str | None, start_after: str | None,
                limit: int | None) -> tuple[str, list[object]]:  # fmt: skip
    """``SELECT columns`` of one namespace's keys under ``prefix`` (first parameter: the
    namespace), ascending."""
    sql = f"SELECT {columns} FROM {TABLE} WHERE namespace = %s AND key >= %s"
    args: list[object] = [prefix]
    if upper is not None:
        sql += " AND key < %s"
        args.append(upper)
    if start_after is not None:
        sql += " AND key > %s"
        args.append(start_after)
    sql += " ORDER BY key"
    if limit is not None:
        sql += f" LIMIT {max(0, int(limit))}"
    return sql, args


def check_namespace(namespace: object) -> str:
    if not isinstance(namespace, str):
        raise ValidationError(f"a namespace must be str, got {type(namespace).__name__}")
    if not namespace or "\x00" in namespace:
        raise ValidationError("a namespace must be a non-empty string without NUL")
    try:
        size = len(namespace.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError("a namespace must not contain lone surrogates") from None
    if size > MAX_NAMESPACE_BYTES:
        raise ValidationError(f"a namespace must be at most {MAX_NAMESPACE_BYTES} UTF-8 bytes")
    return namespace


def check_entry_size(namespace: str, keys: list[str]) -> None:
    """ValidationError for a key PostgreSQL's index could not hold in this namespace."""
    room = MAX_ENTRY_BYTES - len(namespace.encode())
    for key in keys:
        if len(key) * 4 > room and len(key.encode()) > room:
            raise ValidationError(
                f"KV key too long for PostgreSQL's index: {len(key.encode())} UTF-8 bytes"
                f" (at most {room} in this namespace)"
            )


def _digest(text: str, size: int) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=size, person=b"pymemory-kv").digest()


def lock_id(namespace: str) -> int:
    """The namespace's advisory lock: a signed 64-bit hash (a collision only serializes
    two namespaces' writers, it never mixes their data)."""
    return int.from_bytes(_digest("lock:" + namespace, 8), "big", signed=True)


def channel(namespace: str) -> str:
    """The LISTEN/NOTIFY channel of a namespace (an identifier of 33 characters)."""
    return "pymemory_" + _digest("chan:" + namespace, 12).hex()
