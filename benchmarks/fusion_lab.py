"""Fusion lab: the signals of every candidate, extracted once, and rankings scored in numpy.

Used by ``benchmarks/tune_retrieval.py``. For each suite the turns are loaded into real
Memories (``pymemory.evals.load``, MiniLM attached, every turn embedded: the speaker goes
into BM25 and into the embedded text as the library does it); for each question the lab
records, for every memory of its conversation, the BM25 score (``Catalog.index.scores`` on
the analysed question), the cosine with the question's embedding (the stored int8
vectors), the query's idf mass, each memory's timestamp and whether it is gold.

A ranking is then :func:`rank`: the library's own ``relevance_of``, ``decay_factor`` and
``time_match_factor`` (``pymemory.retrieval.pipeline``) applied to those arrays for a
strategy, over the same candidates ``Memory.retrieve`` takes (every BM25 match and the
``depth`` nearest by cosine), so a number here is what ``pymemory eval`` reports. Other
fusions (min-max, z-score, a logistic fit) are computed from the same arrays for the
comparison only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pymemory.evals import load
from pymemory.evals.suites import Suite, Turn, load_suite
from pymemory.retrieval.catalog import TYPE_CODE
from pymemory.retrieval.lexical import lexical_query
from pymemory.retrieval.pipeline import decay_factor, relevance_of, time_match_factor
from pymemory.retrieval.plan import Plan
from pymemory.retrieval.when import query_window

DAY_MS = 86_400_000


@dataclass
class QFeatures:
    """One question and the signals of every memory of its conversation."""

    id: str
    suite: str
    conversation: str
    category: str
    split: str
    text: str
    asked_at: int
    gold: tuple[tuple[int, ...], ...]  # pieces of item indices; () when unanswerable
    bm25: np.ndarray  # 0 where no query term matches
    cos: np.ndarray
    idf_mass: float  # the sum of the query terms' idf (Bm25Index.idf_mass)
    ts: np.ndarray  # epoch ms
    type_code: np.ndarray
    prev: np.ndarray  # index of the previous turn of the same session, -1 for none
    next: np.ndarray  # index of the next turn of the same session, -1 for none

    @property
    def answerable(self) -> bool:
        return bool(self.gold)

    @property
    def age_days(self) -> np.ndarray:
        return (self.asked_at - self.ts) / DAY_MS


async def extract(
    suite_name: str | Suite,
    embedder,
    *,
    speaker: bool = True,
    dense_text: Callable[[Sequence[Turn], int], str] | None = None,
) -> list[QFeatures]:
    """Load ``suite_name`` with ``embedder`` and extract every question's features.
    ``speaker=False`` drops the turns' speakers (nothing about them is indexed);
    ``dense_text(turns, i)`` replaces what is embedded (to try neighbour context): the
    cosines then come from float32 vectors of those texts."""
    suite: Suite = suite_name if isinstance(suite_name, Suite) else load_suite(suite_name)
    if not speaker:
        suite = replace(
            suite, turns=tuple(replace(t, speaker=None) for t in suite.turns), turn_index={}
        )
    loaded = await load(suite, embedder)
    out: list[QFeatures] = []
    try:
        for name, conv in loaded.conversations.items():
            memory = conv.memory
            catalog = memory._catalog  # a lab reads the internals on purpose
            vectors = memory.vectors
            turns = [t for t in suite.turns if t.conversation == name]
            turn_ids = [t.id for t in turns]
            index_of = {tid: i for i, tid in enumerate(turn_ids)}
            item_of_turn = {tid: iid for iid, tid in conv.turn_of.items()}
            item_ids = [item_of_turn[t] for t in turn_ids]
            slots = np.array([catalog.slot_of[i] for i in item_ids], dtype=np.int64)
            position_of_slot = {int(s): i for i, s in enumerate(slots)}
            ts = catalog.ts[slots].copy()
            types = catalog.type_code[slots].copy()
            same = [i > 0 and turns[i - 1].session == turns[i].session for i in range(len(turns))]
            prev = np.array([i - 1 if same[i] else -1 for i in range(len(turns))])
            nxt = np.array([i + 1 if i + 1 < len(turns) and same[i + 1] else -1
                            for i in range(len(turns))])  # fmt: skip
            questions = [q for q in suite.questions if q.conversation == name]
            qvecs = await embedder.embed([q.text for q in questions])
            doc_vecs = None
            if dense_text is not None:
                doc_vecs = await embedder.embed([dense_text(turns, i) for i in range(len(turns))])
            for q, qv in zip(questions, qvecs, strict=True):
                _, terms = lexical_query(q.text, q.asked_at)
                bm = np.zeros(len(turn_ids))
                s, sc = catalog.index.scores(terms)
                for slot, score in zip(s.tolist(), sc.tolist(), strict=True):
                    bm[position_of_slot[slot]] = score
                if doc_vecs is None:
                    cos = vectors.scores(qv, item_ids).astype(np.float64)
                else:
                    cos = (doc_vecs @ qv).astype(np.float64)
                gold = tuple(tuple(index_of[g] for g in piece) for piece in q.gold)
                out.append(
                    QFeatures(
                        q.id, suite.name, name, q.category, q.split or "all", q.text,
                        q.asked_at, gold, bm, cos, catalog.index.idf_mass(terms), ts, types,
                        prev, nxt,
                    )
                )  # fmt: skip
    finally:
        await loaded.close()
    return out


# --- ranking ------------------------------------------------------------------------------


def candidates(f: QFeatures, depth: int = 100) -> np.ndarray:
    """What Memory.retrieve ranks: every BM25 match and the ``depth`` nearest by cosine."""
    mask = f.bm25 > 0
    top = np.argsort(-f.cos, kind="stable")[:depth]
    mask[top] = True
    return mask


def rank(f: QFeatures, plan: Plan, mode: str = "hybrid") -> np.ndarray:
    """Scores as ``Memory.retrieve`` computes them with ``plan`` (-inf: not returned)."""
    mask = candidates(f, plan.fusion.depth) if mode == "hybrid" else f.bm25 > 0
    idx = np.flatnonzero(mask)
    rel, _, _, passes = relevance_of(
        plan, mode, f.bm25[idx], f.idf_mass, f.cos[idx] if mode == "hybrid" else None, f.ts[idx]
    )
    window = query_window(f.text, f.asked_at)
    score = (
        rel
        * decay_factor(plan, f.ts[idx], f.asked_at, f.type_code[idx])
        * time_match_factor(plan, f.ts[idx], window)
    )
    out = np.full(len(f.cos), -np.inf)
    keep = passes & (score > 0)
    out[idx[keep]] = score[keep]
    return out


def neighbour_lift(f: QFeatures, scores: np.ndarray, weight: float) -> np.ndarray:
    """Context from adjacent turns at scoring time: each returned memory moves ``weight``
    of the way up to its better neighbour's score (previous or next turn, same session)."""
    out = scores.copy()
    ok = np.isfinite(scores)
    nb = np.full(len(scores), -np.inf)
    for side in (f.prev, f.next):
        has = side >= 0
        nb[has] = np.maximum(nb[has], scores[side[has]])
    lift = ok & np.isfinite(nb) & (nb > scores)
    out[lift] = scores[lift] + weight * (nb[lift] - scores[lift])
    return out


def dense_only(f: QFeatures) -> np.ndarray:
    """The harness's ``dense`` retriever: cosine over every stored vector."""
    return f.cos.copy()


# --- scoring (the harness's metrics) -------------------------------------------------------


def _ordered(f: QFeatures, s: np.ndarray, k: int) -> list[int]:
    # Ties: the newer item first, as Memory.retrieve breaks them.
    order = np.lexsort((-f.ts, -s))
    return [i for i in order[:k].tolist() if np.isfinite(s[i])]


def metrics(feats: Sequence[QFeatures], scores: Sequence[np.ndarray], k: int = 10) -> dict:
    """Recall@1/5/10 and MRR over the answerable questions; the AUROC of the top score
    (answerable against unanswerable); ``abstained``: the share of unanswerable questions
    with nothing returned; ``empty``: the same for answerable ones."""
    acc = {"r1": 0.0, "r5": 0.0, "r10": 0.0, "mrr": 0.0}
    n = 0
    pos_top, neg_top, neg_empty, pos_empty = [], [], [], []
    for f, s in zip(feats, scores, strict=True):
        ranked = _ordered(f, s, k)
        top = float(s[ranked[0]]) if ranked else -math.inf
        if not f.answerable:
            neg_top.append(top)
            neg_empty.append(not ranked)
            continue
        n += 1
        pos_top.append(top)
        pos_empty.append(not ranked)
        for cut, key in ((1, "r1"), (5, "r5"), (10, "r10")):
            acc[key] += sum(any(i in ranked[:cut] for i in p) for p in f.gold) / len(f.gold)
        cited = {i for p in f.gold for i in p}
        first = next((j for j, i in enumerate(ranked, 1) if i in cited), None)
        acc["mrr"] += 1.0 / first if first else 0.0
    out: dict = {key: (v / n if n else None) for key, v in acc.items()}
    out["n"] = n
    out["auroc"] = None
    if pos_top and neg_top:
        p = np.array(pos_top)[:, None]
        q = np.array(neg_top)[None, :]
        out["auroc"] = float(((p > q).sum() + 0.5 * (p == q).sum()) / (p.size * q.size))
    out["abstained"] = float(np.mean(neg_empty)) if neg_empty else None
    out["empty"] = float(np.mean(pos_empty)) if pos_empty else None
    return out


# --- other fusions, for the comparison ----------------------------------------------------


def minmax_fusion(f: QFeatures, alpha: float, depth: int = 100) -> np.ndarray:
    """``alpha * bm25 / max + (1 - alpha) * (cos - min) / (max - min)`` per query."""
    m = candidates(f, depth)
    b, c = f.bm25[m], f.cos[m]
    bn = b / b.max() if b.max() > 0 else b
    cn = (c - c.min()) / (c.max() - c.min() + 1e-12)
    out = np.full(len(f.cos), -np.inf)
    out[m] = alpha * bn + (1 - alpha) * cn
    return out


def zscore_fusion(f: QFeatures, alpha: float, depth: int = 100) -> np.ndarray:
    """``alpha * z(bm25) + (1 - alpha) * z(cos)`` over the query's candidates."""
    m = candidates(f, depth)
    b, c = f.bm25[m], f.cos[m]
    out = np.full(len(f.cos), -np.inf)
    out[m] = alpha * (b - b.mean()) / (b.std() + 1e-9) + (1 - alpha) * (c - c.mean()) / (
        c.std() + 1e-9
    )
    return out


def _logit_features(f: QFeatures) -> np.ndarray:
    share = np.clip(f.bm25 / f.idf_mass, 0, 1) if f.idf_mass > 0 else np.zeros(len(f.bm25))
    return np.stack([np.ones(len(f.cos)), np.maximum(f.cos, 0), share, share**2], axis=1)


def fit_logistic(feats: Sequence[QFeatures], depth: int = 100) -> np.ndarray:
    """Weights of P(gold | 1, cosine, share, share^2) over the candidates of answerable
    questions (Newton's method, a little L2)."""
    xs, ys = [], []
    for f in feats:
        if not f.answerable:
            continue
        m = candidates(f, depth)
        y = np.zeros(len(f.cos))
        y[[i for p in f.gold for i in p]] = 1
        xs.append(_logit_features(f)[m])
        ys.append(y[m])
    x, y = np.concatenate(xs), np.concatenate(ys)
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (y - p) - 1e-3 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + 1e-3 * np.eye(len(w))
        w += np.linalg.solve(hess, grad)
    return w


def logistic_fusion(f: QFeatures, w: np.ndarray, depth: int = 100) -> np.ndarray:
    m = candidates(f, depth)
    out = np.full(len(f.cos), -np.inf)
    out[m] = (_logit_features(f) @ w)[m]
    return out


def message_type_code() -> int:
    return TYPE_CODE["message"]
