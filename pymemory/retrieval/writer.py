"""The one write path: every commit of an item's records (``mem:``, ``arc:``, ``hst:``,
``vec:``) goes through :class:`StoreWriter`, whoever asks: the facade's writes, forget,
import, the refiner and the embedder.

Each write is one :func:`pymemory.storage.changes.commit`: a transaction (built in
:mod:`pymemory.storage.transactions`) that reads the records it depends on, decides from
what is stored (never from this instance's copy), writes, and logs the keys it changed.
Only once the commit has landed does the writer apply its result to the instance's
:class:`~.view.StoreView` and move the view's position past it.

Locking: the writes the facade asks for take the instance's write lock here; the ones a
background worker asks for (:meth:`store_refined`, :meth:`commit_vectors`) run with the
worker already holding it, as documented on each.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..errors import NotFoundError, PymemoryError, StoreClosedError
from ..item import ArchivedItem, MemoryItem
from ..storage import KvBackend, Writes, changes, schema
from ..storage.export import ImportResult, Parsed
from ..storage.history import Past
from ..storage.transactions import (
    WRITE_CHUNK,
    ImportOutcome,
    Transaction,
    delete_present,
    forget_batch,
    forget_chunk,
    forget_item,
    import_batch,
    merge_feedback,
    store_refined,
    update_item,
)
from . import snapshot
from .view import StoreView

log = logging.getLogger("pymemory")


class StoreWriter:
    """Commits item records for one instance and keeps its view in step with them.

    ``is_open`` says whether the instance still takes writes; ``catch_up`` (called with the
    lock held) applies other writers' changes to the view before a batch decides what to
    forget."""

    def __init__(
        self,
        kv: KvBackend,
        view: StoreView,
        lock: asyncio.Lock,
        *,
        is_open: Callable[[], bool],
        catch_up: Callable[[], Awaitable[None]],
    ) -> None:
        self.kv = kv
        self.view = view
        self.lock = lock
        self._is_open = is_open
        self._catch_up = catch_up

    async def sync(self) -> None:
        """Catch up with what other instances committed since the view last looked: one
        read of the store's sequence number when nothing changed."""
        if not await self.view.behind():
            return
        async with self.lock:
            self._check_open()
            await self._catch_up()

    def _check_open(self) -> None:
        if not self._is_open():
            raise StoreClosedError("this Memory is closed")

    async def _commit(
        self, keys: Sequence[str], fn: Transaction, list_prefixes: Sequence[str] = ()
    ) -> Any:
        """Commit ``fn`` over ``keys`` (lock held), move the view past it; its result."""
        done = await changes.commit(self.kv, list(keys), fn, list_prefixes=list(list_prefixes))
        self.view.advance(done)
        return done.result

    # --- one item at a time -------------------------------------------------------------

    async def insert(self, items: Sequence[MemoryItem]) -> None:
        """New items (new ids: nothing stored to read), as one atomic batch."""
        puts = [(schema.mem_key(it.id), it.to_json().encode()) for it in items]
        async with self.lock:
            self._check_open()
            await self._commit([], lambda _v, _l: Writes(puts))
            for it in items:
                self.view.catalog.put(it)

    async def update(
        self, item_id: str, fields: Mapping[str, Any], now_ms: int, expected_version: int | None
    ) -> MemoryItem:
        """``fields`` (and this instance's pending feedback) onto the stored item, as its
        next version; the item as stored. NotFoundError if it is gone (dropped here too)."""
        async with self.lock:
            self._check_open()
            pending = self.view.pending.get(item_id)
            write = update_item(item_id, fields, pending, now_ms, expected_version)
            item: MemoryItem = await self._commit_on(item_id, [schema.mem_key(item_id)], write)
            self.view.pending.pop(item_id, None)
            self.view.catalog.put(item)
            return item

    async def delete(self, item_id: str, expected_version: int | None) -> None:
        """The item, its archived copy, vector and history, in one transaction."""
        async with self.lock:
            self._check_open()
            keys = [schema.mem_key(item_id), schema.arc_key(item_id)]
            write = forget_item(item_id, expected_version)
            await self._commit_on(item_id, keys, write, [schema.hst_prefix(item_id)])
            self.view.drop(item_id)
            self.view.archived.discard(item_id)
            self.view.corrupt_keys.discard(schema.mem_key(item_id))
        await self.purge()

    async def _commit_on(
        self,
        item_id: str,
        keys: Sequence[str],
        fn: Transaction,
        list_prefixes: Sequence[str] = (),
    ) -> Any:
        """Commit over one item's records; if it turns out to be gone, drop it here too."""
        try:
            return await self._commit(keys, fn, list_prefixes)
        except NotFoundError:
            self.view.drop(item_id)
            raise

    async def flush_feedback(self) -> tuple[int, list[str]]:
        """Store the feedback given here as one batch, each delta added to the stored
        counts: (items written, ids whose feedback was dropped: deleted meanwhile)."""
        self._check_open()
        async with self.lock:
            pending = dict(self.view.pending)
            if not pending:
                return 0, []
            ids = list(pending)
            keys = [schema.mem_key(i) for i in ids]
            written, gone = await self._commit(keys, merge_feedback(ids, pending))
            for item_id in ids:
                del self.view.pending[item_id]
            for item in written:
                self.view.catalog.put(item)
            for item_id in gone:
                log.info("feedback for %s dropped: the memory was deleted", item_id)
                self.view.drop(item_id)
            return len(written), gone

    # --- background workers (they hold the lock) ----------------------------------------

    async def store_refined(self, before: MemoryItem, refined: MemoryItem) -> bool:
        """A stage-2 summary, if the stored item still holds what the refiner saw (an edit
        by any writer meanwhile wins). The caller holds the lock."""
        item = await self._commit([schema.mem_key(refined.id)], store_refined(before, refined))
        if item is not None:
            self.view.put(item)
        return item is not None

    async def commit_vectors(self, item_ids: Sequence[str], fn: Transaction) -> Any:
        """Vector records (``vec:``, and ``meta:embedder``), decided by ``fn`` over the
        stored ``meta:embedder`` record (``values[0]``: whose vectors the store holds,
        :mod:`.space`) and the items' records (an item gone or changed meanwhile gets
        none); ``fn``'s result. The caller holds the lock and applies the result to its
        vector index."""
        keys = [schema.META_EMBEDDER, *(schema.mem_key(i) for i in item_ids)]
        return await self._commit(keys, fn)

    # --- batches: forget, clear, import --------------------------------------------------

    async def forget_where(self, match: Callable[[MemoryItem], bool], archive: bool) -> int:
        """Delete (or archive) every stored item ``match`` accepts, one batch per
        transaction, until none is left; how many. Candidates come from the view after a
        catch-up; each is re-checked on its stored record, so a candidate another writer
        changed is kept (and the view corrected), and one it deleted is dropped here."""
        total = 0
        while True:
            async with self.lock:
                self._check_open()
                await self._catch_up()
                removed = await self._forget_next(match, archive)
            if removed is None:
                return total
            total += removed

    async def forget(self, match: Callable[[MemoryItem], bool], archive: bool = False) -> int:
        """:meth:`forget_where`, then :meth:`purge` if anything was removed; how many."""
        count = await self.forget_where(match, archive)
        if count:
            await self.purge()
        return count

    async def _forget_next(self, match: Callable[[MemoryItem], bool], archive: bool) -> int | None:
        view = self.view
        ids = forget_chunk(i for i in view.catalog if match(i))
        if not ids:
            return None
        pending = {i: view.pending[i] for i in ids if i in view.pending}
        keys = [schema.mem_key(i) for i in ids]
        write = forget_batch(ids, pending, match, archive)
        gone, kept, removed = await self._commit(keys, write, (schema.HST,))
        for item_id in gone:
            view.drop(item_id)
        for item in kept:
            view.put(item)
        if archive:
            view.archived.update(gone)
        return removed

    async def clear_archive(self) -> int:
        """Delete every archived item, unreadable memory record and history left without
        its memory (``clear(all=True)``), one batch per transaction; how many."""
        total = 0
        while True:
            async with self.lock:
                self._check_open()
                await self._catch_up()
                removed = await self._clear_archive_next()
            if removed is None:
                return total
            total += removed

    async def _clear_archive_next(self) -> int | None:
        view = self.view
        keys = [schema.arc_key(i) for i in view.archived][:WRITE_CHUNK]
        keys += sorted(view.corrupt_keys)[: WRITE_CHUNK - len(keys)]
        if len(keys) < WRITE_CHUNK:
            keys += [k for k, _ in await self.kv.scan(schema.HST, limit=WRITE_CHUNK - len(keys))]
        if not keys:
            return None
        deleted = await self._commit(keys, delete_present(keys))
        for key in keys:
            view.archived.discard(key[len(schema.ARC) :])
            view.corrupt_keys.discard(key)
        return len(deleted)

    async def import_records(
        self,
        parsed: Parsed,
        on_conflict: str,
        chunk_size: int,
        on_progress: Callable[[int, int], object] | None,
        on_memories: Callable[[list[MemoryItem]], None],
    ) -> ImportResult:
        """An import, ``chunk_size`` records per transaction (with the past versions of
        its memories). After each batch is durable: ``on_memories(its memories)`` and
        ``on_progress(records done, total)`` (whose errors are logged, never raised).
        Conflicts are decided on the store; with "error" the first batch checks every id."""
        records: list[MemoryItem | ArchivedItem] = [*parsed.memories, *parsed.archived]
        added = replaced = skipped = archived = 0
        async with self.lock:
            self._check_open()
            for start in range(0, len(records), chunk_size):
                chunk = records[start : start + chunk_size]
                checked = records if (start == 0 and on_conflict == "error") else chunk
                outcome = await self._import_chunk(chunk, checked, on_conflict, parsed.pasts)
                added += outcome.added
                replaced += outcome.replaced
                skipped += outcome.skipped
                archived += len(outcome.archived)
                on_memories(outcome.memories)
                if on_progress is not None:
                    try:
                        on_progress(start + len(chunk), len(records))
                    except Exception:
                        log.exception("import progress callback failed")
        return ImportResult(added, replaced, skipped, archived)

    async def _import_chunk(
        self,
        chunk: Sequence[MemoryItem | ArchivedItem],
        checked: Sequence[MemoryItem | ArchivedItem],
        on_conflict: str,
        pasts: Mapping[str, Sequence[Past]],
    ) -> ImportOutcome:
        view = self.view
        keys = [k for r in checked for k in (schema.mem_key(r.id), schema.arc_key(r.id))]
        write = import_batch(chunk, checked, on_conflict, pasts)
        outcome: ImportOutcome = await self._commit(keys, write, (schema.HST,))
        for item in outcome.memories:
            view.catalog.put(item)
            view.pending.pop(item.id, None)
            view.archived.discard(item.id)
        for arc in outcome.archived:
            view.drop(arc.id)
            view.archived.add(arc.id)
        return outcome

    async def purge(self) -> None:
        """After a forget: drop the index snapshot (it may hold what was forgotten) and ask
        the backend to scrub deleted records from its files. Failures are logged: the
        forget itself has landed."""
        try:
            await snapshot.discard(self.kv)
        except PymemoryError:
            log.exception("dropping the index snapshot after a forget failed")
        try:
            await self.kv.purge()
        except PymemoryError:
            log.exception("purging deleted records from the store failed")
