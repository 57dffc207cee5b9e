"""StructuredMemory (seed 000): long-lived, app-written facts in three namespaces with TTL.

Namespaces: ``episodic`` (what happened; expires after 7 days by default), ``semantic``
(facts and preferences) and ``procedural`` (learned how-tos), both without TTL by default.
``ttl_ms={"semantic": ...}`` changes the defaults; ``put(..., ttl_ms=...)`` overrides one
entry.

Values are any JSON. Writing a key again supersedes the old value without losing it: the
old version is closed (``valid_to`` set) and kept, so ``history()`` shows what was true
when. ``delete()`` closes the current version the same way; ``delete(..., purge=True)``
erases the key and all its history.

Expiry has two gates (seed 000, pitfall 3): every read checks ``expires_at`` against the
clock, so an expired entry is never returned, and ``decay()`` physically removes expired
records when you call it. There is no background timer.

Key layout (``<key>`` is the caller's key with ``%`` written ``%25`` and ``#`` written
``%23``, so ``#`` only ever separates the version)::

    ns:<namespace>:cur:<key>              the current version, canonical JSON
    ns:<namespace>:hist:<key>#<version>   a closed version; version zero-padded to 10 digits

Each record is ``{"namespace", "key", "value", "version", "valid_from", "valid_to",
"expires_at", "metadata"}`` (times in epoch ms). Every put or delete is one atomic batch,
so a crash never leaves a key with two current versions or none.

Several writers (processes on one SQLite file, say) may share the store: a put reads the
current version and the key's history inside its own transaction, so two puts of one key
at the same moment become two consecutive versions, both kept in the history; ``decay``
re-checks each record it removes in its transaction, so it never removes a version that
another writer put meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..errors import ValidationError, shown
from ..item import check_json, dumps
from ..retrieval.analyzer import analyze
from ..retrieval.bm25 import Bm25Index
from ..storage.base import KvBackend, Writes, iter_prefix
from ..storage.schema import ensure_schema

__all__ = [
    "DEFAULT_TTL_MS",
    "NAMESPACES",
    "Entry",
    "SearchHit",
    "StructuredMemory",
    "canonical_json",
]

DAY_MS = 24 * 3_600_000
NAMESPACES: tuple[str, ...] = ("episodic", "semantic", "procedural")
DEFAULT_TTL_MS: dict[str, int | None] = {
    "episodic": 7 * DAY_MS,
    "semantic": None,
    "procedural": None,
}
MAX_KEY_CHARS = 256
MAX_VALUE_BYTES = 65_536
MAX_METADATA_BYTES = 16_384
MAX_JSON_DEPTH = 32
MAX_MS = 2**53 - 1
VERSION_DIGITS = 10

Namespace = Literal["episodic", "semantic", "procedural"]


# --- JSON validation (shared with the assembler and the checkpointer) ------------------


def canonical_json(value: Any, what: str, *, max_bytes: int) -> str:
    """``value`` as canonical JSON after strict checks (str keys, finite numbers, no lone
    surrogates, bounded depth and size). Raises ValidationError naming ``what``."""
    check_json(value, what, max_depth=MAX_JSON_DEPTH)
    text = dumps(value)
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(f"{what} is {size} bytes as JSON, over the limit of {max_bytes}")
    return text


# --- records ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One version of a key. ``valid_to`` is None for the current version."""

    namespace: str
    key: str
    value: Any
    version: int
    valid_from: int
    valid_to: int | None
    expires_at: int | None
    metadata: dict[str, Any]

    @property
    def is_current(self) -> bool:
        return self.valid_to is None

    def is_expired(self, now_ms: int) -> bool:
        return self.expires_at is not None and now_ms >= self.expires_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "key": self.key,
            "value": self.value,
            "version": self.version,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "expires_at": self.expires_at,
            "metadata": self.metadata,
        }

    def encode(self) -> bytes:
        return dumps(self.to_dict()).encode("utf-8")

    @classmethod
    def decode(cls, raw: bytes, where: str) -> Entry:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or set(data) != _ENTRY_FIELDS:
                raise ValueError("wrong fields")
            ints = (data["version"], data["valid_from"])
            if any(isinstance(v, bool) or not isinstance(v, int) for v in ints):
                raise ValueError("version and valid_from must be ints")
            for name in ("valid_to", "expires_at"):
                v = data[name]
                if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                    raise ValueError(f"{name} must be an int or null")
            if not isinstance(data["metadata"], dict):
                raise ValueError("metadata must be an object")
            return cls(**data)
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise ValidationError(f"the record {where!r} is unreadable: {exc}") from None


_ENTRY_FIELDS = frozenset(Entry.__dataclass_fields__)


@dataclass(frozen=True)
class SearchHit:
    entry: Entry
    score: float


# --- keys ---------------------------------------------------------------------------------


def _esc(key: str) -> str:
    return key.replace("%", "%25").replace("#", "%23")


def _check_namespace(namespace: object) -> str:
    if namespace not in NAMESPACES:
        raise ValidationError(
            f"namespace must be one of {', '.join(NAMESPACES)}, got {shown(namespace)}"
        )
    return namespace  # type: ignore[return-value]


def _check_key(key: object, name: str = "key", *, allow_empty: bool = False) -> str:
    if not isinstance(key, str):
        raise ValidationError(f"{name} must be a string, got {type(key).__name__}")
    if (not key and not allow_empty) or len(key) > MAX_KEY_CHARS:
        raise ValidationError(f"{name} must be 1-{MAX_KEY_CHARS} characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        raise ValidationError(f"{name} must not contain control characters")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{name} must not contain lone surrogates") from None
    return key


def _check_ttl(ttl: object, name: str = "ttl_ms") -> int | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 < ttl <= MAX_MS:
        raise ValidationError(
            f"{name} must be None or a positive int of milliseconds, got {shown(ttl)}"
        )
    return ttl


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"limit must be an int >= 1, got {shown(limit)}")
    return limit


def cur_key(namespace: str, key: str) -> str:
    return f"ns:{namespace}:cur:{_esc(key)}"


def hist_prefix(namespace: str, key: str) -> str:
    return f"ns:{namespace}:hist:{_esc(key)}#"


def hist_key(namespace: str, key: str, version: int) -> str:
    return f"{hist_prefix(namespace, key)}{version:0{VERSION_DIGITS}d}"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _version_of(key: str) -> int:
    return int(key.rsplit("#", 1)[1])


def _still_expired(
    keys: list[str], now: int
) -> Callable[[list[bytes | None], list[list[str]]], Writes]:
    """Delete the records of ``keys`` that are (still) expired when the transaction runs."""

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        doomed = [
            k
            for k, raw in zip(keys, values, strict=True)
            if raw is not None and Entry.decode(raw, k).is_expired(now)
        ]
        return Writes(deletes=doomed, result=len(doomed))

    return write


def _searchable_text(entry: Entry) -> str:
    parts = [entry.key]

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                parts.append(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif value is not None and not isinstance(value, bool):
            parts.append(str(value))

    walk(entry.value)
    return " ".join(parts)


class StructuredMemory:
    """Namespaced, versioned JSON entries over a KvBackend, with TTL and on-demand decay.

    ``clock`` returns epoch milliseconds (inject one in tests). ``ttl_ms`` maps a
    namespace to its default TTL (None: never expires) and overrides ``DEFAULT_TTL_MS``.
    """

    def __init__(
        self,
        kv: KvBackend,
        *,
        ttl_ms: Mapping[str, int | None] | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        if not callable(clock):
            raise ValidationError("clock must be a callable returning epoch milliseconds")
        ttls = dict(DEFAULT_TTL_MS)
        for ns, ttl in (ttl_ms or {}).items():
            ttls[_check_namespace(ns)] = _check_ttl(ttl, f"ttl_ms[{shown(ns)}]")
        self.kv = kv
        self._ttl = ttls
        self._clock = clock
        self._lock = asyncio.Lock()
        self._schema_ok = False

    def ttl_for(self, namespace: Namespace) -> int | None:
        """The default TTL of ``namespace`` in ms (None: entries never expire)."""
        return self._ttl[_check_namespace(namespace)]

    async def _ready(self) -> None:
        if not self._schema_ok:
            await ensure_schema(self.kv)
            self._schema_ok = True

    def _now(self) -> int:
        now = self._clock()
        if isinstance(now, bool) or not isinstance(now, int) or now < 0:
            raise ValidationError(f"clock() must return an int of epoch ms, got {shown(now)}")
        return now

    async def _current(self, namespace: str, key: str) -> Entry | None:
        k = cur_key(namespace, key)
        raw = await self.kv.get(k)
        return None if raw is None else Entry.decode(raw, k)

    # --- writes -----------------------------------------------------------------------

    async def put(
        self,
        namespace: Namespace,
        key: str,
        value: Any,
        *,
        metadata: Mapping[str, Any] | None = None,
        ttl_ms: int | Literal["namespace"] | None = "namespace",
    ) -> Entry:
        """Write ``value`` as the new current version of ``key``; the previous version (if
        any) is closed and kept in the history. Returns the new entry."""
        ns = _check_namespace(namespace)
        _check_key(key)
        value_json = canonical_json(value, "value", max_bytes=MAX_VALUE_BYTES)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("metadata must be a JSON object (dict)")
        meta_json = canonical_json(dict(metadata or {}), "metadata", max_bytes=MAX_METADATA_BYTES)
        ttl = self._ttl[ns] if ttl_ms == "namespace" else _check_ttl(ttl_ms)
        await self._ready()
        value, meta = json.loads(value_json), json.loads(meta_json)
        cur, hist = cur_key(ns, key), hist_prefix(ns, key)
        async with self._lock:
            clock_now = self._now()

            def write(values: list[bytes | None], listed: list[list[str]]) -> Writes:
                old = None if values[0] is None else Entry.decode(values[0], cur)
                now = clock_now
                puts: list[tuple[str, bytes]] = []
                if old is not None:
                    now = max(now, old.valid_from)
                    closed = self._closed(old, now).encode()
                    puts.append((hist_key(ns, key, old.version), closed))
                    version = old.version + 1
                else:  # a new key, or one deleted: continue after its history
                    version = max((_version_of(k) for k in listed[0]), default=0) + 1
                entry = Entry(
                    namespace=ns,
                    key=key,
                    value=value,
                    version=version,
                    valid_from=now,
                    valid_to=None,
                    expires_at=None if ttl is None else now + ttl,
                    metadata=meta,
                )
                puts.append((cur, entry.encode()))
                return Writes(puts, result=entry)

            return await self.kv.transact([cur], write, list_prefixes=[hist])

    @staticmethod
    def _closed(entry: Entry, now: int) -> Entry:
        # A version that expired before it was superseded stopped being true when it expired.
        end = now if entry.expires_at is None else min(now, entry.expires_at)
        return replace(entry, valid_to=max(end, entry.valid_from))

    async def delete(self, namespace: Namespace, key: str, *, purge: bool = False) -> bool:
        """End the current version of ``key`` (kept in its history), or with ``purge=True``
        erase the key and its whole history. Returns whether a live value was deleted."""
        ns = _check_namespace(namespace)
        _check_key(key)
        await self._ready()
        cur, hist = cur_key(ns, key), hist_prefix(ns, key)
        async with self._lock:
            now = self._now()

            def write(values: list[bytes | None], listed: list[list[str]]) -> Writes:
                old = None if values[0] is None else Entry.decode(values[0], cur)
                live = old is not None and not old.is_expired(now)
                if purge:
                    return Writes(deletes=[cur, *listed[0]], result=live)
                if old is None:
                    return Writes(result=False)
                closed = self._closed(old, max(now, old.valid_from))
                return Writes(
                    [(hist_key(ns, key, old.version), closed.encode())], [cur], result=live
                )

            live = await self.kv.transact([cur], write, list_prefixes=[hist] if purge else [])
        if purge:
            await self.kv.purge()  # the erased versions leave the store's files too
        return live

    async def decay(self, namespace: Namespace | None = None) -> int:
        """Remove every expired record (current and historical) of ``namespace`` or of all
        namespaces. Returns how many records were removed."""
        spaces = NAMESPACES if namespace is None else (_check_namespace(namespace),)
        await self._ready()
        removed = 0
        async with self._lock:
            now = self._now()
            for ns in spaces:
                pairs = await self._scan(f"ns:{ns}:")
                doomed = [k for k, raw in pairs if Entry.decode(raw, k).is_expired(now)]
                for i in range(0, len(doomed), 500):
                    removed += await self.kv.transact(
                        doomed[i : i + 500], _still_expired(doomed[i : i + 500], now)
                    )
        return removed

    # --- reads ------------------------------------------------------------------------

    async def _scan(self, prefix: str) -> list[tuple[str, bytes]]:
        return [pair async for pair in iter_prefix(self.kv, prefix)]

    async def _versions(self, ns: str, key: str) -> list[Entry]:
        return [Entry.decode(raw, k) for k, raw in await self._scan(hist_prefix(ns, key))]

    async def get(self, namespace: Namespace, key: str) -> Entry | None:
        """The current, unexpired version of ``key``, or None."""
        ns = _check_namespace(namespace)
        _check_key(key)
        await self._ready()
        entry = await self._current(ns, key)
        if entry is None or entry.is_expired(self._now()):
            return None
        return entry

    async def list(
        self, namespace: Namespace, *, prefix: str = "", limit: int | None = None
    ) -> list[Entry]:
        """Current, unexpired entries whose key starts with ``prefix``, in key order."""
        ns = _check_namespace(namespace)
        _check_key(prefix, "prefix", allow_empty=True)
        if limit is not None:
            _check_limit(limit)
        await self._ready()
        now = self._now()
        out: list[Entry] = []
        async for k, raw in iter_prefix(self.kv, cur_key(ns, prefix)):
            entry = Entry.decode(raw, k)
            if not entry.is_expired(now):
                out.append(entry)
                if limit is not None and len(out) >= limit:
                    break
        return out

    async def search(
        self, namespace: Namespace, query: str, *, limit: int = 10, prefix: str = ""
    ) -> list[SearchHit]:
        """Current, unexpired entries ranked by BM25 between ``query`` and the entry's key
        and the strings in its value. Entries sharing no term with the query are left out."""
        if not isinstance(query, str):
            raise ValidationError(f"query must be a string, got {type(query).__name__}")
        _check_limit(limit)
        entries = await self.list(namespace, prefix=prefix)
        terms = analyze(query)
        if not terms or not entries:
            return []
        index = Bm25Index()
        for slot, entry in enumerate(entries):
            index.add(slot, analyze(_searchable_text(entry)))
        return [SearchHit(entries[slot], score) for slot, score in index.top_k(terms, limit)]

    async def history(self, namespace: Namespace, key: str) -> list[Entry]:
        """Every unexpired version of ``key``, oldest first; the last one is current unless
        the key was deleted."""
        ns = _check_namespace(namespace)
        _check_key(key)
        await self._ready()
        now = self._now()
        versions = await self._versions(ns, key)
        current = await self._current(ns, key)
        if current is not None:
            versions.append(current)
        return [e for e in versions if not e.is_expired(now)]
