"""Conflict losers into their item's history (docs/sync.md, "Conflicts and deletes").

When a pull decides a conflict between a local edit of an item (``mem:``) or of a history
record (``hst:``) and the hub's live version, the transaction that applies the page also
puts the losing version, the hub's or the local one, aside as ``sync:lost:<digest>``
``{"k": key, "v": base64}`` (the bytes as stored: sealed for an encrypted store). :func:`keep` then
writes each into its item's history through the host store (so it is sealed and logged
like any write) as ``hst:<id>:<version>~<tag>`` (pymemory/storage/history.py), and drops
the record put aside. It runs again at the start of every round: a round killed between
the two still keeps them. ``tag`` is a digest of the losing item, so every device that
keeps one loser writes it under the same key and the histories converge. Not written:
a loser equal to the local version that beat it (the same item sealed twice, or two
history records of one version), one already kept, one whose item is gone; one that
cannot be read is logged and dropped.
"""

from __future__ import annotations

import base64
import logging
import time

import pymemory.sync.local as L

from ..errors import ValidationError
from ..item import MemoryItem
from ..storage import Writes, changes, history, iter_prefix, schema
from .local import Local
from .records import digest

log = logging.getLogger("pymemory")

LOST_PREFIX = "sync:lost:"
#: The records whose losing versions are kept.
KEPT_PREFIXES = (schema.MEM, schema.HST)


def put_aside(key: str, value: bytes) -> tuple[str, bytes]:
    """The record that holds the hub's losing version ``value`` of ``key`` until
    :func:`keep` has it in history (written in the pull's transaction)."""
    name = LOST_PREFIX + digest(key.encode() + b"\0" + value)
    return name, L.encode({"k": key, "v": base64.b64encode(value).decode()})


def item_of(key: str, plain: bytes) -> MemoryItem:
    """The item a ``mem:`` or ``hst:`` record holds; ValidationError if malformed."""
    if key.startswith(schema.MEM):
        return MemoryItem.from_json(plain)
    return history.read_past(plain)[0]


async def keep(local: Local) -> list[str]:
    """Every loser put aside into its item's history; the ``hst:`` keys written."""
    if local.encrypted and local.sealer is None:
        return []  # a new device's first pull: it edited nothing, so nothing lost
    aside = [(name, raw) async for name, raw in iter_prefix(local.raw, LOST_PREFIX)]
    if not aside:
        return []
    losers: list[tuple[str, MemoryItem]] = []  # (the key it lost at, the losing item)
    for name, raw in aside:
        try:
            found = L.decode(raw)
            key, value = found["k"], base64.b64decode(found["v"], validate=True)
            sealer = local.sealer
            plain = value if sealer is None else await sealer.open(key, value)
            losers.append((key, item_of(key, plain)))
        except Exception as exc:  # a loser we cannot read is not kept; the round goes on
            log.warning("sync: could not keep a losing version (%s): %s", name, exc)
    at = time.time_ns() // 1_000_000
    records = [(key, item, history.past_record(item, at, conflict=True)) for key, item in losers]
    read = sorted(
        {k for key, item, (hst, _) in records for k in (key, schema.mem_key(item.id), hst)}
    )
    where = {k: i for i, k in enumerate(read)}

    def write(values: list[bytes | None], _: list[list[str]]) -> Writes:
        puts: dict[str, bytes] = {}
        for key, item, (hst, record) in records:
            if values[where[schema.mem_key(item.id)]] is None:
                continue  # forgotten (or archived): its history went with it
            if values[where[hst]] is not None or hst in puts:
                continue
            if _same(key, values[where[key]], item):
                continue
            puts[hst] = record
        return Writes(list(puts.items()), result=sorted(puts))

    written: list[str] = []
    if records:
        written = (await changes.commit(local.host, read, write)).result
    await local.raw.delete_many([name for name, _ in aside])
    return written


def _same(key: str, here: bytes | None, item: MemoryItem) -> bool:
    if here is None:
        return False
    try:
        return item_of(key, here) == item
    except ValidationError:
        return False
