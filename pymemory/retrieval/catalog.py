"""The in-memory view of the live items: the items, numpy columns for vectorised filters,
tag sets, and the BM25 index. Loaded once at open, updated incrementally; the KV store
stays the truth."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..item import MEMORY_TYPES, MemoryItem
from .analyzer import analyze
from .bm25 import Bm25Index

NO_EXPIRY = np.iinfo(np.int64).max
TYPE_CODE = {t: i for i, t in enumerate(MEMORY_TYPES)}


def speaker_of(item: MemoryItem) -> str | None:
    """``metadata["speaker"]``, when it is a non-empty string: who said it (chat turns)."""
    speaker = item.metadata.get("speaker")
    return speaker.strip() or None if isinstance(speaker, str) else None


def index_text(item: MemoryItem) -> str:
    """What BM25 sees: the speaker (if any), the raw text, the summary (if it adds words)
    and the tags. Indexing the speaker lets "what did Maya adopt?" prefer Maya's turns."""
    speaker = speaker_of(item)
    parts = [] if speaker is None else [speaker]
    parts.append(item.text)
    if item.content not in item.text:
        parts.append(item.content)
    parts.extend(item.tags)
    return "\n".join(parts)


def dense_text(item: MemoryItem) -> str:
    """What the embedder sees: the raw text, after ``"<speaker>: "`` when there is one."""
    speaker = speaker_of(item)
    return item.text if speaker is None else f"{speaker}: {item.text}"


class Catalog:
    def __init__(self) -> None:
        self.items: dict[str, MemoryItem] = {}
        self.slot_of: dict[str, int] = {}
        self.id_at: list[str | None] = []
        self._free: list[int] = []
        self._scope_code: dict[str, int] = {}
        self.tag_slots: dict[str, set[int]] = {}
        self.index = Bm25Index()
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
        else:
            slot = self.slot_of[item.id]
            self._untag(slot, old.tags)
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

    def set_feedback(self, item: MemoryItem) -> None:
        """Replace an item whose only change is its feedback (no re-indexing)."""
        slot = self.slot_of[item.id]
        self.items[item.id] = item
        self.net_feedback[slot] = item.feedback.net
        self.important[slot] = item.feedback.important

    def remove(self, item_id: str) -> MemoryItem | None:
        item = self.items.pop(item_id, None)
        if item is None:
            return None
        slot = self.slot_of.pop(item_id)
        self._untag(slot, item.tags)
        self.index.remove(slot)
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

    def expired_ids(self, now_ms: int) -> list[str]:
        n = len(self.id_at)
        slots = np.flatnonzero(self.alive[:n] & (self.expires[:n] <= now_ms))
        return [self.id_at[s] for s in slots]  # type: ignore[misc]
