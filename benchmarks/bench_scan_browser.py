"""The coarse scan in the browser: exact vs coarse vector search and hybrid retrieve at 100k
items, in Pyodide in a Web Worker in Chromium, interleaved query by query in one run.

Usage (after ``python benchmarks/bench_scan.py --prepare``, which caches the vectors)::

    python benchmarks/bench_scan_browser.py [--size 100000] [--timed 200] [--json out.json]

Needs `python3 build.py setup` (Pyodide, numpy) and Debian's Chromium. The pymemory wheel
is built afresh from this checkout into a temporary folder. A bare Pyodide worker (made
from a Blob URL; Pyodide, numpy and the wheel as the real worker loads them) gets the
memories (bench_scan's corpus, with bench_memory's random types, tags, scopes and
timestamps), their MiniLM vectors (the cached real ones, filled up to ``--size`` with noisy
copies as in bench_scan; sent as float16) and the held-out queries with their vectors, and
measures, each query exact then coarse (``coarse_min_rows`` flipped on one store):

* ``InMemoryVectorStore.search(q, 100)``, with the top-10 / top-100 overlap;
* ``Memory.retrieve`` hybrid (maxItems 10) on a Memory over MapKv (retrieve reads only the
  in-memory catalog and matrix, as in the real worker, whose IndexedDB it never touches),
  the query vector looked up (its embedding left out), with the share of equal top-10 ids.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from bench_browser import ARGS  # noqa: E402
from bench_memory import entries  # noqa: E402
from bench_retrieval_browser import build_wheel  # noqa: E402
from bench_scan import fill_to, load_corpus, pct  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tools import server  # noqa: E402

DATA = "/bench-scan/"

WORKER_PY = """
import gc, json, time
import numpy as np
from pymemory.memory import Memory
from pymemory.retrieval.coarse import COARSE_MIN_ROWS
from pymemory.retrieval.vectors import InMemoryVectorStore
from pymemory.storage import MapKv

NOW = 1_780_000_000_000

def overlap(got, exact, k):
    kth = exact[min(k, len(exact)) - 1][1]
    return sum(s >= kth for _, s in got[:k]) / min(k, len(exact))

class TableEmbedder:
    name = "minilm-table"
    dim = 384
    def __init__(self, texts, vectors):
        self.row = {t: j for j, t in enumerate(texts)}
        self.vectors = vectors
    async def embed(self, texts):
        return self.vectors[[self.row[t] for t in texts]].astype(np.float32)

async def run(entries_json, queries_json, docs16, qs16, warmup):
    out = {}
    batch = json.loads(entries_json)
    queries = json.loads(queries_json)
    dv = np.frombuffer(docs16.to_py(), dtype="<f2").reshape(-1, 384)
    qv = np.frombuffer(qs16.to_py(), dtype="<f2").reshape(-1, 384).astype(np.float32)
    n = dv.shape[0]
    ids = [f"m{i:06d}" for i in range(n)]
    store = InMemoryVectorStore(384)
    for s in range(0, n, 10_000):
        store.put(ids[s : s + 10_000], dv[s : s + 10_000])
    for q in qv[:warmup]:
        store.coarse_min_rows = 1
        store.search(q, 100)
    lat = {"exact": [], "coarse": []}
    ov10, ov100 = [], []
    gc.collect()
    for q in qv[warmup:]:
        got = {}
        for mode, least in (("exact", None), ("coarse", COARSE_MIN_ROWS)):
            store.coarse_min_rows = least
            t0 = time.perf_counter()
            got[mode] = store.search(q, 100)
            lat[mode].append(time.perf_counter() - t0)
        ov10.append(overlap(got["coarse"], got["exact"], 10))
        ov100.append(overlap(got["coarse"], got["exact"], 100))
    out["search"] = {"lat": lat, "overlap10": float(np.mean(ov10)),
                     "overlap100": float(np.mean(ov100))}
    del store
    gc.collect()

    memory = await Memory.open(MapKv(), clock=lambda: NOW)
    t0 = time.perf_counter()
    for s in range(0, n, 1000):
        await memory.add_many(batch[s : s + 1000])
    out["add_s"] = time.perf_counter() - t0
    texts = [e["text"] for e in batch]
    del batch
    embedder = TableEmbedder(texts + queries, np.concatenate([dv, qv.astype(np.float16)]))
    t0 = time.perf_counter()
    await memory.attach_embedder(embedder)
    await memory.embed_idle()
    out["embed_s"] = time.perf_counter() - t0
    vectors = memory.vectors
    assert len(vectors) == n, (len(vectors), n)
    for q in queries[:warmup]:
        vectors.coarse_min_rows = 1
        await memory.retrieve(q, max_items=10)
    lat = {"exact": [], "coarse": []}
    same = []
    gc.collect()
    for q in queries[warmup:]:
        got = {}
        for mode, least in (("exact", None), ("coarse", COARSE_MIN_ROWS)):
            vectors.coarse_min_rows = least
            t0 = time.perf_counter()
            r = await memory.retrieve(q, max_items=10)
            lat[mode].append(time.perf_counter() - t0)
            assert r.mode == "hybrid", r.mode
            got[mode] = [m.item.id for m in r.memories]
        same.append(len(set(got["exact"]) & set(got["coarse"])) / max(1, len(got["exact"])))
    out["retrieve"] = {"lat": lat, "same10": float(np.mean(same))}
    out["numpy"] = np.__version__
    out["bitwise_count"] = hasattr(np, "bitwise_count")
    await memory.close()
    return json.dumps(out)
"""

WORKER_JS = """
self.onmessage = async (event) => {
  try {
    const { base, warmup, py } = event.data;
    const { loadPyodide } = await import(base + "/vendor/pyodide/pyodide.mjs");
    const pyodide = await loadPyodide({ indexURL: base + "/vendor/pyodide/" });
    const manifest = await (await fetch(base + "/wheels/manifest.json")).json();
    await pyodide.loadPackage(["numpy", base + "/wheels/" + manifest.pymemory], {
      messageCallback: () => {},
    });
    const get = async (name) => await (await fetch(base + "/bench-scan/" + name)).text();
    const bytes = async (name) =>
      new Uint8Array(await (await fetch(base + "/bench-scan/" + name)).arrayBuffer());
    const entries = await get("entries.json");
    const queries = await get("queries.json");
    const docs = await bytes("docs.f16");
    const qs = await bytes("queries.f16");
    await pyodide.runPythonAsync(py);
    const run = pyodide.globals.get("run");
    self.postMessage({ ok: true, result: await run(entries, queries, docs, qs, warmup) });
  } catch (err) {
    self.postMessage({ ok: false, error: String(err?.stack ?? err) });
  }
};
"""

RUN = """([base, warmup, js, py]) => new Promise((resolve, reject) => {
  const url = URL.createObjectURL(new Blob([js], { type: "text/javascript" }));
  const w = new Worker(url, { type: "module" });
  w.onmessage = (e) => {
    w.terminate();
    e.data.ok ? resolve(e.data.result) : reject(new Error(e.data.error));
  };
  w.onerror = (e) => reject(new Error(String(e.message)));
  w.postMessage({ base, warmup, py });
})"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000, help="as given to bench_scan.py")
    ap.add_argument("--timed", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    texts, dv, queries, qv = load_corpus(args.size, args.queries, cached_only=True)
    real = dv.shape[0]
    full = fill_to(dv, args.size)
    half = len(queries) // 2
    pick = slice(half, half + args.warmup + args.timed)  # held-out queries
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        folder = Path(tmp)
        build_wheel(folder / "wheels")
        data = folder / "data"
        data.mkdir()
        batch = entries(texts[: args.size], np.random.default_rng(3))
        (data / "entries.json").write_text(json.dumps(batch))
        (data / "queries.json").write_text(json.dumps(queries[pick]))
        (data / "docs.f16").write_bytes(full.astype("<f2").tobytes())
        (data / "queries.f16").write_bytes(qv[pick].astype("<f2").tobytes())
        server.MOUNTS["/wheels/"] = folder / "wheels"
        server.MOUNTS[DATA] = data
        srv = server.start()
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
            ctx = browser.new_context()
            ctx.set_default_timeout(3_600_000)
            page = ctx.new_page()
            page.goto(base + "/web/pages/bench/retrieval.html")
            raw = page.evaluate(RUN, [base, args.warmup, WORKER_JS, WORKER_PY])
            version = browser.version
            browser.close()
        srv.shutdown()
    load.append(os.getloadavg()[0])
    out = json.loads(raw)
    s, r = out["search"], out["retrieve"]
    print(f"Chromium {version}, Pyodide numpy {out['numpy']} (bitwise_count: "
          f"{out['bitwise_count']}), {started}, "
          f"load average {load[0]:.1f} -> {load[1]:.1f}")  # fmt: skip
    print(f"{args.size} items ({real} real MiniLM vectors, the rest noisy copies), "
          f"{args.timed} held-out queries, p50 / p95 ms")  # fmt: skip
    print(f"search(q, 100): exact {pct(s['lat']['exact'])}, coarse {pct(s['lat']['coarse'])}; "
          f"top-10 overlap {s['overlap10']:.4f}, top-100 {s['overlap100']:.4f}")  # fmt: skip
    print(f"retrieve hybrid: exact {pct(r['lat']['exact'])}, coarse {pct(r['lat']['coarse'])}; "
          f"same top-10 ids {r['same10']:.4f}")  # fmt: skip
    print(f"(add_many {out['add_s']:.1f} s, embed {out['embed_s']:.1f} s)")
    if args.json:
        args.json.write_text(json.dumps({**out, "load": load, "started": started}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
