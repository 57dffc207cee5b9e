"""Dense retrieval's side of a memory: vectors embedded in the background, searched per query.

Items are queued for embedding as they are written and embedded in batches; a vector is
stored only if its item still holds the text that was embedded, checked against the
stored item in the same transaction that writes the vector (another process may have
changed or deleted it meanwhile). Vectors persist beside their items (``vec:<id>``,
:class:`~.vectors_kv.KvVectorStore`), so a reload never re-embeds. Deleting an item deletes
its vector in the same transaction (:mod:`.writer`); :meth:`DenseIndex.forget` then
drops the row here.

A memory of several passages (:mod:`.passages`) also has a vector per passage, in its
one record; its cosine to a query is the best of its own and its passages' (so a long
text is found by its best passage, not by its first 256 tokens), and the packer is told
each passage's (:attr:`DenseHits.passage_cosine`).

A query whose embedding fails is ranked by BM25 alone, with a note in the trace.

The store records whose vectors it holds (``meta:embedder``, :mod:`.space`): attaching
another embedder drops the old vectors and embeds every item again in the background,
items not embedded yet being ranked by BM25 meanwhile; every vector write checks the
record in its transaction, so an instance whose embedder is no longer the store's writes
none (and ranks by BM25 alone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import ValidationError
from ..item import MemoryItem
from ..models.embedding import Embedder, calibrated, embed_queries
from ..models.runtime import urgent, yield_to_calls
from ..storage import Writes, changes, schema
from . import space
from .catalog import Catalog, dense_text
from .vectors_kv import KvVectorStore
from .writer import StoreWriter

log = logging.getLogger("pymemory")

#: Queued items taken together: sorted by text length, then embedded in calls of
#: ``EMBED_CALL`` items of similar length (each call's vectors are stored at once), so
#: batches carry little padding however the items arrived. The embedder batches each
#: call itself (MiniLM: by a token budget); a query embedding waits for one model batch
#: at most.
EMBED_DRAIN = 1024
EMBED_CALL = 256
#: The query's typical cosine to the store (:attr:`DenseHits.gate`) is the median over
#: this many memories, evenly spaced over the catalog, when at least :data:`TYPICAL_MIN`
#: of them have vectors.
TYPICAL_SAMPLE = 256
TYPICAL_MIN = 16
#: A memory's passages get vectors up to this many (its later ones are found by BM25).
MAX_PASSAGE_VECTORS = 512
#: The nearest passages looked at per query, as a multiple of the memories wanted. A
#: dense candidate's cosine is the best of its own and of its passages among these (all
#: of them in a store of up to ``PASSAGE_DEPTH x depth`` passages; beyond, a passage
#: that is not among them is no better than the last one that is). 3 did no better than
#: 1 on LoCoMo's tune half or the Chinese suite and made the passage search 1.7x slower.
PASSAGE_DEPTH = 1


@dataclass(frozen=True)
class DenseHits:
    """The dense side of one query: the nearest catalog slots with their cosine (a
    memory's best of its own and its passages'), and a way to get the cosine of any
    other slots (a lexical match beyond the dense depth: by the memory's own vector, a
    lower bound that spares scoring the passages of thousands of matches; NaN for an item
    with no vector yet)."""

    slots: np.ndarray
    cosine: np.ndarray
    cosine_of: Callable[[np.ndarray], np.ndarray]
    # The cosine some memory must reach for any to pass the relevance floor on its cosine:
    # the query's typical cosine to the store (the median over an even sample of
    # :data:`TYPICAL_SAMPLE` memories) plus the embedder's ``dense_standout``. None when
    # the embedder sets no ``dense_standout`` or fewer than :data:`TYPICAL_MIN` memories
    # have vectors (a few memories say nothing of what is typical).
    gate: float | None = None
    # Catalog slot -> the cosine of each of that memory's passages, in text order (None
    # for a memory of one passage, or one without passage vectors yet).
    passage_cosine: Callable[[int], np.ndarray | None] = lambda _slot: None


class DenseIndex:
    """The embedder, the stored vectors and the background embed loop of one memory.

    Vectors are committed through ``writer`` (the memory's one write path) under its
    write lock; ``forget`` is called with that lock held.
    """

    def __init__(
        self, embedder: Embedder, vectors: KvVectorStore, catalog: Catalog, writer: StoreWriter
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self._catalog = catalog
        self._writer = writer
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        # Items written before the embedder was on, or before it replaced another one
        # (space.settle dropped that one's vectors).
        for item_id in catalog.items:
            if item_id not in vectors or vectors.passage_count(item_id) != len(
                self._spans_of(item_id)
            ):
                self._queue.put_nowait(item_id)
        self._task: asyncio.Task[None] = asyncio.ensure_future(self._loop())

    @classmethod
    async def open(
        cls,
        writer: StoreWriter,
        embedder: Embedder,
        vector_dtype: Literal["int8", "float16", "float32"] = "int8",
    ) -> DenseIndex:
        """Load the stored vectors and queue every item that has none yet. If the store
        holds another embedder's vectors, they are deleted first (:func:`.space.settle`).

        The vectors load without the lock; under it, they then catch up with every change
        logged since the load began (a sync of the view meanwhile, with no vectors to
        update, skipped the vector keys). The index returned is current at least up to the
        view's position, and built under the lock: publish it before yielding, or a sync
        in between skips vector keys again."""
        kv, catalog = writer.kv, writer.view.catalog
        await space.settle(writer, embedder)
        seq = await changes.read_seq(kv)
        owner = lambda raw: space.accepts(raw, embedder)  # noqa: E731
        vectors = await KvVectorStore.open(kv, embedder.dim, vector_dtype, owner=owner)
        async with writer.lock:
            await vectors.catch_up(seq)
            # Vectors without an item (left by an older pymemory, which deleted the two in
            # separate batches): drop them, so that every vector belongs to a live item
            # (retrieval counts on it). Checked in the transaction: the item may be new.
            orphans = [i for i in vectors.ids() if i not in catalog.items]
            if orphans:

                def drop(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
                    gone = [i for i, raw in zip(orphans, values[1:], strict=True) if raw is None]
                    return Writes(deletes=[schema.vec_key(i) for i in gone], result=gone)

                vectors.apply_local(deletes=await writer.commit_vectors(orphans, drop))
            return cls(embedder, vectors, catalog, writer)

    def queue(self, item_id: str) -> None:
        self._queue.put_nowait(item_id)

    def forget(self, ids: Sequence[str]) -> None:
        """Drop the rows of items whose vectors were deleted from the store (the caller
        holds the lock and deleted the records in its own transaction)."""
        self.vectors.apply_local(deletes=[i for i in ids if i in self.vectors])

    async def idle(self) -> None:
        await self._queue.join()

    def progress(self) -> dict[str, Any]:
        """``{"model": name, "embedded": n, "items": m}``: how far background embedding is."""
        embedded = 0 if self.vectors.stale else len(self.vectors)
        return {"model": self.embedder.name, "embedded": embedded, "items": len(self._catalog)}

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
                if self.vectors.stale:  # the store holds another embedder's vectors now
                    continue
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

    def _spans_of(self, item_id: str) -> tuple[tuple[int, int], ...]:
        """The passages of a memory of several that get vectors (none for one passage)."""
        slot = self._catalog.slot_of.get(item_id)
        spans = None if slot is None else self._catalog.passages.spans(slot)
        return (spans or ())[:MAX_PASSAGE_VECTORS]

    async def _embed_batch(self, items: list[MemoryItem]) -> None:
        if not items:
            return
        texts = [dense_text(i) for i in items]
        spans = [self._spans_of(i.id) for i in items]
        parts = [dense_text(i, s) for i, group in zip(items, spans, strict=True) for s in group]
        await yield_to_calls()  # before tokenizing (this thread), as before each model batch
        vectors = await self.embedder.embed(texts)
        passages: list[np.ndarray | None] = [None] * len(items)
        if parts:
            flat = np.asarray(await self.embedder.embed(parts))
            ends = np.cumsum([len(g) for g in spans])
            passages = [flat[e - len(g) : e] for g, e in zip(spans, ends.tolist(), strict=True)]
        batch = self.vectors.encode([i.id for i in items], vectors, passages)

        def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
            if not space.accepts(values[0], embedder):
                return Writes(result=None)  # another instance switched the store's embedder
            # Keep only items still stored with the text that was embedded.
            records = values[1:]
            keep = [j for j, raw in enumerate(records) if _stored_dense_text(raw) == texts[j]]
            return Writes([batch.puts[j] for j in keep], result=keep)

        embedder = self.embedder
        await yield_to_calls()  # the commit is this thread's work too
        async with self._writer.lock:
            keep = await self._writer.commit_vectors([i.id for i in items], write)
            if keep is None:
                self.vectors.go_stale()
                return
            self.vectors.apply_local(batch, keep=keep)

    def embed_query(self, query: str) -> asyncio.Task[np.ndarray] | None:
        """Start embedding ``query`` (before queued background embedding and refinement),
        so that the model works while the caller ranks by BM25; None for a blank query.
        Pass the task to :meth:`candidates`, or cancel it."""
        if not query.strip():
            return None
        with urgent():  # the task runs in a copy of this context
            return asyncio.ensure_future(self._embed_one(query))

    async def _embed_one(self, query: str) -> np.ndarray:
        return (await embed_queries(self.embedder, [query]))[0]

    async def candidates(
        self, embedding: asyncio.Task[np.ndarray] | None, depth: int
    ) -> tuple[DenseHits | None, tuple[str, ...]]:
        """The ``depth`` nearest items to the query :meth:`embed_query` is embedding (and
        the cosine of any other), and notes for the trace."""
        if embedding is None:
            return None, ()
        if self.vectors.stale:
            embedding.cancel()
            note = f"the store's vectors are another embedder's than {self.embedder.name}"
            return None, (f"{note}: ranked by BM25 only",)
        try:
            query_vec = await embedding
        except Exception as exc:  # the model failing must not break retrieval
            log.exception("query embedding failed; BM25 only")
            return None, (f"dense retrieval failed ({type(exc).__name__}); ranked by BM25",)
        catalog, vectors = self._catalog, self.vectors
        slot_of, id_at = catalog.slot_of, catalog.id_at
        embedder = self.embedder
        found = [i for i, _ in vectors.search(query_vec, depth)]
        # Memories whose best passage is near, not their start, and that passage's cosine.
        near: dict[str, float] = {}
        if len(vectors.passages):
            for pid, cos in vectors.passages.search(query_vec, PASSAGE_DEPTH * depth):
                near.setdefault(pid.rpartition("#")[0], cos)  # best first
        found += near
        missing = max(0, len(catalog) - len(vectors))  # each vector: a live item
        notes = (f"{missing} item(s) not embedded yet: ranked by BM25 only",) if missing else ()

        def own_cosine(slots: np.ndarray) -> np.ndarray:
            ids = [id_at[s] for s in slots.tolist()]  # vector rows of the slots' items
            return calibrated(embedder, _cosines(vectors, query_vec, ids, False))

        def best_cosine(slots: np.ndarray) -> np.ndarray:
            ids = [id_at[s] for s in slots.tolist()]
            return calibrated(embedder, _cosines(vectors, query_vec, ids, True))

        def passage_cosine(slot: int) -> np.ndarray | None:
            rows = vectors.passage_slots(id_at[slot] or "")
            if not len(rows):
                return None
            return calibrated(embedder, vectors.passages.scores(query_vec, rows).astype(float))

        slots = np.unique(np.fromiter((slot_of[i] for i in found if i in slot_of), np.int64))
        ids = [id_at[s] for s in slots.tolist()]
        raw = _cosines(vectors, query_vec, ids, False)
        np.fmax(raw, [near.get(i or "", np.nan) for i in ids], out=raw)
        cosine = calibrated(embedder, raw)
        best = np.lexsort((slots, -cosine))[:depth]
        return DenseHits(
            slots[best], cosine[best], own_cosine, self._gate(best_cosine), passage_cosine
        ), notes

    def _gate(self, cosine_of: Callable[[np.ndarray], np.ndarray]) -> float | None:
        standout = getattr(self.embedder, "dense_standout", None)
        end = len(self._catalog.id_at)
        if standout is None or end < TYPICAL_MIN:
            return None
        spread = np.linspace(0, end - 1, min(end, TYPICAL_SAMPLE))
        sample = cosine_of(np.unique(spread.astype(np.int64)))
        sample = sample[~np.isnan(sample)]  # forgotten, or not embedded yet
        if len(sample) < TYPICAL_MIN:
            return None
        return float(np.median(sample)) + float(standout)


def _cosines(
    vectors: KvVectorStore, query: np.ndarray, ids: list[str | None], passages: bool
) -> np.ndarray:
    """The cosine of each memory's own vector to ``query`` (NaN: none), or with
    ``passages`` the best of its own and its passages'."""
    raw = vectors.scores(query, vectors.slots_of(ids)).astype(np.float64)
    if passages and len(vectors.passages):
        groups = [vectors.passage_slots(i or "") for i in ids]
        sizes = [len(g) for g in groups]
        if sum(sizes):
            owner = np.repeat(np.arange(len(ids)), sizes)
            np.fmax.at(raw, owner, vectors.passages.scores(query, np.concatenate(groups)))
    return raw


def _stored_dense_text(raw: bytes | None) -> str | None:
    """What the stored record's item would be embedded from (None: gone or unreadable)."""
    if raw is None:
        return None
    try:
        return dense_text(MemoryItem.from_json(raw))
    except ValidationError:
        return None
