"""What many-writer safety (issue 12) costs one Memory on SQLite: before vs after, one run.

Usage::

    python benchmarks/bench_writers.py [--base REV] [--size 10000] [--ops 300] [--rounds 3]
                                       [--json out.json]

"before" is the pymemory of ``--base`` (default: the commit before
``pymemory/storage/changes.py`` was added), extracted with ``git archive`` into a temporary
folder; "after" is this checkout. Each measurement runs in a fresh subprocess importing
one of the two, alternating before/after ``--rounds`` times; the table shows the median
of the rounds. One subprocess, on a fresh SQLite file (``synchronous=FULL``), with ONE
Memory instance: fill ``--size`` items with ``add_many`` (batches of 1000), then time
``--ops`` single ``add`` calls (each its own fsync'd transaction), ``retrieve`` (default
strategy, max_items=5), ``get`` and ``feedback(durable=True)``, and ``add`` again on a
second file with ``synchronous="NORMAL"`` (no fsync per commit: the CPU side of a write,
with less of this disk's noise). "after" also times a
``retrieve`` right after a second instance (its own connection) added one item, i.e. with
one record to refresh from the change log.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RANKS = Path("pymemory/models/tokenizers/o200k_base.tiktoken")


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = ordered[len(ordered) // 2]
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return p50 * 1000, p95 * 1000


async def timed(calls) -> list[float]:
    out = []
    for call in calls:
        t = time.perf_counter()
        await call()
        out.append(time.perf_counter() - t)
    return out


async def child(size: int, ops: int) -> dict:
    """One measurement with whichever pymemory this process imports."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_bm25 import make_corpus

    import pymemory
    from pymemory import Memory
    from pymemory.storage import SqliteKv

    docs, queries = make_corpus(size + 2 * ops, ops, seed=12)
    folder = Path(tempfile.mkdtemp(prefix="pymemory-bench-writers-"))
    path = folder / "bench.db"
    memory = await Memory.open(path, feedback_flush_s=3600)
    t = time.perf_counter()
    for start in range(0, size, 1000):
        await memory.add_many([{"text": d, "tags": ["bench"]} for d in docs[start : start + 1000]])
    fill_s = time.perf_counter() - t
    added: list = []

    async def add(text: str) -> None:
        added.append(await memory.add(text))

    result = {
        "pymemory": str(Path(pymemory.__file__).parent),
        "fill_items_per_s": size / fill_s,
        "add_ms": percentiles(await timed([lambda d=d: add(d) for d in docs[size : size + ops]])),
        "retrieve_ms": percentiles(await timed([lambda q=q: memory.retrieve(q) for q in queries])),
        "get_ms": percentiles(await timed([lambda i=i: memory.get(i.id) for i in added])),
        "feedback_ms": percentiles(
            await timed([lambda i=i: memory.feedback(i.id, "liked", durable=True) for i in added])
        ),
    }
    await memory.close()
    # The same adds without an fsync per commit: the CPU side of a write, less disk noise.
    kv = await SqliteKv.open(folder / "normal.db", synchronous="NORMAL")
    normal = await Memory.open(kv, feedback_flush_s=3600)
    result["add_normal_ms"] = percentiles(
        await timed([lambda d=d: normal.add(d) for d in docs[size : size + ops]])
    )
    await normal.close()
    await kv.close()
    memory = await Memory.open(path, feedback_flush_s=3600)
    if hasattr(pymemory.storage, "Writes"):  # "after": a second writer on the file
        other = await Memory.open(path, feedback_flush_s=3600)
        samples = []
        for text, q in zip(docs[size + ops :], queries, strict=False):
            await other.add(text)
            t = time.perf_counter()
            await memory.retrieve(q)
            samples.append(time.perf_counter() - t)
        result["retrieve_after_other_add_ms"] = percentiles(samples)
        await other.close()
    await memory.close()
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()
    return result


def default_base() -> str:
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "pymemory/storage/changes.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not added:
        sys.exit("no commit adds pymemory/storage/changes.py: pass --base")
    return added[-1] + "^"


def extract(rev: str, into: Path) -> str:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = into / "base.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", rev, "pymemory"], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    # The o200k ranks are fetched, not in git: without them the old side would count
    # tokens by the heuristic, which is cheaper than the exact count.
    if (ROOT / RANKS).is_file():
        shutil.copy2(ROOT / RANKS, into / RANKS)
    return sha


def run_child(pythonpath: Path, size: int, ops: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--size", str(size), "--ops", str(ops)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert Path(result["pymemory"]).parent.resolve() == pythonpath.resolve(), result
    return result


def median_of(rows: list[dict], key: str) -> tuple[float, float] | float | None:
    values = [r[key] for r in rows if key in r]
    if not values:
        return None
    if isinstance(values[0], list):
        return (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
    return statistics.median(values)


def markdown(before: list[dict], after: list[dict]) -> str:
    rows = [
        ("add, one item (fsync'd transaction)", "add_ms"),
        ("add, one item, synchronous=NORMAL", "add_normal_ms"),
        ("retrieve, default strategy", "retrieve_ms"),
        ("get", "get_ms"),
        ("feedback(durable=True)", "feedback_ms"),
        ("retrieve right after another instance's add", "retrieve_after_other_add_ms"),
    ]
    lines = [
        "| one instance, SQLite | before ms p50 / p95 | after ms p50 / p95 | p50 change |",
        "|---|---:|---:|---:|",
    ]
    for label, key in rows:
        b, a = median_of(before, key), median_of(after, key)
        cell_b = "-" if b is None else f"{b[0]:.3f} / {b[1]:.3f}"
        cell_a = "-" if a is None else f"{a[0]:.3f} / {a[1]:.3f}"
        change = "-" if a is None or b is None else f"{(a[0] - b[0]) * 1000:+.0f} µs"
        lines.append(f"| {label} | {cell_b} | {cell_a} | {change} |")
    fb, fa = median_of(before, "fill_items_per_s"), median_of(after, "fill_items_per_s")
    change = (fa / fb - 1) * 100
    lines.append(f"| add_many fill, items/s | {fb:,.0f} | {fa:,.0f} | {change:+.0f}% |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="the 'before' revision (default: before changes.py)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.size, args.ops))))
        return 0
    base = args.base or default_base()
    with tempfile.TemporaryDirectory(prefix="pymemory-base-") as tmp:
        sha = extract(base, Path(tmp))
        before, after = [], []
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds}: before ({sha}) ...", file=sys.stderr)
            before.append(run_child(Path(tmp), args.size, args.ops))
            print(f"round {r + 1}/{args.rounds}: after (this checkout) ...", file=sys.stderr)
            after.append(run_child(ROOT, args.size, args.ops))
    print(f"before = {sha}, after = this checkout; {args.size:,} items, {args.ops} ops, "
          f"median of {args.rounds} rounds; {dt.date.today().isoformat()}")  # fmt: skip
    print(markdown(before, after))
    if args.json:
        args.json.write_text(json.dumps({"base": sha, "before": before, "after": after}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
