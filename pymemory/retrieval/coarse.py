"""The coarse first pass of a large vector search: 1-bit sign codes and Hamming distance.

Each stored row is summarised by the signs of its values, packed 8 per byte and padded to
whole 64-bit words (384 dims -> 48 bytes). A query's sign code is compared with every
row's by XOR and popcount (``np.bitwise_count`` on uint64 words, or a 256-entry table
over bytes where numpy < 2.0 lacks it); the rows with the smallest Hamming distances
form the shortlist that the exact int8 scan then re-ranks. Hamming distance between sign
codes estimates the angle between the vectors, so the true neighbours land in a shortlist
of a few thousand out of 100k (measured in ``benchmarks/bench_scan.py``).

The shortlist keeps every row whose distance is at most the ``count``-th smallest, ties
included, so it depends only on the codes present, never on the slot order.

:class:`SignCodes` holds the codes of one store's matrix, built on first use and then
kept in step with the writes (the store calls :meth:`SignCodes.put`, :meth:`SignCodes.clear`
and :meth:`SignCodes.grow`). It remembers which matrix object it describes: if the store's
matrix is replaced wholesale (a reload), the codes are rebuilt at the next search.
"""

from __future__ import annotations

import weakref

import numpy as np

__all__ = [
    "COARSE_CANDIDATES",
    "COARSE_MIN_ROWS",
    "COARSE_PER_K",
    "SignCodes",
    "candidate_count",
    "hamming",
    "shortlist",
    "sign_codes",
]

#: Rows scanned below which the search stays exact (there the exact scan takes a few ms,
#: and results are identical to a store without the coarse pass).
COARSE_MIN_ROWS = 20_000
#: Shortlist size for a top-k search: ``max(COARSE_CANDIDATES, COARSE_PER_K * k)``, tuned
#: on MiniLM vectors of realistic memories (benchmarks/bench_scan.py).
COARSE_CANDIDATES = 2000
COARSE_PER_K = 20

_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0
_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
_CODE_BLOCK = 4096  # rows coded at a time when (re)building


def code_width(dim: int) -> int:
    """Bytes per code: ``dim`` bits rounded up to whole 64-bit words."""
    return -(-dim // 64) * 8


def candidate_count(k: int) -> int:
    """How many rows the coarse pass shortlists for a top-``k`` search."""
    return max(COARSE_CANDIDATES, COARSE_PER_K * k)


def sign_codes(rows: np.ndarray, width: int) -> np.ndarray:
    """``(n, width)`` uint8 codes: bit ``j`` of a row is set when value ``j`` is > 0."""
    n = rows.shape[0]
    out = np.zeros((n, width), dtype=np.uint8)
    packed = np.packbits(rows > 0, axis=1)
    out[:, : packed.shape[1]] = packed
    return out


def _hamming_words(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    x = np.bitwise_xor(codes.view(np.uint64), query.view(np.uint64))
    bits = np.bitwise_count(x)
    # Summing column by column is ~10x faster than ``bits.sum(axis=1)`` on 6 columns.
    out = bits[:, 0].astype(np.uint16)
    for j in range(1, bits.shape[1]):
        out += bits[:, j]
    return out


def _hamming_table(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    x = np.bitwise_xor(codes, query)
    out = np.zeros(codes.shape[0], dtype=np.uint16)
    for j in range(x.shape[1]):
        out += np.take(_POPCOUNT8, x[:, j])
    return out


def hamming(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Hamming distance (uint16) of each code row to the ``query`` code (``(width,)``)."""
    query = np.ascontiguousarray(query.reshape(1, -1))
    codes = np.ascontiguousarray(codes)
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.uint16)
    if _HAS_BITWISE_COUNT:
        return _hamming_words(codes, query)
    return _hamming_table(codes, query)


def shortlist(dist: np.ndarray, count: int, excluded: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``count`` smallest ``dist`` (and every tie of the largest of them),
    ascending; positions where ``excluded`` is true are never taken."""
    dist = dist.astype(np.intp)  # np.bincount wants intp (int32 on wasm32)
    top = int(dist.max(initial=0)) + 1
    if excluded is not None:
        dist[excluded] = top
    hist = np.bincount(dist, minlength=top + 1)[:top]
    cum = np.cumsum(hist)
    if cum.shape[0] == 0 or cum[-1] <= count:
        return np.flatnonzero(dist < top)
    limit = int(np.searchsorted(cum, count))
    return np.flatnonzero(dist <= limit)


class SignCodes:
    """The sign codes of a store's ``(capacity, dim)`` matrix, kept in step with it."""

    def __init__(self, dim: int) -> None:
        self.width = code_width(dim)
        self._codes: np.ndarray | None = None
        # The matrix the codes describe (weakly: a replaced matrix may be freed).
        self._rows: weakref.ref[np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        return 0 if self._codes is None else int(self._codes.nbytes)

    def synced(self, rows: np.ndarray) -> bool:
        return self._codes is not None and self._rows is not None and self._rows() is rows

    def codes(self, rows: np.ndarray) -> np.ndarray:
        """The codes of ``rows`` (the store's whole matrix), rebuilt if out of step."""
        if not self.synced(rows):
            codes = np.zeros((rows.shape[0], self.width), dtype=np.uint8)
            for start in range(0, rows.shape[0], _CODE_BLOCK):
                block = rows[start : start + _CODE_BLOCK]
                codes[start : start + block.shape[0]] = sign_codes(block, self.width)
            self._codes, self._rows = codes, weakref.ref(rows)
        assert self._codes is not None
        return self._codes

    def put(self, rows: np.ndarray, slots: np.ndarray, values: np.ndarray) -> None:
        """``rows[slots] = values`` was just done: code those rows (if codes are kept)."""
        if self.synced(rows):
            assert self._codes is not None
            self._codes[slots] = sign_codes(values, self.width)

    def clear(self, rows: np.ndarray, slot: int) -> None:
        """Row ``slot`` of ``rows`` was zeroed."""
        if self.synced(rows):
            assert self._codes is not None
            self._codes[slot] = 0

    def grow(self, old: np.ndarray, new: np.ndarray) -> None:
        """The matrix ``old`` was copied into the larger ``new``."""
        if self.synced(old):
            assert self._codes is not None
            codes = np.zeros((new.shape[0], self.width), dtype=np.uint8)
            codes[: self._codes.shape[0]] = self._codes
            self._codes, self._rows = codes, weakref.ref(new)
        else:
            self._codes = self._rows = None
