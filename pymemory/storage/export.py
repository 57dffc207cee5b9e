"""The export format: JSON Lines, a header line, then one record per memory or archived item.

    {"format":"pymemory-export","version":1}
    {"kind":"memory","item":{...}}
    {"kind":"archived","item":{...}}
    {"kind":"version","item":{...},"valid_to":ms}   a past version of an exported memory
    {"kind":"version","item":{...},"valid_to":ms,"conflict":true}   one a sync conflict set aside

:func:`parse_export` checks every line before the caller writes anything, so bad input
raises :class:`~pymemory.errors.ImportFormatError` (naming the line) and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import ImportFormatError, ValidationError, shown
from ..item import ArchivedItem, MemoryItem, dumps, loads
from . import history, schema
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
    """The store as export lines: the header, then memories, archived items and the
    memories' past versions in key order; records under the keys in ``skip`` and
    unreadable ones are left out (and so are the past versions of a memory left out)."""
    yield header_line()
    exported: set[str] = set()
    for prefix, kind in ((schema.MEM, "memory"), (schema.ARC, "archived")):
        async for key, raw in iter_prefix(kv, prefix):
            if key in skip:
                continue
            try:
                line = record_line(kind, raw)
            except ValidationError as exc:  # written by someone else since our last look
                log.error("export skips unreadable record %s: %s", key, exc)
                continue
            if kind == "memory":
                exported.add(key[len(prefix) :])
            yield line
    async for key, raw in iter_prefix(kv, schema.HST):
        if schema.hst_id(key) not in exported:
            continue
        try:
            past = history.read_record(key, raw)
        except ValidationError as exc:
            log.error("export skips unreadable record %s: %s", key, exc)
            continue
        line = {"kind": "version", "item": past.item.to_dict(), "valid_to": past.valid_to}
        if past.conflict:
            line["conflict"] = True
        yield dumps(line) + "\n"


@dataclass(frozen=True)
class ImportResult:
    """What ``Memory.import_`` did: memories added, replaced (on_conflict="replace") and
    skipped (on_conflict="skip"), and archived items written."""

    added: int
    replaced: int
    skipped: int
    archived: int


@dataclass(frozen=True)
class Parsed:
    memories: list[MemoryItem]
    archived: list[ArchivedItem]
    #: past versions by memory id: (the item as it was, when it was replaced, conflict)
    pasts: dict[str, list[history.Past]]


def parse_export(lines: Iterable[str]) -> Parsed:
    """Every record of an export, or ImportFormatError for the first bad line."""
    memories: list[MemoryItem] = []
    archived: list[ArchivedItem] = []
    pasts: dict[str, list[history.Past]] = {}
    past_lines: dict[str, tuple[history.Past, int]] = {}  # hst: key -> (past, line number)
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
        if isinstance(record, dict) and record.get("kind") == "version":
            conflict = "conflict" in record
            if set(record) - {"conflict"} != {"kind", "item", "valid_to"} or (
                conflict and record["conflict"] is not True
            ):
                raise ImportFormatError(
                    'a version is {"kind", "item", "valid_to"} (and "conflict": true)', n
                )
            try:
                item, valid_to = history.past_from_dict(
                    {"item": record["item"], "valid_to": record["valid_to"]}
                )
            except ValidationError as exc:
                raise ImportFormatError(str(exc), n) from None
            past = history.Past(item, valid_to, conflict)
            key = history.past_record(item, valid_to, conflict=conflict)[0]
            if key in past_lines:
                raise ImportFormatError(f"version {item.version} of {item.id} appears twice", n)
            past_lines[key] = (past, n)
            pasts.setdefault(item.id, []).append(past)
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
                raise ValidationError(f"unknown record kind {shown(record['kind'])}")
        except ValidationError as exc:
            raise ImportFormatError(str(exc), n) from None
        if parsed.id in seen:
            raise ImportFormatError(f"id {parsed.id} appears twice", n)
        seen.add(parsed.id)
    if not header:
        raise ImportFormatError("empty import: no header line", 1)
    versions = {m.id: m.version for m in memories}
    for past, n in past_lines.values():
        item_id, version = past.item.id, past.item.version
        if version >= versions.get(item_id, 0) and not (past.conflict and item_id in versions):
            raise ImportFormatError(
                f"version {version} of {item_id} is not a past version of a memory in the import",
                n,
            )
    return Parsed(memories, archived, pasts)
