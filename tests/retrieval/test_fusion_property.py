"""Fusion is never worse than BM25 alone: on every shipped suite, hybrid retrieval with the
real MiniLM model (the documented defaults, through ``Memory.retrieve``) scores at least
BM25's Recall@10 and MRR. (LoCoMo, the real data the defaults were chosen on, is measured
by ``benchmarks/eval_retrieval.py``: its licence keeps it out of the repository.)"""

from __future__ import annotations

import pytest

from pymemory.evals import load
from pymemory.evals.harness import evaluate, make_retriever
from pymemory.evals.suites import SUITES, load_suite


@pytest.mark.parametrize("name", sorted(SUITES))
async def test_hybrid_is_never_below_bm25(name, minilm):
    suite = load_suite(name)
    reports = {}
    for retriever, embedder in (("bm25", None), ("hybrid", minilm)):
        loaded = await load(suite, embedder)
        try:
            reports[retriever] = await evaluate(
                loaded, lambda m, r=retriever: make_retriever(r, m), k=10
            )
        finally:
            await loaded.close()
    bm25, hybrid = reports["bm25"].overall, reports["hybrid"].overall
    assert hybrid.recall[10] >= bm25.recall[10], (hybrid.recall, bm25.recall)
    assert hybrid.mrr >= bm25.mrr, (hybrid.mrr, bm25.mrr)
