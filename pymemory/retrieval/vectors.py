"""Vector stores for dense retrieval: brute-force cosine top-k over a compact numpy matrix.

Two stores share one protocol (:class:`VectorStore`):

* :class:`InMemoryVectorStore`: vectors in memory only (a throwaway corpus, tests).
* :class:`KvVectorStore`: the same matrix, persisted in any :class:`~pymemory.storage.KvBackend`
  under ``<prefix><id>`` (default ``vec:<id>``), one compact record per memory (its
  passages' vectors with it, :mod:`.vectors_kv`), loaded
  whole at open. Every write is one atomic KV batch, made before memory is touched, so a
  failed write changes nothing. It lives in :mod:`.vectors_kv`.

Layout. Vectors are L2-normalised on the way in and kept in one ``(capacity, dim)``
matrix of the store's ``dtype`` (capacity doubles as the store grows):

=========  ==========================================  ===============  ==============
dtype      row                                         bytes per item   100k x 384
=========  ==========================================  ===============  ==============
int8       ``round(x / s)``, ``s = max|x| / 127``      393 (384 + 9)    39 MB
float16    the unit vector rounded to half precision   777 (768 + 9)    78 MB
float32    the unit vector                             1545 (1536 + 9)  155 MB
=========  ==========================================  ===============  ==============

(The 9 extra bytes per item are ``1 / ||row||``, the int8 scale and a live flag; the id
strings and the id -> slot dict come on top.) Measured against float32 on 100k clustered
384-d vectors, top-10 overlap is 0.9995 for float16 and 0.989 for int8 (top-1 agreement
1.000 and 0.985); on MiniLM embeddings of the eval suites it is 1.000 and 0.994.

``int8`` is the default: a quarter of the memory of float32, and the fastest search,
because numpy converts int8 cheaply while its float16 conversion is slow. Measured on
100k x 384 (CPython, one core): about 8 ms per query for int8, 10 ms for float32 and
29 ms for float16; a bulk ``put`` of the 100k vectors takes about a second.

Per row the store also keeps ``1 / ||row||`` (float32), computed from the *stored* row, so
a score is the exact cosine between the query and the stored (rounded) direction::

    score(q, row) = (row . q) / (||row|| * ||q||)      (0 for a zero row or query)

Search upcasts the matrix block by block (``BLOCK_ROWS`` rows at a time) into a reused
float64 buffer and multiplies with BLAS, so the temporary memory stays small whatever
the store size. Dot products are accumulated in float64 and rounded to float32: BLAS
kernels sum the rows at the edge of a block in another order than the rest, and in
float32 that makes a row's score depend on its position by an ulp or so; after rounding
from float64 it does not, so equal vectors tie exactly and a store updated in place
scores like one built afresh. Results are ordered by score, then by id.

Large stores. A search over ``coarse_min_rows`` rows or more (default 20,000) first
shortlists rows by the Hamming distance of 1-bit sign codes (:mod:`.coarse`, 48 bytes per
row at 384 dims, kept in step with every write once built) and scores only the shortlist
exactly: a fraction of the time, exact scores, top-10 overlap with the full scan 0.99+.

Slots. Each id owns a row (a slot). ``upsert`` overwrites an id's row in place or takes
the lowest free slot; ``delete`` frees the slot for reuse. Nothing is ever rebuilt, and
the scores depend only on the vectors present, not on the order of updates.

Only numpy and the standard library are used; nothing here starts a thread.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from ..errors import ValidationError, shown
from .coarse import COARSE_MIN_ROWS, SignCodes, candidate_count, hamming, shortlist, sign_codes

__all__ = [
    "BLOCK_ROWS",
    "DTYPES",
    "InMemoryVectorStore",
    "VectorStore",
]

DType = Literal["float32", "float16", "int8"]
DTYPES: tuple[str, ...] = ("float32", "float16", "int8")
NUMPY_DTYPES = {"float32": np.float32, "float16": np.float16, "int8": np.int8}

#: Rows upcast and multiplied at a time during a search (1024 x 384 x 4 B = 1.5 MB: small
#: enough to stay in cache, and below the size where a threaded BLAS starts threads, whose
#: start-up cost dominates a matrix-vector product).
BLOCK_ROWS = 1024


def _have_blas() -> bool:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]  # type: ignore[func-returns-value]
    except Exception:  # an older numpy: assume the usual wheels' BLAS
        return True
    return bool(blas.get("found"))


#: Without a BLAS (Pyodide's numpy), numpy's own ``dot`` loop is 1.7x slower than
#: ``einsum`` for the scan (3.5 against 5.9 ms over 10k x 384 there, the same float32
#: scores); with one, ``dot`` is 2x faster than ``einsum``.
HAVE_BLAS = _have_blas()
MAX_DIM = 65535


@runtime_checkable
class VectorStore(Protocol):
    """Id -> unit vector, with brute-force cosine search."""

    dim: int
    dtype: str

    def __len__(self) -> int: ...

    def __contains__(self, id: object) -> bool: ...

    def ids(self) -> list[str]:
        """Every id held, sorted."""
        ...

    def get(self, id: str) -> np.ndarray | None:
        """The stored vector of ``id`` (float32, dequantised), or None."""
        ...

    async def upsert(self, ids: Sequence[str], vectors: Any) -> None:
        """Add or replace the vectors of ``ids`` (rows of ``vectors``) as one batch."""
        ...

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove ``ids`` (unknown ids are ignored) as one batch."""
        ...

    def search(
        self, query: Any, k: int, allowed_ids: Iterable[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` ids most cosine-similar to ``query``, best first, with their scores."""
        ...

    def scores(self, query: Any, which: Sequence[str] | np.ndarray) -> np.ndarray:
        """Cosine of ``query`` with each of ``which`` (ids, or an int array of slots)."""
        ...


# --- quantisation -----------------------------------------------------------------------


def quantize(unit: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows of unit vectors -> (stored rows, per-row dequantisation scale)."""
    n = unit.shape[0]
    if dtype == "float32":
        return unit.astype(np.float32, copy=True), np.ones(n, dtype=np.float32)
    if dtype == "float16":
        return unit.astype(np.float16), np.ones(n, dtype=np.float32)
    peak = np.abs(unit).max(axis=1) if unit.shape[1] else np.zeros(n, dtype=np.float32)
    scale = (peak / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(unit / safe[:, None]), -127, 127).astype(np.int8)
    return q, scale


def _inv_norms(rows: np.ndarray) -> np.ndarray:
    """``1 / ||row||`` for stored rows (0 for a zero row), computed row by row in float64."""
    out = np.zeros(rows.shape[0], dtype=np.float32)
    for start in range(0, rows.shape[0], BLOCK_ROWS):
        chunk = rows[start : start + BLOCK_ROWS].astype(np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", chunk, chunk))
        nonzero = norms > 0
        out[start : start + chunk.shape[0]][nonzero] = 1.0 / norms[nonzero]
    return out


# --- the in-memory store ----------------------------------------------------------------


def _check_dim(dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIM:
        raise ValidationError(f"dim must be an int in 1..{MAX_DIM}, got {shown(dim)}")
    return dim


def _check_dtype(dtype: object) -> str:
    if dtype not in DTYPES:
        raise ValidationError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return dtype  # type: ignore[return-value]


def check_vector_id(id: object) -> str:
    """``id`` if it is a non-empty string."""
    if not isinstance(id, str) or not id:
        raise ValidationError(f"vector ids must be non-empty strings, got {id!r}")
    return id


class InMemoryVectorStore:
    """Unit vectors in a compact numpy matrix; cosine top-k by brute force.

    ``dtype`` trades accuracy for memory and speed: ``"int8"`` (default: 1 byte per value
    and a per-row scale, 4x smaller than float32, top-10 overlap with exact search about
    0.99), ``"float16"`` (2 bytes, overlap about 0.9995, 3x slower to search in numpy) or
    ``"float32"`` (exact). See the module docstring for measurements.
    """

    #: Searches over at least this many rows shortlist by sign codes first (None: always
    #: exact). Set it per store to compare or to opt out.
    coarse_min_rows: int | None = COARSE_MIN_ROWS

    def __init__(self, dim: int, dtype: DType = "int8", *, capacity: int = 64) -> None:
        self.dim = _check_dim(dim)
        self.dtype = _check_dtype(dtype)
        capacity = max(1, operator.index(capacity))
        self._rows = np.zeros((capacity, self.dim), dtype=NUMPY_DTYPES[self.dtype])
        self._inv_norm = np.zeros(capacity, dtype=np.float32)
        self._scale = np.zeros(capacity, dtype=np.float32)
        self._alive = np.zeros(capacity, dtype=bool)
        self._id_at: list[str | None] = []
        self._slot_of: dict[str, int] = {}
        self._free: list[int] = []  # a min-heap: the lowest free slot is reused first
        self._codes = SignCodes(self.dim)  # built on the first large search

    # --- introspection ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, id: object) -> bool:
        return id in self._slot_of

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, dtype={self.dtype!r}, items={len(self)})"

    def ids(self) -> list[str]:
        return sorted(self._slot_of)

    @property
    def nbytes(self) -> int:
        """Bytes held by the numpy arrays (the matrix, per-row columns and sign codes once
        built), at capacity."""
        return int(
            self._rows.nbytes
            + self._inv_norm.nbytes
            + self._scale.nbytes
            + self._alive.nbytes
            + self._codes.nbytes
        )

    @property
    def bytes_per_item(self) -> int:
        """Numpy bytes per stored row (excluding the id strings and capacity slack)."""
        row = self._rows.itemsize * self.dim + self._inv_norm.itemsize + self._scale.itemsize
        return int(row + self._alive.itemsize)

    def slot_of(self, id: str) -> int | None:
        """The row of ``id``, or None. Slots are stable until the id is deleted."""
        return self._slot_of.get(id)

    def slots_of(self, ids: Iterable[str]) -> np.ndarray:
        """Rows of ``ids`` as int64, -1 where an id is unknown."""
        get = self._slot_of.get
        return np.fromiter((get(i, -1) for i in ids), dtype=np.int64)

    def id_at(self, slot: int) -> str | None:
        return self._id_at[slot] if 0 <= slot < len(self._id_at) else None

    def get(self, id: str) -> np.ndarray | None:
        slot = self._slot_of.get(id)
        if slot is None:
            return None
        row = self._rows[slot].astype(np.float32)
        if self.dtype == "int8":
            row *= self._scale[slot]
        return row

    def stored(self, id: str) -> tuple[np.ndarray, float] | None:
        """The raw stored row (a copy, in the store's dtype) and its int8 scale."""
        slot = self._slot_of.get(id)
        if slot is None:
            return None
        return self._rows[slot].copy(), float(self._scale[slot])

    # --- updates ----------------------------------------------------------------------

    def _prepare(self, ids: Sequence[str], vectors: Any) -> tuple[list[str], np.ndarray]:
        """Validate a batch; return the ids and their unit vectors (float32)."""
        if isinstance(ids, str):
            raise ValidationError("ids must be a sequence of str, not a str")
        ids = [check_vector_id(i) for i in ids]
        try:
            arr = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError):
            raise ValidationError("vectors must be a numeric array") from None
        if arr.ndim == 1 and len(ids) == 1:
            arr = arr[None, :]
        if arr.shape != (len(ids), self.dim):
            raise ValidationError(
                f"vectors must have shape ({len(ids)}, {self.dim}), got {arr.shape}"
            )
        if not np.isfinite(arr).all():
            raise ValidationError("vectors must be finite")
        if len(set(ids)) != len(ids):  # later duplicates of an id win
            last = {id: j for j, id in enumerate(ids)}
            keep = sorted(last.values())
            ids = [ids[j] for j in keep]
            arr = arr[keep]
        norms = np.linalg.norm(arr.astype(np.float64), axis=1)
        unit = arr / np.where(norms > 0, norms, 1.0)[:, None].astype(np.float32)
        return ids, unit.astype(np.float32)

    def _put_rows(self, ids: list[str], rows: np.ndarray, scales: np.ndarray) -> None:
        """Store already-quantised rows (in this store's dtype) under ``ids``."""
        if not ids:
            return
        slots = np.empty(len(ids), dtype=np.int64)
        for j, id in enumerate(ids):
            slot = self._slot_of.get(id)
            if slot is None:
                slot = self._new_slot()
                self._slot_of[id] = slot
                self._id_at[slot] = id
            slots[j] = slot
        self._rows[slots] = rows
        self._codes.put(self._rows, slots, rows)
        self._scale[slots] = scales
        self._inv_norm[slots] = _inv_norms(rows)
        self._alive[slots] = True

    def _new_slot(self) -> int:
        if self._free:
            return heapq.heappop(self._free)
        slot = len(self._id_at)
        self._id_at.append(None)
        if slot >= self._rows.shape[0]:
            self._grow(max(2 * self._rows.shape[0], slot + 1))
        return slot

    def _grow(self, capacity: int) -> None:
        def grown(old: np.ndarray) -> np.ndarray:
            new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: old.shape[0]] = old
            return new

        old = self._rows
        self._rows = grown(old)
        self._codes.grow(old, self._rows)
        self._inv_norm = grown(self._inv_norm)
        self._scale = grown(self._scale)
        self._alive = grown(self._alive)

    def _remove(self, ids: Iterable[str]) -> None:
        for id in ids:
            slot = self._slot_of.pop(id, None)
            if slot is None:
                continue
            self._id_at[slot] = None
            self._alive[slot] = False
            self._inv_norm[slot] = 0.0
            self._scale[slot] = 0.0
            self._rows[slot] = 0
            self._codes.clear(self._rows, slot)
            heapq.heappush(self._free, slot)
        # Give trailing free slots back so the scanned range stays tight.
        end = len(self._id_at)
        while end and self._id_at[end - 1] is None:
            end -= 1
        if end < len(self._id_at):
            del self._id_at[end:]
            self._free = [s for s in self._free if s < end]
            heapq.heapify(self._free)

    def put(self, ids: Sequence[str], vectors: Any) -> None:
        """Synchronous upsert: add or replace the vectors of ``ids``."""
        ids, unit = self._prepare(ids, vectors)
        rows, scales = quantize(unit, self.dtype)
        self._put_rows(ids, rows, scales)

    def remove(self, ids: Sequence[str]) -> None:
        """Synchronous delete; unknown ids are ignored."""
        if isinstance(ids, str):
            raise ValidationError("ids must be a sequence of str, not a str")
        self._remove([check_vector_id(i) for i in ids])

    async def upsert(self, ids: Sequence[str], vectors: Any) -> None:
        self.put(ids, vectors)

    async def delete(self, ids: Sequence[str]) -> None:
        self.remove(ids)

    # --- queries ----------------------------------------------------------------------

    def _query(self, query: Any) -> np.ndarray | None:
        """The query as a float64 unit vector, or None for a zero vector."""
        try:
            q = np.asarray(query, dtype=np.float32)
        except (TypeError, ValueError):
            raise ValidationError("query must be a numeric vector") from None
        if q.ndim == 2 and q.shape[0] == 1:
            q = q[0]
        if q.shape != (self.dim,):
            raise ValidationError(f"query must have shape ({self.dim},), got {q.shape}")
        if not np.isfinite(q).all():
            raise ValidationError("query must be finite")
        q64 = q.astype(np.float64)
        norm = float(np.linalg.norm(q64))
        if norm == 0.0:
            return None
        return q64 / norm

    def _dot(self, rows: np.ndarray, q: np.ndarray, out: np.ndarray, buf: np.ndarray) -> None:
        """``out = rows @ q`` in float64, upcasting through the reused buffer ``buf``."""
        tmp = buf[: rows.shape[0]]
        np.copyto(tmp, rows, casting="unsafe")
        if HAVE_BLAS:
            np.dot(tmp, q, out=out)
        else:
            np.einsum("ij,j->i", tmp, q, out=out)

    def _slot_scores(self, q: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Cosine scores (float32) of live ``slots`` (no checks)."""
        n = slots.shape[0]
        out = np.empty(n, dtype=np.float64)
        buf = np.empty((min(n, BLOCK_ROWS), self.dim), dtype=np.float64)
        for start in range(0, n, BLOCK_ROWS):
            part = slots[start : start + BLOCK_ROWS]
            seg = out[start : start + part.shape[0]]
            self._dot(self._rows[part], q, seg, buf)
            np.multiply(seg, self._inv_norm[part], out=seg)
        return out.astype(np.float32)

    def _all_scores(self, q: np.ndarray) -> np.ndarray:
        """Cosine scores (float32) of every slot in use; dead slots get -inf."""
        end = len(self._id_at)
        out = np.empty(end, dtype=np.float64)
        buf = np.empty((min(end, BLOCK_ROWS), self.dim), dtype=np.float64)
        for start in range(0, end, BLOCK_ROWS):
            stop = min(start + BLOCK_ROWS, end)
            seg = out[start:stop]
            self._dot(self._rows[start:stop], q, seg, buf)
            np.multiply(seg, self._inv_norm[start:stop], out=seg)
        scores = out.astype(np.float32)
        scores[~self._alive[:end]] = -np.inf
        return scores

    def scores(self, query: Any, which: Sequence[str] | np.ndarray) -> np.ndarray:
        """Cosine scores (float32) of ``query`` with each entry of ``which``.

        ``which`` is a sequence of ids or an integer array of slots (see :meth:`slots_of`);
        an unknown id or an empty slot scores NaN. A zero query scores 0 everywhere.
        """
        q = self._query(query)
        if isinstance(which, np.ndarray) and which.dtype.kind in "iu":
            slots = which.astype(np.int64, copy=False)
        else:
            if isinstance(which, str):
                raise ValidationError("which must be a sequence of ids, not a str")
            slots = self.slots_of(which)
        end = len(self._id_at)
        valid = (slots >= 0) & (slots < end)
        valid[valid] = self._alive[slots[valid]]
        out = np.full(slots.shape[0], np.nan, dtype=np.float32)
        if q is None:
            out[valid] = 0.0
        else:
            out[valid] = self._slot_scores(q, slots[valid])
        return out

    def _coarse_on(self, rows: int, k: int) -> bool:
        """Whether a top-``k`` search over ``rows`` rows shortlists by sign codes first."""
        least = self.coarse_min_rows
        return least is not None and rows >= least and 2 * candidate_count(k) <= rows

    def _shortlist(
        self, q: np.ndarray, words: np.ndarray, k: int, excluded: np.ndarray | None
    ) -> np.ndarray:
        """Positions in ``words`` (code word columns) nearest to ``q`` by Hamming distance
        (not ``excluded``)."""
        code = sign_codes(q[None, :], self._codes.width)[0]
        return shortlist(hamming(words, code), candidate_count(k), excluded)

    def search(
        self, query: Any, k: int, allowed_ids: Iterable[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best ``(id, cosine)`` pairs, best first; equal scores by id.

        ``allowed_ids`` restricts the search to those ids (unknown ones are ignored). A
        zero query vector matches nothing and returns ``[]``.

        Over :attr:`coarse_min_rows` rows or more, the rows are first shortlisted by the
        Hamming distance of their sign codes (:mod:`.coarse`) and only the shortlist is
        scored; the scores returned are still the exact ones, but a true neighbour can be
        missed (top-10 overlap with the exact search 0.99+, see benchmarks/bench_scan.py).
        """
        k = operator.index(k)
        q = self._query(query)
        if k <= 0 or q is None or not self._slot_of:
            return []
        if allowed_ids is None:
            end = len(self._id_at)
            if self._coarse_on(len(self._slot_of), k):
                words = self._codes.words(self._rows)[:, :end]
                slots = self._shortlist(q, words, k, ~self._alive[:end])
                scores = self._slot_scores(q, slots)
            else:
                scores = self._all_scores(q)
                slots = None
        else:
            if isinstance(allowed_ids, str):
                raise ValidationError("allowed_ids must be a collection of ids, not a str")
            slots = self.slots_of(dict.fromkeys(allowed_ids))
            slots = slots[slots >= 0]
            if slots.shape[0] == 0:
                return []
            if self._coarse_on(slots.shape[0], k):
                words = self._codes.words(self._rows)[:, slots]
                slots = slots[self._shortlist(q, words, k, None)]
            scores = self._slot_scores(q, slots)
        live = int(np.isfinite(scores).sum())
        k = min(k, live)
        n = scores.shape[0]
        if k < n:
            # Everything scoring at least the k-th best value: ties at the boundary are
            # all kept, and the id order settles them below.
            kth = scores[np.argpartition(scores, n - k)[n - k]]
            keep = np.flatnonzero(scores >= kth)
        else:
            keep = np.flatnonzero(np.isfinite(scores))
        rows = keep if slots is None else slots[keep]
        pairs = [
            (self._id_at[s], float(v))
            for s, v in zip(rows.tolist(), scores[keep].tolist(), strict=True)
        ]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return pairs[:k]  # type: ignore[return-value]
