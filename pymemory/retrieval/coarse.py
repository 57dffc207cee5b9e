"""The coarse first pass of a large vector search: 1-bit sign codes and Hamming distance.

Each stored row is summarised by the signs of its values, packed 8 per byte and padded to
whole 64-bit words (384 dims -> 48 bytes), kept word by word (word ``j`` of every row in
one contiguous column). A query's sign code is compared with every row's by XOR and
popcount (``np.bitwise_count`` on uint64 words, or a 256-entry table over bytes where
numpy < 2.0 lacks it); the rows with the smallest Hamming distances
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
    "word_columns",
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


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (uint8)."""
    if _HAS_BITWISE_COUNT:
        return np.bitwise_count(words)
    return np.take(_POPCOUNT8, words.view(np.uint8)).reshape(-1, 8).sum(axis=1, dtype=np.uint8)


def word_columns(codes: np.ndarray) -> np.ndarray:
    """``(n, width)`` uint8 codes as ``(width // 8, n)`` uint64: word ``j`` of every row."""
    return np.ascontiguousarray(codes).view(np.uint64).T


def hamming(words: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Hamming distance (uint16) of each code to the ``query`` code (``(width,)`` uint8),
    the codes as :func:`word_columns` (contiguous per word: one pass over each column is
    ~2.7x faster than over rows of 6 words)."""
    out = np.zeros(words.shape[1], dtype=np.uint16)
    for word, q in zip(words, np.ascontiguousarray(query).view(np.uint64).tolist(), strict=True):
        out += _popcount(np.bitwise_xor(word, np.uint64(q)))
    return out


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
    """The sign codes of a store's ``(capacity, dim)`` matrix, kept in step with it, held as
    :func:`word_columns` (``(width // 8, capacity)`` uint64)."""

    def __init__(self, dim: int) -> None:
        self.width = code_width(dim)
        self._words: np.ndarray | None = None
        # The matrix the codes describe (weakly: a replaced matrix may be freed).
        self._rows: weakref.ref[np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        return 0 if self._words is None else int(self._words.nbytes)

    def synced(self, rows: np.ndarray) -> bool:
        return self._words is not None and self._rows is not None and self._rows() is rows

    def words(self, rows: np.ndarray) -> np.ndarray:
        """The codes of ``rows`` (the store's whole matrix) as word columns, rebuilt if out
        of step."""
        if not self.synced(rows):
            words = np.zeros((self.width // 8, rows.shape[0]), dtype=np.uint64)
            for start in range(0, rows.shape[0], _CODE_BLOCK):
                block = rows[start : start + _CODE_BLOCK]
                words[:, start : start + block.shape[0]] = word_columns(
                    sign_codes(block, self.width)
                )
            self._words, self._rows = words, weakref.ref(rows)
        assert self._words is not None
        return self._words

    def put(self, rows: np.ndarray, slots: np.ndarray, values: np.ndarray) -> None:
        """``rows[slots] = values`` was just done: code those rows (if codes are kept)."""
        if self.synced(rows):
            assert self._words is not None
            self._words[:, slots] = word_columns(sign_codes(values, self.width))

    def clear(self, rows: np.ndarray, slot: int) -> None:
        """Row ``slot`` of ``rows`` was zeroed."""
        if self.synced(rows):
            assert self._words is not None
            self._words[:, slot] = 0

    def grow(self, old: np.ndarray, new: np.ndarray) -> None:
        """The matrix ``old`` was copied into the larger ``new``."""
        if self.synced(old):
            assert self._words is not None
            words = np.zeros((self._words.shape[0], new.shape[0]), dtype=np.uint64)
            words[:, : self._words.shape[1]] = self._words
            self._words, self._rows = words, weakref.ref(new)
        else:
            self._words = self._rows = None
