"""Choose the fusion defaults on real conversations: LoCoMo's dev copy, tune half only.

Usage (from the repository root; ~1 minute, most of it embedding with MiniLM)::

    python benchmarks/tune_locomo.py [--locomo PATH] [--json out.json]

The dev copy (``../shared/data/locomo-dev/locomo-dev.json``, CC BY-NC 4.0, never copied
into the repository) is split by conversation (``pymemory.evals.locomo``): ``tune``
chooses, ``check`` is only reported. Every conversation is loaded into real Memories with
MiniLM (``fusion_lab.extract``); each question's signals (BM25 score, cosine, the
conversation's neighbour turns) are then ranked in numpy, over the candidates
``Memory.retrieve`` takes (every BM25 match and the 100 nearest), with no floor or decay
(all LoCoMo questions are answerable and messages do not decay). Rows, each R@10 / MRR on
tune and check:

1. the signals alone and the previous default (``cos + share ** 2``);
2. fusion methods without context: min-max at several lexical weights, BM25 scaled by
   its best with the raw cosine, the share with min-max cosine, RRF;
3. the context lift on top of min-max (lexical 0.4): one neighbour at several weights, then
   a second neighbour;
4. the chosen default, with the best tune row marked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import fusion_lab as lab  # noqa: E402

from pymemory.evals.locomo import locomo_suite  # noqa: E402
from pymemory.models.embedding import load_embedder  # noqa: E402
from pymemory.retrieval.fusion import minmax_fusion, rrf_fusion  # noqa: E402
from pymemory.retrieval.strategies import FUSION_CONTEXT, FUSION_DENSE, FUSION_LEXICAL  # noqa: E402

LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
Ranker = Callable[[lab.QFeatures], np.ndarray]


def _share(f: lab.QFeatures) -> np.ndarray:
    return np.clip(f.bm25 / f.idf_mass, 0, 1) if f.idf_mass > 0 else np.zeros(len(f.bm25))


def fused(f: lab.QFeatures, how: str, lexical: float) -> np.ndarray:
    """Relevance of every memory (0 off the candidates) by one fusion."""
    m = lab.candidates(f)
    cos, bm, share = f.cos[m], f.bm25[m], _share(f)[m]
    if how == "minmax":
        d, lx = minmax_fusion(cos, bm, share, lexical=lexical, dense=1 - lexical)
    elif how == "max-raw":
        d, lx = (1 - lexical) * np.maximum(cos, 0), lexical * bm / max(bm.max(), 1e-12)
    elif how == "share-minmax":
        d, _ = minmax_fusion(cos, bm, share, lexical=0, dense=1 - lexical)
        lx = lexical * share
    elif how == "score":
        d, lx = np.maximum(cos, 0), share**2
    elif how == "rrf":
        d, lx = rrf_fusion(cos, bm, f.ts[m], lexical=lexical, dense=1 - lexical, k=60)
    else:
        raise ValueError(how)
    out = np.zeros(len(f.cos))
    out[m] = d + lx
    return out


def with_context(f: lab.QFeatures, rel: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """``pipeline.context_lift`` on the lab's arrays: move ``weights[d - 1]`` of the way up
    to the better of the memories ``d`` turns before and after (same session)."""
    best = rel.copy()
    back, ahead = f.prev.copy(), f.next.copy()
    for w in weights:
        near = np.maximum(np.where(back >= 0, rel[np.maximum(back, 0)], 0),
                          np.where(ahead >= 0, rel[np.maximum(ahead, 0)], 0))  # fmt: skip
        best = np.maximum(best, rel + w * np.maximum(near - rel, 0))
        back = np.where(back >= 0, f.prev[np.maximum(back, 0)], -1)
        ahead = np.where(ahead >= 0, f.next[np.maximum(ahead, 0)], -1)
    return best


def ranker(how: str, lexical: float, context: Sequence[float] = ()) -> Ranker:
    def rank(f: lab.QFeatures) -> np.ndarray:
        rel = with_context(f, fused(f, how, lexical), context)
        out = np.full(len(f.cos), -np.inf)
        m = lab.candidates(f)
        out[m] = rel[m]
        return out

    return rank


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if not a.locomo.is_file():
        print(f"skipping: no LoCoMo file at {a.locomo} (see ../shared/data/README.md)")
        return
    embedder = asyncio.run(load_embedder("minilm"))
    feats = asyncio.run(lab.extract(locomo_suite(a.locomo), embedder))
    splits = {s: [f for f in feats if f.split == s] for s in ("tune", "check")}
    rows: list[dict] = []

    def row(group: str, name: str, rank: Ranker) -> None:
        out = {"group": group, "ranking": name}
        for split, fs in splits.items():
            m = lab.metrics(fs, [rank(f) for f in fs], k=20)
            out[split] = [round(m["r10"], 3), round(m["mrr"], 3)]
        rows.append(out)
        print(f"| {group} | {name} | {out['tune'][0]} / {out['tune'][1]} | "
              f"{out['check'][0]} / {out['check'][1]} |", flush=True)  # fmt: skip

    print("| group | ranking | tune R@10 / MRR | check R@10 / MRR |\n|---|---|---|---|")
    row("signals", "BM25 alone", lambda f: np.where(f.bm25 > 0, f.bm25, -np.inf))
    row("signals", "dense alone", lab.dense_only)
    row("signals", "previous default: cos + share^2", ranker("score", 0))
    for lexical in (0.3, 0.4, 0.5, 0.6):
        row("fusion", f"min-max, lexical {lexical}", ranker("minmax", lexical))
    row("fusion", "BM25/best + raw cosine, lexical 0.4", ranker("max-raw", 0.4))
    row("fusion", "share + min-max cosine, lexical 0.6", ranker("share-minmax", 0.6))
    for k_lex in (0.5, 0.7):
        row("fusion", f"RRF k=60, lexical {k_lex}", ranker("rrf", k_lex))
    for w in (0.3, 0.4, 0.5, 0.6):
        row("context", f"min-max 0.4, neighbour {w}", ranker("minmax", 0.4, (w,)))
    for ws in ((0.5, 0.3), (0.5, 0.4), (0.5, 0.5), (0.5, 0.4, 0.3), (0.6, 0.4)):
        row("context", f"min-max 0.4, neighbours {ws}", ranker("minmax", 0.4, ws))
    for lexical in (0.3, 0.5):
        row("context", f"min-max {lexical}, neighbours (0.5, 0.4)",
            ranker("minmax", lexical, (0.5, 0.4)))  # fmt: skip
    chosen = ranker("minmax", FUSION_LEXICAL / (FUSION_LEXICAL + FUSION_DENSE), FUSION_CONTEXT)
    row("default", f"minmax {FUSION_LEXICAL}/{FUSION_DENSE}, context {FUSION_CONTEXT}", chosen)
    best = max(rows[:-1], key=lambda r: (r["tune"][0] + r["tune"][1]) / 2)
    print(f"\nbest on tune by (R@10 + MRR) / 2: {best['ranking']}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
