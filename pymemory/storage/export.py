"""The export format: JSON Lines, a header line, then one record per memory or archived item.

    {"format":"pymemory-export","version":1}
    {"kind":"memory","item":{...}}
    {"kind":"archived","item":{...}}

:func:`parse_export` checks every line before the caller writes anything, so bad input
raises :class:`~pymemory.errors.ImportFormatError` (naming the line) and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Iterable
from typing import Any

from ..errors import ImportFormatError, ValidationError
from ..item import ArchivedItem, MemoryItem, dumps, loads
from . import schema
from .base import KvBackend, iter_prefix

log = logging.getLogger("pymemory")

EXPORT_FORMAT = "pymemory-export"
EXPORT_VERSION = 1


def header_line() -> str:
    return dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION}) + "\n"


def record_line(kind: str, raw: bytes) -> str:
    """One stored record (``kind`` "memory" or "archived") as an export line."""
    item: Any = loads(raw)
    return dumps({"kind": kind, "item": item}) + "\n"


async def export_lines(kv: KvBackend, skip: Collection[str] = ()) -> AsyncIterator[str]:
    """The store as export lines: the header, then memories and archived items in key
    order; records under the keys in ``skip`` and unreadable ones are left out."""
    yield header_line()
    for prefix, kind in ((schema.MEM, "memory"), (schema.ARC, "archived")):
        async for key, raw in iter_prefix(kv, prefix):
            if key in skip:
                continue
            try:
                line = record_line(kind, raw)
            except ValidationError as exc:  # written by someone else since our last look
                log.error("export skips unreadable record %s: %s", key, exc)
                continue
            yield line


def parse_export(lines: Iterable[str]) -> tuple[list[MemoryItem], list[ArchivedItem]]:
    """Every memory and archived item of an export, or ImportFormatError for the first bad line."""
    memories: list[MemoryItem] = []
    archived: list[ArchivedItem] = []
    seen: set[str] = set()
    header = False
    for n, line in enumerate(lines, start=1):
        if not isinstance(line, str):
            raise ImportFormatError("lines must be strings", n)
        if not line.strip():
            continue
        try:
            record = loads(line)
        except ValidationError as exc:
            raise ImportFormatError(str(exc), n) from None
        if not header:
            if record != {"format": EXPORT_FORMAT, "version": EXPORT_VERSION}:
                raise ImportFormatError(
                    f'the first line must be {{"format":"{EXPORT_FORMAT}","version":1}}', n
                )
            header = True
            continue
        if not isinstance(record, dict) or set(record) != {"kind", "item"}:
            raise ImportFormatError('each record is {"kind": ..., "item": {...}}', n)
        try:
            if record["kind"] == "memory":
                parsed: MemoryItem | ArchivedItem = MemoryItem.from_dict(record["item"])
                memories.append(parsed)
            elif record["kind"] == "archived":
                parsed = ArchivedItem.from_dict(record["item"])
                archived.append(parsed)
            else:
                raise ValidationError(f"unknown record kind {record['kind']!r}")
        except ValidationError as exc:
            raise ImportFormatError(str(exc), n) from None
        if parsed.id in seen:
            raise ImportFormatError(f"id {parsed.id} appears twice", n)
        seen.add(parsed.id)
    if not header:
        raise ImportFormatError("empty import: no header line", 1)
    return memories, archived
