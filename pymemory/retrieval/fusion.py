"""Fusion: one relevance from the BM25 and the dense signal of each memory.

Three methods (``strategies.Fusion.method``):

* ``minmax`` (the default): each signal scaled to 0..1 over the query's candidates (BM25
  over the best BM25, the cosine between the worst and the best), weighted and added,
  times the query's confidence (:func:`minmax_fusion`). Chosen on real conversations
  (LoCoMo's tune half), where the calibrated ``score`` fusion let MiniLM's cosines
  outweigh exact matches.
* ``score``: calibrated scores, added. The cosine of MiniLM embeddings is on
  the same scale for every query; a BM25 score is not (it grows with the query's length
  and rarity), so it is divided by the query's idf mass first (:func:`lexical_share`:
  the share of the query's weight the memory matches, 0..1), then raised to ``power`` so a
  match on a rare name counts a lot and one on a common word little
  (:func:`score_fusion`). Both parts are returned, so a trace can show that they add up.
* ``rrf``: reciprocal-rank fusion of the two rankings (:func:`rrf_fusion`, below).

Reciprocal-rank fusion (RRF): merge rankings from different retrievers into one.

Formula (Cormack, Clarke & Büttcher, SIGIR 2009, with optional per-ranking weights)::

    rrf(d) = sum over rankings i that contain d of  w_i / (k + rank_i(d))

``rank_i(d)`` is 1 for the first entry of ranking ``i``. ``k`` (default 60, the value of
the paper) damps the head: with ``k = 60`` the first and the tenth entry weigh 1/61 and
1/70, so an item ranked well by two retrievers beats one ranked first by a single one.
Only ranks are used, never the retrievers' scores, so BM25 scores (unbounded) and
cosine similarities (-1..1) need no calibration to be fused.

Details that make the result well defined:

* An id repeated inside one ranking counts once, at its best (first) rank; the repeat
  still takes up its position, so the ranks of the ids after it are not shifted.
* A ranking of weight 0 contributes nothing, not even candidates.
* Ties are broken deterministically: higher score first, then the better best rank
  (the smallest ``rank_i(d)`` over all rankings), then the earlier ranking achieving that
  best rank (so the ranking listed first wins), then the id (or slot) in ascending
  order. The output never depends on dict or hash order.

:func:`rrf` works on string ids; :func:`rrf_slots` is the vectorised equivalent on
integer slot arrays (for the orchestrator, where candidates are catalog slots). Both
give the same order and scores for the same input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import ValidationError

__all__ = [
    "DEFAULT_K", "lexical_share", "minmax_fusion", "rrf", "rrf_fusion", "rrf_slots",
    "score_fusion",
]  # fmt: skip

DEFAULT_K = 60
MIN_DENSE_PART = 1e-3
MIN_COSINE_SPREAD = 0.1


def _check_k(k: object) -> float:
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k < 0:
        raise ValidationError(f"rrf k must be a finite number >= 0, got {k!r}")
    return float(k)


def _check_weights(weights: Sequence[float] | None, n: int) -> list[float]:
    if weights is None:
        return [1.0] * n
    if isinstance(weights, (str, bytes)) or len(weights) != n:
        raise ValidationError(f"rrf needs one weight per ranking ({n})")
    out = []
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)):
            raise ValidationError(f"rrf weights must be numbers, got {w!r}")
        if not math.isfinite(w) or w < 0:
            raise ValidationError(f"rrf weights must be finite and >= 0, got {w!r}")
        out.append(float(w))
    return out


def rrf(
    rankings: Sequence[Sequence[str]],
    k: float = DEFAULT_K,
    weights: Sequence[float] | None = None,
    *,
    limit: int | None = None,
) -> list[tuple[str, float]]:
    """Fuse ``rankings`` (each a best-first sequence of ids) into ``(id, score)`` pairs,
    best first. ``limit`` keeps only the first ``limit`` pairs.

    >>> rrf([["a", "b", "c"], ["b", "a", "d"]], k=1)
    [('a', 0.8333333333333333), ('b', 0.8333333333333333), ('c', 0.25), ('d', 0.25)]
    """
    if isinstance(rankings, (str, bytes)):
        raise ValidationError("rankings must be a sequence of rankings, not a str")
    k = _check_k(k)
    ws = _check_weights(weights, len(rankings))
    score: dict[str, float] = {}
    best: dict[str, tuple[int, int]] = {}  # id -> (best rank, index of that ranking)
    for li, (ranking, w) in enumerate(zip(rankings, ws, strict=True)):
        if isinstance(ranking, (str, bytes)):
            raise ValidationError("each ranking must be a sequence of ids, not a str")
        if w == 0.0:
            continue
        seen: set[str] = set()
        for rank, id in enumerate(ranking, start=1):
            if not isinstance(id, str):
                raise ValidationError(f"ranked ids must be str, got {type(id).__name__}")
            if id in seen:
                continue
            seen.add(id)
            score[id] = score.get(id, 0.0) + w / (k + rank)
            if id not in best or (rank, li) < best[id]:
                best[id] = (rank, li)
    order = sorted(score, key=lambda d: (-score[d], best[d], d))
    if limit is not None:
        order = order[: max(0, limit)]
    return [(d, score[d]) for d in order]


def rrf_slots(
    rankings: Sequence[np.ndarray | Sequence[int]],
    k: float = DEFAULT_K,
    weights: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised RRF over integer slots: returns ``(slots, scores)`` (int64, float64),
    best first, with the same scores and tie-breaking as :func:`rrf`."""
    if isinstance(rankings, np.ndarray) and rankings.ndim != 2:
        raise ValidationError("rankings must be a sequence of 1-d slot arrays")
    k = _check_k(k)
    ws = _check_weights(weights, len(rankings))
    n_lists = len(rankings)
    parts_slot, parts_contrib, parts_key = [], [], []
    for li, (ranking, w) in enumerate(zip(rankings, ws, strict=True)):
        arr = np.asarray(ranking)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise ValidationError("each ranking must be a 1-d array of integer slots")
        if w == 0.0 or arr.size == 0:
            continue
        arr = arr.astype(np.int64, copy=False)
        uniq, first = np.unique(arr, return_index=True)  # first occurrence of each slot
        rank = first.astype(np.int64) + 1
        parts_slot.append(uniq)
        parts_contrib.append(w / (k + rank.astype(np.float64)))
        parts_key.append(rank * n_lists + li)  # orders like the tuple (rank, ranking)
    if not parts_slot:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    slots = np.concatenate(parts_slot)
    contrib = np.concatenate(parts_contrib)
    key = np.concatenate(parts_key)
    # Group by slot; the stable sort keeps the rankings' order inside a group, so every
    # sum is formed in the same order as in rrf() (left to right over the rankings).
    order = np.argsort(slots, kind="stable")
    slots, contrib, key = slots[order], contrib[order], key[order]
    starts = np.flatnonzero(np.concatenate(([True], slots[1:] != slots[:-1])))
    uniq = slots[starts]
    sums = np.empty(uniq.shape[0], dtype=np.float64)
    ends = np.append(starts[1:], slots.shape[0])
    # Sequential sums per group (groups hold at most one entry per ranking).
    sums[:] = contrib[starts]
    for offset in range(1, n_lists):
        has = starts + offset < ends
        sums[has] += contrib[starts[has] + offset]
    best = np.minimum.reduceat(key, starts)
    final = np.lexsort((uniq, best, -sums))
    return uniq[final], sums[final]


# --- fusion of one candidate set (used by the pipeline and benchmarks/fusion_lab.py) -----


def lexical_share(bm25: np.ndarray, idf_mass: float) -> np.ndarray:
    """BM25 scores over the query's idf mass: the share of its weight matched, 0..1."""
    if idf_mass <= 0:
        return np.zeros(len(bm25))
    return np.clip(np.asarray(bm25, dtype=np.float64) / idf_mass, 0.0, 1.0)


def score_fusion(
    cosine: np.ndarray, share: np.ndarray, *, lexical: float, dense: float, power: float
) -> tuple[np.ndarray, np.ndarray]:
    """(dense part, lexical part) of each candidate's relevance:
    ``dense * max(cosine, 0)`` and ``lexical * share ** power`` (NaN cosine counts 0)."""
    cos = np.nan_to_num(np.asarray(cosine, dtype=np.float64), nan=0.0)
    return dense * np.maximum(cos, 0.0), lexical * np.power(share, power)


def minmax_fusion(
    cosine: np.ndarray, bm25: np.ndarray, share: np.ndarray, *, lexical: float, dense: float
) -> tuple[np.ndarray, np.ndarray]:
    """(dense part, lexical part) of per-query min-max fusion over the candidates:
    ``dense * (cos - worst) / max(best - worst, MIN_COSINE_SPREAD)`` (at least
    ``MIN_DENSE_PART`` for a positive cosine, 0 for a candidate with no vector)
    and ``lexical * bm25 / best bm25``, both times the query's confidence: the best
    candidate's absolute evidence (its cosine or its share of the query's weight, 0..1).
    Within a query the confidence changes no order; across queries it keeps a weak best
    match from scoring like a strong one."""
    n = len(bm25)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    bm = np.asarray(bm25, dtype=np.float64)
    cos = np.asarray(cosine, dtype=np.float64)
    has = ~np.isnan(cos)
    d = np.zeros(n)
    conf = float(np.max(share)) if len(share) else 0.0
    if has.any():
        lo, hi = float(cos[has].min()), float(cos[has].max())
        # Cosines that barely separate say little: scaled by at least MIN_COSINE_SPREAD,
        # their parts stay small and BM25 decides (MiniLM spreads 0.18-0.7 on real chats).
        d[has] = (cos[has] - lo) / max(hi - lo, MIN_COSINE_SPREAD)
        # The least similar candidate keeps a sliver while its cosine is positive: it is
        # still a candidate (whether it goes in is the floor's call, not the scaling's).
        d[has & (cos > 0)] = np.maximum(d[has & (cos > 0)], MIN_DENSE_PART)
        conf = max(conf, hi)
    top = float(bm.max())
    lx = bm / top if top > 0 else np.zeros(n)
    conf = min(max(conf, 0.0), 1.0)
    return conf * dense * d, conf * lexical * lx


def _ranks(score: np.ndarray, order_key: np.ndarray) -> np.ndarray:
    """1-based rank by ``score`` (descending; ties: larger ``order_key`` first) of every
    entry with a positive score, 0 for the others."""
    out = np.zeros(len(score))
    idx = np.flatnonzero(score > 0)
    order = idx[np.lexsort((-order_key[idx], -score[idx]))]
    out[order] = np.arange(1, len(order) + 1)
    return out


def rrf_fusion(
    cosine: np.ndarray, bm25: np.ndarray, ts: np.ndarray, *, lexical: float, dense: float, k: float
) -> tuple[np.ndarray, np.ndarray]:
    """(dense part, lexical part) of RRF over the candidates: ``dense / (k + rank)`` by
    cosine and ``lexical / (k + rank)`` by BM25 (ties: newer first), 0 where a side
    does not rank the candidate."""
    cos = np.nan_to_num(np.asarray(cosine, dtype=np.float64), nan=0.0)
    rd = _ranks(np.maximum(cos, 0.0), ts)
    rl = _ranks(np.asarray(bm25, dtype=np.float64), ts)
    d = np.where(rd > 0, dense / (k + rd), 0.0)
    lx = np.where(rl > 0, lexical / (k + rl), 0.0)
    return d, lx
