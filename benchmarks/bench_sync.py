"""Sync through a CouchDB-protocol hub (pouchdb-server, in memory, on loopback): the first
sync of 10,000 memories to an empty device, and an incremental sync of 100 changes.

Usage (from the repository root)::

    python benchmarks/bench_sync.py [--size 10000] [--changes 100] [--encrypted]

Device A (SQLite file) adds ``--size`` memories and pushes them; device B (an empty
SQLite file) then pulls everything (timed: "first sync"). A then updates ``--changes``
memories and syncs; B syncs (timed: "incremental"). Bytes are request and response
bodies on the wire, as the replicator counts them. CPython only (the browser side:
bench_sync_browser.py).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymemory import Memory
from pymemory.storage import EncryptedKv, SqliteKv
from pymemory.sync import sync_store
from tools.sync_server import SyncServer


async def open_store(path: Path, encrypted: bool) -> object:
    kv = await SqliteKv.open(path)
    if encrypted:
        return await EncryptedKv.open(kv, passphrase="bench passphrase", iterations=1000)
    return kv


def line(name: str, result: object, seconds: float) -> str:
    wire = result.wire  # type: ignore[attr-defined]
    return (
        f"{name:<24} {seconds:7.2f} s  pushed {result.pushed:>6}  "  # type: ignore[attr-defined]
        f"pulled {result.pulled:>6}  sent {wire.sent / 1e6:7.2f} MB  "  # type: ignore[attr-defined]
        f"received {wire.received / 1e6:7.2f} MB  requests {wire.requests}"
    )


async def main(size: int, changes: int, encrypted: bool) -> None:
    server = SyncServer().start()
    hub = f"{server.url}/bench"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            a_kv = await open_store(Path(tmp) / "a.db", encrypted)
            a = await Memory.open(a_kv)
            for start in range(0, size, 1000):
                n = min(1000, size - start)
                texts = [f"note {start + i}: the user mentioned topic {i % 97}" for i in range(n)]
                await a.add_many([{"text": text} for text in texts])
            t = time.perf_counter()
            push = await a.sync(hub)
            print(line(f"push {size} (device A)", push, time.perf_counter() - t))
            b_kv = await open_store(Path(tmp) / "b.db", False) if encrypted else None
            if encrypted:  # a new device: pulls before it has the key
                t = time.perf_counter()
                first = await sync_store(b_kv, hub)  # type: ignore[arg-type]
                print(line(f"first sync {size} (B)", first, time.perf_counter() - t))
                b = await Memory.open(
                    await EncryptedKv.open(b_kv, passphrase="bench passphrase")  # type: ignore[arg-type]
                )
            else:
                b = await Memory.open(await open_store(Path(tmp) / "b.db", False))
                t = time.perf_counter()
                first = await b.sync(hub)
                print(line(f"first sync {size} (B)", first, time.perf_counter() - t))
            assert len(await b.list()) == size
            items = (await a.list())[:changes]
            for item in items:
                await a.update(item.id, content=item.content + " (edited)")
            t = time.perf_counter()
            up = await a.sync(hub)
            print(line(f"incremental push {changes}", up, time.perf_counter() - t))
            t = time.perf_counter()
            down = await b.sync(hub)
            print(line(f"incremental pull {changes}", down, time.perf_counter() - t))
            t = time.perf_counter()
            idle = await b.sync(hub)
            print(line("no-op round", idle, time.perf_counter() - t))
            await a.close()
            await b.close()
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--encrypted", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.size, args.changes, args.encrypted))
