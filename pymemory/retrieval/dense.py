"""Dense retrieval's side of a memory: vectors embedded in the background, searched per query.

Items are queued for embedding as they are written and embedded in batches; a vector is
stored only if its item still holds the text that was embedded. Vectors persist beside
their items (``vec:<id>``, :class:`~.vectors_kv.KvVectorStore`), so a reload never re-embeds.
A query whose embedding fails is ranked by BM25 alone, with a note in the trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ..item import MemoryItem
from ..models.embedding import Embedder
from ..storage import KvBackend
from .catalog import Catalog, dense_text
from .pipeline import DenseHits
from .vectors_kv import KvVectorStore

log = logging.getLogger("pymemory")

#: Queued items taken together: sorted by text length, then embedded in calls of
#: ``EMBED_CALL`` items of similar length (each call's vectors are stored at once), so
#: batches carry little padding however the items arrived. The embedder batches each
#: call itself (MiniLM: by a token budget); a query embedding waits for one model batch
#: at most.
EMBED_DRAIN = 1024
EMBED_CALL = 256


class DenseIndex:
    """The embedder, the stored vectors and the background embed loop of one memory.

    ``lock`` is the memory's write lock: vectors are written under it, and ``drop`` is
    called with it held.
    """

    def __init__(
        self, embedder: Embedder, vectors: KvVectorStore, catalog: Catalog, lock: asyncio.Lock
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self._catalog = catalog
        self._lock = lock
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        for item_id in catalog.items:
            if item_id not in vectors:  # written before the embedder was on
                self._queue.put_nowait(item_id)
        self._task: asyncio.Task[None] = asyncio.ensure_future(self._loop())

    @classmethod
    async def open(
        cls,
        kv: KvBackend,
        embedder: Embedder,
        catalog: Catalog,
        lock: asyncio.Lock,
        vector_dtype: Literal["int8", "float16", "float32"] = "int8",
    ) -> DenseIndex:
        """Load the stored vectors and queue every item that has none yet."""
        vectors = await KvVectorStore.open(kv, embedder.dim, vector_dtype)
        async with lock:
            # Vectors left by a crash between an item's delete and its vector's: drop them,
            # so that every vector belongs to a live item (retrieval counts on it).
            orphans = [i for i in vectors.ids() if i not in catalog.items]
            if orphans:
                await vectors.delete(orphans)
        return cls(embedder, vectors, catalog, lock)

    def queue(self, item_id: str) -> None:
        self._queue.put_nowait(item_id)

    async def drop(self, ids: Sequence[str]) -> None:
        """Delete vectors of deleted items (caller holds the lock). A crash between the item
        delete and this leaves an orphan vector, which is never returned: retrieval only
        ranks ids the catalog knows."""
        doomed = [i for i in ids if i in self.vectors]
        if doomed:
            await self.vectors.delete(doomed)

    async def idle(self) -> None:
        await self._queue.join()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _loop(self) -> None:
        while True:
            ids = [await self._queue.get()]
            while len(ids) < EMBED_DRAIN and not self._queue.empty():
                ids.append(self._queue.get_nowait())
            try:
                items = [i for i in map(self._catalog.get, dict.fromkeys(ids)) if i is not None]
                items.sort(key=lambda i: len(dense_text(i)))
                for start in range(0, len(items), EMBED_CALL):
                    try:
                        await self._embed_batch(items[start : start + EMBED_CALL])
                    except Exception:
                        log.exception("background embedding of %d item(s) failed", EMBED_CALL)
            finally:
                for _ in ids:
                    self._queue.task_done()

    async def _embed_batch(self, items: list[MemoryItem]) -> None:
        if not items:
            return
        texts = [dense_text(i) for i in items]
        vectors = await self.embedder.embed(texts)
        async with self._lock:
            # Keep only items still there with the text that was embedded.
            keep = [
                j
                for j, i in enumerate(items)
                if (now := self._catalog.get(i.id)) is not None and dense_text(now) == texts[j]
            ]
            if keep:
                await self.vectors.upsert([items[j].id for j in keep], vectors[keep])

    async def candidates(
        self, query: str, depth: int
    ) -> tuple[DenseHits | None, tuple[str, ...]]:
        """The ``depth`` nearest items (and the cosine of any other), and notes for the
        trace."""
        if not query.strip():
            return None, ()
        try:
            query_vec = (await self.embedder.embed([query]))[0]
        except Exception as exc:  # the model failing must not break retrieval
            log.exception("query embedding failed; BM25 only")
            return None, (f"dense retrieval failed ({type(exc).__name__}); ranked by BM25",)
        catalog, vectors = self._catalog, self.vectors
        slot_of = catalog.slot_of
        hits = [(slot_of[i], s) for i, s in vectors.search(query_vec, depth) if i in slot_of]
        missing = max(0, len(catalog) - len(vectors))  # each vector: a live item
        notes = (f"{missing} item(s) not embedded yet: ranked by BM25 only",) if missing else ()

        def cosine_of(slots: np.ndarray) -> np.ndarray:
            ids = [catalog.id_at[s] for s in slots.tolist()]
            have = [j for j, i in enumerate(ids) if i in vectors]
            out = np.full(len(ids), np.nan)
            if have:
                out[have] = vectors.scores(query_vec, [ids[j] for j in have])
            return out

        return DenseHits(
            np.array([h[0] for h in hits], dtype=np.int64),
            np.array([h[1] for h in hits], dtype=np.float64),
            cosine_of,
        ), notes
