"""What retrieve, add and open cost, before and after a change, in one run (CPython).

Usage (from the repository root)::

    python benchmarks/bench_ranking_cost.py --before REV [--sizes 10000 100000]
        [--queries 200] [--rounds 2] [--json out.json]

``--before`` is a git revision: its ``pymemory`` is extracted into a temporary folder
(``bench_writers.extract``, with the fetched o200k ranks, so both sides count tokens
exactly) and the same measurement runs against it in a child process, alternating with
this checkout's (before, after, before, after, ...), so both see the same machine load.

Per size, a Memory over MapKv is filled through ``add_many`` with ``bench_bm25``'s
synthetic texts written as chats (sessions of 20 turns a minute apart, a day between
sessions, so conversation context exists), then ``retrieve`` (default strategy,
``max_items`` 10) is timed per query (``--lines N``: each memory a transcript of N
turns, so the prompt gets passages of long memories, and the ``live`` adds are such
transcripts too), after 5 untimed warm-ups: BM25
alone, then hybrid after ``attach_embedder(HashingEmbedder())`` + ``embed_idle()``.
``live``: one ``add`` before each hybrid ``retrieve`` (a chat writes a turn, then
asks), so any per-write cache is rebuilt every time; those ``add`` calls are timed too
(``add``). ``open``: the store written to a SQLite file (closed, so it holds the index
snapshot) and reopened 5 times.
Reported: p50 / p95 ms and the after / before ratio of the p50s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_writers import extract  # noqa: E402

DAY = 86_400_000
MINUTE = 60_000
T0 = 1_767_225_600_000  # 2026-01-01


async def measure(size: int, n_queries: int, seed: int, lines: int = 1) -> dict:
    from bench_bm25 import make_corpus

    from pymemory import Memory
    from pymemory.models.embedding import HashingEmbedder
    from pymemory.storage import MapKv

    docs, queries = make_corpus((size + n_queries) * lines, n_queries, seed)
    if lines > 1:  # each memory a transcript of ``lines`` turns (passages in the prompt)
        docs = ["\n".join(docs[i : i + lines]) for i in range(0, len(docs), lines)]
    extra, docs = docs[size:], docs[:size]
    last = T0 + (size // 20) * DAY + 20 * MINUTE
    memory = await Memory.open(MapKv(), clock=lambda: last)
    await memory.add_many(
        {"text": t, "timestamp": T0 + (i // 20) * DAY + (i % 20) * MINUTE}
        for i, t in enumerate(docs)
    )

    adds: list[float] = []

    async def timed(live: bool) -> list[float]:
        out = []
        for i, q in enumerate(queries[:5] + queries):
            if live:
                t0 = time.perf_counter()
                await memory.add(extra[i % len(extra)], timestamp=last)
                adds.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            await memory.retrieve(q, max_items=10)
            if i >= 5:
                out.append((time.perf_counter() - t0) * 1000)
        return out

    result = {"bm25": await timed(False)}
    await memory.attach_embedder(HashingEmbedder())
    await memory.embed_idle()
    result["hybrid"] = await timed(False)
    result["hybrid, live"] = await timed(True)
    result["add"] = adds[5:]
    await memory.close()
    result["open"] = await time_open(docs, last)
    return result


async def time_open(docs: list[str], last: int, reopen: int = 5) -> list[float]:
    """ms to reopen a SQLite store of ``docs`` (from its index snapshot), ``reopen`` times."""
    from pymemory import Memory

    with tempfile.TemporaryDirectory(prefix="pymemory-open-") as tmp:
        path = Path(tmp) / "store.db"
        memory = await Memory.open(path, clock=lambda: last)
        await memory.add_many({"text": t, "timestamp": T0 + i * MINUTE} for i, t in enumerate(docs))
        await memory.close()
        out = []
        for _ in range(reopen):
            t0 = time.perf_counter()
            memory = await Memory.open(path, clock=lambda: last)
            out.append((time.perf_counter() - t0) * 1000)
            await memory.close()
        return out


def child(args: argparse.Namespace) -> None:
    import pymemory

    out = {str(n): asyncio.run(measure(n, args.queries, args.seed, args.lines))
           for n in args.sizes}  # fmt: skip
    print(json.dumps({"pymemory": pymemory.__file__, "sizes": out}))


def run_side(src: Path, args: argparse.Namespace) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--child", "--queries", str(args.queries),
           "--seed", str(args.seed), "--lines", str(args.lines),
           "--sizes", *map(str, args.sizes)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # The side measured is the one asked for, not whatever pymemory the venv holds.
    assert Path(result["pymemory"]).resolve().parent.parent == src.resolve(), result
    return result["sizes"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="git revision to compare with")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lines", type=int, default=1,
                    help="turns per memory (a memory a transcript of this many lines)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if not args.before:
        ap.error("--before REV is required")
    samples: dict[str, dict] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory(prefix="pymemory-base-") as tmp:
        extract(args.before, Path(tmp))
        for r in range(args.rounds):
            for side, src in (("before", Path(tmp)), ("after", ROOT)):
                print(f"round {r + 1}: {side}", file=sys.stderr, flush=True)
                for size, modes in run_side(src, args).items():
                    for mode, ms in modes.items():
                        samples[side].setdefault((size, mode), []).extend(ms)
    rows = []
    print("| items | call | before p50 / p95 ms | after p50 / p95 ms | after / before (p50) |")
    print("|---|---|---|---|---|")
    for key in samples["after"]:
        b, a = np.array(samples["before"][key]), np.array(samples["after"][key])
        bp, ap_ = np.percentile(b, [50, 95]), np.percentile(a, [50, 95])
        rows.append({"items": int(key[0]), "mode": key[1], "before": bp.tolist(),
                     "after": ap_.tolist(), "ratio": float(ap_[0] / bp[0])})  # fmt: skip
        print(
            f"| {int(key[0]):,} | {key[1]} | {bp[0]:.2f} / {bp[1]:.2f} | {ap_[0]:.2f} / "
            f"{ap_[1]:.2f} | {ap_[0] / bp[0]:.2f}x |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
