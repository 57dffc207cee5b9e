"""pymemory in Chromium: worker cold start against a bare Pyodide load, addMemory latency,
bulk import rate, and retrieve latency at 1k and 10k items, all in one run.

Usage::

    python benchmarks/bench_browser.py [--rounds 3] [--ops 200] [--sizes 1000 10000]
                                       [--boot-only] [--json out.json]

Needs `python3 build.py setup` (assets and wheel) and Debian's Chromium. Every cold start
runs in a fresh browser context (empty HTTP cache and IndexedDB). Latencies are measured
twice: from the page (the full round trip through postMessage) and inside the worker (the
time the Python call took, reported by the worker).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bm25 import machine_info, make_corpus  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tools import server  # noqa: E402

ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
NOW = 1_780_000_000_000

BARE = """(numpy) => new Promise((resolve) => {
  const w = new Worker("/web/pages/test/bare-worker.mjs", { type: "module" });
  w.onmessage = (e) => { resolve(e.data); w.terminate(); };
  w.postMessage({ numpy });
})"""

# Ready, then the first call (a retrieve with a token budget: it waits for the o200k_base
# ranks and opens the store), timed from createAgentMemory.
BOOT = """async (workerUrl) => {
  const t0 = performance.now();
  const options = workerUrl ? { dbName: "bench", workerUrl } : { dbName: "bench" };
  const m = (window.m = window.pymemory.createAgentMemory(options));
  await m.ready;
  const readyMs = performance.now() - t0;
  await m.retrieve("first call", { maxTokens: 200 });
  const firstCallMs = performance.now() - t0;
  const sources = Object.values(m.status.files ?? {}).map((f) => f.source);
  return { totalMs: readyMs, firstCallMs, workerBootMs: m.status.bootMs, sources,
           phaseMs: m.status.phaseMs, tokensMs: m.status.tokensMs ?? null,
           snapshot: m.status.snapshot ?? null };
}"""

# After a first visit, until the worker has saved its Pyodide snapshot (not timed).
SETTLE = """async () => {
  const m = window.m;
  const snapshot = m.status.snapshot;
  if (snapshot === undefined || snapshot === "restored" || snapshot === "off") return null;
  for (let i = 0; i < 1800; i++) {
    const save = m.status.snapshotSave ?? "";
    if (save === "saved" || save.startsWith("failed")) return save;
    await new Promise((r) => setTimeout(r, 100));
  }
  return "timed out";
}"""

TIMED = """async ([db, method, paramsList, durability]) => {
  const conn = window.pymemory.connection({ durability });
  await conn.ready;
  const page = [], worker = [];
  for (const params of paramsList) {
    const t0 = performance.now();
    const answer = await conn.rawCall(db, method, params);
    page.push(performance.now() - t0);
    if (!answer.ok) throw new Error(JSON.stringify(answer.error));
    worker.push(answer.ms);
  }
  return { page, worker };
}"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def p50_95(values: list[float]) -> str:
    return f"{pct(values, 50):.2f} / {pct(values, 95):.2f}"


def export_text(docs: list[str]) -> str:
    lines = [json.dumps({"format": "pymemory-export", "version": 1})]
    for i, text in enumerate(docs):
        item = {
            "id": str(uuid.UUID(int=i + 1, version=4)),
            "type": "message",
            "timestamp": NOW - i * 60_000,
            "content": text[:200].rstrip() or "x",
            "text": text,
            "metadata": {"source": "bench", "confidence": 1.0, "references": []},
        }
        lines.append(json.dumps({"kind": "memory", "item": item}))
    return "\n".join(lines) + "\n"


def open_page(browser, base: str, durability: str = "strict"):
    ctx = browser.new_context()
    ctx.set_default_timeout(300_000)
    page = ctx.new_page()
    page.goto(f"{base}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    return ctx, page


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def cold_start_table(c: dict, rounds: int) -> list[str]:
    first, repeat = c["first_visit"], c["repeat_visit"]
    lines = [
        f"| cold start (median of {rounds}, ms) | first visit | repeat visit |",
        "|---|---:|---:|",
    ]
    for label, key in (
        ("bare Pyodide (`loadPyodide`)", "bare_pyodide_ms"),
        ("bare Pyodide + numpy (`loadPackage`)", "bare_pyodide_numpy_ms"),
    ):
        lines.append(f"| {label} | {first[key]:.0f} | {repeat[key]:.0f} |")
    for name in first["workers"]:
        w1, w2 = first["workers"][name], repeat["workers"][name]
        for label, key in (
            ("worker to `ready`", "worker_ms"),
            ("page to `ready`", "page_ms"),
            ("page to the first retrieve answered", "first_call_ms"),
            ("o200k_base ranks parsed (from the worker's start)", "tokens_ms"),
        ):
            if w1[key] is not None:
                lines.append(f"| {name}: {label} | {w1[key]:.0f} | {w2[key]:.0f} |")
        for label, key in (
            ("bare Pyodide", "bare_pyodide_ms"),
            ("bare Pyodide + numpy", "bare_pyodide_numpy_ms"),
        ):
            lines.append(
                f"| {name}: worker `ready` / {label} | {_ratio(w1['worker_ms'], first[key])} "
                f"| {_ratio(w2['worker_ms'], repeat[key])} |"
            )
        phases = [", ".join(f"{k} {v:.0f}" for k, v in w["phases_ms"].items()) for w in (w1, w2)]
        lines.append(f"| {name}: boot phases (ms) | {phases[0]} | {phases[1]} |")
        for label, key in (("Pyodide snapshot", "snapshot"), ("boot files from", "sources")):
            lines.append(f"| {name}: {label} | {'/'.join(w1[key])} | {'/'.join(w2[key])} |")
    return lines


def report(out: dict, version: str, rounds: int) -> str:
    lines = [
        f"# bench_browser, {out['date']}, Chromium {version}, {json.dumps(out['machine'])}",
        "",
        *cold_start_table(out["cold_start"], rounds),
    ]
    if "add" not in out:
        return "\n".join(lines)
    lines += [
        "",
        "| operation | page ms p50 / p95 | in worker ms p50 / p95 |",
        "|---|---:|---:|",
    ]
    for durability, r in out["add"].items():
        lines.append(
            f"| addMemory, durability {durability} | {p50_95(r['page'])} | {p50_95(r['worker'])} |"
        )
    for n, r in out["sizes"].items():
        rate = n / (r["import_ms"] / 1000)
        timed = r["retrieve"]
        lines.append(
            f"| retrieve at {n:,} items | {p50_95(timed['page'])} | {p50_95(timed['worker'])} |"
        )
        lines.append(
            f"| importJsonl of {n:,} items (one call) "
            f"| {r['import_ms']:.0f} ms = {rate:,.0f} items/s | |"
        )
    return "\n".join(lines)


def cold_starts(browser, base: str, rounds: int, workers: dict[str, str | None]) -> dict:
    """Bare Pyodide, bare Pyodide + numpy and each pymemory worker (name -> worker URL,
    None: the default), interleaved so drift hits all alike; each in a fresh profile (first
    visit), then reloaded in that profile (repeat visit: the browser's HTTP cache, and the
    worker's Cache Storage)."""
    kinds = [("bare", BARE, False), ("numpy", BARE, True)]
    kinds += [(name, BOOT, url) for name, url in workers.items()]
    runs: dict[str, dict[str, list]] = {v: {k[0]: [] for k in kinds} for v in ("first", "repeat")}
    settled: dict[str, list] = {name: [] for name in workers}  # snapshot saves
    for _ in range(rounds):
        for kind, script, arg in kinds:
            ctx, page = open_page(browser, base)
            for visit in ("first", "repeat"):
                if visit == "repeat":
                    if script is BOOT:
                        settled[kind].append(page.evaluate(SETTLE))
                    page.reload()
                    page.wait_for_function("document.body.dataset.loaded === '1'")
                runs[visit][kind].append(page.evaluate(script, arg))
            ctx.close()

    def median(rs: list[dict], key: str) -> float | None:
        values = [r[key] for r in rs if r.get(key) is not None]
        return statistics.median(values) if values else None

    out = {}
    for visit, r in runs.items():
        out[f"{visit}_visit"] = {
            "bare_pyodide_ms": median(r["bare"], "runtimeMs"),
            "bare_pyodide_numpy_ms": median(r["numpy"], "totalMs"),
            "workers": {
                name: {
                    "worker_ms": median(r[name], "workerBootMs"),
                    "page_ms": median(r[name], "totalMs"),
                    "first_call_ms": median(r[name], "firstCallMs"),
                    "tokens_ms": median(r[name], "tokensMs"),
                    "phases_ms": {
                        k: statistics.median(b["phaseMs"][k] for b in r[name])
                        for k in r[name][0]["phaseMs"]
                    },
                    "sources": sorted({s for b in r[name] for s in b["sources"]}),
                    "snapshot": sorted({str(b.get("snapshot")) for b in r[name]}),
                    "snapshot_saves": settled[name],
                }
                for name in workers
            },
            "runs": r,
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--boot-only", action="store_true", help="only the cold starts")
    parser.add_argument(
        "--worker",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="also cold-start the worker at URL (e.g. another build), interleaved",
    )
    args = parser.parse_args()
    srv = server.start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    out: dict = {"machine": machine_info(), "date": str(dt.date.today())}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        version = browser.version
        workers: dict[str, str | None] = {"pymemory": None}
        for spec in args.worker:
            name, _, url = spec.partition("=")
            workers[name] = url
        out["cold_start"] = cold_starts(browser, base, args.rounds, workers)
        if not args.boot_only:
            measure_calls(browser, base, args, out)
        browser.close()
    srv.shutdown()

    print(report(out, version, args.rounds))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


def measure_calls(browser: Any, base: str, args: argparse.Namespace, out: dict) -> None:
    """addMemory latency at each durability, then import and retrieve at each size."""
    docs, queries = make_corpus(max(args.sizes, default=0) + args.ops, args.ops, seed=11)
    adds = [{"text": t, "tags": ["bench"]} for t in docs[: args.ops]]
    out["add"] = {}
    for durability in ("strict", "relaxed"):
        ctx, page = open_page(browser, base)
        out["add"][durability] = page.evaluate(TIMED, ["adds", "addMemory", adds, durability])
        ctx.close()

    out["sizes"] = {}
    for n in args.sizes:
        ctx, page = open_page(browser, base)
        text = export_text(docs[args.ops : args.ops + n])
        imported = page.evaluate(TIMED, [f"r{n}", "importJsonl", [{"text": text}], "strict"])
        params = [{"query": q} for q in queries]
        timed = page.evaluate(TIMED, [f"r{n}", "retrieve", params, "strict"])
        out["sizes"][n] = {"import_ms": imported["page"][0], "retrieve": timed}
        ctx.close()


if __name__ == "__main__":
    raise SystemExit(main())
