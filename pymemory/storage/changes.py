"""The change log: how every instance over one store learns what the others changed.

Two records in the store itself, so the mechanism is the same on every backend (SQLite,
IndexedDB, MapKv) and needs nothing but ``transact``::

    meta:seq           {"seq": N, "h": H}: the number of logged commits so far, and the
                       store's hybrid logical clock (below)
    chg:<N, 16 digits> {"keys": [...], "h": H}: the keys commit N put or deleted (no
                       values) and the clock of that edit

:func:`commit` is a ``transact`` that also reads ``meta:seq``, bumps it and writes the
commit's ``chg:`` record, all in the same transaction, so the sequence numbers are dense
(1, 2, 3, ...) and the log never disagrees with the data. An instance remembers the last
sequence number it has applied; :func:`changes_since` gives it the keys changed after
that (one ``get`` when nothing changed), and it re-reads just those keys. The log keeps
the last :data:`RETAIN` commits (each commit deletes the record RETAIN behind it); an
instance further behind gets ``keys=None`` and reloads everything.

A deletion is logged like any change: the ``chg:`` record naming the deleted key is the
tombstone that tells every other instance to drop its copy. Records hold keys only
(``mem:<uuid>``, ``vec:<uuid>``, ``arc:<uuid>``), never content, so forgetting an item
leaves none of its text here.

The clock (``h``, ms * :data:`CLOCK_SHIFT` + a counter) says when an edit was made, for
sync (pymemory/sync/: the later edit wins): each commit gets ``max(now, h + 1)`` of the
``meta:seq`` it read, and a sync pull advances ``meta:seq``'s ``h`` past every record it
applies (:func:`observe`), so an edit is always stamped after everything its device had
seen. :func:`log_keys` (pulled records) stamps no clock: they are not local edits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import StorageError, shown
from .base import KvBackend, Writes

SEQ_KEY = "meta:seq"
CLOCK_SHIFT = 4096  # a clock value is ms * CLOCK_SHIFT + a counter
LOG_PREFIX = "chg:"
SEQ_DIGITS = 16
RETAIN = 4096

ChangeFn = Callable[[list[bytes | None], list[list[str]]], Writes]


def log_key(seq: int) -> str:
    return f"{LOG_PREFIX}{seq:0{SEQ_DIGITS}d}"


def now_ms() -> int:
    """The wall clock in ms (a seam: the sync tests skew a device's clock through it)."""
    return time.time_ns() // 1_000_000


def tick(last: int) -> int:
    """The next clock value after ``last``: never behind the wall clock."""
    return max(now_ms() * CLOCK_SHIFT, last + 1)


def decode_clock(raw: bytes | None) -> int:
    """The clock ``meta:seq`` holds (0: none yet)."""
    if raw is None:
        return 0
    try:
        h = json.loads(raw).get("h", 0)
    except (ValueError, AttributeError):
        return 0
    return h if isinstance(h, int) and not isinstance(h, bool) and h > 0 else 0


def seq_record(seq: int, h: int) -> bytes:
    """The ``meta:seq`` value for sequence number ``seq`` and clock ``h``."""
    return _encode({"seq": seq, "h": h} if h else {"seq": seq})


def observe(raw: bytes | None, seen: int) -> bytes | None:
    """``meta:seq`` (as read: ``raw``) with its clock advanced to ``seen`` (None: no
    change needed). The sequence number stays: nothing was logged."""
    if seen <= decode_clock(raw):
        return None
    return seq_record(decode_seq(raw), seen)


def decode_seq(raw: bytes | None) -> int:
    if raw is None:
        return 0
    try:
        seq = json.loads(raw)["seq"]
    except (ValueError, KeyError, TypeError):
        raise StorageError(f"{SEQ_KEY} is unreadable: {raw[:80]!r}") from None
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise StorageError(f"{SEQ_KEY} holds an invalid sequence number {shown(seq)}")
    return seq


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


@dataclass(frozen=True)
class Committed:
    """What :func:`commit` did: ``seq`` is the store's sequence number after it,
    ``before`` the one it found (equal when nothing was written); ``result`` is the
    change function's."""

    seq: int
    before: int
    result: Any


async def commit(
    kv: KvBackend,
    keys: Sequence[str],
    fn: ChangeFn,
    *,
    list_prefixes: Sequence[str] = (),
) -> Committed:
    """``kv.transact(keys, fn)`` that logs what ``fn`` writes as the next commit. A
    function that writes nothing logs nothing. ``fn`` raising aborts, as in transact."""

    def body(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        before = decode_seq(values[0])
        writes = fn(values[1:], listed)
        if not isinstance(writes, Writes):
            return writes  # transact rejects it with a ValidationError
        changed = sorted({k for k, _ in writes.puts} | set(writes.deletes))
        if not changed:
            return Writes(result=Committed(before, before, writes.result))
        seq = before + 1
        h = tick(decode_clock(values[0]))
        puts = [
            *writes.puts,
            (SEQ_KEY, seq_record(seq, h)),
            (log_key(seq), _encode({"keys": changed, "h": h})),
        ]
        deletes = list(writes.deletes)
        if seq > RETAIN:
            deletes.append(log_key(seq - RETAIN))
        return Writes(puts, deletes, Committed(seq, before, writes.result))

    return await kv.transact([SEQ_KEY, *keys], body, list_prefixes=list_prefixes)


async def read_seq(kv: KvBackend) -> int:
    """The store's current sequence number (0 for a store nothing was logged in). A
    backend with a ``peek(key)`` that reads without waiting (SqliteKv) answers on this
    thread; otherwise, or when peek would wait, it is an ordinary ``get``."""
    peek = getattr(kv, "peek", None)
    if peek is not None:
        try:
            return decode_seq(peek(SEQ_KEY))
        except BlockingIOError:
            pass
    return decode_seq(await kv.get(SEQ_KEY))


@dataclass(frozen=True)
class Changes:
    """The keys changed after some sequence number, up to ``seq``. ``keys`` is None
    when the log no longer reaches back that far: reload everything."""

    seq: int
    keys: frozenset[str] | None


async def changes_since(kv: KvBackend, seq: int, *, current: int | None = None) -> Changes:
    """What changed after ``seq`` (``current``: the store's sequence number, if known)."""
    now = await read_seq(kv) if current is None else current
    if now == seq:
        return Changes(seq, frozenset())
    if now < seq or now - seq > RETAIN:
        return Changes(now, None)  # the store was replaced, or the log was pruned past seq
    rows = await kv.scan(LOG_PREFIX, start_after=log_key(seq))
    keys: set[str] = set()
    expect = seq + 1
    for key, raw in rows:
        if key != log_key(expect):
            return Changes(max(now, expect - 1), None)  # a hole: pruned or damaged
        try:
            keys.update(json.loads(raw)["keys"])
        except (ValueError, KeyError, TypeError):
            return Changes(max(now, expect), None)
        expect += 1
    last = expect - 1
    if last < now:
        return Changes(now, None)  # records missing at the end: do not trust the log
    return Changes(last, frozenset(keys))


async def log_keys(kv: KvBackend, keys: Sequence[str]) -> Committed:
    """Log a commit naming ``keys`` without writing them: their records were written
    below ``kv`` (the replicator writes sealed bytes under an EncryptedKv), and every
    instance must still re-read them. Nothing is logged for no keys."""
    changed = sorted(set(keys))

    def body(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        before = decode_seq(values[0])
        if not changed:
            return Writes(result=Committed(before, before, None))
        seq = before + 1
        h = decode_clock(values[0])
        puts = [(SEQ_KEY, seq_record(seq, h)), (log_key(seq), _encode({"keys": changed}))]
        deletes = [log_key(seq - RETAIN)] if seq > RETAIN else []
        return Writes(puts, deletes, Committed(seq, before, None))

    return await kv.transact([SEQ_KEY], body)


async def edit_clocks(kv: KvBackend, after: int = 0) -> tuple[dict[str, int], int]:
    """Each key's clock at its latest stamped commit after ``after`` that the log still
    holds, and the clock of the oldest such commit (0: none)."""
    found: dict[str, int] = {}
    oldest = 0
    start = log_key(after) if after > 0 else None
    for _, raw in await kv.scan(LOG_PREFIX, start_after=start):
        try:
            record = json.loads(raw)
            h, keys = record.get("h"), record["keys"]
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if not isinstance(h, int) or isinstance(h, bool) or not isinstance(keys, list):
            continue
        oldest = oldest or h
        for key in keys:
            if isinstance(key, str):
                found[key] = h
    return found, oldest
