"""Memory latency on SqliteKv: add, retrieve and reopen at growing corpus sizes.

Usage::

    python benchmarks/bench_memory.py [--sizes 1000 10000 100000] [--ops 300] [--json out.json]

For each size a fresh SQLite file is filled through ``Memory.add_many`` (batches of
1000, timestamps spread over 90 days, a few tags, types and scopes), then measured:
single ``add`` latency (each one an fsync'd transaction, ``synchronous=FULL``, and again
with ``NORMAL``), ``retrieve`` latency with the default strategy and with a tag filter
(max_items=5, max_tokens=1500), and the time to reopen the store (reading every record
and rebuilding the in-memory indexes). The corpus and queries come from bench_bm25.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_bm25 import machine_info, make_corpus

try:
    from pymemory import Memory, by_tag
    from pymemory.storage import SqliteKv
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pymemory import Memory, by_tag
    from pymemory.storage import SqliteKv

TYPES = ("message", "message", "message", "tool_result", "user_preference", "user_feedback")
TAGS = ("work", "home", "project_x", "meeting", "code", "travel")
SCOPES = ("conversation", "session", "user", "global")
NOW = 1_780_000_000_000
DAY = 86_400_000


def percentiles(samples: list[float]) -> tuple[float, float]:
    arr = np.array(samples) * 1000
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def entries(docs: list[str], rng: np.random.Generator) -> list[dict]:
    return [
        {
            "text": text,
            "type": TYPES[rng.integers(len(TYPES))],
            "tags": list(rng.choice(TAGS, size=rng.integers(0, 3), replace=False)),
            "scope": SCOPES[rng.integers(len(SCOPES))],
            "timestamp": NOW - int(rng.integers(0, 90 * DAY)),
        }
        for text in docs
    ]


async def timed_adds(memory: Memory, texts: list[str]) -> list[float]:
    out = []
    for text in texts:
        t = time.perf_counter()
        await memory.add(text, tags=["bench"])
        out.append(time.perf_counter() - t)
    return out


async def bench_size(n: int, ops: int, seed: int) -> dict:
    docs, queries = make_corpus(n + 2 * ops, ops, seed)
    rng = np.random.default_rng(seed)
    folder = Path(tempfile.mkdtemp(prefix="pymemory-bench-"))
    path = folder / "bench.db"
    memory = await Memory.open(path, clock=lambda: NOW)
    t = time.perf_counter()
    batch = entries(docs[:n], rng)
    for start in range(0, n, 1000):
        await memory.add_many(batch[start : start + 1000])
    load_s = time.perf_counter() - t

    add_full = await timed_adds(memory, docs[n : n + ops])
    default = []
    for q in queries:
        t = time.perf_counter()
        await memory.retrieve(q)
        default.append(time.perf_counter() - t)
    tagged = []
    for q in queries:
        t = time.perf_counter()
        await memory.retrieve(q, by_tag("project_x"))
        tagged.append(time.perf_counter() - t)
    await memory.close()

    t = time.perf_counter()
    memory = await Memory.open(path, clock=lambda: NOW)
    reopen_s = time.perf_counter() - t
    await memory.close()

    kv = await SqliteKv.open(path, synchronous="NORMAL")
    memory = await Memory.open(kv, clock=lambda: NOW)
    add_normal = await timed_adds(memory, docs[n + ops : n + 2 * ops])
    await memory.close()
    await kv.close()
    size_mb = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()
    return {
        "items": n,
        "bulk_items_per_s": n / load_s,
        "add_full_ms": percentiles(add_full),
        "add_normal_ms": percentiles(add_normal),
        "retrieve_ms": percentiles(default),
        "retrieve_tag_ms": percentiles(tagged),
        "reopen_s": reopen_s,
        "file_mb": size_mb,
    }


def markdown(rows: list[dict]) -> str:
    def pair(p: tuple[float, float]) -> str:
        return f"{p[0]:.2f} / {p[1]:.2f}"

    lines = [
        "| items | add ms p50 / p95 (FULL) | add ms p50 / p95 (NORMAL) | retrieve ms p50 / p95 "
        "| retrieve + by_tag ms p50 / p95 | bulk add items/s | reopen s | file MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['items']:,} | {pair(r['add_full_ms'])} | {pair(r['add_normal_ms'])} "
            f"| {pair(r['retrieve_ms'])} | {pair(r['retrieve_tag_ms'])} "
            f"| {r['bulk_items_per_s']:,.0f} | {r['reopen_s']:.2f} | {r['file_mb']:.1f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [asyncio.run(bench_size(n, args.ops, args.seed)) for n in args.sizes]
    print(f"# bench_memory, {dt.date.today()}, {json.dumps(machine_info())}\n")
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_info(), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
