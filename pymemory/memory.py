"""Memory: the one async facade over storage, encoder and orchestrator."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from .encoder import Encoder, Refiner, RuleEncoder
from .encoder.intake import ADD_FIELDS, build_item, type_name
from .encoder.refine import RefineWorker
from .errors import (
    ConflictError,
    NotFoundError,
    PymemoryError,
    StoreClosedError,
    ValidationError,
)
from .item import (
    FEEDBACK_KINDS,
    ArchivedItem,
    MemoryItem,
    check_tags,
)
from .models.embedding import Embedder
from .retrieval.archive import search_archive
from .retrieval.catalog import Catalog
from .retrieval.dense import DenseIndex
from .retrieval.filters import item_matcher
from .retrieval.pipeline import DenseHits, Retrieval, retrieve
from .retrieval.strategies import Strategy, coerce, compile_strategy
from .retrieval.tokens import TokenCounter, default_token_counter
from .retrieval.vectors_kv import KvVectorStore
from .storage import KvBackend, MapKv, iter_prefix, schema
from .storage.export import header_line, parse_export, record_line

log = logging.getLogger("pymemory")

DAY_MS = 86_400_000
MAX_QUERY_CHARS = 10_000
WRITE_CHUNK = 1000
_UNSET: Any = object()


@dataclass(frozen=True)
class ImportResult:
    added: int
    replaced: int
    skipped: int
    archived: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Memory:
    """Private, offline memory for an agent. Open with ``await Memory.open(...)``.

    Writes go to the KV store first and then to the in-memory indexes, so the store is
    always the truth and a failed write changes nothing. Feedback is applied at once in
    memory and persisted in batches (every ``feedback_flush_s`` seconds, on ``flush()``
    and on ``close()``).
    """

    def __init__(
        self,
        kv: KvBackend,
        *,
        owns_kv: bool,
        encoder: Encoder,
        token_counter: TokenCounter,
        clock: Callable[[], int],
        feedback_flush_s: float,
        sweep_interval_s: float,
        auto_archive_days: float | None,
    ) -> None:
        self.kv = kv
        # Called as fn(kind, item_id) after background work changes an item ("refined").
        self.listeners: list[Callable[[str, str], object]] = []
        self._dense: DenseIndex | None = None  # set by attach_embedder()
        self._refine: RefineWorker | None = None  # set by attach_refiner()
        self._owns_kv = owns_kv
        self.encoder = encoder
        self.token_counter = token_counter
        self._clock = clock
        self._feedback_flush_s = feedback_flush_s
        self._sweep_interval_s = sweep_interval_s
        self._auto_archive_days = auto_archive_days
        self._catalog = Catalog()
        self._dirty_feedback: set[str] = set()
        self._archived_count = 0
        self._corrupt_keys: list[str] = []
        self._lock = asyncio.Lock()
        self._maintenance: asyncio.Task[None] | None = None
        self._closed = False
        self.schema_migrated_from: int = schema.SCHEMA_VERSION

    # --- lifecycle --------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        store: KvBackend | str | os.PathLike[str] | None = None,
        *,
        encoder: Encoder | None = None,
        token_counter: TokenCounter | None = None,
        clock: Callable[[], int] = _now_ms,
        feedback_flush_s: float = 3.0,
        sweep_interval_s: float = 60.0,
        auto_archive_days: float | None = None,
        refiner: Refiner | None = None,
        embedder: Embedder | None = None,
        vector_dtype: Literal["int8", "float16", "float32"] = "int8",
    ) -> Memory:
        """Open a memory over ``store``: a KvBackend, a SQLite file path, or None (in memory).

        ``auto_archive_days`` moves memories older than that many days to the archive in
        the background (at open and then hourly). Off by default so that nothing leaves
        retrieval unless asked. A path opens a SqliteKv that ``close()`` also closes;
        a KvBackend passed in stays open. ``refiner`` is Encoder stage 2 (e.g. the local
        model): it rewrites new items' content in the background, one at a time.
        ``embedder`` (e.g. MiniLM) embeds items in the background and stores the vectors
        beside them (``vec:<id>``), so a reload never re-embeds; retrieval then fuses BM25
        and dense rankings (items not embedded yet are ranked by BM25 alone).
        """
        for name, value in (
            ("feedback_flush_s", feedback_flush_s),
            ("sweep_interval_s", sweep_interval_s),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValidationError(f"{name} must be a number of seconds > 0")
        if auto_archive_days is not None and (
            isinstance(auto_archive_days, bool)
            or not isinstance(auto_archive_days, (int, float))
            or auto_archive_days <= 0
        ):
            raise ValidationError("auto_archive_days must be None or a number of days > 0")
        owns = not isinstance(store, KvBackend)
        if store is None:
            kv: KvBackend = MapKv()
        elif isinstance(store, KvBackend):
            kv = store
        else:
            from .storage.sqlite import SqliteKv

            kv = await SqliteKv.open(store)
        try:
            memory = cls(
                kv,
                owns_kv=owns,
                encoder=encoder or RuleEncoder(),
                token_counter=token_counter or default_token_counter(),
                clock=clock,
                feedback_flush_s=float(feedback_flush_s),
                sweep_interval_s=float(sweep_interval_s),
                auto_archive_days=auto_archive_days,
            )
            memory.schema_migrated_from = await schema.ensure_schema(kv)
            await memory._load()
        except BaseException:
            if owns:
                await kv.close()
            raise
        memory._maintenance = asyncio.ensure_future(memory._maintain())
        try:
            if refiner is not None:
                await memory.attach_refiner(refiner)
            if embedder is not None:
                await memory.attach_embedder(embedder, vector_dtype=vector_dtype)
        except BaseException:
            await memory.close()
            raise
        return memory

    async def attach_embedder(
        self, embedder: Embedder, *, vector_dtype: Literal["int8", "float16", "float32"] = "int8"
    ) -> None:
        """Turn dense retrieval on (e.g. once a model has loaded): load the stored vectors
        and embed, in the background, every item that has none yet."""
        self._check_open()
        if self._dense is not None:
            raise ValidationError("an embedder is already attached")
        self._dense = await DenseIndex.open(
            self.kv, embedder, self._catalog, self._lock, vector_dtype
        )

    async def attach_refiner(self, refiner: Refiner) -> None:
        """Turn Encoder stage 2 on for items added from now on."""
        self._check_open()
        if self._refine is not None:
            raise ValidationError("a refiner is already attached")
        self._refine = RefineWorker(
            refiner,
            get=self._catalog.get,
            lock=self._lock,
            write=self._write_refined,
            on_refined=lambda item_id: self._notify("refined", item_id),
        )

    @property
    def refiner(self) -> Refiner | None:
        return None if self._refine is None else self._refine.refiner

    @property
    def embedder(self) -> Embedder | None:
        return None if self._dense is None else self._dense.embedder

    @property
    def vectors(self) -> KvVectorStore | None:
        return None if self._dense is None else self._dense.vectors

    @property
    def clock(self) -> Callable[[], int]:
        """The clock (epoch ms) this memory uses, for primitives that share its notion of now."""
        return self._clock

    async def _load(self) -> None:
        async for key, raw in iter_prefix(self.kv, schema.MEM):
            try:
                self._catalog.put(MemoryItem.from_json(raw))
            except PymemoryError as exc:
                # Keep the record in the store untouched; report it in stats().
                log.error("skipping unreadable record %s: %s", key, exc)
                self._corrupt_keys.append(key)
        async for _ in iter_prefix(self.kv, schema.ARC):
            self._archived_count += 1

    async def close(self) -> None:
        """Stop background work, persist pending feedback, close an owned store."""
        if self._closed:
            return
        if self._maintenance is not None:
            self._maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._maintenance
        for worker in (self._refine, self._dense):
            if worker is not None:
                await worker.stop()
        try:
            await self.flush()
        finally:
            self._closed = True
            if self._owns_kv:
                await self.kv.close()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this Memory is closed")

    async def _maintain(self) -> None:
        """Background loop: flush feedback, sweep expired items, auto-archive."""
        loop = asyncio.get_running_loop()
        next_sweep = loop.time() + self._sweep_interval_s
        next_archive = loop.time()
        while True:
            jobs: list[tuple[str, Callable[[], Any]]] = [("feedback flush", self.flush)]
            if loop.time() >= next_sweep:
                jobs.append(("TTL sweep", self.sweep))
                next_sweep = loop.time() + self._sweep_interval_s
            if self._auto_archive_days is not None and loop.time() >= next_archive:
                days = self._auto_archive_days
                jobs.append(("auto-archive", lambda d=days: self.archive_older_than(d)))
                next_archive = loop.time() + 3600
            for name, job in jobs:
                try:
                    await job()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("background %s failed; will retry", name)
            await asyncio.sleep(min(self._feedback_flush_s, self._sweep_interval_s))

    # --- writing ----------------------------------------------------------------------

    async def add(
        self,
        text: str | None = None,
        *,
        content: str | None = None,
        type: str = "message",
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        scope: str = "global",
        ttl_ms: int | None = None,
        timestamp: int | None = None,
    ) -> MemoryItem:
        """Store one memory and return it.

        ``text`` is the raw input: it is kept whole and summarised into ``content`` (at
        most 200 characters) by the encoder. Pass ``content`` to give the summary yourself.
        Raises ValidationError on bad input, leaving the store unchanged.
        """
        self._check_open()
        item = await build_item(
            self.encoder, self._clock, text, content, type, metadata, tags, scope, ttl_ms, timestamp
        )
        async with self._lock:
            self._check_open()
            await self.kv.put_many([(schema.mem_key(item.id), item.to_json().encode())])
            self._catalog.put(item)
        self._queue_refine(item)
        self._queue_embed(item.id)
        return item

    async def add_many(self, entries: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """Store several memories as one atomic batch; each entry holds ``add``'s arguments."""
        self._check_open()
        items = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise ValidationError(f"entry {i} must be a dict of add() arguments")
            unknown = set(entry) - ADD_FIELDS
            if unknown:
                raise ValidationError(f"entry {i} has unknown keys: {', '.join(sorted(unknown))}")
            try:
                items.append(
                    await build_item(
                        self.encoder,
                        self._clock,
                        entry.get("text"),
                        entry.get("content"),
                        entry.get("type", "message"),
                        entry.get("metadata"),
                        entry.get("tags", ()),
                        entry.get("scope", "global"),
                        entry.get("ttl_ms"),
                        entry.get("timestamp"),
                    )
                )
            except ValidationError as exc:
                raise ValidationError(f"entry {i}: {exc}") from None
        async with self._lock:
            self._check_open()
            await self.kv.put_many([(schema.mem_key(it.id), it.to_json().encode()) for it in items])
            for it in items:
                self._catalog.put(it)
        for it in items:
            self._queue_refine(it)
            self._queue_embed(it.id)
        return items

    async def update(
        self,
        id: str,
        *,
        text: str = _UNSET,
        content: str = _UNSET,
        type: str = _UNSET,
        metadata: Mapping[str, Any] = _UNSET,
        tags: Sequence[str] = _UNSET,
        scope: str = _UNSET,
        ttl_ms: int | None = _UNSET,
    ) -> MemoryItem:
        """Change fields of a memory. New ``text`` without ``content`` is re-summarised.
        ``metadata`` replaces the old metadata whole."""
        self._check_open()
        old = self._live(id)
        changes: dict[str, Any] = {}
        if text is not _UNSET:
            if not isinstance(text, str):
                raise ValidationError(f"text must be a string, got {type_name(text)}")
            changes["text"] = text
            if content is _UNSET:
                encoded = await self.encoder.encode(text, type=old.type if type is _UNSET else type)
                changes["content"], changes["content_method"] = encoded.content, encoded.method
        if content is not _UNSET:
            changes["content"], changes["content_method"] = content, "given"
        for name, value in (("type", type), ("scope", scope), ("ttl_ms", ttl_ms)):
            if value is not _UNSET:
                changes[name] = value
        if metadata is not _UNSET:
            if not isinstance(metadata, Mapping):
                raise ValidationError(f"metadata must be a dict, got {type_name(metadata)}")
            changes["metadata"] = dict(metadata)
        if tags is not _UNSET:
            changes["tags"] = check_tags(tags)
        async with self._lock:
            self._check_open()
            current = self._live(id)  # feedback may have changed while we encoded
            item = replace(current, **changes) if changes else current
            if item is not old or changes:
                await self.kv.put_many([(schema.mem_key(id), item.to_json().encode())])
                self._catalog.put(item)
                self._dirty_feedback.discard(id)
        if item.text != old.text:
            self._queue_embed(id)
        return item

    async def delete(self, id: str) -> None:
        """Delete a memory for good. Raises NotFoundError for an unknown id."""
        self._check_open()
        async with self._lock:
            self._live(id)
            await self.kv.delete_many([schema.mem_key(id)])
            self._catalog.remove(id)
            self._dirty_feedback.discard(id)
            self._cancel_refine(id)
            await self._drop_vectors([id])

    async def feedback(
        self, id: str, kind: Literal["liked", "disliked", "important"], *, durable: bool = False
    ) -> None:
        """Record the user's feedback. It affects ranking at once and is persisted with the
        next batch (seed 002 tip 1: every ``feedback_flush_s``, on ``flush()``, on
        ``close()``). With ``durable=True`` it returns only once written; feedback given
        at the same moment still shares one write."""
        self._check_open()
        if kind not in FEEDBACK_KINDS:
            known = ", ".join(FEEDBACK_KINDS)
            raise ValidationError(f"feedback must be one of {known}, got {kind!r}")
        if not isinstance(durable, bool):
            raise ValidationError("durable must be a bool")
        async with self._lock:
            item = self._live(id)
            self._catalog.set_feedback(replace(item, feedback=item.feedback.add(kind)))
            self._dirty_feedback.add(id)
        if durable:
            await self.flush()

    async def flush(self) -> int:
        """Persist queued feedback as one batch. Returns how many items were written."""
        self._check_open()
        async with self._lock:
            ids = [i for i in self._dirty_feedback if i in self._catalog]
            if not ids:
                self._dirty_feedback.clear()
                return 0
            items = [self._catalog.items[i] for i in ids]
            await self.kv.put_many([(schema.mem_key(i.id), i.to_json().encode()) for i in items])
            self._dirty_feedback.clear()
            return len(items)

    async def _delete_ids(self, ids: Sequence[str]) -> int:
        """Delete ``ids`` (caller holds the lock) in atomic chunks."""
        for start in range(0, len(ids), WRITE_CHUNK):
            chunk = ids[start : start + WRITE_CHUNK]
            await self.kv.delete_many([schema.mem_key(i) for i in chunk])
            for i in chunk:
                self._catalog.remove(i)
                self._dirty_feedback.discard(i)
                self._cancel_refine(i)
            await self._drop_vectors(chunk)
        return len(ids)

    async def clear(
        self,
        *,
        scope: str | Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        all: bool = False,
    ) -> int:
        """Forget memories matching every given filter ("forget what we just talked about":
        ``clear(scope="conversation", since_ms=start)``). ``all=True`` wipes every memory
        and the archive. Returns how many were removed."""
        self._check_open()
        if all:
            async with self._lock:
                count = await self._delete_ids(list(self._catalog.items))
                arc = [k async for k, _ in iter_prefix(self.kv, schema.ARC)]
                for start in range(0, len(arc), WRITE_CHUNK):
                    await self.kv.delete_many(arc[start : start + WRITE_CHUNK])
                self._archived_count = 0
                return count + len(arc)
        if (
            scope is None
            and tags is None
            and type is None
            and since_ms is None
            and until_ms is None
        ):
            raise ValidationError(
                "clear() needs a filter (scope, tags, type, since_ms, until_ms) or all=True"
            )
        match = item_matcher(scope, tags, type, since_ms, until_ms)
        async with self._lock:
            ids = [i.id for i in self._catalog if match(i)]
            return await self._delete_ids(ids)

    async def sweep(self) -> int:
        """Delete expired memories from the store. Returns how many."""
        self._check_open()
        async with self._lock:
            return await self._delete_ids(self._catalog.expired_ids(self._clock()))

    async def archive_older_than(self, days: float, *, keep_important: bool = True) -> int:
        """Move memories older than ``days`` to the archive (id, type, timestamp, content
        only), out of retrieval. Items marked important stay unless ``keep_important`` is
        False. Returns how many were archived."""
        self._check_open()
        if isinstance(days, bool) or not isinstance(days, (int, float)) or days < 0:
            raise ValidationError("days must be a number >= 0")
        async with self._lock:
            cutoff = self._clock() - days * DAY_MS
            old = [
                i
                for i in self._catalog
                if i.timestamp < cutoff and not (keep_important and i.feedback.important)
            ]
            for start in range(0, len(old), WRITE_CHUNK):
                chunk = old[start : start + WRITE_CHUNK]
                puts = [
                    (schema.arc_key(i.id), ArchivedItem.of(i).to_json().encode()) for i in chunk
                ]
                await self.kv.put_many(puts, deletes=[schema.mem_key(i.id) for i in chunk])
                for i in chunk:
                    self._catalog.remove(i.id)
                    self._dirty_feedback.discard(i.id)
                self._archived_count += len(chunk)
                await self._drop_vectors([i.id for i in chunk])
            return len(old)

    # --- background work (encoder stage 2, embeddings) --------------------------------

    def _queue_refine(self, item: MemoryItem) -> None:
        if self._refine is not None:
            self._refine.queue(item)

    def _cancel_refine(self, item_id: str) -> None:
        if self._refine is not None:
            self._refine.cancel(item_id)

    async def _write_refined(self, item: MemoryItem) -> None:
        await self.kv.put_many([(schema.mem_key(item.id), item.to_json().encode())])
        self._catalog.put(item)

    async def refine_idle(self) -> None:
        """Wait until the refiner has worked through everything queued so far."""
        if self._refine is not None:
            await self._refine.idle()

    def _notify(self, kind: str, item_id: str) -> None:
        for fn in list(self.listeners):
            try:
                fn(kind, item_id)
            except Exception:
                log.exception("change listener failed")

    def _queue_embed(self, item_id: str) -> None:
        if self._dense is not None:
            self._dense.queue(item_id)

    async def _drop_vectors(self, ids: Sequence[str]) -> None:
        if self._dense is not None:
            await self._dense.drop(ids)

    async def embed_idle(self) -> None:
        """Wait until every queued item has been embedded."""
        if self._dense is not None:
            await self._dense.idle()

    # --- reading ----------------------------------------------------------------------

    def _live(self, id: str) -> MemoryItem:
        if not isinstance(id, str):
            raise ValidationError(f"id must be a string, got {type_name(id)}")
        item = self._catalog.get(id)
        if item is None:
            raise NotFoundError(f"no memory with id {id!r}")
        if item.is_expired(self._clock()):
            raise NotFoundError(f"memory {id!r} has expired (ttl_ms)")
        return item

    async def get(self, id: str) -> MemoryItem:
        """The memory with ``id``. Raises NotFoundError if unknown, expired or archived."""
        self._check_open()
        return self._live(id)

    async def list(
        self,
        *,
        scope: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int | None = None,
    ) -> list[MemoryItem]:
        """Live memories matching every filter (``tags``: any of them), newest first."""
        self._check_open()
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 0
        ):
            raise ValidationError("limit must be None or an int >= 0")
        match = item_matcher(scope, tags, type, since_ms, until_ms)
        now = self._clock()
        found = [i for i in self._catalog if match(i) and not i.is_expired(now)]
        found.sort(key=lambda i: (i.timestamp, i.id), reverse=True)
        return found if limit is None else found[:limit]

    async def retrieve(
        self,
        query: str,
        strategy: Strategy | Mapping[str, Any] | None = None,
        *,
        max_items: int = 5,
        max_tokens: int = 1500,
        trace: bool = False,
        condense: bool = True,
    ) -> Retrieval:
        """The memories that matter for ``query``, best first, within ``max_items`` and
        ``max_tokens``. ``strategy`` adds filters and weights (see
        ``pymemory.retrieval.strategies``); ``trace=True`` also returns every candidate with
        its scores and why it was cut. ``condense``: a memory over the remaining budget goes
        in with a shorter summary when one fits (``ScoredMemory.condensed``; the stored item
        is unchanged)."""
        self._check_open()
        if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
            raise ValidationError(f"query must be a string of at most {MAX_QUERY_CHARS} chars")
        for name, value in (("max_items", max_items), ("max_tokens", max_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"{name} must be an int >= 1, got {value!r}")
        if not isinstance(trace, bool) or not isinstance(condense, bool):
            raise ValidationError("trace and condense must be bools")
        plan = compile_strategy(coerce(strategy))
        dense, notes = await self._dense_candidates(query, plan.fusion.depth)
        return retrieve(
            self._catalog,
            query,
            plan,
            now_ms=self._clock(),
            max_items=max_items,
            max_tokens=max_tokens,
            counter=self.token_counter,
            trace=trace,
            dense=dense,
            notes=notes,
            condense_to_fit=condense,
        )

    async def _dense_candidates(
        self, query: str, depth: int
    ) -> tuple[DenseHits | None, tuple[str, ...]]:
        if self._dense is None:
            return None, ("dense retrieval off: no embedder; ranked by BM25",)
        return await self._dense.candidates(query, depth)

    async def search_archive(self, query: str = "", *, limit: int = 10) -> list[ArchivedItem]:
        """Search the archive (loaded from the store on demand). Empty query: newest first."""
        self._check_open()
        if not isinstance(query, str) or isinstance(limit, bool) or not isinstance(limit, int):
            raise ValidationError("search_archive(query: str, limit: int)")
        if limit < 0:
            raise ValidationError("limit must be >= 0")
        return await search_archive(self.kv, query, limit)

    async def stats(self) -> dict[str, Any]:
        """Counts for dashboards and the CLI."""
        self._check_open()
        now = self._clock()
        items = list(self._catalog)
        live = [i for i in items if not i.is_expired(now)]
        return {
            "items": len(live),
            "expired_pending_sweep": len(items) - len(live),
            "archived": self._archived_count,
            "by_type": dict(sorted(Counter(i.type for i in live).items())),
            "by_scope": dict(sorted(Counter(i.scope for i in live).items())),
            "by_method": dict(sorted(Counter(i.content_method for i in live).items())),
            "oldest_ms": min((i.timestamp for i in live), default=None),
            "newest_ms": max((i.timestamp for i in live), default=None),
            "pending_feedback": len(self._dirty_feedback),
            "unreadable_records": len(self._corrupt_keys),
            "schema_version": schema.SCHEMA_VERSION,
            "token_counter": self.token_counter.name,
        }

    # --- export / import --------------------------------------------------------------

    async def export(self) -> AsyncIterator[str]:
        """The whole store as JSON Lines (a header, then memories and archived items in key
        order), each line ending in a newline. ``import_`` of it round-trips exactly."""
        self._check_open()
        await self.flush()
        yield header_line()
        for prefix, kind in ((schema.MEM, "memory"), (schema.ARC, "archived")):
            async for key, raw in iter_prefix(self.kv, prefix):
                if key in self._corrupt_keys:
                    continue
                yield record_line(kind, raw)

    async def import_(
        self,
        lines: str | Iterable[str],
        *,
        on_conflict: Literal["error", "skip", "replace"] = "error",
        chunk_size: int = WRITE_CHUNK,
        on_progress: Callable[[int, int], object] | None = None,
    ) -> ImportResult:
        """Load an ``export()``. Every line is checked before anything is written, so bad
        input (ImportFormatError names the line) or an id conflict (ConflictError, with
        ``on_conflict="error"``) leaves the store unchanged. Writes go in atomic batches of
        ``chunk_size``; after each batch is durable, ``on_progress(written, total)`` is
        called (its errors are logged, never raised)."""
        self._check_open()
        if on_conflict not in ("error", "skip", "replace"):
            raise ValidationError("on_conflict must be 'error', 'skip' or 'replace'")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValidationError("chunk_size must be an int >= 1")
        if isinstance(lines, str):
            lines = lines.splitlines()
        memories, archived = parse_export(lines)
        async with self._lock:
            existing_arc = {k[len(schema.ARC) :] async for k, _ in iter_prefix(self.kv, schema.ARC)}
            taken = [
                r.id
                for r in (*memories, *archived)
                if r.id in self._catalog or r.id in existing_arc
            ]
            if taken and on_conflict == "error":
                raise ConflictError(
                    f"{len(taken)} imported ids already exist (first: {taken[0]}); "
                    "pass on_conflict='skip' or 'replace'"
                )
            skip = set(taken) if on_conflict == "skip" else set()
            records: list[MemoryItem | ArchivedItem] = [
                r for r in (*memories, *archived) if r.id not in skip
            ]
            for start in range(0, len(records), chunk_size):
                chunk = records[start : start + chunk_size]
                puts, deletes = [], []
                for r in chunk:
                    if isinstance(r, MemoryItem):
                        puts.append((schema.mem_key(r.id), r.to_json().encode()))
                        if r.id in existing_arc:
                            deletes.append(schema.arc_key(r.id))
                    else:
                        puts.append((schema.arc_key(r.id), r.to_json().encode()))
                        if r.id in self._catalog:
                            deletes.append(schema.mem_key(r.id))
                await self.kv.put_many(puts, deletes=deletes)
                for r in chunk:
                    if isinstance(r, MemoryItem):
                        if r.id in existing_arc:
                            existing_arc.discard(r.id)
                            self._archived_count -= 1
                        self._catalog.put(r)
                        self._dirty_feedback.discard(r.id)
                    else:
                        if r.id in self._catalog:
                            self._catalog.remove(r.id)
                        if r.id not in existing_arc:
                            existing_arc.add(r.id)
                            self._archived_count += 1
                if on_progress is not None:
                    try:
                        on_progress(start + len(chunk), len(records))
                    except Exception:
                        log.exception("import progress callback failed")
        return ImportResult(
            added=len(records) - len(set(taken) - skip),
            replaced=len(set(taken) - skip),
            skipped=len(skip),
            archived=sum(isinstance(r, ArchivedItem) for r in records),
        )
