"""Evaluate a static embedder distilled from MiniLM (the model2vec recipe) against MiniLM.

Usage (from the repository root; needs the built MiniLM, ``python3 build.py setup``)::

    python benchmarks/eval_static.py [--json out.json] [--grid] [--dims 256 --sif 1e-3]

What it does, in one run:

1. **Distil**: every token of MiniLM's vocabulary through MiniLM alone (``[CLS] t [SEP]``,
   mean-pooled), cached in ``.cache/static-eval/`` (about a minute, once); then PCA and SIF
   weights (``static_model.distill_static``, beside this script) into a float16 matrix.
2. **Tune** (``--grid``), on the ``tune`` split of ``long-conversations`` only (the one
   suite with splits): PCA dims x SIF coefficient by hybrid MRR (default strategy), then,
   for that model, the fusion's dense weight (static cosines run high: unrelated chat
   turns average 0.51 against MiniLM's 0.13, so the default 1:1 fusion leans on them).
   ``--dims``/``--sif``/``--fusion-dense`` override the tuned values.
3. **Evaluate** every suite: BM25 alone, dense and hybrid with the static embedder
   (hybrid with the default strategy and with the tuned fusion weight), dense and hybrid
   with MiniLM (``Memory.retrieve``, no token budget; ``long-conversations`` per split,
   the small suites whole: nothing was tuned on them).
4. **Throughput**: texts/s of ``embed`` for the static embedder (tokenising included,
   and the table lookup alone) and for MiniLM (onnxruntime, 1 and 2 intra-op threads),
   on the same turns, alternating rounds, best round of each.

Decision rule (issue 14): the static embedder is worth keeping only if hybrid(BM25 +
static) beats BM25 alone on held-out MRR on every suite. Result (2026-12-03): it does not
on ``long-context-recall`` (0.537 default, 0.614 tuned fusion, BM25 0.624), so it is not a
product embedder; the code stays here (``static_model.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bm25 import machine_info  # noqa: E402
from static_model import (  # noqa: E402
    StaticEmbedder,
    distill_static,
    token_ranks,
    token_vectors,
    zero_ids,
)

from pymemory.evals import harness  # noqa: E402
from pymemory.evals.retrievers import MemoryRetriever  # noqa: E402
from pymemory.evals.suites import SUITES, load_suite  # noqa: E402
from pymemory.models import load_minilm  # noqa: E402
from pymemory.models.local import find_model_dir  # noqa: E402
from pymemory.models.tokenizers import load_tokenizer  # noqa: E402
from pymemory.retrieval.strategies import (  # noqa: E402
    Strategy,
    compose,
    feedback_weight,
    fusion,
    relevance_floor,
    time_decay,
)

CACHE = ROOT / ".cache" / "static-eval"
GRID_DIMS = (64, 128, 256, 384)
GRID_SIF = (None, 1e-2, 1e-3, 1e-4)
GRID_FUSION_DENSE = (0.1, 0.15, 0.25, 0.5, 1.0)


def static_strategy(dense: float) -> Strategy:
    """The default strategy with the fusion's dense weight changed (default 1.0)."""
    return compose(time_decay(), feedback_weight(), fusion(dense=dense), relevance_floor())


def with_strategy(dense: float):
    """A retriever factory: ``Memory.retrieve`` with :func:`static_strategy` ``(dense)``."""
    strategy = static_strategy(dense)
    return lambda memory: MemoryRetriever(memory, strategy)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def vocabulary(minilm: Path) -> list[str]:
    return (minilm / "vocab.txt").read_text(encoding="utf-8").splitlines()


async def cached_token_vectors(minilm: Path) -> np.ndarray:
    """:func:`static_model.token_vectors` of the MiniLM in ``minilm``, cached
    in .cache/static-eval by the model's sha256."""
    cached = CACHE / f"tokens-{sha256(minilm / 'model.onnx')[:16]}.npy"
    if cached.is_file():
        return np.load(cached)
    t0 = time.perf_counter()
    out = await token_vectors(await load_minilm(model_dir=minilm))
    print(f"{len(out)} tokens through MiniLM in {time.perf_counter() - t0:.1f} s", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(cached, out)
    return out


def make_static(raw: np.ndarray, vocab: list[str], minilm: Path, dims: int, sif: float | None):
    matrix = distill_static(raw, token_ranks(vocab), dims=dims, sif=sif, zero_ids=zero_ids(vocab))
    tokenizer = load_tokenizer(minilm / "tokenizer.json")
    return StaticEmbedder(matrix.astype(np.float16), tokenizer, name=f"static-pca{dims}-sif{sif}")


def metrics(report: harness.Report, split: str | None) -> dict:
    m = report.overall if split is None else report.by_split[split]
    return {"R@1": m.recall[1], "R@10": m.recall[10], "MRR": m.mrr, "n": m.answerable}


async def evaluate_suite(
    suite_name: str, embedders: dict, splits: list, static_dense: float | None
) -> dict:
    """{split: {retriever label: metrics}} for BM25 and each embedder's dense + hybrid
    (and, for the static embedder, hybrid with the fusion's dense weight ``static_dense``)."""
    suite = load_suite(suite_name)
    out: dict = {str(s): {} for s in splits}
    runs = [("bm25", None, ("bm25",))]
    runs += [(label, emb, ("dense", "hybrid")) for label, emb in embedders.items()]
    for label, embedder, retrievers in runs:
        t0 = time.perf_counter()
        loaded = await harness.load(suite, embedder)
        index_s = time.perf_counter() - t0
        try:
            for name in retrievers:
                factory = lambda m, name=name: harness.make_retriever(name, m)  # noqa: E731
                report = await harness.evaluate(loaded, factory)
                key = name if embedder is None else f"{name} {label}"
                for s in splits:
                    out[str(s)][key] = metrics(report, s)
            if label == "static" and static_dense is not None:
                report = await harness.evaluate(loaded, with_strategy(static_dense))
                for s in splits:
                    key = f"hybrid static, fusion dense {static_dense:g}"
                    out[str(s)][key] = metrics(report, s)
        finally:
            await loaded.close()
        print(f"  {suite_name} {label}: loaded+embedded in {index_s:.1f} s", flush=True)
    return out


async def tune(raw, vocab, minilm, grid_dims, grid_sif) -> list[dict]:
    suite = load_suite("long-conversations")
    rows = []
    for dims in grid_dims:
        for sif in grid_sif:
            emb = make_static(raw, vocab, minilm, dims, sif)
            loaded = await harness.load(suite, emb)
            try:
                row = {"dims": dims, "sif": sif}
                for name in ("dense", "hybrid"):
                    factory = lambda m, name=name: harness.make_retriever(name, m)  # noqa: E731
                    rep = await harness.evaluate(loaded, factory, split="tune")
                    row[f"{name} MRR"] = rep.overall.mrr
                    row[f"{name} R@10"] = rep.overall.recall[10]
            finally:
                await loaded.close()
            rows.append(row)
            print(f"  tune {row}", flush=True)
    return rows


async def tune_fusion(static: StaticEmbedder, weights) -> list[dict]:
    """Tune-split MRR of hybrid with the static embedder for each fusion dense weight."""
    loaded = await harness.load(load_suite("long-conversations"), static)
    rows = []
    try:
        for w in weights:
            rep = await harness.evaluate(loaded, with_strategy(w), split="tune")
            rows.append({"dense": w, "hybrid MRR": rep.overall.mrr,
                         "hybrid R@10": rep.overall.recall[10]})  # fmt: skip
            print(f"  tune fusion {rows[-1]}", flush=True)
    finally:
        await loaded.close()
    return rows


async def throughput(texts: list[str], static: StaticEmbedder, minilm: Path, rounds: int) -> dict:
    one = await load_minilm(model_dir=minilm, intra_op_threads=1)
    two = await load_minilm(model_dir=minilm, intra_op_threads=2)
    ids = static.token_ids(texts)  # warm the tokenizer's word cache like a running app
    best: dict[str, float] = {}

    async def timed(label: str, fn) -> None:
        t0 = time.perf_counter()
        result = fn()
        if asyncio.iscoroutine(result):
            await result
        rate = len(texts) / (time.perf_counter() - t0)
        best[label] = max(best.get(label, 0.0), rate)

    await one.embed(texts[:64])
    await two.embed(texts[:64])
    for _ in range(rounds):
        await timed("static: tokenise + lookup", lambda: static.embed_sync(texts))
        await timed("static: lookup only", lambda: static.embed_ids(ids))
        await timed("MiniLM int8, onnxruntime 1 thread", lambda: one.embed(texts))
        await timed("MiniLM int8, onnxruntime 2 threads", lambda: two.embed(texts))
    return best


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def markdown(result: dict) -> str:
    lines = ["| suite (split) | retriever | R@1 | R@10 | MRR |", "|---|---|---:|---:|---:|"]
    for suite, by_split in result["quality"].items():
        for split, rows in by_split.items():
            where = suite if split == "None" else f"{suite}, {split}"
            for key, m in rows.items():
                lines.append(f"| {where} | {key} | {fmt(m['R@1'])} | {fmt(m['R@10'])} | "
                             f"{fmt(m['MRR'])} |")  # fmt: skip
    lines += ["", "| embedder | texts/s |", "|---|---:|"]
    lines += [f"| {k} | {v:,.0f} |" for k, v in result["throughput"].items()]
    if result.get("grid"):
        lines += ["", "| dims | SIF | tune dense MRR | tune hybrid MRR |", "|---:|---|---:|---:|"]
        lines += [f"| {r['dims']} | {r['sif']} | {fmt(r['dense MRR'])} | "
                  f"{fmt(r['hybrid MRR'])} |" for r in result["grid"]]  # fmt: skip
    if result.get("fusion_grid"):
        lines += ["", "| fusion dense weight | tune hybrid MRR | tune hybrid R@10 |",
                  "|---:|---:|---:|"]  # fmt: skip
        lines += [f"| {r['dense']:g} | {fmt(r['hybrid MRR'])} | {fmt(r['hybrid R@10'])} |"
                  for r in result["fusion_grid"]]  # fmt: skip
    return "\n".join(lines)


def decision(quality: dict, key: str) -> tuple[bool, list[str]]:
    """Does ``key`` (a hybrid static row) beat BM25 on held-out MRR on every suite?"""
    notes, keep = [], True
    for suite, by_split in quality.items():
        split = "heldout" if "heldout" in by_split else "None"
        rows = by_split[split]
        bm25, hybrid = rows["bm25"]["MRR"], rows[key]["MRR"]
        ok = hybrid > bm25
        keep &= ok
        notes.append(f"{suite} ({split}): {key} {hybrid:.3f} vs BM25 {bm25:.3f}"
                     f" -> {'beats' if ok else 'does NOT beat'}")  # fmt: skip
    return keep, notes


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", action="store_true", help="tune dims x SIF on the tune split")
    ap.add_argument("--dims", type=int, default=None)
    ap.add_argument("--sif", type=float, default=None, help="0 = no SIF weights")
    ap.add_argument(
        "--fusion-dense",
        type=float,
        default=None,
        help="the static hybrid's fusion dense weight (default: tuned with --grid)",
    )
    ap.add_argument("--turns", type=int, default=2000, help="texts for the throughput rows")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    minilm = find_model_dir("minilm")
    if minilm is None:
        sys.exit("no MiniLM model: run `python3 build.py setup` first")
    started = dt.datetime.now(dt.UTC)
    load_before = os.getloadavg()
    vocab = vocabulary(minilm)
    raw = await cached_token_vectors(minilm)

    result: dict = {"machine": machine_info(), "started_utc": started.isoformat(timespec="seconds")}
    dims, sif = 256, 1e-3
    if args.grid:
        result["grid"] = await tune(raw, vocab, minilm, GRID_DIMS, GRID_SIF)
        best = max(result["grid"], key=lambda r: r["hybrid MRR"])
        dims, sif = best["dims"], best["sif"]
    if args.dims is not None:
        dims = args.dims
    if args.sif is not None:
        sif = args.sif or None
    static = make_static(raw, vocab, minilm, dims, sif)
    static_dense = args.fusion_dense
    if args.grid:
        result["fusion_grid"] = await tune_fusion(static, GRID_FUSION_DENSE)
        if static_dense is None:
            static_dense = max(result["fusion_grid"], key=lambda r: r["hybrid MRR"])["dense"]
    result["chosen"] = {"dims": dims, "sif": sif, "fusion_dense": static_dense}
    print(f"static embedder: dims {dims}, SIF {sif}, fusion dense {static_dense}", flush=True)
    embedders = {"static": static, "MiniLM": await load_minilm(model_dir=minilm)}

    result["quality"] = {}
    for name in SUITES:
        splits = list(load_suite(name).splits) or [None]
        result["quality"][name] = await evaluate_suite(name, embedders, splits, static_dense)

    suite = load_suite("long-conversations")
    texts = [t.text for t in suite.turns[: args.turns]]
    result["throughput"] = await throughput(texts, static, minilm, args.rounds)
    result["keep"], result["decision"] = decision(result["quality"], "hybrid static")
    if static_dense is not None:
        key = f"hybrid static, fusion dense {static_dense:g}"
        result["keep_tuned_fusion"], notes = decision(result["quality"], key)
        result["decision"] += notes
    result["load_avg"] = {"before": load_before, "after": os.getloadavg()}
    result["finished_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    print(markdown(result))
    print("\n".join(result["decision"]))
    print(
        f"keep (default strategy): {result['keep']}; with the tuned fusion: "
        f"{result.get('keep_tuned_fusion')}; load average {result['load_avg']}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
