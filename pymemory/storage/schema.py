"""The key layout in the KV store and its versioning.

    meta:schema      {"version": N}      written when a store is created or migrated
    mem:<id>         a MemoryItem as canonical JSON
    arc:<id>         an ArchivedItem (id, type, timestamp, content)

Later layers add ``obs:``, ``blk:``, ``ns:`` and ``ckpt:``. Opening a store written by a
newer schema raises SchemaError; an older one is migrated step by step, each step one
atomic batch that also bumps the version, so a crash mid-migration leaves either the old
or the new version, never a mix.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from ..errors import SchemaError
from . import KvBackend

SCHEMA_VERSION = 1
META_SCHEMA = "meta:schema"
MEM = "mem:"
ARC = "arc:"
DATA_PREFIXES = (MEM, ARC, "obs:", "blk:", "ns:", "ckpt:", "fs:", "mt:")

# MIGRATIONS[v] upgrades a store from version v to v + 1. It returns the puts and
# deletes of one batch; ``migrate`` adds the version bump to that batch.
Migration = Callable[[KvBackend], Awaitable[tuple[list[tuple[str, bytes]], list[str]]]]
MIGRATIONS: dict[int, Migration] = {}


def mem_key(item_id: str) -> str:
    return MEM + item_id


def arc_key(item_id: str) -> str:
    return ARC + item_id


def version_record(version: int) -> tuple[str, bytes]:
    return META_SCHEMA, json.dumps({"version": version}).encode()


async def read_version(kv: KvBackend) -> int | None:
    raw = await kv.get(META_SCHEMA)
    if raw is None:
        return None
    try:
        version = json.loads(raw)["version"]
    except (ValueError, KeyError, TypeError):
        raise SchemaError(f"{META_SCHEMA} is unreadable: {raw[:80]!r}") from None
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SchemaError(f"{META_SCHEMA} holds an invalid version {version!r}")
    return version


async def ensure_schema(kv: KvBackend, *, target: int = SCHEMA_VERSION) -> int:
    """Create, check or migrate the store's schema. Returns the version it started at
    (0 for a new store)."""
    version = await read_version(kv)
    if version is None:
        for prefix in DATA_PREFIXES:
            if await kv.scan(prefix, limit=1):
                raise SchemaError(
                    f"this store has {prefix} data but no {META_SCHEMA}: "
                    "it was not written by pymemory"
                )
        await kv.put_many([version_record(target)])
        return 0
    if version > target:
        raise SchemaError(
            f"this store uses schema version {version}, newer than this pymemory "
            f"understands ({target}); upgrade pymemory to open it"
        )
    start = version
    while version < target:
        step = MIGRATIONS.get(version)
        if step is None:
            raise SchemaError(f"no migration from schema version {version} to {version + 1}")
        puts, deletes = await step(kv)
        await kv.put_many([*puts, version_record(version + 1)], deletes=deletes)
        version += 1
    return start
