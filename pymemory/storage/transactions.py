"""The read-modify-write transactions of the item records: what ``Memory``'s writes run
inside one ``KvBackend.transact`` (the function gets the stored values of the keys it
read and returns the ``Writes`` to apply, all in one backend transaction)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConflictError, NotFoundError, PymemoryError, shown
from ..item import ArchivedItem, Feedback, MemoryItem
from . import history, schema
from .base import Writes

log = logging.getLogger("pymemory")

Transaction = Callable[[list[bytes | None], list[list[str]]], Writes]

#: Records a batch reads or writes at most (imports, refreshes, forgetting).
WRITE_CHUNK = 1000
#: Text a forgetting transaction removes at most: on SQLite a delete first copies every
#: page it zeroes into the write-ahead log, so small batches fit in the disk reserve.
FORGET_CHUNK_CHARS = 2 * 1024 * 1024


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
    pasts: Mapping[str, Sequence[history.Past]],
) -> Transaction:
    """The transaction of one import batch: ``values`` holds the stored (memory, archived)
    records of each id of ``checked`` (which includes ``chunk``), in order; ``listed[0]``
    every ``hst:`` key. A memory written takes the imported history (``pasts``) in place
    of its stored one; an archived one loses its stored history."""

    def write(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        stored_pasts = history.ids_of(listed[0])
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
                new = [history.record_of(past) for past in pasts.get(r.id, ())]
                puts += new
                written = {key for key, _ in new}
                deletes += [k for k in stored_pasts.get(r.id, ()) if k not in written]
                if arc_raw is not None:
                    deletes.append(schema.arc_key(r.id))
                if mem_raw is not None and (old is None or old.text != item.text):
                    deletes.append(schema.vec_key(r.id))  # embedded from another text
                memories.append(item)
            else:
                puts.append((schema.arc_key(r.id), r.to_json().encode()))
                if mem_raw is not None:
                    deletes += [schema.mem_key(r.id), schema.vec_key(r.id)]
                deletes += stored_pasts.get(r.id, ())
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
    """The transaction of one ``_forget_where`` batch over the stored records of ``ids``
    (and every ``hst:`` key, listed): result (ids gone, stored items kept because they no
    longer match, count removed). A forgotten or archived item's history goes too."""

    def write(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        pasts = history.ids_of(listed[0])
        puts, deletes = [], []
        removed = 0
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
            removed += 1
            deletes += [schema.mem_key(item_id), schema.vec_key(item_id)]
            deletes += pasts.get(item_id, ())
            if archive:
                record = ArchivedItem.of(stored).to_json().encode()
                puts.append((schema.arc_key(item_id), record))
        return Writes(puts, deletes, result=(gone, kept, removed))

    return write


def forget_chunk(items: Iterable[MemoryItem]) -> list[str]:
    """The ids of the next forgetting transaction: WRITE_CHUNK items, FORGET_CHUNK_CHARS
    of text at most (always at least one)."""
    ids: list[str] = []
    chars = 0
    for item in items:
        chars += len(item.text) + len(item.content)
        if ids and (len(ids) == WRITE_CHUNK or chars > FORGET_CHUNK_CHARS):
            break
        ids.append(item.id)
    return ids


def update_item(
    item_id: str,
    fields: Mapping[str, Any],
    delta: Feedback | None,
    now_ms: int,
    expected_version: int | None,
) -> Transaction:
    """``update()``: ``fields`` and the pending feedback ``delta`` onto the stored item,
    as its next version, keeping the version it replaces in the item's history (when
    ``fields`` change anything); result: the item as stored."""

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        current = stored_live(item_id, values[0], now_ms)
        if expected_version is not None and current.version != expected_version:
            raise ConflictError(
                f"memory {shown(item_id)} is at version {current.version}, not "
                f"{expected_version}: another writer changed it; get() it again"
            )
        if not fields and delta is None:
            return Writes(result=current)
        feedback = current.feedback if delta is None else current.feedback.merged(delta)
        item = replace(current, **fields, feedback=feedback, version=current.version + 1)
        puts = [(schema.mem_key(item_id), item.to_json().encode())]
        if fields:
            puts.append(history.past_record(current, now_ms))
        return Writes(puts, result=item)

    return write


def forget_item(item_id: str, expected_version: int | None) -> Transaction:
    """``delete()`` over the stored (memory, archived) records of one id and the keys of
    its history (listed): the item, its archived copy, its vector and its history go."""

    def write(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        raw, archived = values
        if raw is None and archived is None:
            raise NotFoundError(f"no memory with id {shown(item_id)}")
        if expected_version is not None:
            version = None if raw is None else decode_or_none(raw)
            if version is None or version.version != expected_version:
                found = "archived" if version is None else f"at version {version.version}"
                raise ConflictError(
                    f"memory {shown(item_id)} is {found}, not version {expected_version}"
                )
        doomed = [schema.mem_key(item_id), schema.arc_key(item_id), schema.vec_key(item_id)]
        return Writes(deletes=doomed + listed[0])

    return write


def merge_feedback(ids: list[str], pending: Mapping[str, Feedback]) -> Transaction:
    """A feedback flush: each pending delta added to the stored counts, as the item's next
    version; result (items written, ids gone from the store)."""

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        puts, written, gone = [], [], []
        for item_id, raw in zip(ids, values, strict=True):
            current = None if raw is None else decode_or_none(raw)
            if current is None:
                gone.append(item_id)
                continue
            item = replace(
                current,
                feedback=current.feedback.merged(pending[item_id]),
                version=current.version + 1,
            )
            puts.append((schema.mem_key(item_id), item.to_json().encode()))
            written.append(item)
        return Writes(puts, result=(written, gone))

    return write


def store_refined(before: MemoryItem, refined: MemoryItem) -> Transaction:
    """A stage-2 summary, stored only if the item still holds what the refiner saw (an
    edit by any writer meanwhile wins); result: the stored item, or None."""

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        stored = None if values[0] is None else decode_or_none(values[0])
        if stored is None or stored.content != before.content or stored.text != before.text:
            return Writes(result=None)
        item = replace(
            stored,
            content=refined.content,
            content_method=refined.content_method,
            version=stored.version + 1,
        )
        return Writes([(schema.mem_key(item.id), item.to_json().encode())], result=item)

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
        raise NotFoundError(f"no memory with id {shown(item_id)}")
    if item.is_expired(now_ms):
        raise NotFoundError(f"memory {shown(item_id)} has expired (ttl_ms)")
    return item
