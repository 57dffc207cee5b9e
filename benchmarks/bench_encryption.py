"""What encryption at rest (issue 16) costs one Memory on SQLite: plain vs EncryptedKv, one run.

Usage::

    python benchmarks/bench_encryption.py [--size 10000] [--ops 200] [--rounds 3]
                                          [--json out.json]

Each round runs both variants in this process, alternating (plain, encrypted, plain, ...);
the table shows the median over rounds. One variant, on a fresh SQLite file
(``synchronous=FULL``, the default): ``import_`` of a ``--size``-item export (batches of
the default chunk size; items from the synthetic corpus of ``bench_bm25``), close, then
reopen (SqliteKv + EncryptedKv with a raw key + ``Memory.open``, which loads every item),
then ``--ops`` single ``add`` calls (each its own fsync'd transaction), ``retrieve``
(default strategy, max_items=5) and ``get``. "encrypted" is an EncryptedKv with a raw
32-byte key; unlocking with a passphrase adds one PBKDF2 (600,000 iterations), timed
on its own row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_bm25 import make_corpus

from pymemory import Memory
from pymemory.storage import MapKv, SqliteKv
from pymemory.storage.encrypted import EncryptedKv

KEY = bytes(range(32))


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def timed(calls) -> list[float]:
    out = []
    for call in calls:
        t = time.perf_counter()
        await call()
        out.append(time.perf_counter() - t)
    return out


async def make_export(docs: list[str]) -> list[str]:
    memory = await Memory.open(MapKv())
    for start in range(0, len(docs), 1000):
        await memory.add_many([{"text": d, "tags": ["bench"]} for d in docs[start : start + 1000]])
    lines = [line async for line in memory.export()]
    await memory.close()
    return lines


async def open_kv(path: Path, encrypted: bool):
    kv = await SqliteKv.open(path)
    return await EncryptedKv.open(kv, key=KEY) if encrypted else kv


async def variant(
    folder: Path, encrypted: bool, lines: list[str], docs: list[str], queries: list[str]
) -> dict[str, float]:
    path = folder / f"{'enc' if encrypted else 'plain'}-{time.monotonic_ns()}.db"
    kv = await open_kv(path, encrypted)
    memory = await Memory.open(kv, feedback_flush_s=3600)
    t = time.perf_counter()
    await memory.import_(lines)
    import_s = time.perf_counter() - t
    await memory.close()
    await kv.close()

    t = time.perf_counter()
    kv = await open_kv(path, encrypted)
    memory = await Memory.open(kv, feedback_flush_s=3600)
    open_s = time.perf_counter() - t
    added = []

    async def add(text: str) -> None:
        added.append(await memory.add(text))

    result = {
        "import_s": import_s,
        "import_items_per_s": (len(lines) - 1) / import_s,
        "open_ms": open_s * 1000,
        "add_ms": p50_ms(await timed([lambda d=d: add(d) for d in docs])),
        "retrieve_ms": p50_ms(await timed([lambda q=q: memory.retrieve(q) for q in queries])),
        "get_ms": p50_ms(await timed([lambda i=i: memory.get(i.id) for i in added])),
    }
    await memory.close()
    await kv.close()
    for p in folder.glob(path.name + "*"):
        p.unlink()
    return result


async def passphrase_unlock_ms(folder: Path) -> float:
    path = folder / "passphrase.db"
    kv = await EncryptedKv.open(await SqliteKv.open(path), passphrase="bench")
    await kv.close()
    t = time.perf_counter()
    kv = await EncryptedKv.open(await SqliteKv.open(path), passphrase="bench")
    took = time.perf_counter() - t
    await kv.close()
    return took * 1000


async def main(size: int, ops: int, rounds: int) -> dict:
    docs, queries = make_corpus(size + ops, ops, seed=16)
    lines = await make_export(docs[:size])
    runs: dict[str, list[dict[str, float]]] = {"plain": [], "encrypted": []}
    with tempfile.TemporaryDirectory(prefix="pymemory-bench-enc-") as tmp:
        folder = Path(tmp)
        for r in range(rounds):
            for name in ("plain", "encrypted") if r % 2 == 0 else ("encrypted", "plain"):
                got = await variant(folder, name == "encrypted", lines, docs[size:], queries)
                runs[name].append(got)
                print(f"round {r + 1} {name}: {json.dumps(got)}", file=sys.stderr, flush=True)
        unlock = await passphrase_unlock_ms(folder)
    medians = {
        name: {k: statistics.median(run[k] for run in rs) for k in rs[0]}
        for name, rs in runs.items()
    }
    return {
        "size": size,
        "ops": ops,
        "rounds": rounds,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "median": medians,
        "passphrase_unlock_ms": unlock,
    }


def table(result: dict) -> str:
    plain, enc = result["median"]["plain"], result["median"]["encrypted"]
    rows = [
        (f"bulk import {result['size']:,} items (s)", "import_s", "{:.2f}"),
        ("  items/s", "import_items_per_s", "{:,.0f}"),
        (f"open with {result['size']:,} items (ms)", "open_ms", "{:.0f}"),
        ("add p50 (ms)", "add_ms", "{:.2f}"),
        ("retrieve p50 (ms)", "retrieve_ms", "{:.2f}"),
        ("get p50 (ms)", "get_ms", "{:.3f}"),
    ]
    out = [f"{'':34} {'plain':>10} {'encrypted':>10} {'ratio':>7}"]
    for label, key, fmt in rows:
        ratio = enc[key] / plain[key] if plain[key] else float("nan")
        out.append(
            f"{label:34} {fmt.format(plain[key]):>10} {fmt.format(enc[key]):>10} {ratio:>6.2f}x"
        )
    unlock = result["passphrase_unlock_ms"]
    out.append(f"{'passphrase unlock, PBKDF2 600k (ms)':34} {'':>10} {unlock:>10.0f}")
    return "\n".join(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(main(args.size, args.ops, args.rounds))
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
