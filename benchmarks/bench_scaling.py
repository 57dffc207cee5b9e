"""Scaling in CPython: top-10 query latency against corpus size, and bytes per stored item.

Usage::

    python benchmarks/bench_scaling.py [--sizes 1000 3000 10000 30000 100000] [--queries 200]
        [--json out.json] [--svg docs/img/cpython_latency_vs_size.svg]
    python benchmarks/bench_scaling.py --from-json out.json  # report + plot of a saved run

One corpus of ``max(sizes)`` documents is generated with bench_bm25's ``make_corpus``; size
``n`` uses its first ``n`` documents, and every size is queried with the same queries.

Pass 1, latency (one query at a time, after 5 untimed warm-up queries), per size:

* ``pymemory Bm25Index``: ``Bm25Index.top_k(terms, 10)`` over the analysed texts;
* ``bm25s``: ``BM25(method="lucene")``, ``retrieve([terms], k=10)`` (and, in the table
  only, the lower-level ``get_scores`` + ``selection.topk``);
* ``rank_bm25``: ``BM25Okapi.get_scores`` + ``argpartition``; above
  ``--rank-bm25-full-limit`` documents only the first ``--rank-bm25-queries`` queries;
* ``Memory.retrieve``: the full filter -> rank -> trim path with the default strategy
  and ``max_items=10``, on a Memory over ``MapKv`` (retrieval reads only the in-memory
  catalog, never the KV store), filled through ``add_many`` with bench_memory's entries
  (random types, tags, scopes, timestamps over 90 days): first BM25 only, then hybrid
  after ``attach_embedder(HashingEmbedder())`` + ``embed_idle()`` (384-dim int8 vectors,
  brute-force cosine, fused with BM25 by RRF).

Pass 2, footprint at ``max(sizes)``, separate from pass 1 because tracemalloc slows
Python down: the items are written to a SqliteKv file (``synchronous=NORMAL``) and the
file size is read without vectors and again after embedding them. The store is then
reopened under tracemalloc: ``Memory.open`` (catalog + BM25 index rebuilt from the
records), then ``attach_embedder`` (the stored vectors loaded into the matrix), and the
BM25 index is finally dropped to see what it alone held. tracemalloc counts Python and
numpy allocations, not SQLite's own page cache.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from bench_bm25 import K, machine_info, make_corpus
from bench_memory import NOW, entries, percentiles
from svgplot import line_plot

try:
    from pymemory import Memory
    from pymemory.models.embedding import HashingEmbedder
    from pymemory.retrieval.analyzer import analyze
    from pymemory.retrieval.bm25 import Bm25Index
    from pymemory.storage import MapKv, SqliteKv
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pymemory import Memory
    from pymemory.models.embedding import HashingEmbedder
    from pymemory.retrieval.analyzer import analyze
    from pymemory.retrieval.bm25 import Bm25Index
    from pymemory.storage import MapKv, SqliteKv

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SVG = ROOT / "docs" / "img" / "cpython_latency_vs_size.svg"
WARMUP = 5
BATCH = 1000
PLOTTED = {  # engine row -> plot series
    "pymemory Bm25Index.top_k": "pymemory BM25 index",
    "bm25s retrieve": "bm25s",
    "rank_bm25 BM25Okapi": "rank_bm25",
    "Memory.retrieve, BM25": "Memory.retrieve (BM25)",
    "Memory.retrieve, hybrid": "Memory.retrieve (hybrid)",
}


def clock() -> int:
    return NOW


def row(engine: str, size: int, build_s: float, samples: Sequence[float]) -> dict[str, Any]:
    """One table row from per-query latencies in seconds."""
    p50, p95 = percentiles(list(samples))
    return {
        "docs": size,
        "engine": engine,
        "build_s": build_s,
        "n_queries": len(samples),
        "p50_ms": p50,
        "p95_ms": p95,
        "qps": len(samples) / sum(samples),
    }


def time_each(run_one: Callable[[Any], object], queries: Sequence[Any]) -> list[float]:
    """Seconds per call of ``run_one`` on each query (after a garbage collection)."""
    gc.collect()
    out = []
    for q in queries:
        t = time.perf_counter()
        run_one(q)
        out.append(time.perf_counter() - t)
    return out


async def time_each_async(
    run_one: Callable[[str], Awaitable[object]], queries: Sequence[str]
) -> list[float]:
    gc.collect()
    out = []
    for q in queries:
        t = time.perf_counter()
        await run_one(q)
        out.append(time.perf_counter() - t)
    return out


def bench_engines(
    docs: list[list[str]], warm: list[list[str]], queries: list[list[str]], rank_queries: int
) -> list[dict[str, Any]]:
    """Latency rows for Bm25Index, bm25s and rank_bm25 over the same token lists."""
    import bm25s
    import bm25s.selection
    from rank_bm25 import BM25Okapi

    size = len(docs)
    rows = []
    t = time.perf_counter()
    index = Bm25Index(k1=1.2, b=0.75)
    for slot, terms in enumerate(docs):
        index.add(slot, terms)
    build = time.perf_counter() - t
    for q in warm:
        index.top_k(q, K)
    lat = time_each(lambda q: index.top_k(q, K), queries)
    rows.append(row("pymemory Bm25Index.top_k", size, build, lat))

    t = time.perf_counter()
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    retriever.index(docs, show_progress=False)
    build = time.perf_counter() - t
    for q in warm:
        retriever.retrieve([q], k=K, show_progress=False)
    lat = time_each(lambda q: retriever.retrieve([q], k=K, show_progress=False), queries)
    rows.append(row("bm25s retrieve", size, build, lat))
    lat = time_each(
        lambda q: bm25s.selection.topk(retriever.get_scores(q), K, backend="numpy", sorted=True),
        queries,
    )
    rows.append(row("bm25s get_scores + topk", size, build, lat))

    t = time.perf_counter()
    model = BM25Okapi(docs)
    build = time.perf_counter() - t

    def rank_one(q: list[str]) -> list[int]:
        scores = model.get_scores(q)
        top = np.argpartition(-scores, K)[:K]
        return top[np.argsort(-scores[top], kind="stable")].tolist()

    for q in warm[:1]:
        rank_one(q)
    lat = time_each(rank_one, queries[:rank_queries])
    rows.append(row("rank_bm25 BM25Okapi", size, build, lat))
    return rows


async def bench_memory_retrieve(
    texts: list[str], warm: list[str], queries: list[str], seed: int
) -> list[dict[str, Any]]:
    """Latency rows for Memory.retrieve on MapKv, BM25 only and then hybrid."""
    size = len(texts)
    memory = await Memory.open(MapKv(), clock=clock)
    batch = entries(texts, np.random.default_rng(seed))
    t = time.perf_counter()
    for start in range(0, size, BATCH):
        await memory.add_many(batch[start : start + BATCH])
    build = time.perf_counter() - t
    del batch
    rows = []
    for mode in ("bm25", "hybrid"):
        if mode == "hybrid":
            t = time.perf_counter()
            await memory.attach_embedder(HashingEmbedder())
            await memory.embed_idle()
            build = time.perf_counter() - t
        for q in warm:
            got = await memory.retrieve(q, max_items=K)
            assert got.mode == mode, (got.mode, mode)
        lat = await time_each_async(lambda q: memory.retrieve(q, max_items=K), queries)
        label = "BM25" if mode == "bm25" else mode
        rows.append(row(f"Memory.retrieve, {label}", size, build, lat))
    await memory.close()
    return rows


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir())


async def footprint(texts: list[str], seed: int) -> dict[str, Any]:
    """On-disk and in-process bytes of a Memory holding ``texts`` with their vectors."""
    n = len(texts)
    out: dict[str, Any] = {"items": n}
    with tempfile.TemporaryDirectory(prefix="pymemory-scaling-") as tmp:
        folder = Path(tmp)
        path = folder / "scaling.db"
        kv = await SqliteKv.open(path, synchronous="NORMAL")
        memory = await Memory.open(kv, clock=clock)
        batch = entries(texts, np.random.default_rng(seed))
        for start in range(0, n, BATCH):
            await memory.add_many(batch[start : start + BATCH])
        del batch
        await memory.close()
        await kv.close()
        out["disk_bytes_no_vectors"] = folder_bytes(folder)

        kv = await SqliteKv.open(path, synchronous="NORMAL")
        memory = await Memory.open(kv, clock=clock)
        t = time.perf_counter()
        await memory.attach_embedder(HashingEmbedder())
        await memory.embed_idle()
        out["embed_s"] = time.perf_counter() - t
        await memory.close()
        await kv.close()
        out["disk_bytes_with_vectors"] = folder_bytes(folder)

        gc.collect()
        kv = await SqliteKv.open(path, synchronous="NORMAL")
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        t = time.perf_counter()
        memory = await Memory.open(kv, clock=clock)
        out["traced_open_s"] = time.perf_counter() - t
        gc.collect()
        loaded, peak = tracemalloc.get_traced_memory()
        out["heap_items_bytes"] = loaded - base
        out["heap_items_peak_bytes"] = peak - base
        tracemalloc.reset_peak()
        t = time.perf_counter()
        await memory.attach_embedder(HashingEmbedder())
        await memory.embed_idle()
        out["traced_vector_load_s"] = time.perf_counter() - t
        gc.collect()
        with_vectors, peak = tracemalloc.get_traced_memory()
        out["heap_vectors_bytes"] = with_vectors - loaded
        out["heap_vectors_peak_bytes"] = peak - loaded
        assert memory.vectors is not None and len(memory.vectors) == n
        out["vector_matrix_rows"] = memory.vectors._rows.shape[0]  # capacity, for the record
        # What the BM25 index alone holds: swap in an empty one and measure the drop.
        memory._catalog.index = Bm25Index()
        gc.collect()
        out["heap_bm25_bytes"] = with_vectors - tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        await memory.close()
        await kv.close()
    return out


# --------------------------------------------------------------------------- report


def latency_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| docs | engine | build s | queries timed | p50 ms | p95 ms | queries/s |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['docs']:,} | {r['engine']} | {r['build_s']:.2f} | {r['n_queries']:,} "
            f"| {r['p50_ms']:.3f} | {r['p95_ms']:.3f} | {r['qps']:,.0f} |"
        )
    return "\n".join(lines)


def p50_pivot(rows: list[dict[str, Any]]) -> str:
    sizes = sorted({r["docs"] for r in rows})
    lines = [
        "| p50 ms | " + " | ".join(f"{s:,}" for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for engine in dict.fromkeys(r["engine"] for r in rows):
        by_size = {r["docs"]: r["p50_ms"] for r in rows if r["engine"] == engine}
        cells = " | ".join(f"{by_size[s]:.3f}" if s in by_size else "-" for s in sizes)
        lines.append(f"| {engine} | {cells} |")
    return "\n".join(lines)


def footprint_table(fp: dict[str, Any]) -> str:
    n = fp["items"]
    heap_total = fp["heap_items_bytes"] + fp["heap_vectors_bytes"]
    rows = [
        ("in process: catalog + items + BM25 index", fp["heap_items_bytes"]),
        ("of which: the BM25 index alone", fp["heap_bm25_bytes"]),
        ("in process: vectors (int8 x 384, KvVectorStore)", fp["heap_vectors_bytes"]),
        ("in process: total", heap_total),
        ("on disk (SqliteKv): items only", fp["disk_bytes_no_vectors"]),
        (
            "on disk (SqliteKv): vectors",
            fp["disk_bytes_with_vectors"] - fp["disk_bytes_no_vectors"],
        ),
        ("on disk (SqliteKv): items + vectors", fp["disk_bytes_with_vectors"]),
    ]
    lines = [f"| at {n:,} items | bytes / item | MB total |", "|---|---:|---:|"]
    for name, total in rows:
        lines.append(f"| {name} | {total / n:,.0f} | {total / 1e6:.1f} |")
    lines.append(
        f"\nPeak above the starting heap while reopening: {fp['heap_items_peak_bytes'] / 1e6:.0f}"
        f" MB (items), then {fp['heap_vectors_peak_bytes'] / 1e6:.0f} MB more while loading the"
        f" vectors; vector matrix capacity {fp['vector_matrix_rows']:,} rows for {n:,} vectors."
    )
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = sorted(args.sizes)
    t0 = time.perf_counter()
    texts, query_texts = make_corpus(sizes[-1], args.queries + WARMUP, args.seed)
    docs = [analyze(t) for t in texts]
    terms = [analyze(q) for q in query_texts]
    print(
        f"# corpus of {sizes[-1]:,} docs ({np.mean([len(d) for d in docs]):.1f} terms/doc), "
        f"{args.queries} queries + {WARMUP} warm-up "
        f"({np.mean([len(q) for q in terms]):.1f} terms/query), made in "
        f"{time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    warm, queries = terms[:WARMUP], terms[WARMUP:]
    warm_text, queries_text = query_texts[:WARMUP], query_texts[WARMUP:]
    rows: list[dict[str, Any]] = []
    for size in sizes:
        t0 = time.perf_counter()
        rank_queries = args.queries if size <= args.rank_bm25_full_limit else args.rank_bm25_queries
        new = bench_engines(docs[:size], warm, queries, rank_queries)
        new += await bench_memory_retrieve(texts[:size], warm_text, queries_text, args.seed)
        rows += new
        print(f"# {size:,} docs done in {time.perf_counter() - t0:.0f} s", flush=True)
        print(latency_table(new), flush=True)
    del docs
    gc.collect()
    t0 = time.perf_counter()
    fp = await footprint(texts, args.seed)
    print(f"# footprint pass done in {time.perf_counter() - t0:.0f} s", flush=True)
    return {"rows": rows, "footprint": fp}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1000, 3000, 10_000, 30_000, 100_000]
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rank-bm25-full-limit", type=int, default=20_000)
    parser.add_argument("--rank-bm25-queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--svg", default=str(DEFAULT_SVG), help="'' to skip the plot")
    parser.add_argument(
        "--from-json", type=Path, help="measure nothing: print the report of a saved --json"
    )
    args = parser.parse_args(argv)

    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        info, result = saved["machine"], saved
    else:
        info = machine_info()
    print(
        f"# {info['date']}  nproc={info['nproc']}  cpu={info['cpu']}  ram={info['ram']}  "
        + "  ".join(f"{k}={v}" for k, v in info["versions"].items()),
        flush=True,
    )
    if not args.from_json:
        result = asyncio.run(run(args))
    rows = result["rows"]
    print("\n## Top-10 latency against corpus size\n")
    print(latency_table(rows))
    print("\n## p50 latency (ms)\n")
    print(p50_pivot(rows))
    print("\n## Bytes per stored item\n")
    print(footprint_table(result["footprint"]))
    if args.svg:
        series = {
            label: [(r["docs"], r["p50_ms"]) for r in rows if r["engine"] == engine]
            for engine, label in PLOTTED.items()
        }
        svg = Path(args.svg)
        svg.parent.mkdir(parents=True, exist_ok=True)
        svg.write_text(
            line_plot(
                series,
                title="Top-10 query latency against corpus size (CPython)",
                x_label="documents (log scale)",
                y_label="p50 latency, ms (log scale)",
                log_x=True,
                log_y=True,
            )
        )
        print(f"\n# wrote {svg}")
    if args.json and not args.from_json:
        settings = vars(args) | {"json": str(args.json), "from_json": None}
        args.json.write_text(json.dumps({"machine": info, "args": settings, **result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
