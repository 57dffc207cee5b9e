"""Open time in CPython (SqliteKv): the full rebuild against the index snapshot.

Usage::

    python benchmarks/bench_open.py [--sizes 1000 10000 100000] [--reps 3] [--json out.json]

Each size is a SQLite file filled once (cached in ``.cache/bench_open/``) through
``Memory.add_many`` in batches of 1000 with bench_memory's entries over bench_bm25's
corpus, then embedded with ``HashingEmbedder`` (384-dim int8 vectors). Two copies are
opened in turn, interleaved, ``--reps`` times each:

* ``rebuild``: no snapshot; ``Memory.open`` reads and validates every record and
  rebuilds the catalog and the BM25 index, ``attach_embedder`` reads every vector;
* ``snapshot``: the index snapshot written by the previous ``close()``.

Timed: ``Memory.open`` (catalog + BM25), ``attach_embedder`` (the vector matrix) and the
first ``retrieve`` after it (with the snapshot, items are decoded lazily on first use).
The o200k_base token counter is loaded once before timing (a per-process cost, the same
for both). Also reported: the snapshot's size and the time ``close()`` takes to write it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from bench_bm25 import machine_info, make_corpus
from bench_memory import entries

try:
    from pymemory import Memory
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pymemory import Memory
from pymemory.models.embedding import HashingEmbedder
from pymemory.retrieval import snapshot
from pymemory.retrieval.tokens import default_token_counter
from pymemory.storage import SqliteKv, schema

CACHE = Path(__file__).resolve().parent.parent / ".cache" / "bench_open"
QUERY = "meeting about the project budget"


async def fill(n: int, path: Path) -> None:
    docs = make_corpus(n, 1, seed=0)[0]
    items = entries(docs, np.random.default_rng(0))
    tmp = path.with_suffix(".tmp")
    m = await Memory.open(tmp)
    for start in range(0, n, 1000):
        await m.add_many(items[start : start + 1000])
    await m.attach_embedder(HashingEmbedder())
    await m.embed_idle()
    await m.close()
    kv = await SqliteKv.open(tmp)
    await kv.delete_many([k for k, _ in await kv.scan(schema.SNAP)])
    await kv.close()
    tmp.rename(path)


async def base(n: int) -> Path:
    path = CACHE / f"base-{n}.sqlite"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        print(f"filling {n:,} items (once) ...", file=sys.stderr)
        await fill(n, path)
    return path


async def snapshot_bytes(path: Path) -> int:
    kv = await SqliteKv.open(path)
    size = sum(len(v) for _, v in await kv.scan(schema.SNAP))
    await kv.close()
    return size


async def open_once(path: Path, config: str) -> dict[str, float]:
    # The rebuild copy must stay without a snapshot: none written in the background
    # or at close while it is open.
    min_items = snapshot.MIN_ITEMS
    snapshot.MIN_ITEMS = 10**12 if config == "rebuild" else min_items
    try:
        t0 = time.perf_counter()
        m = await Memory.open(path)
        t1 = time.perf_counter()
        await m.attach_embedder(HashingEmbedder())
        t2 = time.perf_counter()
        await m.retrieve(QUERY)
        t3 = time.perf_counter()
        await m.close()
    finally:
        snapshot.MIN_ITEMS = min_items
    return {"open_s": t1 - t0, "vectors_s": t2 - t1, "first_retrieve_s": t3 - t2}


async def bench_size(n: int, reps: int, work: Path) -> dict:
    src = await base(n)
    paths = {c: work / f"{c}-{n}.sqlite" for c in ("rebuild", "snapshot")}
    for path in paths.values():
        shutil.copy(src, path)
        kv = await SqliteKv.open(path)  # whatever the cached file holds: no snapshot yet
        await kv.delete_many([k for k, _ in await kv.scan(schema.SNAP)])
        await kv.close()
    # Write the snapshot copy's snapshot: open (a rebuild), close (timed: the write).
    m = await Memory.open(paths["snapshot"])
    await m.attach_embedder(HashingEmbedder())
    t = time.perf_counter()
    await m.close()
    write_s = time.perf_counter() - t
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in paths}
    for _ in range(reps):
        for config, path in paths.items():
            runs[config].append(await open_once(path, config))
    out = {"items": n, "snapshot_bytes": await snapshot_bytes(paths["snapshot"]),
           "close_write_s": write_s}  # fmt: skip
    for config, samples in runs.items():
        for key in samples[0]:
            out[f"{config}_{key}"] = float(np.median([s[key] for s in samples]))
    assert await snapshot_bytes(paths["rebuild"]) == 0
    return out


def table(rows: list[dict]) -> str:
    lines = [
        "| items | rebuild: open s | + vectors s | snapshot: open s | + vectors s "
        "| speed-up (open + vectors) | first retrieve ms (rebuild / snapshot) "
        "| snapshot MB | close() writing it, s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        before = r["rebuild_open_s"] + r["rebuild_vectors_s"]
        after = r["snapshot_open_s"] + r["snapshot_vectors_s"]
        lines.append(
            f"| {r['items']:,} | {r['rebuild_open_s']:.2f} | {r['rebuild_vectors_s']:.2f} "
            f"| {r['snapshot_open_s']:.3f} | {r['snapshot_vectors_s']:.3f} "
            f"| {before / after:.1f}x "
            f"| {r['rebuild_first_retrieve_s'] * 1e3:.0f} / "
            f"{r['snapshot_first_retrieve_s'] * 1e3:.0f} "
            f"| {r['snapshot_bytes'] / 1e6:.1f} | {r['close_write_s']:.2f} |"
        )
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict:
    default_token_counter()  # once per process, outside the timings
    work = CACHE / "work"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.sizes:
        rows.append(await bench_size(n, args.reps, work))
        print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
    return {
        "when_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "loadavg": os.getloadavg(),
        "machine": machine_info(),
        "reps": args.reps,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    print(table(result["rows"]))
    print(f"\nload average at the end: {result['loadavg']}; reps: {args.reps} (medians)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
