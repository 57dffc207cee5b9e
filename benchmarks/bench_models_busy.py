"""addMemory and retrieve latency in Chromium while the local models work, in one run:
models off, models busy with inference in the model worker (the default), and models busy
with inference on the store worker's thread (``modelWorker: false``, the old design).

Usage::

    python benchmarks/bench_models_busy.py [--items 10000] [--ops 40] [--backlog 50]

"Busy": MiniLM is attached after ``--items`` memories were imported (so it is embedding
them in the background) and SmolLM2 has ``--backlog`` new messages to refine. Each
configuration runs in a fresh browser context. Needs ``python3 build.py setup``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bm25 import machine_info, make_corpus  # noqa: E402
from bench_browser import ARGS, export_text, open_page, pct  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tools import server  # noqa: E402

RUN = """async ([text, adds, queries, backlog, models, modelWorker]) => {
  const pm = window.pymemory;
  const m = pm.createAgentMemory({ dbName: "busy", scope: "user", modelWorker });
  await m.ready;
  const conn = pm.connection();
  await m.importJsonl(text);
  let busy = null;
  if (models) {
    await conn.call("busy", "loadModels", { embedder: true, summarizer: true });
    await m.addMany(backlog);                // the summarizer's backlog
    busy = conn.call("busy", "modelsIdle", {});
  }
  const add = [], retrieve = [];
  for (let i = 0; i < adds.length; i++) {
    let t0 = performance.now();
    await m.addMemory(adds[i]);
    add.push(performance.now() - t0);
    t0 = performance.now();
    const r = await m.retrieve(queries[i]);
    retrieve.push(performance.now() - t0);
    if (models && r.mode !== "hybrid") throw new Error("retrieve was not hybrid: " + r.mode);
  }
  const stillBusy = busy
    ? await Promise.race([busy.then(() => false), Promise.resolve(true)])
    : false;
  const inWorker = models && modelWorker !== false;
  const stats = inWorker ? await conn.link.request({ op: "modelStats" }) : null;
  const queues = stats && { background: stats.background?.queue, urgent: stats.urgent?.queue };
  return { add, retrieve, stillBusy, queues };
}"""


def summary(values: list[float]) -> str:
    return f"{pct(values, 50):.1f} / {pct(values, 95):.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=40)
    parser.add_argument("--backlog", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    docs, queries = make_corpus(args.items + args.ops + args.backlog, args.ops, seed=5)
    text = export_text(docs[: args.items])
    adds = docs[args.items : args.items + args.ops]
    backlog = [
        f"Hi! Could you note that {d} Thanks a lot, and sorry for the long message."
        for d in docs[args.items + args.ops :]
    ]
    srv = server.start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    out: dict = {"machine": machine_info(), "date": str(dt.date.today()), "args": vars(args)}
    out["args"] = {k: v for k, v in out["args"].items() if k != "json"}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        out["chromium"] = browser.version
        for name, models, model_worker in (
            ("models off", False, True),
            ("models busy, model worker", True, True),
            ("models busy, same thread", True, False),
        ):
            ctx, page = open_page(browser, base)
            out[name] = page.evaluate(RUN, [text, adds, queries, backlog, models, model_worker])
            ctx.close()
            print(name, "done", flush=True)
        browser.close()
    srv.shutdown()
    off = out["models off"]
    lines = [
        f"# bench_models_busy, {out['date']}, Chromium {out['chromium']}, "
        f"{json.dumps(out['machine'])}",
        "",
        f"{args.items:,} items imported, {args.ops} add + retrieve pairs, summarizer backlog "
        f"{args.backlog} (ms, p50 / p95; ratio of p50 to models off)",
        "",
        "| configuration | addMemory | retrieve | add ratio | retrieve ratio "
        "| models still busy at the end |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name in ("models off", "models busy, model worker", "models busy, same thread"):
        r = out[name]
        ra = statistics.median(r["add"]) / statistics.median(off["add"])
        rr = statistics.median(r["retrieve"]) / statistics.median(off["retrieve"])
        lines.append(
            f"| {name} | {summary(r['add'])} | {summary(r['retrieve'])} | {ra:.2f}x | {rr:.2f}x "
            f"| {'yes' if r['stillBusy'] else 'no'} |"
        )
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
