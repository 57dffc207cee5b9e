"""The key layout in the KV store and its versioning.

    meta:schema      {"version": N}      written when a store is created or migrated
    meta:seq         {"seq": N, "h": H}  the change log's sequence number and clock (changes.py)
    chg:<seq>        {"keys": [...], "h": H}  the keys one logged commit changed, its clock
    mem:<id>         a MemoryItem as canonical JSON (with its ``version`` when above 1)
    arc:<id>         an ArchivedItem (id, type, timestamp, content)
    vec:<id>         the item's embedding (retrieval/vectors_kv.py)
    meta:embedder    {"name": N, "dim": D}: the embedder the vec: records come from
                     (retrieval/space.py); like them device-local: never synced or exported
    hst:<id>:<ver>   a version of the item that update() replaced (history.py)
    hst:<id>:<ver>~<tag>   a version that lost a sync conflict (``tag``: a digest of it)
    snap:...         a snapshot of one instance's in-memory indexes (retrieval/snapshot.py):
                     derived data, never logged in the change log, never exported, deleted
                     by every forget; a reader checks it against the change log

Later layers add ``obs:``, ``blk:``, ``ns:``, ``ckpt:``, ``fs:`` and ``mt:``; the LangGraph
store (integrations/langgraph.py) adds ``lg:``. Opening a
store written by a newer schema raises SchemaError; an older one is migrated step by step,
each step one atomic batch that also bumps the version, so a crash mid-migration leaves
either the old or the new version, never a mix.

Version 3 added item history (``hst:``). Its migration writes nothing either; the bump
keeps an older pymemory, which would forget an item but not its history, from opening
the store.

Version 2 added the change log and item versions. Its migration writes nothing but the
version bump: a v1 item reads as version 1 and a store without ``meta:seq`` is at
sequence 0. The bump keeps an older pymemory, which would write without logging, from
opening a store that several writers share.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from ..errors import SchemaError, shown
from . import KvBackend
from .base import Writes

SCHEMA_VERSION = 3
META_SCHEMA = "meta:schema"
META_EMBEDDER = "meta:embedder"
MEM = "mem:"
ARC = "arc:"
VEC = "vec:"
HST = "hst:"
SNAP = "snap:"
DATA_PREFIXES = (MEM, ARC, VEC, HST, "chg:", "obs:", "blk:", "ns:", "ckpt:", "fs:", "mt:", "lg:")

# MIGRATIONS[v] upgrades a store from version v to v + 1. It returns the puts and
# deletes of one batch; ``migrate`` adds the version bump to that batch.
Migration = Callable[[KvBackend], Awaitable[tuple[list[tuple[str, bytes]], list[str]]]]
MIGRATIONS: dict[int, Migration] = {}


def mem_key(item_id: str) -> str:
    return MEM + item_id


def arc_key(item_id: str) -> str:
    return ARC + item_id


def vec_key(item_id: str) -> str:
    return VEC + item_id


def hst_prefix(item_id: str) -> str:
    return f"{HST}{item_id}:"


def hst_key(item_id: str, version: int) -> str:
    """Zero-padded, so the versions of one item scan in order."""
    return f"{HST}{item_id}:{version:016d}"


CONFLICT_MARK = "~"


def hst_conflict_key(item_id: str, version: int, tag: str) -> str:
    """Sorts right after ``hst_key(item_id, version)`` and before the next version."""
    return f"{hst_key(item_id, version)}{CONFLICT_MARK}{tag}"


def is_hst_conflict(key: str) -> bool:
    return CONFLICT_MARK in key[key.rindex(":") :]


def hst_id(key: str) -> str:
    """The item id of a ``hst:`` key."""
    return key[len(HST) : key.rindex(":")]


async def _new_keys_only(kv: KvBackend) -> tuple[list[tuple[str, bytes]], list[str]]:
    return [], []  # see the module docstring


MIGRATIONS[1] = _new_keys_only  # v1 -> v2: the change log, item versions
MIGRATIONS[2] = _new_keys_only  # v2 -> v3: item history


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
        raise SchemaError(f"{META_SCHEMA} holds an invalid version {shown(version)}")
    return version


async def ensure_schema(kv: KvBackend, *, target: int = SCHEMA_VERSION) -> int:
    """Create, check or migrate the store's schema. Returns the version it started at
    (0 for a new store). Safe when several processes open one store at once: creating
    and each migration step are transactions that re-check the version they start from."""
    version = await read_version(kv)
    if version is None:

        def create(values: list[bytes | None], listed: list[list[str]]) -> Writes:
            if values[0] is not None:
                return Writes(result=False)  # another process created it meanwhile
            for prefix, keys in zip(DATA_PREFIXES, listed, strict=True):
                if keys:
                    raise SchemaError(
                        f"this store has {prefix} data but no {META_SCHEMA}: "
                        "it was not written by pymemory"
                    )
            return Writes([version_record(target)], result=True)

        if await kv.transact([META_SCHEMA], create, list_prefixes=DATA_PREFIXES):
            return 0
        version = await read_version(kv)
        assert version is not None
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
        await kv.transact([META_SCHEMA], _bump(version, puts, deletes))
        version = await read_version(kv)
        assert version is not None
    return start


def _bump(
    version: int, puts: list[tuple[str, bytes]], deletes: list[str]
) -> Callable[[list[bytes | None], list[list[str]]], Writes]:
    def fn(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        raw = values[0]
        if raw is None or json.loads(raw).get("version") != version:
            return Writes()  # another process migrated this step meanwhile
        return Writes([*puts, version_record(version + 1)], deletes)

    return fn
