"""Memory: the one async facade over storage, encoder and orchestrator."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from .encoder import Encoder, Refiner, RuleEncoder
from .encoder.intake import UNSET, build_item, build_items, changed_fields, type_name
from .encoder.refine import RefineWorker
from .errors import NotFoundError, PymemoryError, StoreClosedError, ValidationError, shown
from .item import (
    FEEDBACK_KINDS,
    MAX_VERSION,
    ArchivedItem,
    Feedback,
    MemoryItem,
    MemoryVersion,
    check_id,
)
from .models.embedding import Embedder, reads
from .retrieval.archive import search_archive
from .retrieval.dense import DenseIndex
from .retrieval.filters import item_matcher
from .retrieval.pipeline import Retrieval, lexical_side, retrieve
from .retrieval.plan import compile_strategy
from .retrieval.snapshot import SnapshotKeeper
from .retrieval.snapshot import discard as discard_snapshot
from .retrieval.strategies import Strategy, coerce
from .retrieval.tokens import TokenCounter, default_token_counter
from .retrieval.vectors_kv import KvVectorStore
from .retrieval.view import StoreView
from .storage import KvBackend, MapKv, Writes, changes, history, iter_prefix, schema
from .storage.export import export_lines, parse_export
from .storage.room import ReportsRoom
from .storage.transactions import (
    WRITE_CHUNK,
    forget_item,
    merge_feedback,
    store_refined,
    stored_live,
    update_item,
)

log = logging.getLogger("pymemory")

DAY_MS = 86_400_000
MAX_QUERY_CHARS = 10_000


@dataclass(frozen=True)
class ImportResult:
    added: int
    replaced: int
    skipped: int
    archived: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _positive_number(value: object) -> bool:
    """An int or float > 0 that a float can hold (inf is allowed, NaN is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return float(value) > 0
    except OverflowError:  # an int past float's range
        return False


def _store_path(store: object) -> str:
    """``open()``'s ``store`` as a SQLite file path: a str or os.PathLike, valid Unicode."""
    path = os.fspath(store) if isinstance(store, os.PathLike) else store
    if not isinstance(path, str):
        raise ValidationError(
            f"store must be a KvBackend, a SQLite file path (str or os.PathLike) or None, "
            f"got {type_name(store)}"
        )
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("the store path contains a lone surrogate") from None
    return path


VECTOR_DTYPES = ("int8", "float16", "float32")


def _check_embedder(embedder: object, vector_dtype: object, *, allow_none: bool = False) -> None:
    if not (allow_none and embedder is None) and not isinstance(embedder, Embedder):
        raise ValidationError(
            f"embedder must be an Embedder (name, dim and an async embed()), got "
            f"{type_name(embedder)}"
        )
    if not isinstance(vector_dtype, str) or vector_dtype not in VECTOR_DTYPES:
        raise ValidationError(
            f"vector_dtype must be one of {', '.join(VECTOR_DTYPES)}, got {shown(vector_dtype)}"
        )


def _check_refiner(refiner: object, *, allow_none: bool = False) -> None:
    if allow_none and refiner is None:
        return
    if not isinstance(getattr(refiner, "method", None), str) or not callable(
        getattr(refiner, "refine", None)
    ):
        raise ValidationError(
            f"refiner must be a Refiner (a str method and an async refine()), got "
            f"{type_name(refiner)}"
        )


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
        self._dense: DenseIndex | None = None  # set by attach_embedder()
        self._refine: RefineWorker | None = None  # set by attach_refiner()
        self._owns_kv = owns_kv
        self.encoder = encoder
        self.token_counter = token_counter
        self._clock = clock
        self._feedback_flush_s = feedback_flush_s
        self._sweep_interval_s = sweep_interval_s
        self._auto_archive_days = auto_archive_days
        self._view = StoreView(kv, on_drop=self._drop_work)
        self._catalog = self._view.catalog
        self._lock = asyncio.Lock()
        self._maintenance: asyncio.Task[None] | None = None
        # Index snapshots (retrieval/snapshot.py): written in the background and at close.
        self._snapshots = SnapshotKeeper(
            kv, self._view, self._lock, vectors=lambda: self.vectors, before_take=self._sync_locked
        )
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
            if not _positive_number(value):
                raise ValidationError(f"{name} must be a number of seconds > 0, got {shown(value)}")
        if auto_archive_days is not None and not _positive_number(auto_archive_days):
            raise ValidationError(
                f"auto_archive_days must be None or a number of days > 0, "
                f"got {shown(auto_archive_days)}"
            )
        # Checked here, not at first use: a wrong collaborator would otherwise fail later,
        # in a background task or in the middle of a write.
        if encoder is not None and (not isinstance(encoder, Encoder) or isinstance(encoder, str)):
            raise ValidationError(
                f"encoder must be an Encoder (an object with an async encode()), got "
                f"{type_name(encoder)}"
            )
        if token_counter is not None and not isinstance(token_counter, TokenCounter):
            raise ValidationError(
                f"token_counter must be a TokenCounter (name and count()), got "
                f"{type_name(token_counter)}"
            )
        if not callable(clock):
            raise ValidationError(
                f"clock must be a callable giving epoch ms, got {type_name(clock)}"
            )
        _check_refiner(refiner, allow_none=True)
        _check_embedder(embedder, vector_dtype, allow_none=True)
        owns = not isinstance(store, KvBackend)
        if store is None:
            kv: KvBackend = MapKv()
        elif isinstance(store, KvBackend):
            kv = store
        else:
            from .storage.sqlite import SqliteKv

            kv = await SqliteKv.open(_store_path(store))
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
            await memory._view.load(None)
        except BaseException:
            if owns:
                await kv.close()
            raise
        memory._maintenance = asyncio.ensure_future(memory._maintain())
        memory._snapshots.start()
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
        _check_embedder(embedder, vector_dtype)
        if self._dense is not None:
            raise ValidationError("an embedder is already attached")
        await self._sync()  # embed what other writers added too
        # Assigned with no await after open's locked catch-up (see DenseIndex.open).
        self._dense = await DenseIndex.open(
            self.kv, embedder, self._catalog, self._lock, vector_dtype, on_commit=self._view.advance
        )

    async def attach_refiner(self, refiner: Refiner) -> None:
        """Turn Encoder stage 2 on for items added from now on."""
        self._check_open()
        _check_refiner(refiner)
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

    # --- other writers: the change log ------------------------------------------------

    async def _sync(self) -> None:
        """Apply what other instances changed since this one last looked: one read of the
        store's sequence number when nothing did."""
        if not await self._view.behind():
            return
        async with self._lock:
            self._check_open()
            await self._sync_locked()

    async def _sync_locked(self) -> None:
        if await self._view.catch_up(self.vectors):
            self._notify("changed", "")

    def _drop_work(self, item_id: str) -> None:
        """An item is gone from the store: cancel its queued refining and embedding."""
        if self._refine is not None:
            self._refine.cancel(item_id)
        if self._dense is not None:
            self._dense.forget([item_id])

    async def close(self) -> None:
        """Stop background work, persist pending feedback, close an owned store."""
        if self._closed:
            return
        if self._maintenance is not None:
            self._maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._maintenance
        await self._snapshots.stop()
        for worker in (self._refine, self._dense):
            if worker is not None:
                await worker.stop()
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

    async def _maintain(self) -> None:
        """Background loop: flush feedback, sweep expired items, auto-archive."""
        loop = asyncio.get_running_loop()
        next_sweep = loop.time() + self._sweep_interval_s
        next_archive = loop.time()
        while True:
            jobs: list[tuple[str, Callable[[], Any]]] = [
                ("feedback flush", self.flush),
                ("change-log sync", self._sync),  # drops what others forgot, even when idle
            ]
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
    #
    # Every write below is one changes.commit(): a transaction that reads the records it
    # depends on, decides from what is stored (never from this instance's copy), writes and
    # logs. The in-memory view is updated only once the commit has landed.

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
        puts = [(schema.mem_key(it.id), it.to_json().encode()) for it in items]
        async with self._lock:
            self._check_open()
            done = await changes.commit(self.kv, [], lambda _v, _l: Writes(puts))
            for it in items:
                self._catalog.put(it)
            self._view.advance(done)
        for it in items:
            self._queue_refine(it)
            self._queue_embed(it.id)

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
        if expected_version is not None and (
            isinstance(expected_version, bool)
            or not isinstance(expected_version, int)
            or not 1 <= expected_version <= MAX_VERSION
        ):
            raise ValidationError("expected_version must be None or an int >= 1")
        await self._sync()
        old = self._live(id)
        fields = await changed_fields(
            self.encoder,
            old,
            text=text,
            content=content,
            type=type,
            metadata=metadata,
            tags=tags,
            scope=scope,
            ttl_ms=ttl_ms,
        )
        async with self._lock:
            self._check_open()
            write = update_item(
                id, fields, self._view.pending.get(id), self._clock(), expected_version
            )
            done = await self._commit_on_item(id, write)
            item = done.result
            self._view.pending.pop(id, None)
            self._catalog.put(item)
            self._view.advance(done)
        if item.text != old.text:
            self._queue_embed(id)
        return item

    async def _commit_on_item(
        self, item_id: str, fn: Callable[[list[bytes | None], list[list[str]]], Writes]
    ) -> changes.Committed:
        """Commit ``fn`` over the record of one item (caller holds the lock); if the item
        turns out to be gone, drop it here too and re-raise NotFoundError."""
        try:
            return await changes.commit(self.kv, [schema.mem_key(item_id)], fn)
        except NotFoundError:
            self._view.drop(item_id)
            raise

    async def delete(self, id: str, *, expected_version: int | None = None) -> None:
        """Forget a memory for good: the item, its vector and its archived copy (an
        archived id can be deleted too), in one transaction, in every instance (each
        drops its copy before its next read). Raises NotFoundError for an unknown id.

        Another writer: a delete wins over anything a stale instance writes later (its
        update raises NotFoundError, its pending feedback is dropped). With
        ``expected_version=n`` it fails with ConflictError if the item changed since."""
        self._check_open()
        if not isinstance(id, str):
            raise ValidationError(f"id must be a string, got {type_name(id)}")
        if expected_version is not None and (
            isinstance(expected_version, bool)
            or not isinstance(expected_version, int)
            or not 1 <= expected_version <= MAX_VERSION
        ):
            raise ValidationError("expected_version must be None or an int >= 1")
        try:
            check_id(id)
        except ValidationError:
            raise NotFoundError(f"no memory with id {shown(id)}") from None  # never a memory's
        async with self._lock:
            self._check_open()
            keys = [schema.mem_key(id), schema.arc_key(id)]
            write = forget_item(id, expected_version)
            try:
                done = await changes.commit(
                    self.kv, keys, write, list_prefixes=[schema.hst_prefix(id)]
                )
            except NotFoundError:
                self._view.drop(id)
                raise
            self._view.drop(id)
            self._view.archived.discard(id)
            self._view.corrupt_keys.discard(schema.mem_key(id))
            self._view.advance(done)
        await self._purge()

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
        if not isinstance(kind, str) or kind not in FEEDBACK_KINDS:
            known = ", ".join(FEEDBACK_KINDS)
            raise ValidationError(f"feedback must be one of {known}, got {shown(kind)}")
        if not isinstance(durable, bool):
            raise ValidationError("durable must be a bool")
        await self._sync()
        async with self._lock:
            item = self._live(id)
            one = Feedback().add(kind)
            pending = self._view.pending
            pending[id] = pending.get(id, Feedback()).merged(one)
            self._catalog.set_feedback(replace(item, feedback=item.feedback.merged(one)))
        if durable:
            _, gone = await self._flush()
            if id in gone:
                raise NotFoundError(f"memory {shown(id)} was deleted; the feedback was not stored")

    async def flush(self) -> int:
        """Persist queued feedback as one batch. Returns how many items were written."""
        written, _ = await self._flush()
        return written

    async def _flush(self) -> tuple[int, list[str]]:
        """Flush; (items written, ids whose feedback was dropped: deleted meanwhile)."""
        self._check_open()
        async with self._lock:
            pending = dict(self._view.pending)
            if not pending:
                return 0, []
            ids = list(pending)
            write = merge_feedback(ids, pending)
            done = await changes.commit(self.kv, [schema.mem_key(i) for i in ids], write)
            written, gone = done.result
            for item_id in ids:
                del self._view.pending[item_id]
            for item in written:
                self._catalog.put(item)
            for item_id in gone:
                log.info("feedback for %s dropped: the memory was deleted", item_id)
                self._view.drop(item_id)
            self._view.advance(done)
            return len(written), gone

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
        if not isinstance(all, bool):
            raise ValidationError(f"all must be a bool, got {type_name(all)}")
        if all:
            count = await self._forget_where(lambda _item: True)
            count += await self._clear_archive()
            await self._purge()
            return count
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
        count = await self._forget_where(match)
        if count:
            await self._purge()
        return count

    async def sweep(self) -> int:
        """Delete expired memories from the store. Returns how many."""
        self._check_open()
        now = self._clock()
        count = await self._forget_where(lambda item: item.is_expired(now))
        if count:
            await self._purge()
        return count

    async def archive_older_than(self, days: float, *, keep_important: bool = True) -> int:
        """Move memories older than ``days`` to the archive (id, type, timestamp, content
        only), out of retrieval; their raw text and vector are deleted. Items marked
        important stay unless ``keep_important`` is False. Returns how many were
        archived. Decided on the stored items (feedback pending here included)."""
        self._check_open()
        if isinstance(days, bool) or not isinstance(days, (int, float)) or not days >= 0:
            raise ValidationError("days must be a number >= 0")
        if not isinstance(keep_important, bool):
            raise ValidationError(f"keep_important must be a bool, got {type_name(keep_important)}")
        cutoff = self._clock() - days * DAY_MS

        def old(item: MemoryItem) -> bool:
            return item.timestamp < cutoff and not (keep_important and item.feedback.important)

        count = await self._forget_where(old, archive=True)
        if count:
            await self._purge()
        return count

    async def _forget_where(
        self, match: Callable[[MemoryItem], bool], *, archive: bool = False
    ) -> int:
        """Delete (or archive) every stored item ``match`` accepts, WRITE_CHUNK per
        transaction, until none is left. Candidates come from the view after a sync; each
        is re-checked on its stored record, so a candidate another writer changed is not
        deleted (and the view is corrected), and one it deleted is dropped here."""
        total = 0
        while True:
            async with self._lock:
                self._check_open()
                await self._sync_locked()
                removed = await self._view.forget_next(match, archive)
                if removed is None:
                    return total
                total += removed

    async def _clear_archive(self) -> int:
        """Delete every archived item and unreadable memory record (clear(all=True))."""
        total = 0
        while True:
            async with self._lock:
                self._check_open()
                await self._sync_locked()
                removed = await self._view.clear_archive_next()
                if removed is None:
                    return total
                total += removed

    async def _purge(self) -> None:
        """After a forget: drop the index snapshot (it may hold what was forgotten) and
        ask the backend to scrub deleted records from its files."""
        try:
            await discard_snapshot(self.kv)
        except PymemoryError:
            log.exception("dropping the index snapshot after a forget failed")
        try:
            await self.kv.purge()
        except PymemoryError:
            log.exception("purging deleted records from the store failed")

    # --- background work (encoder stage 2, embeddings) --------------------------------

    def _queue_refine(self, item: MemoryItem) -> None:
        if self._refine is not None:
            self._refine.queue(item)

    async def _write_refined(self, before: MemoryItem, refined: MemoryItem) -> bool:
        """Store a refined summary (lock held) if the stored item still holds what the
        refiner saw: an edit by any writer meanwhile wins."""
        write = store_refined(before, refined)
        done = await changes.commit(self.kv, [schema.mem_key(refined.id)], write)
        if done.result is not None:
            self._view.put(done.result)
        self._view.advance(done)
        return done.result is not None

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
            raise NotFoundError(f"no memory with id {shown(id)}")
        if item.is_expired(self._clock()):
            raise NotFoundError(f"memory {shown(id)} has expired (ttl_ms)")
        return item

    async def get(self, id: str) -> MemoryItem:
        """The memory with ``id``. Raises NotFoundError if unknown, expired or archived."""
        self._check_open()
        if not isinstance(id, str):
            raise ValidationError(f"id must be a string, got {type_name(id)}")
        await self._sync()
        return self._live(id)

    async def history(self, id: str) -> builtins.list[MemoryVersion]:
        """Every version of a memory, oldest first, ending with the current one: each
        version ``update()`` replaced, with when it was valid (feedback and background
        refinement change the item in place and add no version). Read from the store, so
        it includes other writers' updates. Retrieval only ever sees the current version;
        forgetting the memory forgets its history. NotFoundError as for ``get``."""
        self._check_open()
        if not isinstance(id, str):
            raise ValidationError(f"id must be a string, got {type_name(id)}")
        try:
            check_id(id)
        except ValidationError:
            raise NotFoundError(f"no memory with id {shown(id)}") from None
        current = stored_live(id, await self.kv.get(schema.mem_key(id)), self._clock())
        pasts = [
            history.read_past(raw) async for _, raw in iter_prefix(self.kv, schema.hst_prefix(id))
        ]
        return history.versions(current, pasts)

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
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 0
        ):
            raise ValidationError("limit must be None or an int >= 0")
        match = item_matcher(scope, tags, type, since_ms, until_ms)
        await self._sync()
        now = self._clock()
        found = [i for i in self._catalog if match(i) and not i.is_expired(now)]
        found.sort(key=lambda i: (i.timestamp, i.id), reverse=True)
        return found if limit is None else found[:limit]

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
                raise ValidationError(f"{name} must be an int >= 1, got {shown(value)}")
        if not isinstance(trace, bool) or not isinstance(condense, bool):
            raise ValidationError("trace and condense must be bools")
        plan = compile_strategy(coerce(strategy))
        # The query is embedded (in the browser: in the model worker) while this thread
        # syncs and scores BM25: the call takes the longer of the two, not their sum.
        dense_index = self._dense
        if dense_index is not None and not reads(dense_index.embedder, query):
            dense_index = None  # its vectors of this query would be noise: BM25 alone
            no_dense = "dense retrieval off for this query: the embedder does not read its script"
        else:
            no_dense = "dense retrieval off: no embedder; ranked by BM25"
        embedding = None if dense_index is None else dense_index.embed_query(query)
        try:
            await self._sync()  # what other writers added, changed or forgot
            now = self._clock()
            lexical = lexical_side(self._catalog, query, now)
            if dense_index is None:
                dense, notes = None, (no_dense,)
            else:
                dense, notes = await dense_index.candidates(embedding, plan.fusion.depth)
        finally:
            if embedding is not None and not embedding.done():
                embedding.cancel()
            elif embedding is not None and not embedding.cancelled():
                embedding.exception()  # seen: a failure here is no "never retrieved" warning
        return retrieve(
            self._catalog,
            query,
            plan,
            now_ms=now,
            lexical=lexical,
            max_items=max_items,
            max_tokens=max_tokens,
            counter=self.token_counter,
            trace=trace,
            dense=dense,
            notes=notes,
            condense_to_fit=condense,
        )

    async def search_archive(self, query: str = "", *, limit: int = 10) -> list[ArchivedItem]:
        """Search the archive (loaded from the store on demand). Empty query: newest first."""
        self._check_open()
        if not isinstance(query, str) or isinstance(limit, bool) or not isinstance(limit, int):
            raise ValidationError("search_archive(query: str, limit: int)")
        if limit < 0:
            raise ValidationError("limit must be >= 0")
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
        }

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
        if not isinstance(on_conflict, str) or on_conflict not in ("error", "skip", "replace"):
            raise ValidationError("on_conflict must be 'error', 'skip' or 'replace'")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValidationError("chunk_size must be an int >= 1")
        if on_progress is not None and not callable(on_progress):
            raise ValidationError("on_progress must be None or a callable")
        if isinstance(lines, str):
            lines = lines.splitlines()
        elif isinstance(lines, (bytes, bytearray, Mapping)) or not isinstance(lines, Iterable):
            raise ValidationError("import_() takes the JSON Lines as a str or a list of str")
        parsed = parse_export(lines)
        records: list[MemoryItem | ArchivedItem] = [*parsed.memories, *parsed.archived]
        added = replaced = skipped = archived_n = 0
        async with self._lock:
            self._check_open()
            for start in range(0, len(records), chunk_size):
                chunk = records[start : start + chunk_size]
                # The first batch of an "error" import also checks every later id.
                checked = records if (start == 0 and on_conflict == "error") else chunk
                outcome = await self._view.import_chunk(chunk, checked, on_conflict, parsed.pasts)
                added += outcome.added
                replaced += outcome.replaced
                skipped += outcome.skipped
                archived_n += len(outcome.archived)
                for item in outcome.memories:
                    self._queue_embed(item.id)
                if on_progress is not None:
                    try:
                        on_progress(start + len(chunk), len(records))
                    except Exception:
                        log.exception("import progress callback failed")
        return ImportResult(added=added, replaced=replaced, skipped=skipped, archived=archived_n)
