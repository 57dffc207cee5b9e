"""The server store next to SQLite, one run: add and retrieve latency and writes/s with
1, 4 and 16 concurrent writers across 1 and 1,000 namespaces (users), and the open time
of a 10k-item user from its index snapshot.

Usage::

    python benchmarks/bench_postgres.py [--ops 400] [--users 1000] [--big 10000]
                                        [--json out.json]

PostgreSQL is Debian's (tools/postgres.py starts it in a temporary folder, default
settings: ``fsync=on``, ``synchronous_commit=on``), reached over its unix socket; SQLite
is SqliteKv's default (WAL, ``synchronous=FULL``), so both fsync every commit.

* 1 namespace: W ``Memory`` instances on one user's store (W app servers sharing a user,
  here in one process): on PostgreSQL W instances on one namespace of one pool, on SQLite
  W connections to one file. They write ``--ops`` adds in all, W at a time, then run
  ``--ops`` retrieves, W at a time.
* 1,000 namespaces: a ``MemoryPool`` holding every user open (PostgreSQL: one pool, one
  namespace per user; SQLite: one file per user, the way SQLite serves many users); the
  W writers add to different users, round-robin.

Latencies are per call (ms, p50/p95); writes/s is adds over the wall time of the phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pymemory import Memory  # noqa: E402
from pymemory.integrations.server import MemoryPool  # noqa: E402
from pymemory.storage.postgres import PostgresDatabase  # noqa: E402
from pymemory.storage.sqlite import SqliteKv  # noqa: E402
from tools.postgres import LocalPostgres  # noqa: E402

QUIET = {"feedback_flush_s": 3600, "sweep_interval_s": 3600}
TOPICS = ["tea", "deploy", "invoice", "garden", "python", "train", "doctor", "concert"]


def text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"note {i}: the user mentioned {topic} again, detail {i * 7919 % 1000}"


def pct(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return (
        ordered[len(ordered) // 2] * 1000,
        ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000,
    )


async def run_phase(
    writers: int, ops: int, call: Callable[[int], Awaitable[object]]
) -> tuple[list[float], float]:
    """``ops`` calls, ``writers`` at a time; per-call seconds and the wall time."""
    samples: list[float] = []
    counter = iter(range(ops))

    async def worker() -> None:
        for i in counter:
            t = time.perf_counter()
            await call(i)
            samples.append(time.perf_counter() - t)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(writers)))
    return samples, time.perf_counter() - start


async def one_user(backend: str, dsn: str, folder: Path, writers: int, ops: int) -> dict:
    """W instances on one user's store."""
    closers = []
    if backend == "postgres":
        db = await PostgresDatabase.open(dsn, max_connections=writers + 4)
        namespace = f"one-{writers}"
        memories = [await Memory.open(db.kv(namespace), **QUIET) for _ in range(writers)]
        closers.append(db.close)
    else:
        path = folder / f"one-{writers}.db"
        memories = [await Memory.open(await SqliteKv.open(path), **QUIET) for _ in range(writers)]
    try:
        adds, add_wall = await run_phase(writers, ops, lambda i: memories[i % writers].add(text(i)))
        gets, _ = await run_phase(
            writers, ops, lambda i: memories[i % writers].retrieve(f"{TOPICS[i % 8]} detail")
        )
    finally:
        for memory in memories:
            await memory.close()
            await memory.kv.close()
        for close in closers:
            await close()
    return {"adds": adds, "add_wall": add_wall, "retrieves": gets}


async def many_users(backend: str, pool: MemoryPool, users: int, writers: int, ops: int) -> dict:
    async def add(i: int) -> None:
        async with pool.user(f"user-{i % users}") as memory:
            await memory.add(text(i))

    async def retrieve(i: int) -> None:
        async with pool.user(f"user-{(i * 7) % users}") as memory:
            await memory.retrieve(f"{TOPICS[i % 8]} detail")

    adds, add_wall = await run_phase(writers, ops, add)
    gets, _ = await run_phase(writers, ops, retrieve)
    return {"adds": adds, "add_wall": add_wall, "retrieves": gets}


async def open_pool(backend: str, dsn: str, folder: Path, users: int) -> tuple[MemoryPool, float]:
    if backend == "postgres":
        pool = await MemoryPool.on_postgres(
            dsn, max_open=users, idle_s=3600, database_options={"max_connections": 20}, **QUIET
        )
    else:
        (folder / "users").mkdir(exist_ok=True)

        async def open_sqlite(user: str) -> Memory:
            return await Memory.open(await SqliteKv.open(folder / "users" / f"{user}.db"), **QUIET)

        pool = MemoryPool(open_sqlite, max_open=users, idle_s=3600)
    start = time.perf_counter()
    for u in range(users):  # open every user once, before timing
        async with pool.user(f"user-{u}"):
            pass
    return pool, time.perf_counter() - start


async def open_big(backend: str, dsn: str, folder: Path, size: int) -> list[float]:
    """Fill one user with ``size`` items, close (the snapshot is written), reopen 3x."""
    db = await PostgresDatabase.open(dsn) if backend == "postgres" else None

    async def kv():
        return db.kv("big") if db is not None else await SqliteKv.open(folder / "big.db")

    memory = await Memory.open(await kv(), **QUIET)
    for start in range(0, size, 1000):
        await memory.add_many([{"text": text(i)} for i in range(start, min(size, start + 1000))])
    await memory.close()
    await memory.kv.close()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        memory = await Memory.open(await kv(), **QUIET)
        times.append(time.perf_counter() - t)
        assert (await memory.stats())["items"] == size
        await memory.close()
        await memory.kv.close()
    if db is not None:
        await db.close()
    return times


async def main(args: argparse.Namespace) -> None:
    server = LocalPostgres()
    server.start()
    rows: list[dict] = []
    opens: dict[str, list[float]] = {}
    try:
        dsn = server.dsn()
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for backend in ("postgres", "sqlite"):
                for writers in (1, 4, 16):
                    r = await one_user(backend, dsn, folder, writers, args.ops)
                    rows.append({"backend": backend, "users": 1, "writers": writers, **r})
                    print(f"{backend} 1 user, {writers} writers done", file=sys.stderr)
                pool, opened = await open_pool(backend, dsn, folder, args.users)
                print(f"{backend}: opened {args.users} users in {opened:.1f} s", file=sys.stderr)
                try:
                    for writers in (1, 4, 16):
                        r = await many_users(backend, pool, args.users, writers, args.ops)
                        rows.append(
                            {"backend": backend, "users": args.users, "writers": writers, **r}
                        )
                        print(f"{backend} {args.users} users, {writers} done", file=sys.stderr)
                finally:
                    await pool.close()
                opens[backend] = await open_big(backend, dsn, folder, args.big)
    finally:
        server.remove()
    print("| store | users (namespaces) | writers | add p50 / p95 ms | writes/s |"
          " retrieve p50 / p95 ms |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        a50, a95 = pct(row["adds"])
        r50, r95 = pct(row["retrieves"])
        rate = len(row["adds"]) / row["add_wall"]
        name = "PostgreSQL" if row["backend"] == "postgres" else "SQLite"
        print(f"| {name} | {row['users']:,} | {row['writers']} | {a50:.1f} / {a95:.1f} |"
              f" {rate:,.0f} | {r50:.1f} / {r95:.1f} |")  # fmt: skip
    print()
    print(f"| store | open a {args.big:,}-item user from its snapshot (ms, median of 3) |")
    print("|---|---:|")
    for backend, times in opens.items():
        name = "PostgreSQL" if backend == "postgres" else "SQLite"
        print(f"| {name} | {statistics.median(times) * 1000:.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "opens": opens}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=400, help="adds (and retrieves) per phase")
    parser.add_argument("--users", type=int, default=1000, help="namespaces of the many-user runs")
    parser.add_argument("--big", type=int, default=10_000, help="items of the big user")
    parser.add_argument("--json", help="write the raw samples here")
    asyncio.run(main(parser.parse_args()))
