"""Where an embedder's cosines sit: the ``similarity_baseline`` that puts its relevance
floor where MiniLM's is (docs/BENCHMARKS.md, "multilingual-e5-small").

On LoCoMo's tune half (real conversations), every question against every turn of its
conversation (the memory text is the turn as stored per turn: ``"<speaker>: <text>"``):
the share of unrelated pairs (the turn is not gold evidence) and of gold pairs whose
calibrated cosine reaches the floor's ``min_dense``, for MiniLM and for the candidate at
a range of baselines. The baseline chosen is the one whose unrelated pairs pass the floor
as often as MiniLM's do. ``--split check`` reports the other half (never tuned on).

    python benchmarks/calibrate_similarity.py [--embedder multilingual-e5-small]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pymemory.evals.locomo import locomo_suite  # noqa: E402
from pymemory.models.embedding import embed_queries, load_embedder  # noqa: E402
from pymemory.retrieval.strategies import FLOOR_MIN_DENSE  # noqa: E402

LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"


async def cosines(embedder, suite, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(unrelated pair cosines, gold pair cosines), raw."""
    unrelated, gold = [], []
    by_conv: dict[str, list] = {}
    for t in suite.turns:
        by_conv.setdefault(t.conversation, []).append(t)
    for conv, turns in sorted(by_conv.items()):
        questions = [q for q in suite.questions if q.conversation == conv and q.split == split]
        questions = [q for q in questions if q.gold]
        if not questions:
            continue
        docs = await embedder.embed([f"{t.speaker or t.role}: {t.text}" for t in turns])
        qs = await embed_queries(embedder, [q.text for q in questions])
        sims = qs @ docs.T
        ids = [t.id for t in turns]
        for qi, q in enumerate(questions):
            wanted = {t for piece in q.gold for t in piece}
            is_gold = np.array([i in wanted for i in ids])
            gold.append(sims[qi, is_gold])
            unrelated.append(sims[qi, ~is_gold])
    return np.concatenate(unrelated), np.concatenate(gold)


def passing(cos: np.ndarray, baseline: float, floor: float) -> float:
    return float(np.mean((cos - baseline) / (1 - baseline) >= floor))


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--embedder", default="multilingual-e5-small")
    ap.add_argument("--split", default="tune", choices=("tune", "check"))
    a = ap.parse_args()
    suite = locomo_suite(a.locomo)
    floor = FLOOR_MIN_DENSE
    ref_u, ref_g = await cosines(await load_embedder("minilm"), suite, a.split)
    u, g = await cosines(await load_embedder(a.embedder), suite, a.split)
    target = passing(ref_u, 0.0, floor)
    print(f"LoCoMo {a.split}: {len(ref_u):,} unrelated and {len(ref_g):,} gold pairs; "
          f"min_dense {floor}")
    print(f"minilm: unrelated pass {target:.3f}, gold pass {passing(ref_g, 0.0, floor):.3f}; "
          f"cosine percentiles unrelated p50/p99 {np.percentile(ref_u, 50):.3f}/"
          f"{np.percentile(ref_u, 99):.3f}, gold p50 {np.percentile(ref_g, 50):.3f}")
    print(f"{a.embedder}: cosine percentiles unrelated p50/p99 {np.percentile(u, 50):.3f}/"
          f"{np.percentile(u, 99):.3f}, gold p50 {np.percentile(g, 50):.3f}")
    print("| baseline | unrelated pass | gold pass |\n|---|---|---|")
    best = None
    for b in np.arange(0.60, 0.86, 0.01):
        pu, pg = passing(u, b, floor), passing(g, b, floor)
        print(f"| {b:.2f} | {pu:.3f} | {pg:.3f} |")
        if best is None or abs(pu - target) < abs(best[1] - target):
            best = (b, pu, pg)
    assert best is not None
    print(f"baseline matching MiniLM's unrelated pass rate: {best[0]:.2f} "
          f"(unrelated {best[1]:.3f}, gold {best[2]:.3f})")


if __name__ == "__main__":
    asyncio.run(main())
