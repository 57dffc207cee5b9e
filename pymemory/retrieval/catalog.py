"""The in-memory view of the live items: the items, numpy columns for vectorised filters,
tag sets, and the BM25 index. Loaded once at open (from the records, or from a snapshot
of this state: :meth:`Catalog.to_state`, :meth:`Catalog.restore`), updated
incrementally; the KV store stays the truth."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..item import MEMORY_TYPES, MemoryItem
from . import bm25_state
from .analyzer import analyze
from .bm25 import Bm25Index
from .passages import PassageIndex

NO_EXPIRY = np.iinfo(np.int64).max
TYPE_CODE = {t: i for i, t in enumerate(MEMORY_TYPES)}
#: Two memories of one scope are turns of one conversation (each other's context) when no
#: more than this passes between them.
CONTEXT_GAP_MS = 30 * 60 * 1000
#: Bumped when :func:`index_text` changes what it makes of an item (snapshots from before
#: are rebuilt).
INDEX_TEXT_VERSION = 3
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip


def speaker_of(item: MemoryItem) -> str | None:
    """``metadata["speaker"]``, when it is a non-empty string: who said it (chat turns)."""
    speaker = item.metadata.get("speaker")
    return speaker.strip() or None if isinstance(speaker, str) else None


def month_words(ts_ms: int) -> str:
    """The month and year of a timestamp as words (UTC): ``"March 2026"``."""
    day = dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC)
    return f"{_MONTHS[day.month - 1]} {day.year}"


def index_text(item: MemoryItem) -> str:
    """What BM25 sees: the speaker (if any), the raw text, the summary (if it adds words),
    the tags, and the month and year it was written. Indexing the speaker lets "what did
    Maya adopt?" prefer Maya's turns; the date lets "what happened in March 2026?" find
    what was said then."""
    speaker = speaker_of(item)
    parts = [] if speaker is None else [speaker]
    parts.append(item.text)
    if item.content not in item.text:
        parts.append(item.content)
    parts.extend(item.tags)
    parts.append(month_words(item.timestamp))
    return "\n".join(parts)


def dense_text(item: MemoryItem, span: tuple[int, int] | None = None) -> str:
    """What the embedder sees: the raw text (or the passage ``span`` of it), after
    ``"<speaker>: "`` when there is one."""
    speaker = speaker_of(item)
    text = item.text if span is None else item.text[span[0] : span[1]]
    return text if speaker is None else f"{speaker}: {text}"


class LazyItems:
    """Id -> MemoryItem, in insertion order, where an item restored from a snapshot stays
    its stored record (bytes) until first read (decoded by the trusted path: the snapshot
    holds records of validated items and is checksummed). An item's record is kept while
    the item is unchanged, so the next snapshot need not encode it again."""

    __slots__ = ("_d", "_raw")

    def __init__(self) -> None:
        self._d: dict[str, MemoryItem | bytes] = {}
        self._raw: dict[str, bytes] = {}

    @classmethod
    def of_records(cls, ids: Sequence[str], raws: Sequence[bytes]) -> LazyItems:
        out = cls()
        out._d = dict(zip(ids, raws, strict=True))
        out._raw = dict(out._d)  # type: ignore[arg-type]
        return out

    def _decoded(self, item_id: str, value: MemoryItem | bytes) -> MemoryItem:
        if isinstance(value, MemoryItem):
            return value
        item = MemoryItem.from_trusted_json(value)
        self._d[item_id] = item
        return item

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._d

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __getitem__(self, item_id: str) -> MemoryItem:
        return self._decoded(item_id, self._d[item_id])

    def get(self, item_id: str) -> MemoryItem | None:
        value = self._d.get(item_id)
        return None if value is None else self._decoded(item_id, value)

    def __setitem__(self, item_id: str, item: MemoryItem) -> None:
        self._d[item_id] = item
        self._raw.pop(item_id, None)

    def put_record(self, item_id: str, item: MemoryItem, raw: bytes) -> None:
        """Set an item whose stored record is ``raw`` (kept for the next snapshot)."""
        self._d[item_id] = item
        self._raw[item_id] = raw

    def pop(self, item_id: str, default: None = None) -> MemoryItem | None:
        value = self._d.pop(item_id, None)
        self._raw.pop(item_id, None)
        if isinstance(value, bytes):
            return MemoryItem.from_trusted_json(value)
        return default if value is None else value

    def values(self) -> Iterator[MemoryItem]:
        for item_id in list(self._d):
            value = self._d.get(item_id)
            if value is not None:
                yield self._decoded(item_id, value)

    def records(self, ids: Sequence[str]) -> list[bytes]:
        """The records of these items (encoded now where none is kept)."""
        raw = self._raw
        out: list[bytes] = []
        for item_id in ids:
            rec = raw.get(item_id)
            if rec is None:
                value = self._d[item_id]
                rec = value if isinstance(value, bytes) else value.to_json().encode()
            out.append(rec)
        return out

    def undecoded(self) -> list[str]:
        """The ids of the items still held as records."""
        return [i for i, v in self._d.items() if isinstance(v, bytes)]

    def decode(self, ids: Sequence[str]) -> None:
        """Decode these items now (those still held as records)."""
        for item_id in ids:
            value = self._d.get(item_id)
            if isinstance(value, bytes):
                self._d[item_id] = MemoryItem.from_trusted_json(value)

    def unencoded(self) -> list[str]:
        """The ids of the items with no record kept (changed since read)."""
        return [i for i in self._d if i not in self._raw]

    def encode(self, ids: Sequence[str]) -> None:
        """Encode and keep the records of these items (so that a snapshot taken later
        has less to encode at once)."""
        for item_id in ids:
            value = self._d.get(item_id)
            if isinstance(value, MemoryItem) and item_id not in self._raw:
                self._raw[item_id] = value.to_json().encode()


# More items added since the conversation order was built than this: sort afresh.
MAX_CONTEXT_INSERTS = 64


class _ContextOrder:
    """The live slots sorted by (scope, time, slot), with each one's scope and time, and
    the index arrays derived from them (:meth:`Catalog.context_order`)."""

    __slots__ = ("order", "pos", "run", "scope", "ts")

    def __init__(self, order: np.ndarray, scope: np.ndarray, ts: np.ndarray) -> None:
        self.order, self.scope, self.ts = order, scope, ts
        self.pos = self.run = np.zeros(0, dtype=np.int64)

    def insert(self, slot: int, scope: int, ts: int) -> None:
        """Put one new slot where a full sort would (binary searches, one insert)."""
        lo = int(np.searchsorted(self.scope, scope, "left"))
        hi = int(np.searchsorted(self.scope, scope, "right"))
        t_lo = lo + int(np.searchsorted(self.ts[lo:hi], ts, "left"))
        t_hi = lo + int(np.searchsorted(self.ts[lo:hi], ts, "right"))
        at = t_lo + int(np.searchsorted(self.order[t_lo:t_hi], slot))
        self.order = np.insert(self.order, at, slot)
        self.scope = np.insert(self.scope, at, scope)
        self.ts = np.insert(self.ts, at, ts)

    def index(self, n_slots: int) -> None:
        self.pos = np.full(n_slots, -1, dtype=np.int64)
        self.pos[self.order] = np.arange(len(self.order))
        new_run = np.ones(len(self.order), dtype=bool)
        gap = self.ts[1:] - self.ts[:-1] > CONTEXT_GAP_MS
        new_run[1:] = (self.scope[1:] != self.scope[:-1]) | gap
        self.run = np.cumsum(new_run)


class Catalog:
    def __init__(self) -> None:
        self.items = LazyItems()
        self.slot_of: dict[str, int] = {}
        self.id_at: list[str | None] = []
        self._free: list[int] = []
        self._scope_code: dict[str, int] = {}
        self.tag_slots: dict[str, set[int]] = {}
        self.index = Bm25Index()
        self.passages = PassageIndex()  # the passages of long memories (what the prompt gets)
        self.mutations = 0  # items put or removed so far (when to write a new snapshot)
        # The conversation order (context_order): None until built, or stale; slots added
        # since it was built are inserted into it on the next read.
        self._context: _ContextOrder | None = None
        self._context_new: list[int] = []
        self._alloc(1024)

    def _alloc(self, capacity: int) -> None:
        def grow(old: np.ndarray | None, dtype: type, fill: object) -> np.ndarray:
            new = np.full(capacity, fill, dtype=dtype)
            if old is not None:
                new[: len(old)] = old
            return new

        self.ts = grow(getattr(self, "ts", None), np.int64, 0)
        self.expires = grow(getattr(self, "expires", None), np.int64, NO_EXPIRY)
        self.type_code = grow(getattr(self, "type_code", None), np.int8, -1)
        self.scope_code = grow(getattr(self, "scope_code", None), np.int32, -1)
        self.net_feedback = grow(getattr(self, "net_feedback", None), np.int32, 0)
        self.important = grow(getattr(self, "important", None), np.bool_, False)
        self.alive = grow(getattr(self, "alive", None), np.bool_, False)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.items

    def __iter__(self) -> Iterator[MemoryItem]:
        return iter(self.items.values())

    def get(self, item_id: str) -> MemoryItem | None:
        return self.items.get(item_id)

    def scope_code_of(self, scope: str) -> int:
        return self._scope_code.get(scope, -2)

    def put(self, item: MemoryItem) -> None:
        """Add an item or replace the one with the same id."""
        self.mutations += 1
        old = self.items.get(item.id)
        if old is None:
            if self._free:
                slot = self._free.pop()
            else:
                slot = len(self.id_at)
                self.id_at.append(None)
                if slot >= len(self.ts):
                    self._alloc(2 * len(self.ts))
            self.slot_of[item.id] = slot
            self.id_at[slot] = item.id
            if self._context is not None:
                self._context_new.append(slot)
                if len(self._context_new) > MAX_CONTEXT_INSERTS:  # sort afresh instead
                    self._context, self._context_new = None, []
        else:
            slot = self.slot_of[item.id]
            self._untag(slot, old.tags)
            if old.timestamp != item.timestamp or old.scope != item.scope:
                self._context = None
        self.items[item.id] = item
        self.ts[slot] = item.timestamp
        self.expires[slot] = NO_EXPIRY if item.expires_at is None else item.expires_at
        self.type_code[slot] = TYPE_CODE[item.type]
        self.scope_code[slot] = self._scope_code.setdefault(item.scope, len(self._scope_code))
        self.set_feedback(item)
        self.alive[slot] = True
        for tag in item.tags:
            self.tag_slots.setdefault(tag, set()).add(slot)
        if old is None or index_text(old) != index_text(item):
            self.index.add(slot, analyze(index_text(item)))
        if old is None or old.text != item.text:
            self.passages.put(slot, item.text)

    def set_feedback(self, item: MemoryItem) -> None:
        """Replace an item whose only change is its feedback (no re-indexing)."""
        slot = self.slot_of[item.id]
        self.items[item.id] = item
        self.net_feedback[slot] = item.feedback.net
        self.important[slot] = item.feedback.important

    def put_record(self, item: MemoryItem, raw: bytes) -> None:
        """:meth:`put` an item whose stored record is ``raw`` (as read from the store)."""
        self.put(item)
        self.items.put_record(item.id, item, raw)

    def remove(self, item_id: str) -> MemoryItem | None:
        item = self.items.pop(item_id, None)
        if item is None:
            return None
        self.mutations += 1
        slot = self.slot_of.pop(item_id)
        self._context = None
        self._untag(slot, item.tags)
        self.index.remove(slot)
        self.passages.remove(slot)
        self.id_at[slot] = None
        self.alive[slot] = False
        self.expires[slot] = NO_EXPIRY
        self._free.append(slot)
        return item

    def _untag(self, slot: int, tags: tuple[str, ...]) -> None:
        for tag in tags:
            slots = self.tag_slots.get(tag)
            if slots is not None:
                slots.discard(slot)
                if not slots:
                    del self.tag_slots[tag]

    def live_slots(self) -> np.ndarray:
        return np.flatnonzero(self.alive[: len(self.id_at)])

    def context_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(order, pos, run)``: the live slots in conversation order (by scope, then
        time, then slot: a bulk import's turns of one timestamp keep the order they were
        added in), ``pos[slot]`` a slot's index in ``order`` (-1 if not live), and
        ``run[i]`` the conversation ``order[i]`` belongs to (a new one at every change of
        scope or gap over :data:`CONTEXT_GAP_MS`). Kept between reads: items added since
        are inserted (a chat adds a turn, then asks); a remove or a change of an item's
        time or scope rebuilds it."""
        c, new = self._context, self._context_new
        if c is None:
            live = self.live_slots()
            by = np.lexsort((live, self.ts[live], self.scope_code[live]))
            order = live[by]
            c = _ContextOrder(order, self.scope_code[order], self.ts[order])
        else:
            for slot in new:
                c.insert(slot, int(self.scope_code[slot]), int(self.ts[slot]))
        if c is not self._context or new:
            c.index(len(self.id_at))
        self._context, self._context_new = c, []
        return c.order, c.pos, c.run

    def expired_ids(self, now_ms: int) -> list[str]:
        n = len(self.id_at)
        slots = np.flatnonzero(self.alive[:n] & (self.expires[:n] <= now_ms))
        return [self.id_at[s] for s in slots]  # type: ignore[misc]

    # --- snapshots ----------------------------------------------------------------------

    async def to_state(
        self, pause: Callable[[], Awaitable[None]], step: int = 8192
    ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, list[Any]]]:
        """Everything this catalog holds, as ``(meta, arrays, strings)`` for a snapshot
        (copies: later updates do not change it); the items go as their records. Built
        ``step`` items or terms at a time, with ``await pause()`` between: the caller
        holds the write lock, so nothing updates the catalog meanwhile."""

        def steps(count: int) -> Iterator[range]:
            return (range(i, min(i + step, count)) for i in range(0, count, step))

        n = len(self.id_at)
        live = [i for i in self.id_at if i is not None]
        records: list[bytes] = []
        for part in steps(len(live)):
            records += self.items.records(live[part.start : part.stop])
            await pause()
        state = None
        for state in bm25_state.to_arrays(self.index, steps):
            if state is None:
                await pause()
        assert state is not None
        bm25_meta, bm25_arrays, terms = state
        for state in self.passages.to_state(steps):
            if state is None:
                await pause()
        assert state is not None
        passage_meta, passage_arrays, passage_terms = state
        tags = list(self.tag_slots)
        tag_slots = [np.fromiter(sorted(self.tag_slots[t]), np.int64) for t in tags]
        arrays = {
            "ts": self.ts[:n].copy(),
            "expires": self.expires[:n].copy(),
            "type_code": self.type_code[:n].copy(),
            "scope_code": self.scope_code[:n].copy(),
            "net_feedback": self.net_feedback[:n].copy(),
            "important": self.important[:n].copy(),
            "alive": self.alive[:n].copy(),
            "free": np.array(self._free, dtype=np.int64),
            "tag_len": np.array([len(s) for s in tag_slots], dtype=np.int64),
            "tag_slots": np.concatenate(tag_slots) if tag_slots else np.zeros(0, np.int64),
            **{f"bm25.{k}": v for k, v in bm25_arrays.items()},
            **{f"passages.{k}": v for k, v in passage_arrays.items()},
        }
        strings = {
            "id_at": ["" if i is None else i for i in self.id_at],
            "scopes": list(self._scope_code),
            "tags": tags,
            "terms": terms,
            "passage_terms": passage_terms,
        }
        meta = {"bm25": bm25_meta, "passages": passage_meta}
        return meta, arrays, {**strings, "records": records}

    def restore_empty(self) -> None:
        """Back to an empty catalog (in place)."""
        mutations = self.mutations
        self.__init__()  # type: ignore[misc]
        self.mutations = mutations

    def restore(
        self, meta: dict[str, Any], arrays: dict[str, np.ndarray], strings: dict[str, list[str]]
    ) -> None:
        """Replace this catalog's content (in place) with a :meth:`to_state`."""
        self._context, self._context_new = None, []
        id_at: list[str | None] = [i or None for i in strings["id_at"]]
        n = len(id_at)
        live = [i for i in id_at if i is not None]  # items in slot order
        self.items = LazyItems.of_records(live, strings["records"])  # type: ignore[arg-type]
        self.id_at = id_at
        self.slot_of = {i: s for s, i in enumerate(id_at) if i is not None}
        self._free = arrays["free"].tolist()
        self._scope_code = {s: c for c, s in enumerate(strings["scopes"])}
        lens = arrays["tag_len"].tolist()
        flat = arrays["tag_slots"].tolist()
        self.tag_slots = {}
        pos = 0
        for tag, length in zip(strings["tags"], lens, strict=True):
            self.tag_slots[tag] = set(flat[pos : pos + length])
            pos += length
        for name in ("ts", "expires", "type_code", "scope_code", "net_feedback", "important",
                     "alive"):  # fmt: skip
            delattr(self, name)
        self._alloc(max(1024, n))
        for name in ("ts", "expires", "type_code", "scope_code", "net_feedback", "important",
                     "alive"):  # fmt: skip
            getattr(self, name)[:n] = arrays[name]
        bm25 = {k[5:]: v for k, v in arrays.items() if k.startswith("bm25.")}
        self.index = bm25_state.from_arrays(meta["bm25"], bm25, strings["terms"])
        passages = {k[9:]: v for k, v in arrays.items() if k.startswith("passages.")}
        self.passages = PassageIndex.from_state(
            meta["passages"], passages, strings["passage_terms"]
        )
