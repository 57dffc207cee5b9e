"""Item history: each version of a memory that ``update()`` replaced, kept under
``hst:<id>:<version>`` as ``{"item": {...}, "valid_to": ms}`` (the item as it was, and when
the update replaced it). A version that lost a sync conflict (docs/sync.md) is kept the
same way under ``hst:<id>:<version>~<tag>``, ``tag`` a digest of the item, so that every
device keeps one loser under one key. Retrieval never reads these keys; forgetting an
item (delete, clear, sweep, archive) deletes them with it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..errors import ValidationError
from ..item import MemoryItem, MemoryVersion, check_timestamp, dumps, loads
from . import schema
from .base import KvBackend, iter_prefix


class Past(NamedTuple):
    """A stored past version: the item as it was, when it stopped being current, and
    whether it lost a sync conflict (rather than being replaced by an update)."""

    item: MemoryItem
    valid_to: int
    conflict: bool = False


def conflict_key(item: MemoryItem) -> str:
    """The ``hst:`` key of ``item`` as a conflict's loser: the same on every device."""
    tag = hashlib.sha256(item.to_json().encode()).hexdigest()[:16]
    return schema.hst_conflict_key(item.id, item.version, tag)


def past_record(item: MemoryItem, valid_to: int, *, conflict: bool = False) -> tuple[str, bytes]:
    """The history record of ``item`` (its stored version), replaced at ``valid_to`` (or,
    ``conflict``, set aside by a sync conflict then)."""
    record = dumps({"item": item.to_dict(), "valid_to": valid_to})
    key = conflict_key(item) if conflict else schema.hst_key(item.id, item.version)
    return key, record.encode()


def record_of(past: Past) -> tuple[str, bytes]:
    """:func:`past_record` of a :class:`Past`."""
    return past_record(past.item, past.valid_to, conflict=past.conflict)


def read_past(raw: bytes | str) -> tuple[MemoryItem, int]:
    """(the item as it was, when it was replaced); ValidationError if malformed."""
    return past_from_dict(loads(raw))


def past_from_dict(data: Any) -> tuple[MemoryItem, int]:
    if not isinstance(data, dict) or set(data) != {"item", "valid_to"}:
        raise ValidationError('a history record is {"item": {...}, "valid_to": ms}')
    return MemoryItem.from_dict(data["item"]), check_timestamp(data["valid_to"])


def read_record(key: str, raw: bytes | str) -> Past:
    """The stored record ``raw`` under the ``hst:`` key ``key``; ValidationError if
    malformed."""
    item, valid_to = read_past(raw)
    return Past(item, valid_to, schema.is_hst_conflict(key))


def versions(current: MemoryItem, pasts: Iterable[Past]) -> list[MemoryVersion]:
    """The item's versions, oldest first, ending with ``current``.

    A conflict's loser comes after the version of its number on the line (if any), with
    ``conflict=True``, valid from the end of the line's version before it until it was
    set aside; one equal to another version (or to another loser) is shown once. So do
    past versions at or above the current one: a line of updates that lost a sync
    conflict to a version with a lower number (or, shown once, the current version
    itself when an update landed between two reads)."""
    line: list[MemoryVersion] = []
    start = current.timestamp
    side: list[Past] = []
    for past in sorted(pasts, key=lambda p: (p.item.version, p.valid_to)):
        if past.conflict or past.item.version >= current.version:
            side.append(past)
            continue
        line.append(MemoryVersion(past.item, start, past.valid_to))
        start = past.valid_to
    seen = {v.item.to_json() for v in line} | {current.to_json()}
    losers: list[MemoryVersion] = []
    for past in side:
        text = past.item.to_json()
        if text in seen:
            continue
        seen.add(text)
        ends = [v.valid_to for v in line if v.item.version < past.item.version]
        begin = next((end for end in reversed(ends) if end is not None), current.timestamp)
        losers.append(MemoryVersion(past.item, min(begin, past.valid_to), past.valid_to, True))
    out = sorted(line + losers, key=lambda v: (v.item.version, v.conflict))
    out.append(MemoryVersion(current, start, None))
    return out


def ids_of(keys: Iterable[str]) -> dict[str, list[str]]:
    """``hst:`` keys grouped by item id."""
    grouped: dict[str, list[str]] = {}
    for key in keys:
        grouped.setdefault(schema.hst_id(key), []).append(key)
    return grouped


async def item_versions(kv: KvBackend, current: MemoryItem) -> list[MemoryVersion]:
    """Every version of the stored item ``current``, oldest first (see :func:`versions`)."""
    prefix = schema.hst_prefix(current.id)
    return versions(current, [read_record(key, raw) async for key, raw in iter_prefix(kv, prefix)])
