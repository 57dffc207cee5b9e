"""Open time in a Pyodide worker over IndexedDB (Chromium): the full rebuild against the
index snapshot, in one run.

Usage::

    python benchmarks/bench_open_browser.py [--sizes 10000 100000] [--reps 2] [--json out.json]

Needs ``python3 build.py setup`` (Pyodide and the wheel) and Debian's Chromium. A page
starts a module worker that loads Pyodide, numpy and the pymemory wheel (as an app with
its own Pyodide worker does) and runs Python there. Each size's store comes from
bench_open.py's cached SQLite file of the same size (bench_memory's entries over
bench_bm25's corpus), exported in CPython and imported in the worker with
``Memory.import_`` into a fresh IndexedDB database (untimed; no vectors: imports carry
none). Then, ``--reps`` times, interleaved on that database:

* ``rebuild``: the snapshot is deleted, ``open_memory`` reads every record and rebuilds
  the catalog and BM25 index; its ``close()`` writes the snapshot again (timed);
* ``snapshot``: ``open_memory`` from that snapshot; ``close()`` writes nothing.

Also timed: the first ``retrieve`` after each open, and ``take_snapshot`` alone (the part
of a snapshot write that holds the worker's thread without a break).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_bm25 import machine_info  # noqa: E402
from bench_open import base  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from pymemory import Memory  # noqa: E402
from tools.app_site import WORKER_PAGE, serve_app  # noqa: E402

SETUP = """
import asyncio, json, time
from pymemory.browser.pyodide import open_memory
from pymemory.retrieval import snapshot
from pymemory.retrieval.tokens import default_token_counter
default_token_counter()
QUERY = "meeting about the project budget"
"""

IMPORT = """
t = time.perf_counter()
m = await open_memory("DB")
result = await m.import_(LINES)
imported_s = time.perf_counter() - t
t = time.perf_counter()
await m.close()
json.dumps({"imported": result.added, "import_s": imported_s,
            "close_write_s": time.perf_counter() - t})
"""

OPEN = """
async def once(config):
    if config == "rebuild":
        m = await open_memory("DB")
        await snapshot.discard(m.kv)
        snapshot.MIN_ITEMS = 10**12  # no snapshot at this close
        await m.close()
        snapshot.MIN_ITEMS = 1000
    t0 = time.perf_counter()
    m = await open_memory("DB")
    t1 = time.perf_counter()
    await m.retrieve(QUERY)
    t2 = time.perf_counter()
    out = {"open_s": t1 - t0, "first_retrieve_s": t2 - t1, "items": len(m._catalog)}
    if config == "snapshot":
        gaps = []
        async def ticker():  # the longest time the worker's thread was held
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now
        tick = asyncio.ensure_future(ticker())
        t = time.perf_counter()
        async with m._lock:
            await m._view.take_snapshot(None)
        out["take_s"] = time.perf_counter() - t
        tick.cancel()
        out["take_max_block_s"] = max(gaps)
    t = time.perf_counter()
    await m.close()  # the rebuild's close writes the snapshot the next open reads
    out["close_s"] = time.perf_counter() - t
    return out
json.dumps(await once("CONFIG"))
"""


def python(page: Any, code: str) -> dict:
    answer = page.evaluate("(code) => window.python(code)", code)
    if not answer["ok"]:
        raise RuntimeError(answer["error"])
    return json.loads(answer["result"])


async def export_of(n: int, folder: Path) -> str:
    copy = folder / f"export-{n}.sqlite"  # the cached file stays as it is
    shutil.copy(await base(n), copy)
    memory = await Memory.open(copy)
    lines = "".join([line async for line in memory.export()])
    await memory.close()
    await memory.kv.close()
    copy.unlink()
    return lines


def run(args: argparse.Namespace) -> dict:
    folder = ROOT / ".cache" / "bench_open" / "site"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    server, base_url = serve_app(folder, {"index.html": WORKER_PAGE})
    for n in args.sizes:  # before Playwright, whose sync API keeps an event loop here
        (folder / f"open-{n}.jsonl").write_text(asyncio.run(export_of(n, folder)))
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=["--no-sandbox", "--headless=new"])  # fmt: skip
        context = browser.new_context()
        context.set_default_timeout(3_600_000)
        page = context.new_page()
        page.goto(f"{base_url}/index.html")
        python(page, SETUP + "json.dumps(1)")
        for n in args.sizes:
            db = f"open-{n}"
            code = (
                "from pyodide.http import pyfetch\n"
                f"LINES = await (await pyfetch('{db}.jsonl')).string()\n" + IMPORT
            )
            filled = python(page, code.replace("DB", db))
            print(f"{n:,}: imported in {filled['import_s']:.1f} s", file=sys.stderr)
            runs: dict[str, list[dict]] = {"rebuild": [], "snapshot": []}
            for _ in range(args.reps):
                for config in runs:
                    code = OPEN.replace("DB", db).replace("CONFIG", config)
                    runs[config].append(python(page, code))
                    print(n, config, runs[config][-1], file=sys.stderr)
            row: dict[str, Any] = {"items": n, "first_close_write_s": filled["close_write_s"]}
            for config, samples in runs.items():
                for key in samples[0]:
                    row[f"{config}_{key}"] = statistics.median(s[key] for s in samples)
            rows.append(row)
        browser.close()
    server.shutdown()
    return {
        "when_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "loadavg": os.getloadavg(),
        "machine": machine_info(),
        "reps": args.reps,
        "rows": rows,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| items | rebuild: open s | snapshot: open s | speed-up | first retrieve ms "
        "(rebuild / snapshot) | close() writing the snapshot, s | take_snapshot in steps: total, s "
        "| longest block of the thread while taking it, s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['items']:,} | {r['rebuild_open_s']:.2f} | {r['snapshot_open_s']:.2f} "
            f"| {r['rebuild_open_s'] / r['snapshot_open_s']:.1f}x "
            f"| {r['rebuild_first_retrieve_s'] * 1e3:.0f} / "
            f"{r['snapshot_first_retrieve_s'] * 1e3:.0f} "
            f"| {r['rebuild_close_s']:.2f} | {r['snapshot_take_s']:.2f} "
            f"| {r.get('snapshot_take_max_block_s', float('nan')):.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run(args)
    print(table(result["rows"]))
    print(f"\nload average at the end: {result['loadavg']}; reps: {args.reps} (medians)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
