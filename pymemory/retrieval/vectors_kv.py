"""Vectors persisted in a KvBackend: the ``vec:`` record codec and :class:`KvVectorStore`.

The in-memory index, its layout and its measurements are in :mod:`.vectors`; this module
adds the on-disk format of one vector record (:func:`encode_vector`, :func:`decode_vector`;
:func:`encode_group`, :func:`decode_group`: a memory's vector and its passages') and
the store that keeps one such record per memory in any :class:`~pymemory.storage.KvBackend`.

A memory of several passages (:mod:`.passages`) has a vector per passage beside its own,
all in its one record: they are written, checked and deleted with it, never apart. In
memory they are a second matrix (:attr:`KvVectorStore.passages`), passage ``p`` of memory
``id`` under the id ``"<id>#<p>"``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PymemoryError, ValidationError
from ..storage import changes, schema
from ..storage.base import MAX_KEY_CHARS, KvBackend, check_key, iter_prefix
from . import snapshot
from .vectors import NUMPY_DTYPES, DType, InMemoryVectorStore, check_vector_id, quantize

__all__ = [
    "EncodedBatch",
    "KvVectorStore",
    "decode_group",
    "decode_vector",
    "encode_group",
    "encode_vector",
]

log = logging.getLogger("pymemory")

LOAD_CHUNK = 4096  # records decoded at a time when a KvVectorStore loads


# --- codec ------------------------------------------------------------------------------

_MAGIC = b"PV"
_VERSION = 1
_CODE = {"float32": 0, "float16": 1, "int8": 2}
_DTYPE_OF_CODE = {v: k for k, v in _CODE.items()}
_HEADER = struct.Struct("<2sBBH")  # magic, version, dtype code, dim
_ITEMSIZE = {"float32": 4, "float16": 2, "int8": 1}


def encode_vector(row: np.ndarray, scale: float, dtype: str) -> bytes:
    """One stored row as bytes: a 6-byte header, the int8 scale (int8 only), the row."""
    header = _HEADER.pack(_MAGIC, _VERSION, _CODE[dtype], row.shape[0])
    body = np.ascontiguousarray(row, dtype=np.dtype(NUMPY_DTYPES[dtype]).newbyteorder("<"))
    if dtype == "int8":
        return header + struct.pack("<f", scale) + body.tobytes()
    return header + body.tobytes()


def decode_vector(raw: bytes) -> tuple[str, np.ndarray, float]:
    """Bytes from :func:`encode_vector` -> ``(dtype, row, scale)``; ValidationError if bad."""
    if len(raw) < _HEADER.size:
        raise ValidationError("vector record too short")
    magic, version, code, dim = _HEADER.unpack_from(raw)
    if magic != _MAGIC or version != _VERSION or code not in _DTYPE_OF_CODE:
        raise ValidationError("not a pymemory vector record (bad header)")
    dtype = _DTYPE_OF_CODE[code]
    offset = _HEADER.size
    scale = 1.0
    if dtype == "int8":
        if len(raw) < offset + 4:
            raise ValidationError("vector record too short")
        (scale,) = struct.unpack_from("<f", raw, offset)
        offset += 4
    if len(raw) != offset + dim * _ITEMSIZE[dtype]:
        raise ValidationError(f"vector record length does not match dim {dim}")
    row = np.frombuffer(raw, dtype=np.dtype(NUMPY_DTYPES[dtype]).newbyteorder("<"), offset=offset)
    if not (math.isfinite(scale) and np.isfinite(row.astype(np.float32)).all()):
        raise ValidationError("vector record holds non-finite values")
    return dtype, row.astype(NUMPY_DTYPES[dtype]), float(scale)


_GROUP = struct.Struct("<2sBBHH")  # magic, version 2, dtype code, dim, rows
_GROUP_VERSION = 2
#: A record holds at most this many rows (its memory's and one per passage).
MAX_GROUP_ROWS = 65535


def encode_group(rows: np.ndarray, scales: np.ndarray, dtype: str) -> bytes:
    """A memory's rows as one record: its own vector, then one per passage (the int8
    scales, then the rows). A single row is written as :func:`encode_vector`."""
    n, dim = rows.shape
    if n == 1:
        return encode_vector(rows[0], float(scales[0]), dtype)
    if not 1 < n <= MAX_GROUP_ROWS:
        raise ValidationError(f"a vector record holds 1 to {MAX_GROUP_ROWS} rows, got {n}")
    header = _GROUP.pack(_MAGIC, _GROUP_VERSION, _CODE[dtype], dim, n)
    body = np.ascontiguousarray(rows, dtype=np.dtype(NUMPY_DTYPES[dtype]).newbyteorder("<"))
    head = np.asarray(scales, dtype="<f4").tobytes() if dtype == "int8" else b""
    return header + head + body.tobytes()


def decode_group(raw: bytes) -> tuple[str, np.ndarray, np.ndarray]:
    """Bytes from :func:`encode_group` (or :func:`encode_vector`) -> ``(dtype, rows,
    scales)``, ``rows`` of shape (n, dim); ValidationError if bad."""
    if len(raw) >= 3 and raw[2] != _GROUP_VERSION:
        dtype, row, scale = decode_vector(raw)
        return dtype, row[None, :], np.array([scale], dtype=np.float32)
    if len(raw) < _GROUP.size:
        raise ValidationError("vector record too short")
    magic, _version, code, dim, n = _GROUP.unpack_from(raw)
    if magic != _MAGIC or code not in _DTYPE_OF_CODE or n < 2:
        raise ValidationError("not a pymemory vector record (bad header)")
    dtype = _DTYPE_OF_CODE[code]
    offset = _GROUP.size
    scales = np.ones(n, dtype=np.float32)
    if dtype == "int8":
        if len(raw) < offset + 4 * n:
            raise ValidationError("vector record too short")
        scales = np.frombuffer(raw, dtype="<f4", count=n, offset=offset).astype(np.float32)
        offset += 4 * n
    if len(raw) != offset + n * dim * _ITEMSIZE[dtype]:
        raise ValidationError(f"vector record length does not match {n} rows of dim {dim}")
    le = np.dtype(NUMPY_DTYPES[dtype]).newbyteorder("<")
    rows = np.frombuffer(raw, dtype=le, offset=offset).reshape(n, dim)
    if not (np.isfinite(scales).all() and np.isfinite(rows.astype(np.float32)).all()):
        raise ValidationError("vector record holds non-finite values")
    return dtype, rows.astype(NUMPY_DTYPES[dtype]), scales


_NO_ROWS = np.zeros(0, dtype=np.int64)


def passage_id(item_id: str, p: int) -> str:
    """The id of passage ``p`` of memory ``item_id`` in :attr:`KvVectorStore.passages`."""
    return f"{item_id}#{p}"


def _record_size(dtype: str, dim: int) -> int:
    return _HEADER.size + (4 if dtype == "int8" else 0) + dim * _ITEMSIZE[dtype]


# --- the persistent store ---------------------------------------------------------------


@dataclass(frozen=True)
class EncodedBatch:
    """Vectors validated and quantised (:meth:`KvVectorStore.encode`): the rows to hold in
    memory and the KV records (``puts``, one per id) that persist them; passage rows, if
    any, with the index in ``ids`` of the memory each belongs to (``passage_of``)."""

    ids: list[str]
    rows: np.ndarray
    scales: np.ndarray
    puts: list[tuple[str, bytes]]
    passage_ids: list[str] = field(default_factory=list)
    passage_rows: np.ndarray | None = None
    passage_scales: np.ndarray | None = None
    passage_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class KvVectorStore(InMemoryVectorStore):
    """An :class:`InMemoryVectorStore` persisted in a KvBackend, one record per memory:
    its vector, and those of its passages (held apart, in :attr:`passages`).

    Open with ``await KvVectorStore.open(kv, dim, dtype)``: it loads every record under
    ``prefix`` into the matrix. (Or construct it and ``await store.load()`` yourself.)
    Records are written in the store's dtype (see :func:`encode_vector`); records of
    another dtype are converted on load, so a store can switch dtype in place. A record
    of another dimension means the embedder changed and raises ValidationError at load (a
    Memory switches embedders before it loads: :mod:`.space`);
    an unreadable record is skipped, logged and listed in ``corrupt_keys``.

    The KV store is the truth: ``upsert`` and ``delete`` write one atomic batch first and
    touch the in-memory matrix only once the batch has landed.

    ``owner`` (given the store's ``meta:embedder`` record, whether these vectors are
    still the store's: :mod:`.space`) is checked at load and by :meth:`check_owner`; once
    it says no, the store is ``stale``: empty, and it reads no more records.
    """

    def __init__(
        self,
        kv: KvBackend,
        dim: int,
        dtype: DType = "int8",
        *,
        prefix: str = "vec:",
        capacity: int = 64,
        owner: Callable[[bytes | None], bool] | None = None,
    ) -> None:
        super().__init__(dim, dtype, capacity=capacity)
        if not isinstance(prefix, str) or not prefix or len(prefix) >= MAX_KEY_CHARS:
            raise ValidationError("prefix must be a non-empty string")
        self.kv = kv
        self.prefix = prefix
        self.corrupt_keys: list[str] = []
        self._loaded = False
        self._write_lock = asyncio.Lock()
        self.owner = owner
        self.stale = False
        #: The passages' vectors, ``"<id>#<p>"`` for passage ``p`` of memory ``id``.
        self.passages = InMemoryVectorStore(dim, dtype)
        self._groups: dict[str, np.ndarray] = {}  # memory id -> its passages' rows, in order

    @classmethod
    async def open(
        cls,
        kv: KvBackend,
        dim: int,
        dtype: DType = "int8",
        *,
        prefix: str = "vec:",
        owner: Callable[[bytes | None], bool] | None = None,
    ) -> KvVectorStore:
        store = cls(kv, dim, dtype, prefix=prefix, owner=owner)
        await store.load()
        return store

    @property
    def record_bytes(self) -> int:
        """Bytes of one persisted record's value (the key is extra)."""
        return _record_size(self.dtype, self.dim)

    def key(self, id: str) -> str:
        return check_key(self.prefix + check_vector_id(id))

    async def load(self) -> None:
        """Read every record under the prefix into memory (replacing what is there): the
        matrix of the index snapshot (:mod:`.snapshot`) and the records changed since, or
        else every record."""
        if not await self.check_owner():
            self._loaded = True
            return
        if self.prefix == schema.VEC and await self._load_snapshot():
            return
        fresh = InMemoryVectorStore(self.dim, self.dtype)
        fresh_passages = InMemoryVectorStore(self.dim, self.dtype)
        corrupt: list[str] = []
        ids: list[str] = []
        raws: list[bytes] = []
        async for key, raw in iter_prefix(self.kv, self.prefix):
            ids.append(key[len(self.prefix) :])
            raws.append(raw)
            if len(ids) == LOAD_CHUNK:  # decode as we go: not all raw records kept
                self._decode_into(fresh, fresh_passages, ids, raws, corrupt)
                ids, raws = [], []
        if ids:
            self._decode_into(fresh, fresh_passages, ids, raws, corrupt)
        self._adopt(fresh, fresh_passages)
        self.corrupt_keys = corrupt
        self._loaded = True

    async def check_owner(self) -> bool:
        """Whether these vectors are still the store's (``owner`` reads ``meta:embedder``);
        if not, empty the matrix and read no more records."""
        if self.stale:
            return False
        if self.owner is None or self.owner(await self.kv.get(schema.META_EMBEDDER)):
            return True
        self.go_stale()
        return False

    def go_stale(self) -> None:
        """The store switched to another embedder's vectors: hold none from now on."""
        if not self.stale:
            log.warning(
                "the store's vectors are now another embedder's: this instance writes no "
                "vectors and ranks by BM25 alone until it is opened with that embedder"
            )
        self.stale = True
        empty = InMemoryVectorStore(self.dim, self.dtype)
        self._adopt(empty, InMemoryVectorStore(self.dim, self.dtype))
        self.corrupt_keys = []

    def _adopt(self, fresh: InMemoryVectorStore, passages: InMemoryVectorStore) -> None:
        """Take over the matrix and columns of ``fresh`` (same dim and dtype), and
        ``passages`` as the passages' vectors."""
        self.passages = passages
        self._groups = {}
        self._index_passages(passages.ids())
        names = ["_rows", "_inv_norm", "_scale", "_alive", "_id_at", "_slot_of", "_free"]
        if hasattr(fresh, "_codes"):
            names.append("_codes")  # the sign codes of the coarse scan, if this store has them
        for name in names:
            setattr(self, name, getattr(fresh, name))

    async def _load_snapshot(self) -> bool:
        """Load the snapshot's matrix, then re-read the vectors changed since; False
        (nothing changed here) when there is no usable one."""
        loaded = await snapshot.read(self.kv, "vec")
        if loaded is None:
            return False
        part = loaded.part
        if part.meta.get("dim") != self.dim or part.meta.get("dtype") != self.dtype:
            log.info("vector snapshot is of another dim or dtype: reading every record")
            return False
        found = await changes.changes_since(self.kv, loaded.seq)
        if found.keys is None:
            log.info("vector snapshot is older than the change log reaches: reading all")
            return False
        try:
            ids = part.strings["ids"]
            rows = part.arrays["rows"].reshape(len(ids), self.dim)
            scales = part.arrays["scale"]
            inv_norm = part.arrays["inv_norm"]
            n = len(ids)
            if rows.shape[0] != n or scales.shape[0] != n or inv_norm.shape[0] != n:
                raise ValueError("vector snapshot columns differ in length")
            # Rows 0..n-1 in the snapshot's order, set at once (the layout of
            # InMemoryVectorStore; its sign codes see a new matrix and rebuild when used).
            fresh = InMemoryVectorStore(self.dim, self.dtype, capacity=max(64, n))
            fresh._rows[:n] = rows
            fresh._scale[:n] = scales
            fresh._inv_norm[:n] = inv_norm
            fresh._alive[:n] = True
            fresh._id_at = list(ids)
            fresh._slot_of = dict(zip(ids, range(n), strict=True))
            passages = InMemoryVectorStore(self.dim, self.dtype)
            if "passage_ids" in part.strings:  # older snapshots have none: re-embedded
                pids = part.strings["passage_ids"]
                passages._put_rows(
                    list(pids),
                    part.arrays["passage_rows"].reshape(len(pids), self.dim),
                    part.arrays["passage_scale"],
                )
        except (KeyError, ValueError) as exc:
            log.warning("vector snapshot unreadable (%s): reading every record", exc)
            return False
        self._adopt(fresh, passages)
        self.corrupt_keys = list(part.strings["corrupt"])
        self._loaded = True
        await self.reload(k[len(self.prefix) :] for k in found.keys if k.startswith(self.prefix))
        return True

    async def catch_up(self, seq: int) -> None:
        """Re-read the records the change log says changed after ``seq`` (a position read
        before this store loaded), or every record if the log no longer reaches back."""
        found = await changes.changes_since(self.kv, seq)
        if found.keys is None:
            await self.load()
            return
        await self.reload(k[len(self.prefix) :] for k in found.keys if k.startswith(self.prefix))

    def snapshot_part(self) -> bytes:
        """The matrices as a snapshot part (:mod:`.snapshot`): live rows, their ids, scales."""
        self._check_loaded()
        slots = np.flatnonzero(self._alive[: len(self._id_at)])
        ids = [self._id_at[s] or "" for s in slots.tolist()]
        ps = self.passages
        pslots = np.flatnonzero(ps._alive[: len(ps._id_at)])
        pids = [ps._id_at[s] or "" for s in pslots.tolist()]
        arrays = {
            "rows": self._rows[slots].reshape(-1),
            "scale": self._scale[slots],
            "inv_norm": self._inv_norm[slots],
            "passage_rows": ps._rows[pslots].reshape(-1),
            "passage_scale": ps._scale[pslots],
        }
        meta = {"dim": self.dim, "dtype": self.dtype}
        strings = {"ids": ids, "corrupt": self.corrupt_keys, "passage_ids": pids}
        return snapshot.pack(meta, arrays, strings, {})

    def _decode_into(
        self,
        target: InMemoryVectorStore,
        passages: InMemoryVectorStore,
        ids: list[str],
        raws: list[bytes],
        corrupt: list[str],
    ) -> None:
        size = _record_size(self.dtype, self.dim)
        expected = _HEADER.pack(_MAGIC, _VERSION, _CODE[self.dtype], self.dim)
        # Fast path: every record of this store's dtype and dim decoded in one go.
        fast = [j for j, r in enumerate(raws) if len(r) == size and r[: _HEADER.size] == expected]
        if fast:
            buf = np.frombuffer(b"".join(raws[j] for j in fast), dtype=np.uint8)
            buf = buf.reshape(len(fast), size)
            offset = _HEADER.size
            if self.dtype == "int8":
                scales = buf[:, offset : offset + 4].copy().view("<f4").reshape(-1)
                offset += 4
            else:
                scales = np.ones(len(fast), dtype=np.float32)
            body = np.ascontiguousarray(buf[:, offset:])
            rows = body.view(np.dtype(NUMPY_DTYPES[self.dtype]).newbyteorder("<")).reshape(
                len(fast), self.dim
            )
            rows = rows.astype(NUMPY_DTYPES[self.dtype])
            finite = np.isfinite(rows.astype(np.float32)).all(axis=1) & np.isfinite(scales)
            good = [fast[j] for j in np.flatnonzero(finite).tolist()]
            for j in np.flatnonzero(~finite).tolist():
                corrupt.append(self.prefix + ids[fast[j]])
            target._put_rows(
                [ids[j] for j in good], rows[finite], scales[finite].astype(np.float32)
            )
        done = set(fast)
        for j, raw in enumerate(raws):
            if j in done:
                continue
            key = self.prefix + ids[j]
            try:
                dtype, rows, scales = decode_group(raw)
            except ValidationError as exc:
                log.error("skipping unreadable vector record %s: %s", key, exc)
                corrupt.append(key)
                continue
            if rows.shape[1] != self.dim:
                raise ValidationError(
                    f"vector record {key} has dim {rows.shape[1]} but this store has dim "
                    f"{self.dim}: the embedder changed; delete the records under "
                    f"{self.prefix!r} (or use another prefix) and embed again"
                )
            pids = [passage_id(ids[j], p) for p in range(rows.shape[0] - 1)]
            if dtype == self.dtype:
                target._put_rows([ids[j]], rows[:1], scales[:1])
                passages._put_rows(pids, rows[1:], scales[1:])
            else:  # convert from another dtype
                vecs = rows.astype(np.float32) * (scales[:, None] if dtype == "int8" else 1.0)
                target.put([ids[j]], vecs[:1])
                if pids:
                    passages.put(pids, vecs[1:])
        if corrupt:
            log.error("%d unreadable vector records under %r", len(corrupt), self.prefix)

    def _check_loaded(self) -> None:
        if not self._loaded:
            raise PymemoryError("KvVectorStore not loaded: use `await KvVectorStore.open(...)`")

    async def upsert(self, ids: Sequence[str], vectors: Any) -> None:
        """Write the vectors of ``ids`` as one atomic KV batch, then update memory."""
        await self.apply(upserts=(ids, vectors))

    async def delete(self, ids: Sequence[str]) -> None:
        """Delete ``ids`` as one atomic KV batch, then update memory."""
        await self.apply(deletes=ids)

    async def apply(
        self,
        *,
        upserts: tuple[Sequence[str], Any] | None = None,
        deletes: Sequence[str] = (),
    ) -> None:
        """Upsert and delete in one atomic KV batch (an id in both ends up upserted)."""
        self._check_loaded()
        if isinstance(deletes, str):
            raise ValidationError("deletes must be a sequence of ids, not a str")
        dead = [check_vector_id(i) for i in deletes]
        batch = self.encode(*upserts) if upserts is not None else self.encode([], None)
        dead_keys = [self.key(i) for i in dead]
        async with self._write_lock:
            if batch.puts:
                await self.kv.put_many(batch.puts, deletes=dead_keys)
            elif dead_keys:
                await self.kv.delete_many(dead_keys)
            self.apply_local(batch, deletes=dead)

    def encode(
        self, ids: Sequence[str], vectors: Any, passages: Sequence[Any] | None = None
    ) -> EncodedBatch:
        """Validate and quantise a batch into its KV records, touching nothing: write
        ``.puts`` yourself (e.g. inside a transaction), then :meth:`apply_local` it.
        ``passages``: for each id, its passages' vectors (an (n, dim) array; None or empty
        for a memory of one passage)."""
        rows = np.zeros((0, self.dim), dtype=NUMPY_DTYPES[self.dtype])
        scales = np.zeros(0, dtype=np.float32)
        out_ids: list[str] = []
        if ids:
            if passages is not None and (len(passages) != len(ids) or len(set(ids)) < len(ids)):
                raise ValidationError("passages need one entry per id, and distinct ids")
            out_ids, unit = self._prepare(ids, vectors)
            rows, scales = quantize(unit, self.dtype)
        groups = [(rows[j : j + 1], scales[j : j + 1]) for j in range(len(out_ids))]
        pids: list[str] = []
        prows, pscales, pof = [], [], []
        for j, group in enumerate(passages or ()):
            if group is None or len(group) == 0:
                continue
            ids_j = [passage_id(out_ids[j], p) for p in range(len(group))]
            ids_j, unit_j = self.passages._prepare(ids_j, group)
            rows_j, scales_j = quantize(unit_j, self.dtype)
            groups[j] = (np.concatenate([rows[j : j + 1], rows_j]),
                         np.concatenate([scales[j : j + 1], scales_j]))  # fmt: skip
            pids += ids_j
            prows.append(rows_j)
            pscales.append(scales_j)
            pof.append(np.full(len(ids_j), j, dtype=np.int64))
        puts = [(self.key(i), encode_group(*groups[j], self.dtype)) for j, i in enumerate(out_ids)]
        if not pids:
            return EncodedBatch(out_ids, rows, scales, puts)
        return EncodedBatch(
            out_ids, rows, scales, puts, pids, np.concatenate(prows), np.concatenate(pscales),
            np.concatenate(pof),
        )  # fmt: skip

    def apply_local(
        self,
        batch: EncodedBatch | None = None,
        *,
        deletes: Iterable[str] = (),
        keep: Iterable[int] | None = None,
    ) -> None:
        """Update the in-memory matrix only, after the records were written elsewhere:
        drop ``deletes``, then put the rows of ``batch`` (only indices ``keep`` if given)."""
        self._check_loaded()
        upserted: list[str] = []
        if batch is not None and batch.ids:
            pick = list(range(len(batch.ids))) if keep is None else list(keep)
            upserted = [batch.ids[j] for j in pick]
            self._drop_passages(upserted)
            self._put_rows(upserted, batch.rows[pick], batch.scales[pick])
            if batch.passage_ids:
                assert batch.passage_rows is not None and batch.passage_scales is not None
                took = np.flatnonzero(np.isin(batch.passage_of, pick))
                self._put_passages(
                    [batch.passage_ids[p] for p in took.tolist()],
                    batch.passage_rows[took],
                    batch.passage_scales[took],
                )
        kept = set(upserted)
        self._remove([i for i in deletes if i not in kept])

    def passage_count(self, id: str) -> int:
        """How many passage vectors memory ``id`` has (0: none, or one passage)."""
        return len(self._groups.get(id, ()))

    def passage_slots(self, id: str) -> np.ndarray:
        """Rows of memory ``id``'s passages in :attr:`passages`, in text order."""
        return self._groups.get(id, _NO_ROWS)

    def _put_passages(self, pids: list[str], rows: np.ndarray, scales: np.ndarray) -> None:
        """Put whole groups of passage rows (every passage of each memory named)."""
        self.passages._put_rows(pids, rows, scales)
        self._index_passages(pids)

    def _index_passages(self, pids: Iterable[str]) -> None:
        by_memory: dict[str, list[str]] = {}
        for pid in pids:
            by_memory.setdefault(pid.rpartition("#")[0], []).append(pid)
        for id, group in by_memory.items():
            group.sort(key=lambda pid: int(pid.rpartition("#")[2]))
            self._groups[id] = self.passages.slots_of(group)

    def _drop_passages(self, ids: Iterable[str]) -> None:
        if self._groups:
            self.passages._remove(
                [passage_id(i, p) for i in ids for p in range(len(self._groups.pop(i, ())))]
            )

    def _remove(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        super()._remove(ids)
        self._drop_passages(ids)

    async def reload(self, ids: Iterable[str]) -> None:
        """Re-read the records of ``ids`` from the KV store into memory (another writer
        changed them): present ones replace the row, absent ones drop it."""
        self._check_loaded()
        if self.stale:
            return
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), LOAD_CHUNK):
            chunk = ids[start : start + LOAD_CHUNK]
            raws = await self.kv.get_many([self.prefix + i for i in chunk])
            fresh = InMemoryVectorStore(self.dim, self.dtype)
            passages = InMemoryVectorStore(self.dim, self.dtype)
            corrupt: list[str] = []
            present = [(i, r) for i, r in zip(chunk, raws, strict=True) if r is not None]
            self._decode_into(
                fresh, passages, [i for i, _ in present], [r for _, r in present], corrupt
            )
            self._remove(chunk)
            for source, put in ((fresh, self._put_rows), (passages, self._put_passages)):
                found = source.ids()
                slots = source.slots_of(found)
                put(found, source._rows[slots], source._scale[slots])
            self.corrupt_keys = [k for k in self.corrupt_keys if k[len(self.prefix) :] not in chunk]
            self.corrupt_keys += corrupt

    def search(
        self, query: Any, k: int, allowed_ids: Iterable[str] | None = None
    ) -> list[tuple[str, float]]:
        self._check_loaded()
        return super().search(query, k, allowed_ids)

    def scores(self, query: Any, which: Sequence[str] | np.ndarray) -> np.ndarray:
        self._check_loaded()
        return super().scores(query, which)

    def put(self, ids: Sequence[str], vectors: Any) -> None:
        raise PymemoryError("KvVectorStore writes are async: use `await store.upsert(...)`")

    def remove(self, ids: Sequence[str]) -> None:
        raise PymemoryError("KvVectorStore writes are async: use `await store.delete(...)`")
