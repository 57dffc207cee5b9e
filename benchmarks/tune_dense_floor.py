"""The dense half of the relevance floor: how far a query's best cosine must stand out
from its typical cosine to the store (the embedder's ``dense_standout``) for any memory
to pass on its cosine, against what it costs in recall (docs/BENCHMARKS.md, "The
floor's dense half").

Per embedder, each suite is loaded (and embedded) once, then hybrid retrieval runs with
each margin; ``off`` is the floor without that condition and ``none`` the floor turned
off (``relevance_floor(0, 0)``). LoCoMo is reported per split: the margin is
chosen on **tune** (the recall it costs there), and **check** and our own suites
(abstention on unrelated Chinese and English questions, the Chinese messages suite)
are only reported.

    python benchmarks/tune_dense_floor.py [--embedders minilm multilingual-e5-small]
        [--margins 0 0.05 0.1 0.15 0.2] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from eval_retrieval import ABSTENTION, CHINESE, LOCOMO, NO_FLOOR, K, groups_of  # noqa: E402

from pymemory.evals.harness import evaluate, load, make_retriever  # noqa: E402
from pymemory.evals.locomo import locomo_suite  # noqa: E402
from pymemory.evals.suites import load_suite  # noqa: E402
from pymemory.models.embedding import load_embedder  # noqa: E402


async def sweep(suite, embedder, margins: list[float]) -> dict[str, dict]:
    loaded = await load(suite, embedder)
    out: dict[str, dict] = {}
    try:
        for label, margin, strategy in (
            ("none", None, NO_FLOOR), ("off", None, None),
            *((f"{m:g}", m, None) for m in margins),
        ):  # fmt: skip
            embedder.dense_standout = margin
            kw = {} if strategy is None else {"strategy": strategy}
            report = await evaluate(loaded, lambda m, kw=kw: make_retriever("hybrid", m, **kw), k=K)
            out[label] = {
                group: {
                    "R@5": m.recall and round(m.recall[5], 3),
                    "R@10": m.recall and round(m.recall[10], 3),
                    "MRR": m.mrr and round(m.mrr, 3),
                    "abstained": None if m.abstained is None else round(m.abstained, 3),
                }
                for group, m in groups_of(report).items()
                if group in ("all", "split tune", "split check")
            }
            print(suite.name, label, json.dumps(out[label]), flush=True)
    finally:
        await loaded.close()
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedders", nargs="+", default=["minilm", "multilingual-e5-small"])
    ap.add_argument("--margins", nargs="+", type=float, default=[0.0, 0.05, 0.1, 0.15, 0.2])
    ap.add_argument("--suites", nargs="*", default=[*ABSTENTION, CHINESE])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    result: dict[str, dict] = {}
    for name in a.embedders:
        embedder = await load_embedder(name)
        suites = [load_suite(s) for s in a.suites]
        if a.locomo.is_file():
            suites.insert(0, locomo_suite(a.locomo))
        result[name] = {s.name: await sweep(s, embedder, a.margins) for s in suites}
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
