"""addMemory and retrieve latency in Chromium while the local models work, in one run:
models off (BM25 retrieval), models loaded and idle (hybrid retrieval, nothing in the
background), models busy with inference in the model workers (the default; with one and
with two onnxruntime-web WASM threads) and models busy with inference on the store
worker's thread (``modelWorker: false``, the old design).

Usage::

    python benchmarks/bench_models_busy.py [--items 10000] [--ops 40] [--backlog 50]
        [--lines 1]

"Idle": MiniLM is attached after ``--items`` memories were imported and has embedded all
of them before the timing starts (each timed add then queues its own embedding only).
"Busy": MiniLM is attached after the import (so it is embedding the ``--items`` in the
background) and SmolLM2 has ``--backlog`` new messages to refine. Every timing starts
after one untimed retrieve (the query side's session). Each configuration runs in a fresh
browser context. Needs ``python3 build.py setup``.

``--lines N``: each memory (imported or added) is a transcript of N lines, so the
embedder also has a vector per passage to make (issue 35).

Issue 29 (background inference gives way to calls): the busy rows also report the
background's model steps per second (generated tokens and embedding batches, from the call
gate's counts in ``stats().background``) while the timed calls run and in a quiet window
of the same length right after, and the gate's counts (steps that waited for a call, and
``overlapped``: steps whose bounded wait ran out). The idle row times the query embedding
alone (the ``embed`` diagnostic, one query at a time), so a busy retrieve can be compared
with the query's own embedding time measured in the same run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bm25 import machine_info, make_corpus  # noqa: E402
from bench_browser import ARGS, export_text, open_page, pct  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tools import server  # noqa: E402

RUN = """async ([text, adds, queries, backlog, mode, options]) => {
  const pm = window.pymemory;
  const m = pm.createAgentMemory({ dbName: "busy", scope: "user", ...options });
  await m.ready;
  const conn = pm.connection();
  await m.importJsonl(text);
  let busy = null, settleMs = null;
  if (mode === "idle") {
    await conn.call("busy", "loadModels", { embedder: true });
    const t = performance.now();
    await conn.call("busy", "modelsIdle", {});   // every imported item embedded
    settleMs = performance.now() - t;
  } else if (mode === "busy") {
    await conn.call("busy", "loadModels", { embedder: true, summarizer: true });
    await m.addMany(backlog);                    // the summarizer's backlog
    busy = conn.call("busy", "modelsIdle", {});
  }
  await m.retrieve("warm up the query side");
  const embed = [];
  if (mode === "idle") {                          // the query embedding alone
    for (const q of queries) {
      const t = performance.now();
      await conn.call("busy", "embed", { texts: [q] });
      embed.push(performance.now() - t);
    }
  }
  const gate0 = (await m.stats()).background, loop0 = performance.now();
  const add = [], retrieve = [];
  for (let i = 0; i < adds.length; i++) {
    let t0 = performance.now();
    await m.addMemory(adds[i]);
    add.push(performance.now() - t0);
    t0 = performance.now();
    const r = await m.retrieve(queries[i]);
    retrieve.push(performance.now() - t0);
    // Chinese queries of the corpus are ranked by BM25 alone (MiniLM does not read them)
    const unread = (r.notes || []).some((n) => n.includes("does not read its script"));
    if (mode !== "off" && r.mode !== "hybrid" && !unread) throw new Error("not hybrid: " + r.mode);
  }
  const gate1 = (await m.stats()).background, loopMs = performance.now() - loop0;
  let gate2 = null;
  if (busy) {                                     // a quiet window as long as the calls took
    await new Promise((r) => setTimeout(r, loopMs));
    gate2 = (await m.stats()).background;
  }
  const stillBusy = busy
    ? await Promise.race([busy.then(() => false), Promise.resolve(true)])
    : false;
  const perS = (a, b) => (b.steps - a.steps) / loopMs * 1000;
  const background = gate2 && { withCalls: perS(gate0, gate1), quiet: perS(gate1, gate2),
                                waited: gate1.waited - gate0.waited,
                                overlapped: gate1.overlapped - gate0.overlapped };
  const inWorker = mode !== "off" && options.modelWorker !== false;
  const stats = inWorker ? await conn.link.request({ op: "modelStats" }) : null;
  const queues = stats && { background: stats.background?.queue, urgent: stats.urgent?.queue };
  const wasmThreads = stats && stats.background?.wasmThreads;
  return { add, retrieve, embed, background, stillBusy, queues, settleMs, wasmThreads,
           isolated: globalThis.crossOriginIsolated === true };
}"""

#: (row, mode, the client's connection options); ratios are to the first two rows.
CONFIGS = [
    ("models off", "off", {}),
    ("models loaded, idle", "idle", {}),
    ("models busy, model worker", "busy", {}),
    ("models busy, model worker, 2 WASM threads", "busy", {"ortThreads": 2}),
    ("models busy, same thread", "busy", {"modelWorker": False}),
]


def summary(values: list[float]) -> str:
    return f"{pct(values, 50):.1f} / {pct(values, 95):.1f}"


def ratios(r: dict, off: dict, idle: dict | None, key: str) -> str:
    mine = pct(r[key], 50)
    to_idle = f"{mine / pct(idle[key], 50):.2f}x" if idle else "-"
    return f"{mine / pct(off[key], 50):.2f}x / {to_idle}"


def report(out: dict, args: argparse.Namespace) -> str:
    off, idle = out["models off"], out.get("models loaded, idle")
    lines = [
        f"# bench_models_busy, {out['date']}, Chromium {out['chromium']}, "
        f"{json.dumps(out['machine'])}, load average {out['loadavg'][0]:.1f} -> "
        f"{out['loadavg'][1]:.1f}",
        "",
        f"{args.items:,} items imported ({args.lines} line(s) each), {args.ops} add + retrieve "
        "pairs, summarizer backlog "
        f"{args.backlog} (ms, p50 / p95; ratios of p50 to models off / models idle)",
        "",
        "| configuration | addMemory | retrieve | add ratio | retrieve ratio "
        "| WASM threads | models still busy at the end |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    gate_rows = []
    embed_p50 = pct(idle["embed"], 50) if idle and idle.get("embed") else float("nan")
    for name, _mode, _options in CONFIGS:
        if name not in out:
            continue
        r = out[name]
        lines.append(
            f"| {name} | {summary(r['add'])} | {summary(r['retrieve'])} "
            f"| {ratios(r, off, idle, 'add')} | {ratios(r, off, idle, 'retrieve')} "
            f"| {r['wasmThreads'] or '-'} | {'yes' if r['stillBusy'] else 'no'} |"
        )
        if r.get("background"):
            b = r["background"]
            gate_rows.append(
                f"| {name} | {b['withCalls']:.1f} | {b['quiet']:.1f} | {b['waited']} "
                f"| {b['overlapped']} | {pct(r['retrieve'], 50) - embed_p50:.1f} |"
            )
    if idle and idle.get("embed"):
        lines += [
            "",
            f"Query embedding alone (idle row, `embed` of one query): p50 {embed_p50:.1f} ms, "
            f"p95 {pct(idle['embed'], 95):.1f} ms. Background while the calls ran vs a quiet "
            "window of the same length (model steps/s: tokens + embedding batches), the "
            "call gate's counts during the calls, and busy retrieve p50 minus the query "
            "embedding p50:",
            "",
            "| configuration | steps/s with calls | steps/s quiet | steps that waited "
            "| overlapped | retrieve p50 - embed p50 (ms) |",
            "|---|---:|---:|---:|---:|---:|",
            *gate_rows,
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=40)
    parser.add_argument("--backlog", type=int, default=50)
    parser.add_argument("--lines", type=int, default=1,
                        help="turns per memory: each a transcript of this many lines, so "
                        "the embedder has a vector per passage to make")  # fmt: skip
    parser.add_argument("--only", help="rows to run, separated by ';' (models off always runs)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n = (args.items + args.ops) * args.lines
    docs, queries = make_corpus(n + args.backlog, args.ops, seed=5)
    if args.lines > 1:
        docs = ["\n".join(docs[i : i + args.lines]) for i in range(0, n, args.lines)] + docs[n:]
    text = export_text(docs[: args.items])
    adds = docs[args.items : args.items + args.ops]
    backlog = [
        f"Hi! Could you note that {d} Thanks a lot, and sorry for the long message."
        for d in docs[args.items + args.ops :]
    ]
    only = {n.strip() for n in args.only.split(";")} if args.only else None
    srv = server.start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    now = dt.datetime.now(dt.UTC).isoformat(timespec="minutes")
    out: dict = {"machine": machine_info(), "date": now, "loadavg": [os.getloadavg()[0]]}
    out["args"] = {k: v for k, v in vars(args).items() if k != "json"}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        out["chromium"] = browser.version
        for name, mode, options in CONFIGS:
            if only and mode != "off" and name not in only:
                continue
            ctx, page = open_page(browser, base)
            out[name] = page.evaluate(RUN, [text, adds, queries, backlog, mode, options])
            out[name]["loadavg"] = os.getloadavg()[0]
            ctx.close()
            print(name, "done", f"load {out[name]['loadavg']:.1f}", flush=True)
            if args.json:  # after every row: a long run keeps what it measured
                args.json.write_text(json.dumps(out, indent=2))
        browser.close()
    srv.shutdown()
    out["loadavg"].append(os.getloadavg()[0])
    print(report(out, args))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
