"""The read-modify-write transactions of the item records: what ``Memory``'s writes run
inside one ``KvBackend.transact`` (the function gets the stored values of the keys it
read and returns the ``Writes`` to apply, all in one backend transaction)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..errors import ConflictError, NotFoundError, PymemoryError
from ..item import ArchivedItem, Feedback, MemoryItem
from . import schema
from .base import Writes

log = logging.getLogger("pymemory")

Transaction = Callable[[list[bytes | None], list[list[str]]], Writes]


@dataclass(frozen=True)
class ImportOutcome:
    memories: list[MemoryItem]  # as stored
    archived: list[ArchivedItem]
    added: int
    replaced: int
    skipped: int


def import_batch(
    chunk: Sequence[MemoryItem | ArchivedItem],
    checked: Sequence[MemoryItem | ArchivedItem],
    on_conflict: str,
) -> Transaction:
    """The transaction of one import batch: ``values`` holds the stored (memory, archived)
    records of each id of ``checked`` (which includes ``chunk``), in order."""

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        stored = {r.id: (values[2 * j], values[2 * j + 1]) for j, r in enumerate(checked)}
        taken = [r.id for r in checked if stored[r.id] != (None, None)]
        if taken and on_conflict == "error":
            raise ConflictError(
                f"{len(taken)} imported ids already exist (first: {taken[0]}); "
                "pass on_conflict='skip' or 'replace'"
            )
        puts: list[tuple[str, bytes]] = []
        deletes: list[str] = []
        memories: list[MemoryItem] = []
        archived: list[ArchivedItem] = []
        added = replaced = skipped = 0
        for r in chunk:
            mem_raw, arc_raw = stored[r.id]
            present = (mem_raw, arc_raw) != (None, None)
            if present and on_conflict == "skip":
                skipped += 1
                continue
            replaced += present
            added += not present
            if isinstance(r, MemoryItem):
                old = None if mem_raw is None else decode_or_none(mem_raw)
                if old is not None and old == r:
                    memories.append(old)  # replaced by itself: nothing to write
                    continue
                item = r if old is None else replace(r, version=max(r.version, old.version + 1))
                puts.append((schema.mem_key(r.id), item.to_json().encode()))
                if arc_raw is not None:
                    deletes.append(schema.arc_key(r.id))
                if mem_raw is not None and (old is None or old.text != item.text):
                    deletes.append(schema.vec_key(r.id))  # embedded from another text
                memories.append(item)
            else:
                puts.append((schema.arc_key(r.id), r.to_json().encode()))
                if mem_raw is not None:
                    deletes += [schema.mem_key(r.id), schema.vec_key(r.id)]
                archived.append(r)
        outcome = ImportOutcome(memories, archived, added, replaced, skipped)
        return Writes(puts, deletes, outcome)

    return write


def forget_batch(
    ids: list[str],
    pending: dict[str, Feedback],
    match: Callable[[MemoryItem], bool],
    archive: bool,
) -> Transaction:
    """The transaction of one ``_forget_where`` batch over the stored records of ``ids``:
    result (ids gone, stored items kept because they no longer match, count removed)."""

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        puts, deletes = [], []
        gone, kept = [], []
        for item_id, raw in zip(ids, values, strict=True):
            stored = None if raw is None else decode_or_none(raw)
            if stored is None:
                gone.append(item_id)
                continue
            delta = pending.get(item_id)
            seen = (
                stored if delta is None else replace(stored, feedback=stored.feedback.merged(delta))
            )
            if not match(seen):
                kept.append(stored)
                continue
            gone.append(item_id)
            deletes += [schema.mem_key(item_id), schema.vec_key(item_id)]
            if archive:
                record = ArchivedItem.of(stored).to_json().encode()
                puts.append((schema.arc_key(item_id), record))
        removed = len(deletes) // 2
        return Writes(puts, deletes, result=(gone, kept, removed))

    return write


def delete_present(keys: list[str]) -> Transaction:
    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        doomed = [k for k, raw in zip(keys, values, strict=True) if raw is not None]
        return Writes(deletes=doomed, result=doomed)

    return write


def decode_or_none(raw: bytes) -> MemoryItem | None:
    """A stored item, or None (logged) if its record is unreadable."""
    try:
        return MemoryItem.from_json(raw)
    except PymemoryError as exc:
        log.error("unreadable memory record: %s", exc)
        return None


def stored_live(item_id: str, raw: bytes | None, now_ms: int) -> MemoryItem:
    """The stored item, or NotFoundError if it is gone, unreadable or expired."""
    item = None if raw is None else decode_or_none(raw)
    if item is None:
        raise NotFoundError(f"no memory with id {item_id!r}")
    if item.is_expired(now_ms):
        raise NotFoundError(f"memory {item_id!r} has expired (ttl_ms)")
    return item
