"""A :class:`~.bm25.Bm25Index` as flat arrays and back, for the index snapshot
(:mod:`.snapshot`): every postings list and document's term ids in one array each,
restored as views made when first read."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .bm25 import EMPTY_SCORES, EMPTY_SLOTS, Bm25Index

# The index's internals are this module's business too: it is the index's own codec.


class _Ranges:
    """A list of arrays restored from a snapshot: entry ``i`` is a view of
    ``flat[starts[i] : starts[i] + lens[i]]`` (None where ``lens[i] < 0``), made when read,
    so that restoring builds no per-entry objects; entries set or appended later are
    kept as given."""

    __slots__ = ("_flat", "_lens", "_set", "_size", "_starts")

    def __init__(self, flat: np.ndarray, starts: list[int], lens: list[int]) -> None:
        self._flat = flat
        self._starts = starts
        self._lens = lens
        self._set: dict[int, Any] = {}
        self._size = len(lens)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> Any:
        got = self._set.get(i, self)
        if got is not self:
            return got
        if not 0 <= i < len(self._lens):
            raise IndexError(i)
        length = self._lens[i]
        if length < 0:
            return None
        start = self._starts[i]
        return self._flat[start : start + length]

    def __setitem__(self, i: int, value: Any) -> None:
        if not 0 <= i < self._size:
            raise IndexError(i)
        self._set[i] = value

    def append(self, value: Any) -> None:
        self._set[self._size] = value
        self._size += 1

    def extend(self, values: Sequence[Any]) -> None:
        for value in values:
            self.append(value)


def to_arrays(
    index: Bm25Index, steps: Callable[[int], Iterator[range]] | None = None
) -> Iterator[tuple[dict[str, Any], dict[str, np.ndarray], list[str]] | None]:
    """The index as flat arrays, for a persisted snapshot: a generator that yields
    None between steps (``steps(n)`` splits ``range(n)``; the caller may pause there
    if nothing updates the index meanwhile), then ``(meta, arrays, terms)``, terms by
    term id ("" for a recycled id). The arrays are copies."""
    split = steps or (lambda n: iter([range(n)]))
    n_terms = len(index._terms)
    posts: list[np.ndarray] = []
    tfs: list[np.ndarray] = []
    for part in split(n_terms):
        for t in part:
            df = index._df[t]
            posts.append(index._post_slots[t][:df])
            tfs.append(index._post_tf[t][:df])
        yield None
    tids: list[np.ndarray] = []
    tid_len = np.full(index._slot_end, -1, dtype=np.int64)
    for part in split(index._slot_end):
        for slot in part:
            doc = index._doc_tids[slot]
            if doc is not None:
                tids.append(doc)
                tid_len[slot] = doc.shape[0]
        yield None
    arrays = {
        "df": np.array(index._df, dtype=np.int64),
        "post_slots": np.concatenate(posts) if posts else np.zeros(0, np.int32),
        "post_tf": np.concatenate(tfs) if tfs else np.zeros(0, np.float32),
        "doc_len": index._doc_len[: index._slot_end].copy(),
        "tid_len": tid_len,
        "tids": np.concatenate(tids) if tids else np.zeros(0, np.int32),
        "free_tids": np.array(index._free_tids, dtype=np.int64),
    }
    meta = {"k1": index._k1, "b": index._b, "n_docs": index._n_docs, "total_len": index._total_len}
    yield meta, arrays, ["" if t is None else t for t in index._terms]


def from_arrays(meta: dict[str, Any], arrays: dict[str, np.ndarray], terms: list[str]) -> Bm25Index:
    """The index :meth:`to_arrays` described (arrays are copied, never shared)."""
    index = Bm25Index(meta["k1"], meta["b"])
    df = arrays["df"]
    lens = df.tolist()
    starts = (np.cumsum(df) - df).tolist()
    # Each term's postings are a view of exactly its range of one array, made when
    # first read: an insert reallocates (the view is full), a removal shifts inside
    # the range only.
    index._post_slots = _Ranges(np.array(arrays["post_slots"], np.int32), starts, lens)
    index._post_tf = _Ranges(np.array(arrays["post_tf"], np.float32), starts, lens)
    index._df = lens
    free = arrays["free_tids"].tolist()
    index._free_tids = free
    index._terms = list(terms)
    for tid in free:
        index._terms[tid] = None
        index._post_slots[tid] = EMPTY_SLOTS
        index._post_tf[tid] = EMPTY_SCORES
    index._term_ids = dict(zip(terms, range(len(terms)), strict=True))
    if free:
        index._term_ids.pop("", None)  # recycled ids ("" is never a term)
    slot_end = arrays["doc_len"].shape[0]
    index._ensure_slot_capacity(max(slot_end - 1, 0))
    index._doc_len[:slot_end] = arrays["doc_len"]
    tid_len = arrays["tid_len"]
    doc_starts = (np.cumsum(np.maximum(tid_len, 0)) - np.maximum(tid_len, 0)).tolist()
    doc_tids = _Ranges(np.array(arrays["tids"], np.int32), doc_starts, tid_len.tolist())
    doc_tids.extend([None] * (len(index._doc_tids) - slot_end))
    index._doc_tids = doc_tids  # type: ignore[assignment]
    index._slot_end = slot_end
    index._n_docs = int(meta["n_docs"])
    index._total_len = int(meta["total_len"])
    return index
