"""A persisted snapshot of the in-memory indexes, so that opening a large store reads a
few big values instead of re-reading and re-indexing every record.

Layout, under ``snap:`` (:data:`~pymemory.storage.schema.SNAP`), never logged in the
change log, never exported::

    snap:head                 JSON: format, schema and analyzer versions, the change-log
                              position ``seq`` the snapshot reflects, its parts
    snap:<gen>:<part>:<n>     the parts' bytes, in chunks of CHUNK_BYTES

Parts: ``view`` (the catalog with its BM25 index and the item records, the archived
ids, the unreadable keys; :mod:`.view`) and ``vec`` (the vector matrix;
:mod:`.vectors_kv`). Each part is read on its own and checked (length, CRC-32); a reader
then applies what the change log says changed after ``seq``, exactly as an instance
catches up with other writers. A snapshot is written in one transaction that also checks
the store is still at ``seq`` (nothing committed since it was taken) and deletes every
other ``snap:`` key, so there is at most one, whole.

Anything unexpected (no snapshot, another format, schema or analyzer version, a
missing or damaged chunk, a log that no longer reaches back to ``seq``) means the full
rebuild, logged. A forget (delete, clear, sweep, archive) discards the snapshot
(:func:`discard`): it may hold the forgotten text.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import secrets
import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Protocol

import numpy as np

from ..storage import KvBackend, Writes, changes, schema
from .analyzer import CJK_STOP_CHARS, STOPWORDS, analyze
from .catalog import INDEX_TEXT_VERSION

log = logging.getLogger("pymemory")

FORMAT = 2
#: Stores with fewer items are not snapshotted: rebuilding them takes well under 0.1 s.
MIN_ITEMS = 1000
#: The background writer looks every CHECK_S seconds; it writes when the store has been
#: quiet since its last look, at most once per MIN_INTERVAL_S, and only when the stored
#: snapshot is missing or the catalog changed by a tenth of its size (min. 1000 items).
CHECK_S = 5.0
MIN_INTERVAL_S = 60.0
HEAD_KEY = schema.SNAP + "head"
CHUNK_BYTES = 1 << 22
_MAGIC = b"PMSNAP1\n"
_LEN = struct.Struct("<Q")
# Text that exercises the analyzer's folding, stopwords, stemming and CJK handling.
_PROBE = "The Memories of ÉCOLE naïve café, scripts running; 東京の天気は晴れ 42 x-ray e-mail"


@functools.cache
def analyzer_version() -> str:
    """A fingerprint of what the analyzer makes of text: a snapshot's BM25 terms are only
    valid under the analyzer that produced them."""
    parts = [repr(analyze(_PROBE)), ",".join(sorted(STOPWORDS)), "".join(sorted(CJK_STOP_CHARS)),
             str(INDEX_TEXT_VERSION)]  # fmt: skip
    return f"{zlib.crc32(chr(0).join(parts).encode()):08x}"


# --- the payload codec ------------------------------------------------------------------


def pack(
    meta: dict[str, Any],
    arrays: dict[str, np.ndarray],
    strings: dict[str, list[str]],
    blobs: dict[str, list[bytes]],
) -> bytes:
    """One part as bytes: a JSON header, then the raw arrays (little-endian, 1-D)."""
    flat: dict[str, np.ndarray] = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    # Joined by newlines when none holds one (ids, terms, JSON records: split at C speed),
    # else with their lengths.
    for kind, named in (("s", strings), ("b", blobs)):
        for name, values in named.items():
            nl: Any = "\n" if kind == "s" else b"\n"
            joined = nl.join(values)
            data = joined.encode("utf-8", "surrogatepass") if kind == "s" else joined
            if joined.count(nl) == max(len(values) - 1, 0):
                flat[f"{kind}.{name}.nl"] = np.frombuffer(data, np.uint8)
                flat[f"{kind}.{name}.count"] = np.array([len(values)], np.int64)
            else:
                data = (nl[:0].join(values)).encode("utf-8", "surrogatepass") if kind == "s" \
                    else b"".join(values)  # fmt: skip
                flat[f"{kind}.{name}.len"] = np.fromiter(map(len, values), np.int64, len(values))
                flat[f"{kind}.{name}.data"] = np.frombuffer(data, np.uint8)
    specs = [[name, a.dtype.newbyteorder("<").str, a.shape[0]] for name, a in flat.items()]
    header = json.dumps({"meta": meta, "arrays": specs}).encode()
    body = [a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes() for a in flat.values()]
    return b"".join([_MAGIC, _LEN.pack(len(header)), header, *body])


@dataclass
class Unpacked:
    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]  # read-only views of the payload
    strings: dict[str, list[str]]
    blobs: dict[str, list[bytes]]


def unpack(payload: bytes) -> Unpacked:
    """The part :func:`pack` wrote; ValueError if it is not one."""
    if payload[: len(_MAGIC)] != _MAGIC:
        raise ValueError("not a snapshot part")
    (size,) = _LEN.unpack_from(payload, len(_MAGIC))
    start = len(_MAGIC) + _LEN.size
    header = json.loads(payload[start : start + size])
    offset = start + size
    arrays: dict[str, np.ndarray] = {}
    for name, dtype, length in header["arrays"]:
        dt = np.dtype(dtype)
        arrays[name] = np.frombuffer(payload, dt, length, offset)
        offset += dt.itemsize * length
    if offset != len(payload):
        raise ValueError("snapshot part length does not match its header")
    strings: dict[str, list[str]] = {}
    blobs: dict[str, list[bytes]] = {}
    for name in list(arrays):
        kind, _, rest = name.partition(".")
        key, _, form = rest.rpartition(".")
        if kind not in ("s", "b") or form not in ("nl", "len"):
            continue
        into: dict[str, Any] = strings if kind == "s" else blobs
        if form == "nl":
            data = arrays.pop(name).tobytes()
            count = int(arrays.pop(f"{kind}.{key}.count")[0])
            whole: Any = data.decode("utf-8", "surrogatepass") if kind == "s" else data
            values = whole.split("\n" if kind == "s" else b"\n") if count else []
            if len(values) != count:
                raise ValueError("snapshot strings do not match their count")
        else:
            data = arrays.pop(f"{kind}.{key}.data").tobytes()
            whole = data.decode("utf-8", "surrogatepass") if kind == "s" else data
            values = _split(whole, arrays.pop(name))
        into[key] = values
    return Unpacked(header["meta"], arrays, strings, blobs)


def _split(whole: Any, lens: np.ndarray) -> list[Any]:
    ends = list(accumulate(lens.tolist()))
    if (ends[-1] if ends else 0) != len(whole):
        raise ValueError("snapshot strings do not match their lengths")
    if not ends:
        return []
    return [whole[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


# --- the records in the store -----------------------------------------------------------


def _chunk_key(gen: str, part: str, n: int) -> str:
    return f"{schema.SNAP}{gen}:{part}:{n:06d}"


@dataclass(frozen=True)
class Loaded:
    """One part of the stored snapshot: the change-log position it reflects, its content."""

    seq: int
    part: Unpacked


async def read(kv: KvBackend, part: str) -> Loaded | None:
    """The stored snapshot's ``part``, or None (logged) if there is none usable."""
    raw = await kv.get(HEAD_KEY)
    if raw is None:
        log.info("no index snapshot: rebuilding the indexes from the records")
        return None
    try:
        head = json.loads(raw)
        why = _unusable(head)
        if why is None and part not in head["parts"]:
            why = f"it has no {part!r} part"
        if why is not None:
            log.info("index snapshot not used (%s): rebuilding from the records", why)
            return None
        gen = head["gen"]
        spec = head["parts"][part]
        values = await kv.get_many([_chunk_key(gen, part, n) for n in range(spec["chunks"])])
        if any(v is None for v in values):
            log.warning("index snapshot incomplete (replaced meanwhile?): rebuilding")
            return None
        payload = b"".join(values)  # type: ignore[arg-type]
        if len(payload) != spec["bytes"] or zlib.crc32(payload) != spec["crc"]:
            log.warning("index snapshot damaged (length or checksum): rebuilding")
            return None
        return Loaded(int(head["seq"]), unpack(payload))
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("index snapshot unreadable (%s): rebuilding from the records", exc)
        return None


def _unusable(head: Any) -> str | None:
    if not isinstance(head, dict):
        return "bad head"
    if head.get("format") != FORMAT:
        return f"format {head.get('format')!r}, this pymemory reads {FORMAT}"
    if head.get("schema") != schema.SCHEMA_VERSION:
        return f"schema version {head.get('schema')!r}"
    if head.get("analyzer") != analyzer_version():
        return "written under another analyzer version"
    return None


async def write(kv: KvBackend, seq: int, parts: dict[str, bytes]) -> bool:
    """Store a snapshot of the state at change-log position ``seq``, replacing any other
    ``snap:`` key, in one transaction; False (nothing written) if the store moved past
    ``seq`` meanwhile: the state would be stale, or hold what a forget erased since."""
    gen = secrets.token_hex(6)
    puts: list[tuple[str, bytes]] = []
    specs: dict[str, Any] = {}
    for name, payload in parts.items():
        count = max(1, -(-len(payload) // CHUNK_BYTES))
        for n in range(count):
            chunk = payload[n * CHUNK_BYTES : (n + 1) * CHUNK_BYTES]
            puts.append((_chunk_key(gen, name, n), chunk))
        specs[name] = {"chunks": count, "bytes": len(payload), "crc": zlib.crc32(payload)}
    head = {
        "format": FORMAT,
        "schema": schema.SCHEMA_VERSION,
        "analyzer": analyzer_version(),
        "seq": seq,
        "gen": gen,
        "parts": specs,
    }
    puts.append((HEAD_KEY, json.dumps(head).encode()))
    mine = {k for k, _ in puts}

    def fn(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        if changes.decode_seq(values[0]) != seq:
            return Writes(result=False)
        return Writes(puts, [k for k in listed[0] if k not in mine], result=True)

    return bool(await kv.transact([changes.SEQ_KEY], fn, list_prefixes=[schema.SNAP]))


async def discard(kv: KvBackend) -> None:
    """Delete the stored snapshot, if any (after a forget: it may hold the forgotten)."""
    if await kv.get(HEAD_KEY) is None:
        return

    def fn(_values: list[bytes | None], listed: list[list[str]]) -> Writes:
        return Writes(deletes=listed[0])

    await kv.transact([], fn, list_prefixes=[schema.SNAP])


def stored_seq(head_raw: bytes | None) -> int | None:
    """The ``seq`` of a stored head record (None: none or unreadable)."""
    try:
        return None if head_raw is None else int(json.loads(head_raw)["seq"])
    except (ValueError, KeyError, TypeError):
        return None


# --- when to write one --------------------------------------------------------------------


class Snapshotable(Protocol):
    """What :class:`SnapshotKeeper` needs of the view it snapshots."""

    seq: int

    def snapshot_size(self) -> tuple[int, int]:
        """(items held, catalog changes applied so far)."""
        ...

    async def prepare_snapshot(self) -> None:
        """Do the part of taking a snapshot that can yield (e.g. encode new records)."""
        ...

    async def decode_all(self) -> None:
        """Decode, a slice at a time, the items restored from a snapshot undecoded."""
        ...

    async def take_snapshot(self, vectors: Any = None) -> dict[str, bytes]:
        """The parts reflecting the view (and ``vectors``) at ``seq`` (called with the
        write lock held: nothing changes meanwhile, though it yields between steps)."""
        ...


class SnapshotKeeper:
    """Writes a view's snapshot at close (:meth:`save`) and in the background after enough
    changes (:meth:`start`; cancellable, failures logged; the same task first decodes, in
    short steps, the items a snapshot restored undecoded). ``lock`` is the memory's write
    lock, held while the parts are taken (not while they are written)."""

    def __init__(
        self,
        kv: KvBackend,
        view: Snapshotable,
        lock: asyncio.Lock,
        *,
        vectors: Callable[[], Any] = lambda: None,
        before_take: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.kv = kv
        self.view = view
        self.lock = lock
        self._vectors = vectors
        self._before_take = before_take
        self._task: asyncio.Task[None] | None = None
        self._changes_at_write = 0
        self._last_write = float("-inf")
        self.writes = 0  # snapshots this keeper stored

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _current(self) -> bool:
        return self._is_current(await self.kv.get(HEAD_KEY))

    def _is_current(self, raw: bytes | None) -> bool:
        """Whether the snapshot head ``raw`` is of this view's position and names every
        part this instance would write (a vector part, once an embedder is attached)."""
        try:
            head = None if raw is None else json.loads(raw)
            if head is None or int(head["seq"]) != self.view.seq:
                return False
            return self._vectors() is None or "vec" in head["parts"]
        except (ValueError, KeyError, TypeError):
            return False

    async def save(self, *, force: bool = False) -> bool:
        """Write a snapshot now if the store is large enough and the stored one is not of
        this position (``force``: whatever the size); whether one was written."""
        items, changed = self.view.snapshot_size()
        if items < MIN_ITEMS and not force:
            return False
        if await self._current():
            return False
        await self.view.prepare_snapshot()
        async with self.lock:
            if self._before_take is not None:
                await self._before_take()
            seq = self.view.seq
            parts = await self.view.take_snapshot(self._vectors())
        written = await write(self.kv, seq, parts)
        loop = asyncio.get_running_loop()
        self._last_write = loop.time()
        if written:
            self._changes_at_write = changed
            self.writes += 1
            log.info("index snapshot written at seq %d (%d items)", seq, items)
        else:
            log.info("index snapshot at seq %d not written: the store moved on", seq)
        return written

    async def _due(self, last_seen: int) -> bool:
        items, changed = self.view.snapshot_size()
        if items < MIN_ITEMS or self.view.seq != last_seen:  # small, or not quiet
            return False
        if asyncio.get_running_loop().time() - self._last_write < MIN_INTERVAL_S:
            return False
        raw = await self.kv.get(HEAD_KEY)
        if self._is_current(raw):
            return False
        stored = stored_seq(raw)
        return (
            stored is None
            or stored == self.view.seq  # a part is missing
            or changed - self._changes_at_write >= max(1000, items // 10)
            or self.view.seq - stored > changes.RETAIN // 2
        )

    async def _loop(self) -> None:
        last_seen = -1
        decoded = False
        while True:
            await asyncio.sleep(CHECK_S)
            try:
                if not decoded:  # in short steps, after open, not all at once at the
                    decoded = True  # first full scan (e.g. the TTL sweep)
                    await self.view.decode_all()
                if await self._due(last_seen):
                    await self.save()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("writing the index snapshot failed; the next open rebuilds")
            last_seen = self.view.seq
