"""Sync in the browser (issue 27): the first sync of 10,000 memories to an empty Chromium
device, and incremental syncs of 100 changes, through pouchdb-server on loopback.

Usage (from the repository root)::

    python benchmarks/bench_sync_browser.py [--size 10000] [--changes 100] [--encrypted]

A CPython device (a SQLite file) adds ``--size`` memories and pushes them. A fresh
Chromium profile boots the store worker and calls ``sync`` (the JSON API method behind
``memory.sync()``; Pyodide, fetch, IndexedDB): "first sync" (with ``--encrypted``, the
browser is a new device: it pulls the key record, then unlocks with the passphrase and
opens, all in that one call). Then the CPython device updates ``--changes`` memories and
syncs, and the browser syncs ("incremental pull"); the browser updates ``--changes``
memories and syncs ("incremental push"); a last round has nothing to do. Times are the
page's (the whole call); bytes are the HTTP bodies the replicator counts. Needs
``python3 build.py setup`` and Debian's Chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_browser import ARGS, open_page  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from pymemory import Memory  # noqa: E402
from pymemory.storage import EncryptedKv, SqliteKv  # noqa: E402
from tools import server  # noqa: E402
from tools.sync_server import SyncServer  # noqa: E402

PASS = "bench passphrase"
DB = "bench-sync"

# window.call(method, params) -> { ms, result } through the page's connection, with the
# client's key when encrypted (as createAgentMemory sends it).
SETUP = """async ([passphrase]) => {
  const conn = window.pymemory.connection();
  await conn.ready;
  const unlock = passphrase ? { id: crypto.randomUUID(), passphrase, iterations: 1000 } : undefined;
  window.call = async (method, params) => {
    const t0 = performance.now();
    const answer = await conn.rawCall("bench-sync", method, params, unlock);
    const ms = performance.now() - t0;
    if (!answer.ok) throw new Error(JSON.stringify(answer.error));
    return { ms, result: answer.result };
  };
}"""


async def cpython(path: Path, encrypted: bool, work: Any) -> Any:
    kv = await SqliteKv.open(path)
    store = await EncryptedKv.open(kv, passphrase=PASS, iterations=1000) if encrypted else kv
    memory = await Memory.open(store)
    try:
        return await work(memory)
    finally:
        await memory.close()
        await store.close()


def run(coro: Any) -> Any:
    """asyncio.run in a thread of its own (Playwright's sync API runs a loop in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def line(name: str, seconds: float, r: dict) -> str:
    return (
        f"{name:<28} {seconds:7.2f} s  pushed {r['pushed']:>6}  pulled {r['pulled']:>6}  "
        f"sent {r['bytesSent'] / 1e6:7.2f} MB  received {r['bytesReceived'] / 1e6:7.2f} MB  "
        f"requests {r['requests']}"
    )


def main(size: int, changes: int, encrypted: bool) -> None:
    hub_server = SyncServer().start()
    hub = f"{hub_server.url}/bench"
    web = server.start()
    base = f"http://127.0.0.1:{web.server_address[1]}"
    tmp = Path(tempfile.mkdtemp(prefix="bench-sync-browser-"))
    device = tmp / "laptop.db"
    try:

        async def fill(memory: Memory) -> None:
            for start in range(0, size, 1000):
                n = min(1000, size - start)
                texts = [f"note {start + i}: the user mentioned topic {i % 97}" for i in range(n)]
                await memory.add_many([{"text": text} for text in texts])
            t = time.perf_counter()
            done = await memory.sync(hub)
            print(line(f"CPython push {size}", time.perf_counter() - t, done.to_dict()))

        asyncio.run(cpython(device, encrypted, fill))
        with sync_playwright() as p:
            chromium = shutil.which("chromium")
            browser = p.chromium.launch(executable_path=chromium, args=ARGS)
            ctx, page = open_page(browser, base)
            page.evaluate(SETUP, [PASS if encrypted else None])
            if not encrypted:  # an empty store, opened; the token ranks parsed (not timed)
                page.evaluate("async () => { await call('open', {}); await call('stats', {}); }")
            sync = f"() => call('sync', {{ url: {json.dumps(hub)} }})"
            first = page.evaluate(sync)
            label = "browser first sync" + (" (new key)" if encrypted else "")
            print(line(f"{label} {size}", first["ms"] / 1000, first["result"]))
            items = page.evaluate("async () => (await call('stats', {})).result.items")
            assert items == size, items

            async def edit(memory: Memory) -> None:
                for item in await memory.list(limit=changes):
                    await memory.update(item.id, content=item.content + " (edited)")
                await memory.sync(hub)

            run(cpython(device, encrypted, edit))
            pull = page.evaluate(sync)
            print(line(f"browser incremental pull {changes}", pull["ms"] / 1000, pull["result"]))
            page.evaluate(
                """async (n) => {
                  const listed = (await call('list', { limit: n })).result;
                  for (const item of listed) {
                    await call('update', { id: item.id, text: item.text + ' (browser)' });
                  }
                }""",
                changes,
            )
            push = page.evaluate(sync)
            print(line(f"browser incremental push {changes}", push["ms"] / 1000, push["result"]))
            idle = page.evaluate(sync)
            print(line("browser no-op round", idle["ms"] / 1000, idle["result"]))
            ctx.close()
            browser.close()
    finally:
        web.shutdown()
        hub_server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--encrypted", action="store_true")
    args = parser.parse_args()
    main(args.size, args.changes, args.encrypted)
