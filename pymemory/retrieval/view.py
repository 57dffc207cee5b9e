"""One instance's view of the store: the catalog it ranks over (with the feedback given
here and not stored yet), the archived ids and the unreadable records, kept in step with
the store through its change log (:mod:`pymemory.storage.changes`).

The store stays the truth: the view is filled at open (:meth:`StoreView.load`: from the
index snapshot, :mod:`.snapshot`, plus what changed since it, or else from every record),
updated by the instance's own commits (all made by :mod:`.writer`, the one write path),
and before a read re-reads just what other instances logged since it last looked
(:meth:`StoreView.catch_up`).

The invariant both rely on: for every key, the view holds a value at least as new as the
key's last change up to ``seq``; a key changed after ``seq`` is re-read when the view
catches up. A snapshot of the view taken at any moment (with the ids of pending feedback
marked for re-reading) therefore reopens exactly, after the same catch-up."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ..errors import NotFoundError, PymemoryError, ValidationError, shown
from ..item import Feedback, MemoryItem
from ..storage import KvBackend, changes, iter_prefix, schema
from ..storage.transactions import WRITE_CHUNK
from . import snapshot
from .catalog import Catalog
from .vectors_kv import KvVectorStore

log = logging.getLogger("pymemory")


class StoreView:
    def __init__(self, kv: KvBackend, on_drop: Callable[[str], None]) -> None:
        self.kv = kv
        self.catalog = Catalog()
        # Feedback given here and not stored yet: deltas, added to the stored counts.
        self.pending: dict[str, Feedback] = {}
        self.archived: set[str] = set()
        self.corrupt_keys: set[str] = set()
        self.seq = 0  # the last change-log sequence number applied here
        self._on_drop = on_drop  # the instance's queued work for an item gone from the store

    def with_pending(self, item: MemoryItem) -> MemoryItem:
        delta = self.pending.get(item.id)
        return item if delta is None else replace(item, feedback=item.feedback.merged(delta))

    def put(self, item: MemoryItem) -> None:
        """A stored item, as this instance sees it (its pending feedback added)."""
        self.catalog.put(self.with_pending(item))

    def _put_stored(self, item: MemoryItem, raw: bytes) -> None:
        """:meth:`put` an item read from the store as ``raw`` (kept for snapshots)."""
        seen = self.with_pending(item)
        if seen is item:
            self.catalog.put_record(item, raw)
        else:
            self.catalog.put(seen)

    def note_feedback(self, item: MemoryItem, kind: str) -> None:
        """Feedback given here: ranks at once, stored with the next flush (as a delta)."""
        one = Feedback().add(kind)  # type: ignore[arg-type]
        self.pending[item.id] = self.pending.get(item.id, Feedback()).merged(one)
        self.catalog.set_feedback(replace(item, feedback=item.feedback.merged(one)))

    def drop(self, item_id: str) -> None:
        """Forget an item gone from the store: catalog, pending feedback, queued work."""
        self.catalog.remove(item_id)
        self.pending.pop(item_id, None)
        self._on_drop(item_id)

    def advance(self, done: changes.Committed) -> None:
        """After a commit of ours: if nobody else committed since this instance last
        synced, the view is current up to it (it applied its own change itself)."""
        if done.before == self.seq:
            self.seq = done.seq

    async def behind(self) -> bool:
        """Whether other instances committed since this view last looked (one read)."""
        return await changes.read_seq(self.kv) != self.seq

    async def load(self, vectors: KvVectorStore | None) -> None:
        """Fill the view (at open, and when this instance fell further behind than the
        change log reaches): from the snapshot and the changes since, or else from every
        record. Updates the view in place."""
        if await self._load_snapshot(vectors):
            return
        await self.load_records(vectors)

    async def load_records(self, vectors: KvVectorStore | None) -> None:
        """Read every record into the view (the full rebuild)."""
        # The position is read first: a change landing during the scan is logged after it,
        # so the next sync re-reads it.
        seq = await changes.read_seq(self.kv)
        seen: set[str] = set()
        corrupt: set[str] = set()
        async for key, raw in iter_prefix(self.kv, schema.MEM):
            item_id = key[len(schema.MEM) :]
            try:
                self._put_stored(MemoryItem.from_json(raw), raw)
                seen.add(item_id)
            except PymemoryError as exc:
                # Keep the record in the store untouched; report it in stats().
                log.error("skipping unreadable record %s: %s", key, exc)
                corrupt.add(key)
        for item_id in [i for i in self.catalog.items if i not in seen]:
            self.drop(item_id)
        archived = {k[len(schema.ARC) :] async for k, _ in iter_prefix(self.kv, schema.ARC)}
        self.corrupt_keys.clear()
        self.corrupt_keys.update(corrupt)
        self.archived.clear()
        self.archived.update(archived)
        if vectors is not None:
            await vectors.load()
        self.seq = seq

    async def _load_snapshot(self, vectors: KvVectorStore | None) -> bool:
        """Restore the view from the stored snapshot and apply what changed after it;
        False (nothing changed here) when there is no usable one."""
        loaded = await snapshot.read(self.kv, "view")
        if loaded is None:
            return False
        found = await changes.changes_since(self.kv, loaded.seq)
        if found.keys is None:
            log.info("index snapshot at seq %d is older than the change log reaches", loaded.seq)
            return False
        part = loaded.part
        before = set(self.catalog.items)
        try:
            self.catalog.restore(part.meta["catalog"], part.arrays, {
                **part.strings, "records": part.blobs["records"]})  # fmt: skip
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            log.warning("index snapshot unreadable (%s): rebuilding from the records", exc)
            self.catalog.restore_empty()
            return False
        self.archived.clear()
        self.archived.update(part.strings["archived"])
        self.corrupt_keys.clear()
        self.corrupt_keys.update(part.strings["corrupt"])
        self.seq = loaded.seq
        if vectors is not None:
            await vectors.load()
        dirty = {schema.mem_key(i) for i in (*part.strings["dirty"], *self.pending)}
        dropped = await self._refresh(found.keys | dirty, vectors)
        self.seq = found.seq
        for item_id in before.difference(self.catalog.items):  # a reload: gone meanwhile
            self.pending.pop(item_id, None)
            self._on_drop(item_id)
        if dropped:  # forgotten since: the snapshot may still hold their text
            await snapshot.discard(self.kv)
        log.info("opened from the index snapshot at seq %d (+%d changed keys)",
                 loaded.seq, len(found.keys))  # fmt: skip
        return True

    def snapshot_size(self) -> tuple[int, int]:
        return len(self.catalog), self.catalog.mutations

    async def prepare_snapshot(self) -> None:
        """Encode, a slice at a time, the records the next snapshot would encode at once."""
        ids = self.catalog.items.unencoded()
        for start in range(0, len(ids), 1000):
            self.catalog.items.encode(ids[start : start + 1000])
            await asyncio.sleep(0)

    async def decode_all(self) -> None:
        """Decode the items restored undecoded, 500 at a time between yields."""
        ids = self.catalog.items.undecoded()
        for start in range(0, len(ids), 500):
            self.catalog.items.decode(ids[start : start + 500])
            await asyncio.sleep(0)

    async def take_snapshot(self, vectors: KvVectorStore | None = None) -> dict[str, bytes]:
        """The view (and ``vectors``) as snapshot parts, at ``self.seq``. The caller holds
        the write lock: it is built in steps, yielding between them."""
        meta, arrays, strings = await self.catalog.to_state(lambda: asyncio.sleep(0))
        records = strings.pop("records")
        strings["archived"] = sorted(self.archived)
        strings["corrupt"] = sorted(self.corrupt_keys)
        strings["dirty"] = sorted(self.pending)  # stored without this feedback: re-read
        parts = {"view": snapshot.pack({"catalog": meta}, arrays, strings, {"records": records})}
        if vectors is not None:
            parts["vec"] = vectors.snapshot_part()
        return parts

    async def catch_up(self, vectors: KvVectorStore | None) -> bool:
        """Apply what other instances logged since this view last looked (the caller holds
        the instance's write lock). Returns whether anything changed."""
        found = await changes.changes_since(self.kv, self.seq)
        if found.keys is None:
            log.info("change log does not reach back to %d: reloading the store", self.seq)
            await self.load(vectors)
            return True
        if found.keys:
            await self._refresh(found.keys, vectors)
        self.seq = found.seq
        return bool(found.keys)

    async def _refresh(self, keys: Iterable[str], vectors: KvVectorStore | None) -> int:
        """Re-read these records into the view (their log said they changed); how many
        items the view held that are gone from the store (or unreadable) now."""
        dropped = 0
        mem, arc, vec = [], [], []
        switched = False  # another instance switched the store's embedder (space.py)?
        for key in keys:
            switched = switched or key == schema.META_EMBEDDER
            for prefix, into in ((schema.MEM, mem), (schema.ARC, arc), (schema.VEC, vec)):
                if key.startswith(prefix):
                    into.append(key[len(prefix) :])
        for start in range(0, len(mem), WRITE_CHUNK):
            chunk = mem[start : start + WRITE_CHUNK]
            raws = await self.kv.get_many([schema.mem_key(i) for i in chunk])
            for item_id, raw in zip(chunk, raws, strict=True):
                key = schema.mem_key(item_id)
                self.corrupt_keys.discard(key)
                if raw is None:
                    dropped += item_id in self.catalog
                    self.drop(item_id)
                    continue
                try:
                    item = MemoryItem.from_json(raw)
                except PymemoryError as exc:
                    log.error("skipping unreadable record %s: %s", key, exc)
                    self.corrupt_keys.add(key)
                    dropped += item_id in self.catalog
                    self.drop(item_id)
                    continue
                self._put_stored(item, raw)
        for start in range(0, len(arc), WRITE_CHUNK):
            chunk = arc[start : start + WRITE_CHUNK]
            raws = await self.kv.get_many([schema.arc_key(i) for i in chunk])
            for item_id, raw in zip(chunk, raws, strict=True):
                if raw is None:
                    self.archived.discard(item_id)
                else:
                    self.archived.add(item_id)
        if vectors is not None and switched:
            await vectors.check_owner()
        if vec and vectors is not None:
            try:
                await vectors.reload(vec)
            except ValidationError:
                log.exception("cannot load changed vectors; dense retrieval may miss them")
        return dropped

    def live(self, item_id: str, now_ms: int) -> MemoryItem:
        """The item as this instance sees it; NotFoundError if unknown or expired."""
        item = self.catalog.get(item_id)
        if item is None:
            raise NotFoundError(f"no memory with id {shown(item_id)}")
        if item.is_expired(now_ms):
            raise NotFoundError(f"memory {shown(item_id)} has expired (ttl_ms)")
        return item

    def newest(
        self, match: Callable[[MemoryItem], bool], now_ms: int, limit: int | None
    ) -> list[MemoryItem]:
        """Live items ``match`` accepts, newest first, at most ``limit``."""
        found = [i for i in self.catalog if match(i) and not i.is_expired(now_ms)]
        found.sort(key=lambda i: (i.timestamp, i.id), reverse=True)
        return found if limit is None else found[:limit]

    def counts(self, now_ms: int) -> dict[str, Any]:
        """What the view holds, for ``Memory.stats()``."""
        items = list(self.catalog)
        live = [i for i in items if not i.is_expired(now_ms)]
        return {
            "items": len(live),
            "expired_pending_sweep": len(items) - len(live),
            "archived": len(self.archived),
            "by_type": dict(sorted(Counter(i.type for i in live).items())),
            "by_scope": dict(sorted(Counter(i.scope for i in live).items())),
            "by_method": dict(sorted(Counter(i.content_method for i in live).items())),
            "oldest_ms": min((i.timestamp for i in live), default=None),
            "newest_ms": max((i.timestamp for i in live), default=None),
            "pending_feedback": len(self.pending),
            "unreadable_records": len(self.corrupt_keys),
        }
