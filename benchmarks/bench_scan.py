"""Coarse scan (1-bit codes + exact int8 re-rank) against the exact int8 scan, at 100k.

Usage (from the repository root)::

    python benchmarks/bench_scan.py --prepare            # embed the corpus once (cached)
    python benchmarks/bench_scan.py [--size 100000] [--queries 1000] [--json out.json]

Corpus: realistic memories from the long-conversations generator
(``benchmarks/make_conversations.py``, seeds 1, 2, ...): every run of 1 to 3 consecutive
turns of one session, written ``speaker: text``, deduplicated, in generation order, until
``--size`` texts. Queries: the generator's question texts (deduplicated, shuffled with a
fixed seed), the first half the tune split, the second half the held-out split. Texts and
queries are embedded with the real MiniLM (int8 ONNX, CPython onnxruntime) and cached
under ``.cache/bench/`` so that reruns are instant.

Measured, in one run and interleaved query by query:

* recall: for each query, the share of the coarse top-k whose exact score reaches the
  exact k-th best score (a tie-aware top-k overlap; k = 10 and the fusion depth 100),
  for each candidate count on the tune split; the chosen count on the held-out split;
* ``InMemoryVectorStore.search(q, 100)`` (what hybrid retrieve asks for) exact vs coarse;
* ``Memory.retrieve`` hybrid (MapKv, the stored vectors the real MiniLM ones, the query
  embedded by the real MiniLM), exact vs coarse, and the overlap of their top-10 ids.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from pymemory.retrieval import coarse
from pymemory.retrieval.coarse import COARSE_MIN_ROWS
from pymemory.retrieval.vectors import InMemoryVectorStore

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

CACHE = ROOT / ".cache" / "bench"
VERSION = 1  # bump when the corpus recipe changes


def corpus_texts(size: int, n_queries: int) -> tuple[list[str], list[str]]:
    """``size`` memory texts and ``n_queries`` question texts (deterministic)."""
    import make_conversations as mc

    texts: dict[str, None] = {}
    questions: dict[str, None] = {}
    seed = 1
    while len(texts) < size or len(questions) < n_queries:
        records = mc.build(seed)
        turns = [r for r in records if r.get("kind") == "turn"]
        for r in records:
            if r.get("kind") == "question":
                questions.setdefault(r["text"])
        for width in (1, 2, 3):
            for i in range(len(turns) - width + 1):
                run = turns[i : i + width]
                if len({t["session"] for t in run}) == 1:
                    texts.setdefault(" ".join(f"{t['speaker']}: {t['text']}" for t in run))
        seed += 1
    qs = list(questions)
    random.Random(7).shuffle(qs)
    return list(texts)[:size], qs[:n_queries]


def cache_dir(n_queries: int) -> Path:
    """Where the vectors are cached (the texts of any size are a prefix of one list)."""
    return CACHE / f"scan_minilm_v{VERSION}_{n_queries}q"


CHUNK = 2048  # texts embedded and cached per file


async def embed_cached(texts: list[str], folder: Path, label: str, limit: int | None) -> np.ndarray:
    """MiniLM vectors of ``texts``, chunk by chunk, each chunk cached in ``folder``; with
    ``limit``, only the chunks already cached (at most ``limit`` texts)."""
    folder.mkdir(parents=True, exist_ok=True)
    parts: list[np.ndarray] = []
    embedder = None
    t0 = time.perf_counter()
    for start in range(0, len(texts), CHUNK):
        path = folder / f"{label}_{start // CHUNK:04d}.npy"
        if path.exists():
            parts.append(np.load(path))
            continue
        if limit is not None:
            break
        if embedder is None:
            from pymemory.models.minilm import load_minilm

            threads = int(os.environ.get("BENCH_THREADS", "2"))
            embedder = await load_minilm(intra_op_threads=threads)
        vecs = np.asarray(await embedder.embed(texts[start : start + CHUNK]), dtype=np.float32)
        np.save(path.with_suffix(".tmp.npy"), vecs)
        path.with_suffix(".tmp.npy").replace(path)
        parts.append(vecs)
        done = start + vecs.shape[0]
        print(
            f"  {label}: {done}/{len(texts)} ({done / (time.perf_counter() - t0):.0f}/s)",
            file=sys.stderr,
            flush=True,
        )
    out = np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)
    return out[: len(texts) if limit is None else min(limit, len(texts))]


def load_corpus(
    size: int, n_queries: int, cached_only: bool = False
) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """(texts, their vectors, queries, their vectors), embedding and caching if needed;
    ``cached_only``: only the vectors of the first texts, as many as are embedded already."""
    folder = cache_dir(n_queries)
    texts, queries = corpus_texts(size, n_queries)
    limit = size if cached_only else None
    qv = asyncio.run(embed_cached(queries, folder, "queries", None))
    dv = asyncio.run(embed_cached(texts, folder, "memories", limit))
    return texts, dv, queries, qv


def overlap(got: list[tuple[str, float]], exact: list[tuple[str, float]], k: int) -> float:
    """Share of ``got``'s top-k that score at least the exact k-th best (ties count)."""
    if not exact:
        return 1.0
    kth = exact[min(k, len(exact)) - 1][1]
    return sum(score >= kth for _, score in got[:k]) / min(k, len(exact))


def make_store(ids: list[str], vectors: np.ndarray, coarse_min_rows: int | None) -> Any:
    store = InMemoryVectorStore(vectors.shape[1])
    store.coarse_min_rows = coarse_min_rows
    for start in range(0, len(ids), 10_000):
        store.put(ids[start : start + 10_000], vectors[start : start + 10_000])
    return store


def fill_to(dv: np.ndarray, size: int, seed: int = 11) -> np.ndarray:
    """``dv`` extended to ``size`` rows by real rows plus small noise (renormalised)."""
    if dv.shape[0] >= size:
        return dv[:size]
    rng = np.random.default_rng(seed)
    extra = dv[rng.integers(0, dv.shape[0], size - dv.shape[0])]
    extra = extra + rng.normal(scale=0.02, size=extra.shape).astype(np.float32)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.concatenate([dv, extra.astype(np.float32)])


def recall_sweep(
    dv: np.ndarray, qv: np.ndarray, counts: list[int], ks: tuple[int, ...]
) -> dict[int, dict[int, list[float]]]:
    """count -> k -> per-query overlap of the coarse top-k (shortlist ``count``) with the
    exact top-k."""
    ids = [f"m{i:06d}" for i in range(dv.shape[0])]
    exact = make_store(ids, dv, None)
    fast = make_store(ids, dv, 1)
    truth = {k: [exact.search(q, k) for q in qv] for k in ks}
    out: dict[int, dict[int, list[float]]] = {}
    saved = coarse.COARSE_CANDIDATES, coarse.COARSE_PER_K
    try:
        coarse.COARSE_PER_K = 0
        for count in counts:
            coarse.COARSE_CANDIDATES = count
            out[count] = {
                k: [overlap(fast.search(q, k), t, k) for q, t in zip(qv, truth[k], strict=True)]
                for k in ks
            }
    finally:
        coarse.COARSE_CANDIDATES, coarse.COARSE_PER_K = saved
    return out


def recall_shipped(dv: np.ndarray, qv: np.ndarray, k: int) -> float:
    """Mean overlap of the coarse top-k with the exact top-k, shortlists as shipped."""
    ids = [f"m{i:06d}" for i in range(dv.shape[0])]
    exact = make_store(ids, dv, None)
    fast = make_store(ids, dv, 1)
    return float(np.mean([overlap(fast.search(q, k), exact.search(q, k), k) for q in qv]))


def time_search(dv: np.ndarray, qv: np.ndarray, k: int) -> dict[str, Any]:
    """Per query, interleaved: exact vs coarse ``search(q, k)`` on one store; and overlap."""
    ids = [f"m{i:06d}" for i in range(dv.shape[0])]
    store = make_store(ids, dv, None)
    lat: dict[str, list[float]] = {"exact": [], "coarse": []}
    ov10, ovk = [], []
    for q in qv[:5]:  # warm-up (the first coarse search builds the codes)
        store.coarse_min_rows = 1
        store.search(q, k)
    gc.collect()
    for q in qv:
        got = {}
        for mode, least in (("exact", None), ("coarse", COARSE_MIN_ROWS)):
            store.coarse_min_rows = least
            t = time.perf_counter()
            got[mode] = store.search(q, k)
            lat[mode].append(time.perf_counter() - t)
        ov10.append(overlap(got["coarse"], got["exact"], 10))
        ovk.append(overlap(got["coarse"], got["exact"], k))
    return {"lat": lat, "overlap10": float(np.mean(ov10)), f"overlap{k}": float(np.mean(ovk))}


class TableEmbedder:
    """Precomputed MiniLM vectors looked up by text (the query's embedding time left out)."""

    name = "minilm-table"
    dim = 384

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self._row = {t: j for j, t in enumerate(texts)}
        self._vectors = vectors

    async def embed(self, texts: Any) -> np.ndarray:
        return self._vectors[[self._row[t] for t in texts]]


async def time_retrieve(
    texts: list[str], dv: np.ndarray, queries: list[str], qv: np.ndarray
) -> dict[str, Any]:
    """Memory.retrieve hybrid over MapKv, exact vs coarse interleaved per query."""
    from bench_memory import NOW, entries

    from pymemory import Memory
    from pymemory.storage import MapKv

    memory = await Memory.open(MapKv(), clock=lambda: NOW)
    batch = entries(texts, np.random.default_rng(3))
    t0 = time.perf_counter()
    for start in range(0, len(batch), 1000):
        await memory.add_many(batch[start : start + 1000])
    add_s = time.perf_counter() - t0
    embedder = TableEmbedder(texts + queries, np.concatenate([dv, qv]))
    await memory.attach_embedder(embedder)  # type: ignore[arg-type]
    await memory.embed_idle()
    vectors = memory.vectors
    assert len(vectors) == len(texts), (len(vectors), len(texts))
    lat: dict[str, list[float]] = {"exact": [], "coarse": []}
    same = []
    for q in queries[:5]:
        await memory.retrieve(q, max_items=10)
    gc.collect()
    for q in queries:
        got = {}
        for mode, least in (("exact", None), ("coarse", COARSE_MIN_ROWS)):
            vectors.coarse_min_rows = least
            t = time.perf_counter()
            r = await memory.retrieve(q, max_items=10)
            lat[mode].append(time.perf_counter() - t)
            assert r.mode == "hybrid"
            got[mode] = [m.item.id for m in r.memories]
        same.append(len(set(got["exact"]) & set(got["coarse"])) / max(1, len(got["exact"])))
    await memory.close()
    return {"lat": lat, "same10": float(np.mean(same)), "add_s": add_s}


def pct(samples: list[float]) -> str:
    arr = np.array(samples) * 1000
    return f"{np.percentile(arr, 50):.2f} / {np.percentile(arr, 95):.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--prepare", action="store_true", help="only embed and cache the corpus")
    ap.add_argument("--cached-only", action="store_true", help="use only what is embedded")
    ap.add_argument("--counts", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000])
    ap.add_argument("--timed", type=int, default=300, help="queries timed per configuration")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    texts, dv, queries, qv = load_corpus(args.size, args.queries, args.cached_only)
    real = dv.shape[0]
    print(f"{real} real MiniLM memories, {len(queries)} queries, dim {qv.shape[1]}")
    if args.prepare:
        return 0
    print(f"load average {os.getloadavg()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    half = len(queries) // 2
    result: dict[str, Any] = {"real": real, "size": args.size}
    ks = (10, 100)
    sweep = recall_sweep(dv, qv[:half], args.counts, ks)
    result["sweep_tune"] = {
        c: {k: float(np.mean(v)) for k, v in d.items()} for c, d in sweep.items()
    }
    print(f"recall sweep on {real} real vectors, tune split ({half} queries):")
    for c, d in sweep.items():
        print(
            f"  shortlist {c:>5}: " + ", ".join(f"top-{k} {np.mean(v):.4f}" for k, v in d.items())
        )
    ok10 = [c for c, d in sweep.items() if np.mean(d[10]) >= 0.995]
    ok100 = [c for c, d in sweep.items() if np.mean(d[100]) >= 0.99]
    print(
        f"  smallest shortlist with top-10 >= 0.995: {min(ok10, default=None)}, "
        f"with top-100 >= 0.99: {min(ok100, default=None)}"
    )
    shipped = f"max({coarse.COARSE_CANDIDATES}, {coarse.COARSE_PER_K} * k)"
    held = {k: recall_shipped(dv, qv[half:], k) for k in ks}
    result["heldout"] = held
    print(
        f"held-out split ({len(qv) - half} queries), shortlist {shipped}: "
        + ", ".join(f"top-{k} {v:.4f}" for k, v in held.items())
    )
    full = fill_to(dv, args.size)
    for label, vecs in ((f"{real} real", dv), (f"{args.size} (real + noisy copies)", full)):
        r = time_search(vecs, qv[half : half + args.timed], 100)
        result[f"search_{vecs.shape[0]}"] = r
        print(
            f"search(q, 100) at {label}: exact {pct(r['lat']['exact'])} ms, coarse "
            f"{pct(r['lat']['coarse'])} ms (p50 / p95); top-10 overlap {r['overlap10']:.4f}, "
            f"top-100 {r['overlap100']:.4f}"
        )
    timed = slice(half, half + args.timed)
    r = asyncio.run(time_retrieve(texts[: args.size], full, queries[timed], qv[timed]))
    result["retrieve"] = r
    print(
        f"Memory.retrieve hybrid at {args.size}: exact {pct(r['lat']['exact'])} ms, coarse "
        f"{pct(r['lat']['coarse'])} ms; same top-10 ids {r['same10']:.4f}"
    )
    print(f"load average {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(result, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
