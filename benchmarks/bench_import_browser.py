"""Import of many memories in Chromium: how long until all are searchable by BM25, and until
all are embedded, per embedder configuration.

Usage::

    python benchmarks/bench_import_browser.py [--items 10000] [--sample 2000] [--json out.json]

The memories are chat turns of ``benchmarks/make_conversations.py`` (two seeds, about 45
characters a turn), imported with the JS client's ``importJsonl`` into a store whose
embedder was loaded first (its load is timed apart). "Searchable": the import call
resolved and a retrieve of the last imported turn's text finds it. "Embedded": the
``modelsIdle`` call resolved; meanwhile a retrieve every ``--poll`` seconds reads how many
items are still waiting (its "not embedded yet" note), for the curve.

Every configuration runs at ``--sample`` items in a fresh browser context, in the order
A B B A (so drift of the machine's load hits both alike); the first configuration also
runs once at the full ``--items``, which checks the extrapolation of the others
(``--items / --sample`` times their sample's time). An embedder configuration is one entry
of ``EMBEDDERS``: what ``loadModels`` gets and the client's connection options.
Needs ``python3 build.py setup``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bm25 import machine_info  # noqa: E402
from bench_browser import ARGS, open_page  # noqa: E402
from make_conversations import build  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tools import server  # noqa: E402

#: One entry per embedder configuration: ``load`` is what ``loadModels`` gets, ``options``
#: the client's connection options (``ortThreads``: onnxruntime-web's WASM threads, used
#: only where the page is cross-origin isolated; the dev server sends COOP/COEP).
EMBEDDERS: list[dict] = [
    {"name": "MiniLM, WASM 1 thread", "load": {"embedder": True}, "options": {"ortThreads": 1}},
    {"name": "MiniLM, WASM 2 threads", "load": {"embedder": True}, "options": {"ortThreads": 2}},
]

RUN = """async ([text, total, probe, load, options, pollMs]) => {
  const pm = window.pymemory;
  const db = "import";
  const m = pm.createAgentMemory({ dbName: db, ...options });
  await m.ready;
  const conn = pm.connection();
  let t = performance.now();
  await conn.call(db, "loadModels", load);
  await m.retrieve("warm up the query side");  // the urgent model worker's session
  const loadMs = performance.now() - t;

  const t0 = performance.now();
  const imported = await m.importJsonl(text);
  const importMs = performance.now() - t0;
  const first = await m.retrieve(probe.text, { maxItems: 10 });
  const searchableMs = performance.now() - t0;
  const found = first.memories.some((x) => x.item.id === probe.id);

  let embeddedMs = null;
  const idle = conn.call(db, "modelsIdle", {}).then((r) => {
    embeddedMs = performance.now() - t0;
    return r;
  });
  const curve = [];
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  while (embeddedMs === null) {
    await Promise.race([idle, sleep(pollMs)]);
    if (embeddedMs !== null) break;
    const r = await m.retrieve(probe.text, { maxItems: 1 });
    const note = r.notes.find((n) => n.includes("not embedded yet"));
    curve.push([performance.now() - t0, total - (note ? parseInt(note, 10) : 0)]);
  }
  const done = await idle;
  const last = await m.retrieve(probe.text, { maxItems: 10 });
  const stats = await conn.link.request({ op: "modelStats" });
  const bg = stats.background ?? stats;
  return {
    imported, importMs, searchableMs, found, mode: first.mode, embeddedMs, curve, loadMs,
    embedded: done.embedded, finalMode: last.mode, finalNotes: last.notes,
    pageIsolated: globalThis.crossOriginIsolated === true,
    workerIsolated: bg.crossOriginIsolated, threadsAsked: options.ortThreads ?? 1,
    wasmThreads: bg.wasmThreads, runs: bg.queue?.runs ?? null,
  };
}"""


def turns(n: int) -> list[dict]:
    """``n`` chat turns: the suite's conversations (seed 11), then another seed's."""
    out: list[dict] = []
    seed = 11
    while len(out) < n:
        out += [r for r in build(seed) if r["kind"] == "turn"]
        seed += 1
    return out[:n]


def export_of(records: list[dict]) -> str:
    lines = [json.dumps({"format": "pymemory-export", "version": 1})]
    for i, t in enumerate(records):
        at = dt.datetime.fromisoformat(t["at"].replace("Z", "+00:00"))
        item = {
            "id": str(uuid.UUID(int=i + 1, version=4)),
            "type": "message",
            "timestamp": int(at.timestamp() * 1000),
            "content": t["text"][:200],
            "text": t["text"],
            "scope": t["conversation"],
            "tags": [t["speaker"].lower()],
            "metadata": {"source": "import", "confidence": 1.0, "references": []},
        }
        lines.append(json.dumps({"kind": "memory", "item": item}, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def probe_of(records: list[dict]) -> dict:
    """The last imported turn whose text no other turn repeats (its id and text)."""
    counts = Counter(t["text"] for t in records)
    i = max(j for j, t in enumerate(records) if counts[t["text"]] == 1)
    return {"id": str(uuid.UUID(int=i + 1, version=4)), "text": records[i]["text"]}


def pthreads(browser_cdp) -> int:
    """onnxruntime-web's own WASM thread workers alive in the browser now."""
    targets = browser_cdp.send("Target.getTargets")["targetInfos"]
    return sum(1 for t in targets if t["type"] == "worker" and t.get("title") == "em-pthread")


def run_one(browser, base: str, embedder: dict, records: list[dict], poll_s: float) -> dict:
    ctx, page = open_page(browser, base)
    cdp = browser.new_browser_cdp_session()
    load_before = os.getloadavg()[0]
    try:
        out = page.evaluate(
            RUN,
            [export_of(records), len(records), probe_of(records), embedder["load"],
             embedder["options"], poll_s * 1000],
        )  # fmt: skip
        out["pthreadWorkers"] = pthreads(cdp)
    finally:
        cdp.detach()
        ctx.close()
    out.update(name=embedder["name"], items=len(records), load=[load_before, os.getloadavg()[0]])
    return out


def seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}"


def at_time(run: dict, ms: float) -> int | None:
    """Items embedded by ``ms`` after the import started (the last poll before it)."""
    if run["embeddedMs"] is not None and run["embeddedMs"] <= ms:
        return run["items"]
    seen = [n for t, n in run["curve"] if t <= ms]
    if seen:
        return int(seen[-1])
    later = [n for t, n in run["curve"] if t > ms]  # the import was still running at ms
    return 0 if later and later[0] == 0 else None


def report(out: dict, full: int, sample: int) -> str:
    scale = full / sample
    lines = [
        f"# bench_import_browser, {out['date']}, Chromium {out['chromium']}, "
        f"{json.dumps(out['machine'])}",
        "",
        f"Chat turns imported with importJsonl (s from the import call; "
        f"load average {out['loadavg'][0]:.1f} -> {out['loadavg'][1]:.1f})",
        "",
        "| embedder | items | threads (isolated, pthread workers) | import resolves "
        "| searchable by BM25 | all embedded | embedded / s | embedded after 30 s "
        f"| all embedded, {full:,} (x{scale:g}) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in out["runs"]:
        rate = r["items"] / (r["embeddedMs"] / 1000) if r["embeddedMs"] else 0
        after = at_time(r, 30_000)
        est = seconds(r["embeddedMs"] * scale) if r["items"] == sample else "measured"
        threads = (
            f"{r['wasmThreads']} of {r['threadsAsked']} "
            f"({'yes' if r['workerIsolated'] else 'no'}, {r['pthreadWorkers']})"
        )
        lines.append(
            f"| {r['name']} | {r['items']:,} | {threads} | {seconds(r['importMs'])} "
            f"| {seconds(r['searchableMs'])}{'' if r['found'] else ' (probe not found)'} "
            f"| {seconds(r['embeddedMs'])} | {rate:.0f} "
            f"| {'-' if after is None else f'{after:,}'} | {est} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=2_000)
    parser.add_argument("--poll", type=float, default=5.0, help="seconds between progress reads")
    parser.add_argument("--only", help="run only the embedders whose name contains this")
    parser.add_argument("--no-full", action="store_true", help="skip the run at --items")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    embedders = [e for e in EMBEDDERS if not args.only or args.only in e["name"]]
    records = turns(args.items)
    sample = records[:: max(1, args.items // args.sample)][: args.sample]
    plan = [(e, sample) for e in embedders] + [(e, sample) for e in reversed(embedders)]
    if not args.no_full:
        plan.append((embedders[0], records))
    srv = server.start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    now = dt.datetime.now(dt.UTC).isoformat(timespec="minutes")
    out: dict = {"machine": machine_info(), "date": now}
    out["loadavg"] = [os.getloadavg()[0]]
    out["runs"] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        out["chromium"] = browser.version
        for embedder, recs in plan:
            run = run_one(browser, base, embedder, recs, args.poll)
            out["runs"].append(run)
            print(f"{run['name']} x{run['items']}: searchable {seconds(run['searchableMs'])} s, "
                  f"embedded {seconds(run['embeddedMs'])} s, threads {run['wasmThreads']}, "
                  f"load {run['load'][0]:.1f}", flush=True)  # fmt: skip
        browser.close()
    srv.shutdown()
    out["loadavg"].append(os.getloadavg()[0])
    print(report(out, args.items, len(sample)))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
