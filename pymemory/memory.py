"""Memory: the one async facade over storage, encoder and orchestrator."""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from .background import (
    ModelWork,
    Upkeep,
    check_collaborators,
    check_embedder,
    check_refiner,
    foreground,
    notify,
)
from .checks import (
    check_bool,
    check_callable,
    check_choice,
    check_days,
    check_instance,
    check_int,
    check_lines,
    check_lookup_id,
    check_seconds,
    check_str,
    check_version,
)
from .encoder import Encoder, Refiner, RuleEncoder
from .encoder.intake import UNSET, build_item, build_items, changed_fields
from .errors import NotFoundError, StoreClosedError, ValidationError, shown
from .item import FEEDBACK_KINDS, ArchivedItem, MemoryItem, MemoryVersion
from .models.embedding import Embedder
from .retrieval import pipeline
from .retrieval.archive import search_archive
from .retrieval.filters import item_matcher, older_than
from .retrieval.plan import compile_strategy
from .retrieval.results import INJECT_MODES, Retrieval
from .retrieval.snapshot import SnapshotKeeper
from .retrieval.strategies import Strategy, coerce
from .retrieval.tokens import TokenCounter, default_token_counter
from .retrieval.vectors_kv import KvVectorStore
from .retrieval.view import StoreView
from .retrieval.writer import StoreWriter
from .storage import KvBackend, history, schema
from .storage.export import ImportResult, export_lines, parse_export
from .storage.location import open_store
from .storage.room import ReportsRoom
from .storage.transactions import WRITE_CHUNK, stored_live
from .storage.watch import ChangeWatch
from .sync import SyncHost

log = logging.getLogger("pymemory")

MAX_QUERY_CHARS = 10_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# The user's calls: while one runs, background inference waits (models/runtime.py).
@foreground("add", "add_many", "update", "delete", "feedback", "clear", "get", "history")
@foreground("list", "retrieve", "search_archive", "stats", "import_")
class Memory:
    """Private, offline memory for an agent. Open with ``await Memory.open(...)``.

    Writes go to the KV store first and then to the in-memory indexes, so the store is
    always the truth and a failed write changes nothing. Feedback is applied at once in
    memory and persisted in batches (every ``feedback_flush_s`` seconds, on ``flush()``
    and on ``close()``).

    Several instances may share one store (processes on one SQLite file, workers on one
    IndexedDB database). Every write is a read-modify-write of the stored records in one
    transaction, logged in the store's change log (``pymemory.storage.changes``); before
    it reads or ranks, an instance applies what others logged since it last looked (one
    read when nothing changed), re-reading only the changed records. What each operation
    does when another writer got there first is documented on the operation: in short,
    field updates and feedback merge onto the latest stored version, ``update(...,
    expected_version=n)`` fails with ConflictError instead, and nothing written by a stale
    instance brings back a deleted item.
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
        self._owns_kv = owns_kv
        self.encoder = encoder
        self.token_counter = token_counter
        self._clock = clock
        self._view = StoreView(kv, on_drop=lambda item_id: self._work.drop(item_id))
        self._catalog = self._view.catalog
        self._lock = asyncio.Lock()
        # Every commit of an item record goes through the writer (retrieval/writer.py).
        self._writer = StoreWriter(
            kv, self._view, self._lock, is_open=lambda: not self._closed, catch_up=self._sync_locked
        )
        self._work = ModelWork(
            self._writer, on_refined=lambda i: notify(self.listeners, "refined", i)
        )
        self._upkeep = Upkeep.of(self, feedback_flush_s, sweep_interval_s, auto_archive_days)
        # Index snapshots (retrieval/snapshot.py): written in the background and at close.
        self._snapshots = SnapshotKeeper(
            kv, self._view, self._lock, vectors=lambda: self.vectors, before_take=self._sync_locked
        )
        self._watch: ChangeWatch | None = None  # change notifications (storage/watch.py)
        self.syncs = SyncHost(kv, self._sync)  # pymemory/sync/: rounds with a CouchDB hub
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
        flush_s = check_seconds("feedback_flush_s", feedback_flush_s)
        sweep_s = check_seconds("sweep_interval_s", sweep_interval_s)
        check_days("auto_archive_days", auto_archive_days, optional=True)
        # Checked here, not at first use: a wrong collaborator would otherwise fail later,
        # in a background task or in the middle of a write.
        check_collaborators(encoder, token_counter, clock, refiner, embedder, vector_dtype)
        kv, owns = await open_store(store)
        try:
            memory = cls(
                kv,
                owns_kv=owns,
                encoder=encoder or RuleEncoder(),
                token_counter=token_counter or default_token_counter(),
                clock=clock,
                feedback_flush_s=flush_s,
                sweep_interval_s=sweep_s,
                auto_archive_days=auto_archive_days,
            )
            memory.schema_migrated_from = await schema.ensure_schema(kv)
            await memory._view.load(None)
        except BaseException:
            if owns:
                await kv.close()
            raise
        memory._upkeep.start()
        memory._snapshots.start()
        # A backend that pushes change notifications (PostgresKv: LISTEN/NOTIFY) wakes an
        # idle instance to catch up at once; with others, reads and upkeep catch up.
        memory._watch = ChangeWatch.start(kv, memory._sync)
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
        and embed, in the background, every item that has none yet (all, if another
        embedder made them: docs/models.md, progress in ``stats()["embedding"]``)."""
        self._check_open()
        check_embedder(embedder, vector_dtype)
        self._work.check_free("embedder")
        await self._sync()  # embed what other writers added too
        await self._work.attach_embedder(embedder, vector_dtype)

    async def attach_refiner(self, refiner: Refiner) -> None:
        """Turn Encoder stage 2 on for items added from now on."""
        self._check_open()
        check_refiner(refiner)
        self._work.check_free("refiner")
        self._work.attach_refiner(refiner)

    @property
    def refiner(self) -> Refiner | None:
        return None if self._work.refine is None else self._work.refine.refiner

    @property
    def embedder(self) -> Embedder | None:
        return None if self._work.dense is None else self._work.dense.embedder

    @property
    def vectors(self) -> KvVectorStore | None:
        return self._work.vectors

    @property
    def clock(self) -> Callable[[], int]:
        """The clock (epoch ms) this memory uses, for primitives that share its notion of now."""
        return self._clock

    # --- other writers: the change log ------------------------------------------------

    async def _sync(self) -> None:
        """Apply what other instances changed since this one last looked."""
        await self._writer.sync()

    async def _sync_locked(self) -> None:
        if await self._view.catch_up(self.vectors):
            notify(self.listeners, "changed", "")

    async def close(self) -> None:
        """Stop background work, persist pending feedback, close an owned store."""
        if self._closed:
            return
        if self._watch is not None:
            await self._watch.stop()
        await self.syncs.stop()
        await self._upkeep.stop()
        await self._snapshots.stop()
        await self._work.stop()
        try:
            await self.flush()
            try:
                await self._snapshots.save()
            except Exception:  # the store is intact; only the next open is slower
                log.exception("writing the index snapshot at close failed")
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

    # --- writing: each write checks its arguments and commits through the writer ------

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
        """Store one memory and return it (version 1, a new id: no other writer can
        conflict with it).

        ``text`` is the raw input: it is kept whole and summarised into ``content`` (at
        most 200 characters) by the encoder. Pass ``content`` to give the summary yourself.
        Raises ValidationError on bad input, leaving the store unchanged.
        """
        self._check_open()
        item = await build_item(
            self.encoder, self._clock, text, content, type, metadata, tags, scope, ttl_ms, timestamp
        )
        await self._insert([item])
        return item

    async def add_many(self, entries: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """Store several memories as one atomic batch; each entry holds ``add``'s arguments."""
        self._check_open()
        items = await build_items(self.encoder, self._clock, entries)
        if items:
            await self._insert(items)
        return items

    async def _insert(self, items: list[MemoryItem]) -> None:
        await self._writer.insert(items)
        self._work.queue(items)

    async def update(
        self,
        id: str,
        *,
        text: str = UNSET,
        content: str = UNSET,
        type: str = UNSET,
        metadata: Mapping[str, Any] = UNSET,
        tags: Sequence[str] = UNSET,
        scope: str = UNSET,
        ttl_ms: int | None = UNSET,
        expected_version: int | None = None,
    ) -> MemoryItem:
        """Change fields of a memory. New ``text`` without ``content`` is re-summarised.
        ``metadata`` replaces the old metadata whole.

        Another writer: the fields given here are applied to the latest stored version
        (fields not given keep what the other writer stored; feedback counts add up). With
        ``expected_version=n`` the update fails with ConflictError instead, changing
        nothing, unless the stored item is still at version ``n``. An item deleted
        meanwhile raises NotFoundError (nothing is written back)."""
        self._check_open()
        check_instance("id", id, str, "a string")
        check_version(expected_version)
        await self._sync()
        old = self._view.live(id, self._clock())
        given = dict(text=text, content=content, type=type, metadata=metadata, tags=tags)
        fields = await changed_fields(self.encoder, old, **given, scope=scope, ttl_ms=ttl_ms)
        item = await self._writer.update(id, fields, self._clock(), expected_version)
        if item.text != old.text:
            self._work.queue([item], refine=False)
        return item

    async def delete(self, id: str, *, expected_version: int | None = None) -> None:
        """Forget a memory for good: the item, its vector and its archived copy (an
        archived id can be deleted too), in one transaction, in every instance (each
        drops its copy before its next read). Raises NotFoundError for an unknown id.

        Another writer: a delete wins over anything a stale instance writes later (its
        update raises NotFoundError, its pending feedback is dropped). With
        ``expected_version=n`` it fails with ConflictError if the item changed since."""
        self._check_open()
        check_version(expected_version)
        check_lookup_id(id)
        await self._writer.delete(id, expected_version)

    async def feedback(
        self, id: str, kind: Literal["liked", "disliked", "important"], *, durable: bool = False
    ) -> None:
        """Record the user's feedback. It affects ranking at once and is persisted with the
        next batch (seed 002 tip 1: every ``feedback_flush_s``, on ``flush()``, on
        ``close()``). With ``durable=True`` it returns only once written; feedback given
        at the same moment still shares one write.

        Another writer: feedback merges. What is written is a delta added to the stored
        counts in the write's transaction, so likes from several instances add up and a pin
        (``important``) stays; feedback for an item deleted meanwhile is dropped (with
        ``durable=True``: NotFoundError)."""
        self._check_open()
        check_choice("feedback", kind, FEEDBACK_KINDS)
        check_bool("durable", durable)
        check_instance("id", id, str, "a string")
        await self._sync()
        async with self._lock:
            self._view.note_feedback(self._view.live(id, self._clock()), kind)
        if durable:
            _, gone = await self._writer.flush_feedback()
            if id in gone:
                raise NotFoundError(f"memory {shown(id)} was deleted; the feedback was not stored")

    async def flush(self) -> int:
        """Persist queued feedback as one batch. Returns how many items were written."""
        written, _ = await self._writer.flush_feedback()
        return written

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
        ``clear(scope="conversation", since_ms=start)``). A filter left at None does not
        filter. ``all=True`` wipes every memory, vector and archived item. Returns how
        many were removed.

        Another writer: what is deleted is decided on the stored items, in each batch's
        transaction, and clear() repeats until no stored item matches, so an item another
        instance added or changed to match before clear() returns is removed too."""
        self._check_open()
        if check_bool("all", all):
            count = await self._writer.forget_where(lambda _item: True, archive=False)
            count += await self._writer.clear_archive()
            await self._writer.purge()
            return count
        if builtins.all(f is None for f in (scope, tags, type, since_ms, until_ms)):
            raise ValidationError(
                "clear() needs a filter (scope, tags, type, since_ms, until_ms) or all=True"
            )
        return await self._writer.forget(item_matcher(scope, tags, type, since_ms, until_ms))

    async def sweep(self) -> int:
        """Delete expired memories from the store. Returns how many."""
        self._check_open()
        now = self._clock()
        return await self._writer.forget(lambda item: item.is_expired(now))

    async def archive_older_than(self, days: float, *, keep_important: bool = True) -> int:
        """Move memories older than ``days`` to the archive (id, type, timestamp, content
        only), out of retrieval; their raw text and vector are deleted. Items marked
        important stay unless ``keep_important`` is False. Returns how many were
        archived. Decided on the stored items (feedback pending here included)."""
        self._check_open()
        if isinstance(days, bool) or not isinstance(days, (int, float)) or not days >= 0:
            raise ValidationError("days must be a number >= 0")
        check_bool("keep_important", keep_important)
        return await self._writer.forget(older_than(days, self._clock(), keep_important), True)

    # --- background work (encoder stage 2, embeddings) --------------------------------

    async def refine_idle(self) -> None:
        """Wait until the refiner has worked through everything queued so far."""
        await self._work.idle("refine")

    async def embed_idle(self) -> None:
        """Wait until every queued item has been embedded."""
        await self._work.idle("dense")

    # --- reading ----------------------------------------------------------------------

    async def get(self, id: str) -> MemoryItem:
        """The memory with ``id``. Raises NotFoundError if unknown, expired or archived."""
        self._check_open()
        check_instance("id", id, str, "a string")
        await self._sync()
        return self._view.live(id, self._clock())

    async def history(self, id: str) -> builtins.list[MemoryVersion]:
        """Every version of a memory, oldest first, ending with the current one: each
        version ``update()`` replaced, with when it was valid (feedback and background
        refinement change the item in place and add no version). Read from the store, so
        it includes other writers' updates. Retrieval only ever sees the current version;
        forgetting the memory forgets its history. NotFoundError as for ``get``."""
        self._check_open()
        check_lookup_id(id)
        current = stored_live(id, await self.kv.get(schema.mem_key(id)), self._clock())
        return await history.item_versions(self.kv, current)

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
        """Live memories matching every filter (``tags``: any of them), newest first. A
        filter left at None does not filter."""
        self._check_open()
        check_int("limit", limit, minimum=0, optional=True)
        match = item_matcher(scope, tags, type, since_ms, until_ms)
        await self._sync()
        return self._view.newest(match, self._clock(), limit)

    async def get_all(self, **filters: Any) -> builtins.list[MemoryItem]:
        """``list()`` under the name Mem0 users know; the same filters."""
        return await self.list(**filters)

    async def search(
        self, query: str, strategy: Strategy | Mapping[str, Any] | None = None, **options: Any
    ) -> Retrieval:
        """``retrieve()`` under the name Mem0 users know; the same arguments."""
        return await self.retrieve(query, strategy, **options)

    async def retrieve(
        self,
        query: str,
        strategy: Strategy | Mapping[str, Any] | None = None,
        *,
        max_items: int = 5,
        max_tokens: int = 1500,
        trace: bool = False,
        condense: bool = True,
        inject: str = "passages",
    ) -> Retrieval:
        """The memories that matter for ``query``, best first, within ``max_items`` and
        ``max_tokens``. ``strategy`` adds filters and weights (see
        ``pymemory.retrieval.strategies``); ``trace=True`` also returns every candidate with
        its scores and why it was cut. ``inject``: ``Retrieval.text`` carries the passages
        of each memory's raw text that answer the query (``"passages"``) or its summary
        (``"summary"``). ``condense``: a memory over the remaining budget goes in shortened
        when that fits (its best sentence, or a shorter summary)."""
        self._check_open()
        if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
            raise ValidationError(f"query must be a string of at most {MAX_QUERY_CHARS} chars")
        check_int("max_items", max_items, minimum=1)
        check_int("max_tokens", max_tokens, minimum=1)
        check_bool("trace", trace)
        check_bool("condense", condense)
        if inject not in INJECT_MODES:
            raise ValidationError(f"inject must be one of {', '.join(INJECT_MODES)}")
        return await pipeline.run(
            self._catalog,
            query,
            compile_strategy(coerce(strategy)),
            dense_index=self._work.dense,
            catch_up=self._sync,  # what other writers added, changed or forgot
            clock=self._clock,
            max_items=max_items,
            max_tokens=max_tokens,
            counter=self.token_counter,
            trace=trace,
            condense_to_fit=condense,
            inject=inject,
        )

    async def search_archive(self, query: str = "", *, limit: int = 10) -> list[ArchivedItem]:
        """Search the archive (loaded from the store on demand). Empty query: newest first."""
        self._check_open()
        check_str("query", query)
        check_int("limit", limit, minimum=0)
        return await search_archive(self.kv, query, limit)

    async def stats(self) -> dict[str, Any]:
        """Counts for dashboards and the CLI; ``storage``: the room left (bytes available,
        used, the quota and the reserve writes keep; None where the backend cannot tell)."""
        self._check_open()
        await self._sync()
        return {
            **self._view.counts(self._clock()),
            "schema_version": schema.SCHEMA_VERSION,
            "token_counter": self.token_counter.name,
            "storage": await self.kv.room() if isinstance(self.kv, ReportsRoom) else None,
            **self._work.stats(len(self._catalog)),  # background inference, embedding
            "sync": await self.syncs.status(),
        }

    async def sync(self, url: str, *, auth: Any = None, live: bool = False) -> Any:
        """One round with the CouchDB database at ``url`` (docs/sync.md): a SyncResult.
        ``live=True``: background rounds with backoff instead; returns their LiveSync."""
        self._check_open()
        return await self.syncs.run(url, auth, live=live)

    # --- export / import --------------------------------------------------------------

    async def export(self) -> AsyncIterator[str]:
        """The whole store as JSON Lines (a header, then memories and archived items in key
        order), each line ending in a newline. ``import_`` of it round-trips exactly."""
        self._check_open()
        await self.flush()
        async for line in export_lines(self.kv, skip=self._view.corrupt_keys):
            yield line

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
        called (its errors are logged, never raised).

        Conflicts are decided on the store, in each batch's transaction, so an id another
        writer holds counts whether or not this instance has seen it. With "error" the
        first batch's transaction checks every id of the import; an id another writer
        creates while a multi-batch import runs fails the batch that meets it, after the
        earlier batches landed. "replace" gives a replaced item the next version number
        and drops its old vector (an identical record is left as it is)."""
        self._check_open()
        check_choice("on_conflict", on_conflict, ("error", "skip", "replace"))
        check_int("chunk_size", chunk_size, minimum=1)
        check_callable("on_progress", on_progress, "(written, total)", optional=True)
        parsed = parse_export(check_lines(lines, "import_()"))
        embed = lambda items: self._work.queue(items, refine=False)  # noqa: E731
        return await self._writer.import_records(
            parsed, on_conflict, chunk_size, on_progress, embed
        )
