"""An incremental Okapi BM25 index over caller-chosen integer slots, in numpy.

Scoring (the "Lucene" BM25 of Kamphuis et al., ECIR 2020, the same as
``bm25s.BM25(method="lucene")``)::

    score(q, d) = sum over query terms t of  idf(t) * tf(t, d) / (tf(t, d) + norm(d))
    norm(d)     = k1 * (1 - b + b * |d| / avgdl)
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

``N`` is the number of documents, ``df(t)`` the number holding ``t``, ``|d|`` a document's
length in terms (repeats counted) and ``avgdl`` the mean length of the documents currently
in the index. The ``(k1 + 1)`` factor of the classic formula is left out as Lucene does;
it scales every score alike and changes no ranking. This idf is always positive, so
every document holding at least one query term scores above zero.

A term repeated in the query counts once per occurrence (``["tea", "tea"]`` weighs
``tea`` twice), as in bm25s and rank_bm25. Terms absent from the index contribute
nothing.

Layout. Each term has a postings list: a growable pair of numpy arrays (document slot
``int32``, term frequency ``float32``) kept sorted by slot, with capacity doubling. Each
slot has its length in a per-slot ``float64`` array and the ids of its distinct terms, so
:meth:`Bm25Index.remove` deletes exactly that document's postings (eagerly: a removed
slot leaves nothing behind and may be reused at once). Appending a document under a slot
larger than any other (the usual case) is an O(1) append per term; reusing a lower slot
or removing shifts the tail of each affected postings list (one ``memmove``).

Queries loop over the distinct query terms only. Per term the weights of all its
postings are computed in one vectorised expression and cached until the next update
(``idf`` and ``avgdl`` change with every add/remove); per-document sums are then formed
with ``np.bincount`` (or a sort when few documents match out of many slots), and the
top-k is selected with ``np.argpartition`` over the matching documents only.

Every score depends only on the documents present, not on the order of updates that led
there: an index built incrementally with any interleaving of add, remove and replace
gives the same scores as one built afresh from the surviving documents.

Memory is O(total postings + largest slot). Only numpy and the standard library are
used; nothing here starts a thread, so it runs under Pyodide.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..errors import ValidationError

__all__ = ["MAX_SLOT", "Bm25Index"]

#: Largest slot accepted (postings store slots as int32).
MAX_SLOT = 2**31 - 2

_MIN_POSTINGS_CAPACITY = 4
# Upper bound on the number of cached per-posting weights (8 bytes each).
_WEIGHT_CACHE_MAX = 1 << 22
# Sum by sorting when the matching postings number fewer than (largest slot + 1) / this;
# otherwise sum into a dense array over all slots (measured crossover on 100k docs).
_SPARSE_RATIO = 10

EMPTY_SLOTS = np.zeros(0, dtype=np.int64)
EMPTY_SCORES = np.zeros(0, dtype=np.float64)


def _check_slot(slot: object) -> int:
    if isinstance(slot, bool):
        raise TypeError("slot must be an int, not bool")
    try:
        value = operator.index(slot)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"slot must be an int, got {type(slot).__name__}") from None
    if not 0 <= value <= MAX_SLOT:
        raise ValidationError(f"slot must be in 0..{MAX_SLOT}, got {value}")
    return value


class Bm25Index:
    """Okapi BM25 over integer document slots chosen by the caller."""

    __slots__ = (
        "_b",
        "_cache_epoch",
        "_cache_size",
        "_df",
        "_doc_len",
        "_doc_tids",
        "_epoch",
        "_free_tids",
        "_k1",
        "_n_docs",
        "_post_slots",
        "_post_tf",
        "_slot_end",
        "_term_ids",
        "_terms",
        "_total_len",
        "_weight_cache",
    )

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        k1 = float(k1)
        b = float(b)
        if not (math.isfinite(k1) and k1 >= 0.0):
            raise ValidationError(f"k1 must be a finite number >= 0, got {k1}")
        if not 0.0 <= b <= 1.0:
            raise ValidationError(f"b must be in [0, 1], got {b}")
        self._k1 = k1
        self._b = b
        # Terms: id <-> string, postings per id; ids of terms whose df fell to 0 are reused.
        self._term_ids: dict[str, int] = {}
        self._terms: list[str | None] = []
        self._free_tids: list[int] = []
        self._post_slots: list[np.ndarray] = []  # int32, sorted ascending in [:df]
        self._post_tf: list[np.ndarray] = []  # float32, aligned with _post_slots
        self._df: list[int] = []
        # Documents: per slot length and distinct term ids (None = no document).
        self._doc_len = np.zeros(0, dtype=np.float64)
        self._doc_tids: list[np.ndarray | None] = []
        self._slot_end = 0  # 1 + the largest slot ever used
        self._n_docs = 0
        self._total_len = 0
        # Per-term weights valid for one epoch; the epoch advances on every update.
        self._epoch = 0
        self._cache_epoch = -1
        self._cache_size = 0
        self._weight_cache: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ properties

    @property
    def k1(self) -> float:
        return self._k1

    @property
    def b(self) -> float:
        return self._b

    @property
    def avgdl(self) -> float:
        """Mean document length in terms (0.0 when empty)."""
        return self._total_len / self._n_docs if self._n_docs else 0.0

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct terms held by at least one document."""
        return len(self._term_ids)

    def doc_freq(self, term: str) -> int:
        """Number of documents holding ``term``."""
        tid = self._term_ids.get(term)
        return 0 if tid is None else self._df[tid]

    def idf(self, term: str) -> float:
        """``idf(term)`` as scoring uses it; a term no document holds gets the largest
        idf there is (``df = 0``)."""
        df = self.doc_freq(term)
        return math.log(1.0 + (self._n_docs - df + 0.5) / (df + 0.5))

    def idf_mass(self, query_terms: Sequence[str]) -> float:
        """The sum of the query terms' idf, repeats counted as scoring counts them. Every
        document's score is below this (each term adds less than its idf), so ``score /
        idf_mass`` is the share of the query's weight a document matches, in 0..1; terms
        no document holds still count, so a query about unknown things matches a small
        share."""
        if isinstance(query_terms, str):
            raise TypeError("query_terms must be a sequence of str, not a str")
        return sum(self.idf(t) for t in query_terms)

    def doc_length(self, slot: int) -> int:
        """Length in terms of the document under ``slot``; KeyError if none."""
        if slot not in self:
            raise KeyError(slot)
        return int(self._doc_len[slot])

    def __len__(self) -> int:
        return self._n_docs

    def __contains__(self, slot: object) -> bool:
        if isinstance(slot, bool):
            return False
        try:
            value = operator.index(slot)  # type: ignore[arg-type]
        except TypeError:
            return False
        return 0 <= value < len(self._doc_tids) and self._doc_tids[value] is not None

    def __repr__(self) -> str:
        return (
            f"Bm25Index(k1={self._k1}, b={self._b}, docs={self._n_docs}, "
            f"terms={len(self._term_ids)})"
        )

    # ------------------------------------------------------------------ updates

    def add(self, slot: int, terms: Sequence[str]) -> None:
        """Index ``terms`` as the document under ``slot``, replacing any document there.

        ``terms`` is the analysed token list (repeats count as term frequency). An empty
        list is a document of length 0: it counts in ``len()`` and in ``avgdl`` but
        matches nothing.
        """
        slot = _check_slot(slot)
        if isinstance(terms, str):
            raise TypeError("terms must be a sequence of str, not a str")
        counts = Counter(terms)
        for term in counts:
            if not isinstance(term, str):
                raise TypeError(f"terms must be str, got {type(term).__name__}")
        if self._doc_tids_at(slot) is not None:
            self.remove(slot)
        self._ensure_slot_capacity(slot)
        if slot >= self._slot_end:
            self._slot_end = slot + 1

        tids = np.empty(len(counts), dtype=np.int32)
        term_ids = self._term_ids
        length = 0
        for i, (term, tf) in enumerate(counts.items()):
            tid = term_ids.get(term)
            if tid is None:
                tid = self._new_term(term)
            self._insert_posting(tid, slot, tf)
            tids[i] = tid
            length += tf
        self._doc_tids[slot] = tids
        self._doc_len[slot] = length
        self._n_docs += 1
        self._total_len += length
        self._epoch += 1

    def remove(self, slot: int) -> None:
        """Delete the document under ``slot`` and all its postings; no-op if none."""
        if isinstance(slot, bool):
            raise TypeError("slot must be an int, not bool")
        slot = operator.index(slot)
        tids = self._doc_tids_at(slot)
        if tids is None:
            return
        for tid in tids.tolist():
            self._delete_posting(tid, slot)
        self._doc_tids[slot] = None
        self._total_len -= int(self._doc_len[slot])
        self._doc_len[slot] = 0.0
        self._n_docs -= 1
        self._epoch += 1

    def _doc_tids_at(self, slot: int) -> np.ndarray | None:
        return self._doc_tids[slot] if 0 <= slot < len(self._doc_tids) else None

    def _ensure_slot_capacity(self, slot: int) -> None:
        cap = self._doc_len.shape[0]
        if slot < cap:
            return
        new_cap = max(slot + 1, 2 * cap, 16)
        doc_len = np.zeros(new_cap, dtype=np.float64)
        doc_len[:cap] = self._doc_len
        self._doc_len = doc_len
        self._doc_tids.extend([None] * (new_cap - cap))

    def _new_term(self, term: str) -> int:
        slots = np.empty(_MIN_POSTINGS_CAPACITY, dtype=np.int32)
        tfs = np.empty(_MIN_POSTINGS_CAPACITY, dtype=np.float32)
        if self._free_tids:
            tid = self._free_tids.pop()
            self._terms[tid] = term
            self._post_slots[tid] = slots
            self._post_tf[tid] = tfs
            self._df[tid] = 0
        else:
            tid = len(self._terms)
            self._terms.append(term)
            self._post_slots.append(slots)
            self._post_tf.append(tfs)
            self._df.append(0)
        self._term_ids[term] = tid
        return tid

    def _insert_posting(self, tid: int, slot: int, tf: int) -> None:
        n = self._df[tid]
        slots = self._post_slots[tid]
        tfs = self._post_tf[tid]
        if n == slots.shape[0]:
            grown_slots = np.empty(2 * n, dtype=np.int32)
            grown_slots[:n] = slots
            grown_tfs = np.empty(2 * n, dtype=np.float32)
            grown_tfs[:n] = tfs
            self._post_slots[tid] = slots = grown_slots
            self._post_tf[tid] = tfs = grown_tfs
        if n == 0 or slots[n - 1] < slot:
            slots[n] = slot
            tfs[n] = tf
        else:  # a reused lower slot: keep the list sorted
            pos = int(slots[:n].searchsorted(slot))
            slots[pos + 1 : n + 1] = slots[pos:n]
            tfs[pos + 1 : n + 1] = tfs[pos:n]
            slots[pos] = slot
            tfs[pos] = tf
        self._df[tid] = n + 1

    def _delete_posting(self, tid: int, slot: int) -> None:
        n = self._df[tid] - 1
        if n == 0:  # the term disappears: recycle its id
            term = self._terms[tid]
            assert term is not None
            del self._term_ids[term]
            self._terms[tid] = None
            self._post_slots[tid] = EMPTY_SLOTS
            self._post_tf[tid] = EMPTY_SCORES
            self._df[tid] = 0
            self._free_tids.append(tid)
            return
        slots = self._post_slots[tid]
        tfs = self._post_tf[tid]
        if slots[n] != slot:
            pos = int(slots[:n].searchsorted(slot))
            slots[pos:n] = slots[pos + 1 : n + 1]
            tfs[pos:n] = tfs[pos + 1 : n + 1]
        self._df[tid] = n
        cap = slots.shape[0]
        if cap > 64 and n < cap // 4:  # give memory back after heavy removal
            self._post_slots[tid] = slots[: 2 * n].copy()
            self._post_tf[tid] = tfs[: 2 * n].copy()

    # ------------------------------------------------------------------ queries

    def _term_postings(self, query_terms: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(slots, weights) per distinct known query term, weights times multiplicity.

        The slots array is a view of the postings list: callers must not keep it past
        the next update. The weights array may be cached: callers must not modify it.
        """
        if isinstance(query_terms, str):
            raise TypeError("query_terms must be a sequence of str, not a str")
        if self._n_docs == 0:
            return []
        if self._cache_epoch != self._epoch:
            self._weight_cache.clear()
            self._cache_size = 0
            self._cache_epoch = self._epoch
        cache = self._weight_cache
        term_ids = self._term_ids
        n_docs = self._n_docs
        k1 = self._k1
        k1_b_over_avgdl = k1 * self._b * n_docs / self._total_len if self._total_len else 0.0
        k1_one_minus_b = k1 * (1.0 - self._b)

        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for term, multiplicity in Counter(query_terms).items():
            tid = term_ids.get(term)
            if tid is None:
                continue
            df = self._df[tid]
            slots = self._post_slots[tid][:df]
            weights = cache.get(tid)
            if weights is None:
                tf = self._post_tf[tid][:df]
                idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
                norm = self._doc_len[slots]
                norm *= k1_b_over_avgdl
                norm += k1_one_minus_b
                norm += tf
                weights = tf / norm
                weights *= idf
                if self._cache_size + df <= _WEIGHT_CACHE_MAX:
                    cache[tid] = weights
                    self._cache_size += df
            if multiplicity != 1:
                weights = weights * multiplicity
            parts.append((slots, weights))
        return parts

    def _accumulate(
        self, parts: list[tuple[np.ndarray, np.ndarray]], copy: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-document sums: (slots ascending, scores), both fresh arrays if ``copy``."""
        if not parts:
            return EMPTY_SLOTS, EMPTY_SCORES
        if len(parts) == 1:
            slots, weights = parts[0]
            if copy:
                return slots.astype(np.int64), weights.copy()
            return slots, weights
        cat_slots = np.concatenate([p[0] for p in parts])
        cat_weights = np.concatenate([p[1] for p in parts])
        if cat_slots.shape[0] * _SPARSE_RATIO >= self._slot_end:
            sums = np.bincount(cat_slots, weights=cat_weights)
            hit = np.flatnonzero(sums > 0.0)  # a bool mask is far faster than float
            return hit, sums[hit]
        # Few matches among many slots: sort instead of touching every slot. The sort is
        # stable and np.bincount adds in input order, so every slot's sum is formed in
        # the same order, with the same result, as on the dense path above.
        order = np.argsort(cat_slots, kind="stable")
        sorted_slots = cat_slots[order]
        new_group = np.empty(sorted_slots.shape[0], dtype=bool)
        new_group[0] = True
        np.not_equal(sorted_slots[1:], sorted_slots[:-1], out=new_group[1:])
        group = np.cumsum(new_group) - 1
        sums = np.bincount(group, weights=cat_weights[order])
        return sorted_slots[new_group].astype(np.int64), sums

    def scores(self, query_terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """BM25 scores of every document scoring above zero.

        Returns ``(slots, scores)``: ``int64`` and ``float64`` arrays of equal length, in
        ascending slot order. Both are fresh arrays the caller may keep or modify.
        """
        slots, scores = self._accumulate(self._term_postings(query_terms), copy=True)
        if slots.dtype != np.int64:
            slots = slots.astype(np.int64)
        return slots, scores

    def scores_of(self, query_terms: Sequence[str], slots: np.ndarray) -> np.ndarray:
        """The BM25 scores of the documents under ``slots`` (0 for one that matches
        nothing or is absent), in the order given: a few documents scored without
        summing every match."""
        out = np.zeros(len(slots))
        for posted, weights in self._term_postings(query_terms):
            if not len(posted):
                continue
            at = np.minimum(np.searchsorted(posted, slots), len(posted) - 1)
            hit = posted[at] == slots
            out[hit] += weights[at[hit]]
        return out

    def top_k(self, query_terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best ``(slot, score)`` pairs, best first; equal scores by slot."""
        k = operator.index(k)
        if k <= 0:
            return []
        slots, scores = self._accumulate(self._term_postings(query_terms), copy=False)
        n = scores.shape[0]
        if n > k:
            # Everything scoring at least the k-th best value; ties at the boundary are
            # all kept so that the slot order can settle them.
            kth = scores[np.argpartition(scores, n - k)[n - k]]
            keep = np.flatnonzero(scores >= kth)
            slots = slots[keep]
            scores = scores[keep]
        # Sort by score descending, then slot ascending.
        order = np.lexsort((slots, -scores))[:k]
        return list(zip(slots[order].tolist(), scores[order].tolist(), strict=True))
