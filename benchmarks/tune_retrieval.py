"""Tune the retrieval defaults (time decay and RRF fusion) on the shipped suites.

Usage::

    python benchmarks/tune_retrieval.py [--embedder minilm] [--json out.json]

Each suite is loaded once into a Memory with the embedder attached (every turn embedded);
then every grid point, a strategy ``compose(time_decay(half_life, floor), fusion(k,
lexical, 1.0, depth))``, is scored by ``Memory.retrieve`` itself on every question. The
grid also runs BM25 alone (no embedder) for each decay setting, because the decay
default also shapes retrieval before a model has loaded.

Selection: the point with the best mean Recall@5 over the two suites, ties broken by
mean MRR. With 69 questions that is a small sample, so the report also shows how far the
chosen point is from the best point of each suite alone, and how much of the grid lies
within 0.02 of the best (a wide plateau means the choice is not a lucky spike).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
from pathlib import Path

try:
    from pymemory.models.embedding import load_embedder
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pymemory.models.embedding import load_embedder

from pymemory.evals import DenseRetriever, MemoryRetriever, evaluate, load
from pymemory.evals.suites import SUITES
from pymemory.retrieval.strategies import (
    DEFAULT_STRATEGY,
    compile_strategy,
    compose,
    fusion,
    time_decay,
)

DECAYS = [(None, 1.0), (168.0, 0.2), (168.0, 0.5), (168.0, 0.8), (720.0, 0.2), (720.0, 0.5),
          (720.0, 0.8), (2160.0, 0.5)]  # fmt: skip
RRF_KS = [5, 10, 20, 60]
LEXICAL = [0.2, 0.35, 0.5, 0.75, 1.0]
DEPTHS = [100]  # 50, 100 and 200 gave identical results on both suites


def decay_label(half_life: float | None, floor: float) -> str:
    return "off" if half_life is None else f"{half_life / 24:g} d, floor {floor:g}"


async def score(loaded: dict, strategy=None, *, dense_only: bool = False) -> dict:
    """(Recall@5, MRR) per suite of ``Memory.retrieve`` with ``strategy``, or of the stored
    vectors alone (``dense_only``)."""
    out = {}
    for name, suite in loaded.items():
        m = suite.memory
        retriever = (
            DenseRetriever(m.vectors, m.embedder) if dense_only else MemoryRetriever(m, strategy)
        )
        report = await evaluate(suite, retriever)
        out[name] = (report.overall.recall[5], report.overall.mrr)
    return out


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


async def run(embedder_name: str) -> dict:
    embedder = await load_embedder(embedder_name)
    names = sorted(SUITES)
    plain = {n: await load(n) for n in names}
    dense = {n: await load(n, embedder) for n in names}
    try:
        current = compile_strategy(DEFAULT_STRATEGY)
        baseline = {
            "bm25": await score(plain, None),
            "hybrid": await score(dense, None),
            "dense": await score(dense, dense_only=True),
            "defaults": {
                "decay": decay_label(current.decay.half_life_hours, current.decay.floor),
                "fusion": [current.fusion.k, current.fusion.lexical, current.fusion.depth],
            },
        }
        bm25 = []
        for half_life, floor in DECAYS:
            bm25.append([half_life, floor, await score(plain, time_decay(half_life, floor=floor))])
        grid = []
        for (half_life, floor), k, lexical, depth in itertools.product(
            DECAYS, RRF_KS, LEXICAL, DEPTHS
        ):
            strategy = compose(time_decay(half_life, floor=floor), fusion(k, lexical, 1.0, depth))
            grid.append([half_life, floor, k, lexical, depth, await score(dense, strategy)])
    finally:
        for suite in (*plain.values(), *dense.values()):
            await suite.close()
    return {"embedder": embedder.name, "suites": names, "baseline": baseline, "bm25": bm25,
            "grid": grid}  # fmt: skip


def report(out: dict) -> str:
    names = out["suites"]
    grid = out["grid"]

    def key(row) -> tuple[float, float]:
        res = row[-1]
        return (mean(res[n][0] for n in names), mean(res[n][1] for n in names))

    ranked = sorted(grid, key=key, reverse=True)
    best = ranked[0]
    top = key(best)[0]
    plateau = sum(1 for row in grid if key(row)[0] >= top - 0.02)
    lines = [f"embedder {out['embedder']}; {len(grid)} grid points; R@5 / MRR per suite", ""]
    head = "| decay | rrf k | lexical | depth | " + " | ".join(names) + " | mean R@5 |"
    lines += [head, "|" + "---|" * (5 + len(names))]
    for row in ranked[:12]:
        half_life, floor, k, lexical, depth, res = row
        cells = " | ".join(f"{res[n][0]:.3f} / {res[n][1]:.3f}" for n in names)
        lines.append(
            f"| {decay_label(half_life, floor)} | {k} | {lexical} | {depth} | {cells} "
            f"| {key(row)[0]:.3f} |"
        )
    lines.append("")
    lines.append(f"{plateau} of {len(grid)} points are within 0.02 of the best mean R@5.")
    for n in names:
        own = max(row[-1][n][0] for row in grid)
        lines.append(f"{n}: chosen point {best[-1][n][0]:.3f}, best on this suite alone {own:.3f}")
    b = out["baseline"]
    lines.append("")
    lines.append(f"The defaults in the code when this ran ({b['defaults']}), and dense alone:")
    for mode in ("bm25", "dense", "hybrid"):
        cells = ", ".join(f"{n} {b[mode][n][0]:.3f} / {b[mode][n][1]:.3f}" for n in names)
        lines.append(f"- {mode}: {cells}")
    lines.append("")
    lines.append("BM25 alone by decay (R@5 / MRR):")
    for half_life, floor, res in out["bm25"]:
        cells = ", ".join(f"{n} {res[n][0]:.3f} / {res[n][1]:.3f}" for n in names)
        lines.append(f"- {decay_label(half_life, floor)}: {cells}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    out = asyncio.run(run(args.embedder))
    print(report(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
