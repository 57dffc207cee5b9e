"""Item history: each version of a memory that ``update()`` replaced, kept under
``hst:<id>:<version>`` as ``{"item": {...}, "valid_to": ms}`` (the item as it was, and when
the update replaced it). Retrieval never reads these keys; forgetting an item (delete,
clear, sweep, archive) deletes them with it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ValidationError
from ..item import MemoryItem, MemoryVersion, check_timestamp, dumps, loads
from . import schema
from .base import KvBackend, iter_prefix


def past_record(item: MemoryItem, valid_to: int) -> tuple[str, bytes]:
    """The history record of ``item`` (its stored version), replaced at ``valid_to``."""
    record = dumps({"item": item.to_dict(), "valid_to": valid_to})
    return schema.hst_key(item.id, item.version), record.encode()


def read_past(raw: bytes | str) -> tuple[MemoryItem, int]:
    """(the item as it was, when it was replaced); ValidationError if malformed."""
    return past_from_dict(loads(raw))


def past_from_dict(data: Any) -> tuple[MemoryItem, int]:
    if not isinstance(data, dict) or set(data) != {"item", "valid_to"}:
        raise ValidationError('a history record is {"item": {...}, "valid_to": ms}')
    return MemoryItem.from_dict(data["item"]), check_timestamp(data["valid_to"])


def versions(current: MemoryItem, pasts: Iterable[tuple[MemoryItem, int]]) -> list[MemoryVersion]:
    """The item's versions, oldest first, ending with ``current``. Past versions at or
    above the current one (an update that landed between two reads) are left out."""
    out: list[MemoryVersion] = []
    start = current.timestamp
    for item, valid_to in sorted(pasts, key=lambda p: p[0].version):
        if item.version >= current.version:
            continue
        out.append(MemoryVersion(item, start, valid_to))
        start = valid_to
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
    return versions(current, [read_past(raw) async for _, raw in iter_prefix(kv, prefix)])
