"""Browser retrieval: pymemory's worker against npm @orama/orama in one Chromium page.

Usage::

    python benchmarks/bench_retrieval_browser.py [--sizes 1000 10000 100000] [--queries 200]
        [--profile] [--json out.json] [--plot docs/img/browser_latency_vs_size.svg]

Needs `python3 build.py setup` (assets, models) and Debian's Chromium. One page,
``/web/pages/bench/retrieval.html``, talks to pymemory's Web Worker (Pyodide + IndexedDB) and
runs Orama (``@orama/orama``, pinned in assets.lock.json) on its own main thread.
The pymemory wheel is built afresh from this checkout into a temporary folder (or
``--wheel`` names one) and served in place of ``.cache/wheels``.

Scale (synthetic corpus of ``bench_bm25.make_corpus``; a fresh browser context per size):

* pymemory BM25: ``importJsonl`` of the corpus, then ``retrieve`` (maxItems 10, a token
  budget that never binds) per query; then ``loadModels {embedder: "hashing"}`` and
  ``modelsIdle`` (the worker embeds every item in the background) and the same queries in
  hybrid mode. Latency both from the page (comlink round trip) and inside the worker.
* Orama: ``create`` with ``{text: 'string', embedding: 'vector[384]'}``, ``insertMultiple``
  of the same texts with the same HashingEmbedder vectors (computed in CPython), then
  ``search`` with ``term`` (BM25) and ``mode: 'hybrid'`` (term + the query's vector,
  ``similarity`` threshold 0 unless told: Orama's default 0.8 drops almost every hit of
  these vectors; also timed), ``limit: 10``. Orama's query vectors are given, not
  computed; pymemory's hybrid latency includes embedding the query in the worker. Orama
  removes no stopwords by default; a second instance gets pymemory's English list.
* Memory: ``navigator.storage.estimate()`` usage (IndexedDB) and the page realm's bytes
  from ``performance.measureUserAgentSpecificMemory()`` (the JS heap holding Orama). That
  API leaves out WebAssembly memory, so pymemory's Pyodide heap is measured with
  ``--profile``: a bare Pyodide worker (``web/pages/bench/profile-worker.mjs``) loads the largest
  corpus into a Memory on a MapKv, reads tracemalloc (the MapKv's records excluded) and
  the WebAssembly memory's growth, and times the parts of a hybrid retrieve.

Recall@10 on the shipped suites: turns added with ``addMany`` (their timestamps,
``metadata.turn``), BM25 first, then ``loadModels {embedder: true}`` (MiniLM on
onnxruntime-web) and hybrid; Orama indexes the same texts with MiniLM vectors computed in
CPython. A question's recall is the fraction of its gold pieces with any turn in the top
10; abstention questions (no gold) are skipped.

Every query is timed one at a time after untimed warm-up queries (``--warmup``) that are
not among the timed ones.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bm25 import machine_info, make_corpus  # noqa: E402
from bench_browser import ARGS, export_text, pct  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402
from svgplot import line_plot  # noqa: E402

from pymemory.evals.suites import Question, Suite, load_suite  # noqa: E402
from pymemory.models.embedding import HashingEmbedder  # noqa: E402
from pymemory.retrieval.analyzer import STOPWORDS  # noqa: E402
from tools import server  # noqa: E402
from tools.assets import sha256  # noqa: E402

SUITES = ("multi-turn-memory", "long-context-recall")
K = 10
DIM = 384
MEMORY_ARGS = [
    "--enable-blink-features=ForceEagerMeasureMemory",  # measure now, not at the next GC
    "--enable-precise-memory-info",
    "--js-flags=--expose-gc",  # the page collects garbage before each memory reading
]
PAGE = "/web/pages/bench/retrieval.html"
DATA = "/bench-data/"


def build_wheel(dest: Path, given: Path | None = None) -> str:
    """Build the pymemory wheel from this checkout (or copy ``given``) into ``dest``, with
    the manifest.json the worker reads; returns the wheel's sha256."""
    dest.mkdir(parents=True, exist_ok=True)
    if given is not None:
        shutil.copy(given, dest / given.name)
    else:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
             "--disable-pip-version-check", "-w", str(dest), str(ROOT)],
            check=True,
        )  # fmt: skip
    (wheel,) = dest.glob("pymemory_agent-*.whl")
    digest = sha256(wheel)
    (dest / "manifest.json").write_text(json.dumps({"pymemory": wheel.name, "sha256": digest}))
    return digest


def write_f32(path: Path, vectors: np.ndarray) -> None:
    path.write_bytes(np.ascontiguousarray(vectors, dtype="<f4").tobytes())


def open_page(browser: Any, base: str) -> tuple[Any, Page]:
    ctx = browser.new_context()
    ctx.set_default_timeout(1_800_000)
    page = ctx.new_page()
    page.goto(base + PAGE)
    page.wait_for_function("document.body.dataset.loaded === '1'")
    return ctx, page


def call(page: Page, db: str, method: str, params: dict | None = None) -> dict:
    return page.evaluate("([d, m, p]) => bench.call(d, m, p)", [db, method, params or {}])


def retrieve_all(page: Page, db: str, queries: list[str], warmup: int) -> dict:
    return page.evaluate(
        "([d, q, w]) => bench.retrieveAll(d, q, { warmup: w })", [db, queries, warmup]
    )


def orama_search(page: Page, name: str, queries: list[str], opts: dict) -> dict:
    return page.evaluate("([n, q, o]) => bench.oramaSearch(n, q, o)", [name, queries, opts])


def memory(page: Page) -> dict:
    """Storage usage, worker and page realm bytes (measureUserAgentSpecificMemory)."""
    raw = page.evaluate("bench.memory()")
    realm = {"worker": 0, "page": 0}
    for part in raw.get("uasm", {}).get("breakdown", []):
        if "DedicatedWorkerGlobalScope" in part["scopes"]:
            realm["worker"] += part["bytes"]
        elif "Window" in part["scopes"]:
            realm["page"] += part["bytes"]
    return {"idb": raw.get("storage", {}).get("usage", 0), **realm, "raw": raw}


def latency(values: list[float]) -> dict[str, float]:
    return {
        "p50": pct(values, 50),
        "p95": pct(values, 95),
        "qps": len(values) / (sum(values) / 1000),
    }


def recall(questions: list[Question], tops: list[list[str]], k: int = K) -> float:
    """Mean over answerable questions of the fraction of gold pieces found in the top k."""
    found = []
    for q, top in zip(questions, tops, strict=True):
        if q.gold:
            got = set(top[:k])
            found.append(sum(not got.isdisjoint(piece) for piece in q.gold) / len(q.gold))
    return statistics.fmean(found)


def slot_of(item_id: str) -> str:
    """The corpus row of a benchmark item id (``export_text`` numbers them from 1)."""
    return str(int(item_id.split("-")[-1], 16) - 1)


def overlap(orama_top: list[list[str]], pymemory_top: list[list[str]]) -> float:
    """Mean shared fraction of the two engines' top-10 lists over the queries."""
    return statistics.fmean(
        len(set(a) & {slot_of(x) for x in b}) / K
        for a, b in zip(orama_top, pymemory_top, strict=True)
    )


def orama_rows(page: Page, name: str, queries: list[str], warmup: int, similarity: float,
               with_default: bool) -> dict:  # fmt: skip
    """Orama BM25 and hybrid on instance ``name`` (and hybrid at its default similarity)."""
    qvec = {"vectorsUrl": f"{DATA}qvec.f32", "dim": DIM, "warmup": warmup}
    runs = {
        "bm25": orama_search(page, name, queries, {"mode": "fulltext", "warmup": warmup}),
        "hybrid": orama_search(
            page, name, queries, {"mode": "hybrid", "similarity": similarity, **qvec}
        ),
    }
    if with_default:
        runs["hybrid_08"] = orama_search(
            page, name, queries, {"mode": "hybrid", "similarity": 0.8, **qvec}
        )
    return runs


def run_size(page: Page, n: int, nq: int, warmup: int, similarity: float) -> dict:
    """Everything at one corpus size, in one fresh page (files under /bench-data/)."""
    db = f"scale{n}"
    call(page, db, "open")
    m0 = memory(page)
    imported = page.evaluate("([d, u]) => bench.importUrl(d, u)", [db, f"{DATA}corpus-{n}.jsonl"])
    m1 = memory(page)
    queries = page.evaluate(f"fetch('{DATA}queries.json').then((r) => r.json())")
    bm25 = retrieve_all(page, db, queries, warmup)
    assert bm25["modes"] == {"bm25": nq}, bm25["modes"]
    loaded = call(page, db, "loadModels", {"embedder": "hashing"})
    idle = call(page, db, "modelsIdle")
    if idle["result"]["embedded"] != n:  # the embed loop logs its error in the worker
        raise RuntimeError(f"the worker embedded {idle['result']['embedded']} of {n} items")
    m2 = memory(page)
    hybrid = retrieve_all(page, db, queries, warmup)
    assert hybrid["modes"] == {"hybrid": nq}, hybrid["modes"]
    files = [f"{DATA}texts-{n}.json", f"{DATA}docvec-{n}.f32", DIM]
    built = page.evaluate("([t, v, d]) => bench.oramaBuild('o', t, v, d)", files)
    m3 = memory(page)
    orama = orama_rows(page, "o", queries, warmup, similarity, True)
    page.evaluate("bench.oramaDrop('o')")
    built_sw = page.evaluate(
        "([t, v, d, s]) => bench.oramaBuild('sw', t, v, d, s)", [*files, sorted(STOPWORDS)]
    )
    orama_sw = orama_rows(page, "sw", queries, warmup, similarity, False)
    page.evaluate("bench.oramaDrop('sw')")

    def row(ms: list[float], top: list[list[str]], worker: list[float] | None = None) -> dict:
        return {"page": ms, "worker": worker, "empty": sum(not t for t in top)}

    return {
        "build_ms": {
            "pymemory_bm25": imported["pageMs"],
            "pymemory_hybrid": loaded["pageMs"] + idle["pageMs"],
            "orama_bm25": built["indexMs"],
            "orama_bm25_sw": built_sw["indexMs"],
        },
        "orama_prep_ms": built["prepMs"],
        "rows": {
            "pymemory_bm25": row(bm25["page"], bm25["top"], bm25["worker"]),
            "pymemory_hybrid": row(hybrid["page"], hybrid["top"], hybrid["worker"]),
            **{f"orama_{k}": row(r["ms"], r["top"]) for k, r in orama.items()},
            **{f"orama_{k}_sw": row(r["ms"], r["top"]) for k, r in orama_sw.items()},
        },
        "orama_hybrid_matches_p50": pct(orama["hybrid"]["counts"], 50),
        "overlap_bm25": overlap(orama["bm25"]["top"], bm25["top"]),
        "overlap_bm25_sw": overlap(orama_sw["bm25"]["top"], bm25["top"]),
        "memory": {
            "idb_items": m1["idb"] - m0["idb"],
            "idb_with_vectors": m2["idb"] - m0["idb"],
            "worker_js_items": m1["worker"] - m0["worker"],
            "worker_js_with_vectors": m2["worker"] - m0["worker"],
            "orama_page": m3["page"] - m2["page"],
            "raw": [m0["raw"], m1["raw"], m2["raw"], m3["raw"]],
        },
    }


def run_suite(page: Page, name: str, suite: Suite, similarity: float) -> dict:
    """Recall@10 of every retriever on one suite (pymemory db and Orama in one page)."""
    db = f"suite-{name}"
    entries = [
        {"text": t.text, "timestamp": t.timestamp,
         "metadata": {"source": "eval", "turn": t.id, "session": t.session, "role": t.role}}
        for t in suite.turns
    ]  # fmt: skip
    call(page, db, "addMany", {"entries": entries})
    questions = list(suite.questions)
    texts = [q.text for q in questions]
    bm25 = retrieve_all(page, db, texts, 0)
    assert bm25["modes"] == {"bm25": len(texts)}, bm25["modes"]
    call(page, db, "loadModels", {"embedder": True})
    t0 = time.perf_counter()  # the background embedder started when the model attached
    idle = call(page, db, "modelsIdle")
    embed_s = time.perf_counter() - t0
    if idle["result"]["embedded"] != len(suite.turns):
        raise RuntimeError(f"the worker embedded {idle['result']['embedded']} turns of {name}")
    hybrid = retrieve_all(page, db, texts, 0)
    assert hybrid["modes"] == {"hybrid": len(texts)}, hybrid["modes"]
    turn_ids = [t.id for t in suite.turns]
    runs = {
        "pymemory_bm25": (bm25["top"], bm25["page"]),
        "pymemory_hybrid": (hybrid["top"], hybrid["page"]),
    }
    qvec = {"vectorsUrl": f"{DATA}{name}-qvec.f32", "dim": DIM, "similarity": similarity}
    for suffix, stopwords in (("", None), ("_sw", sorted(STOPWORDS))):
        page.evaluate(
            "([n, t, v, d, s]) => bench.oramaBuild(n, t, v, d, s)",
            [name, f"{DATA}{name}-texts.json", f"{DATA}{name}-docvec.f32", DIM, stopwords],
        )
        for mode, key in (("fulltext", "bm25"), ("hybrid", "hybrid")):
            r = orama_search(page, name, texts, {"mode": mode, **qvec})
            runs[f"orama_{key}{suffix}"] = ([[turn_ids[int(i)] for i in t] for t in r["top"]],
                                            r["ms"])  # fmt: skip
        page.evaluate("(n) => bench.oramaDrop(n)", name)
    decays = bm25["decays"] + hybrid["decays"]
    return {
        "questions": sum(bool(q.gold) for q in questions),
        "turns": len(suite.turns),
        "decay_range": [min(decays), max(decays)],
        "embed_seconds": embed_s,
        "embed_turns_per_s": len(suite.turns) / embed_s,
        "recall": {k: recall(questions, top) for k, (top, _) in runs.items()},
        "p50_ms": {k: pct(ms, 50) for k, (_, ms) in runs.items()},
    }


PROFILE = """([corpusUrl, queriesUrl, warmup]) => new Promise((resolve, reject) => {
  const w = new Worker("/web/pages/bench/profile-worker.mjs", { type: "module" });
  w.onmessage = (e) => {
    w.terminate();
    e.data.ok ? resolve(e.data.result) : reject(new Error(e.data.error));
  };
  w.postMessage({ corpusUrl, queriesUrl, warmup });
})"""


def profile(page: Page, n: int, warmup: int) -> dict:
    """Time the parts of a hybrid retrieve in a bare Pyodide worker (MapKv, no IndexedDB)."""
    args = [f"{DATA}corpus-{n}.jsonl", f"{DATA}queries.json", warmup]
    return {"items": n, **json.loads(page.evaluate(PROFILE, args))}


async def suite_vectors(folder: Path, suites: dict[str, Suite]) -> str:
    """MiniLM vectors (CPython) of every suite's turns and questions, written for Orama."""
    from pymemory.models import load_minilm

    embedder = await load_minilm()
    for name, suite in suites.items():
        texts = [t.text for t in suite.turns]
        (folder / f"{name}-texts.json").write_text(json.dumps(texts))
        write_f32(folder / f"{name}-docvec.f32", await embedder.embed(texts))
        questions = [q.text for q in suite.questions]
        write_f32(folder / f"{name}-qvec.f32", await embedder.embed(questions))
    return embedder.name


def fmt_ms(d: dict[str, float]) -> str:
    return f"{d['p50']:.2f} / {d['p95']:.2f}"


def labels(sim: float) -> dict[str, tuple[str, str | None]]:
    """Row key -> (label, what its build column shows)."""
    return {
        "pymemory_bm25": ("pymemory BM25", "importJsonl"),
        "pymemory_hybrid": ("pymemory hybrid (hashing vectors)", "embed every item"),
        "orama_bm25": ("Orama BM25 (as shipped: no stopwords)", "insertMultiple"),
        "orama_hybrid": (f"Orama hybrid, similarity {sim:g}", None),
        "orama_hybrid_08": ("Orama hybrid, similarity 0.8 (its default)", None),
        "orama_bm25_sw": ("Orama BM25 + pymemory's stopwords", "insertMultiple"),
        "orama_hybrid_sw": (f"Orama hybrid + stopwords, similarity {sim:g}", None),
    }


def report(out: dict) -> str:
    sim = out["similarity"]
    names = labels(sim)
    lines = [
        f"# bench_retrieval_browser, {out['date']}, Chromium {out['chromium']}, "
        f"@orama/orama {out['orama']}, {json.dumps(out['machine'])}",
        "",
        f"Timed queries: {out['queries']} per row (after {out['warmup']} untimed warm-up "
        "queries), one at a time, top 10. pymemory runs in its worker (page = comlink round "
        "trip), Orama on the page's main thread. Load average (1 min) at start / end: "
        + " / ".join(f"{x:.1f}" for x in out["load_average"])
        + ".",
        "",
        "| items | engine | build s | retrieve p50 / p95 ms (page) | in worker p50 / p95 ms "
        "| queries/s | queries with no hit |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    for n, r in out["sizes"].items():
        for key, (label, build_label) in names.items():
            row = r["rows"][key]
            page = latency(row["page"])
            worker = fmt_ms(latency(row["worker"])) if row["worker"] else "-"
            build = f"{build_label} {r['build_ms'][key] / 1000:.1f}" if build_label else ""
            lines.append(
                f"| {int(n):,} | {label} | {build} | {fmt_ms(page)} | {worker} "
                f"| {page['qps']:,.0f} | {row['empty']} |"
            )
    lines += [
        "",
        "| items | pymemory IndexedDB B/item (items / + int8 vectors) | Orama page JS heap "
        "B/item (texts, index, vectors) | BM25 top-10 overlap with pymemory (Orama as shipped "
        "/ + stopwords) |",
        "|---:|---:|---:|---:|",
    ]
    for n, r in out["sizes"].items():
        m, k = r["memory"], int(n)
        lines.append(
            f"| {k:,} | {m['idb_items'] / k:,.0f} / {m['idb_with_vectors'] / k:,.0f} "
            f"| {m['orama_page'] / k:,.0f} | {r['overlap_bm25']:.2f} / {r['overlap_bm25_sw']:.2f} |"
        )
    if "profile" in out:
        pr, k = out["profile"], out["profile"]["items"]
        mem = pr["memory"]
        parts = ", ".join(f"{key} {v:.2f}" for key, v in pr["p50_ms"].items())
        wasm = mem["wasm"]["vectors"] - mem["wasm"]["start"]
        lines += [
            "",
            f"pymemory in Pyodide at {k:,} items (a bare Pyodide worker, Memory on a MapKv): "
            f"live Python heap {mem['heap_items_and_vectors'] / k:,.0f} B/item for items, BM25 "
            f"index and vectors (tracemalloc, the MapKv's records excluded: in the worker they "
            f"are in IndexedDB), of which the int8 vector matrix "
            f"{mem['vector_matrix_bytes'] / k:,.0f} B/item (at capacity); the WebAssembly "
            f"memory grew {wasm / k:,.0f} B/item (a high-water mark: it never shrinks). "
            f"Retrieve parts, p50 ms over {pr['queries']} queries (token counter "
            f"{pr['token_counter']}): {parts}.",
        ]
    if out["suites"]:
        keys = ("pymemory_bm25", "pymemory_hybrid", "orama_bm25", "orama_bm25_sw",
                "orama_hybrid", "orama_hybrid_sw")  # fmt: skip
        lines += [
            "",
            "| suite (answerable questions / turns) | pymemory BM25 | pymemory hybrid (MiniLM) "
            "| Orama BM25 | Orama BM25 + stopwords | Orama hybrid (MiniLM) "
            "| Orama hybrid + stopwords |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, s in out["suites"].items():
            rc, ms = s["recall"], s["p50_ms"]
            cells = " | ".join(f"{rc[k]:.3f} ({ms[k]:.1f} ms)" for k in keys)
            lines.append(f"| {name} ({s['questions']} / {s['turns']}) | {cells} |")
        lo = min(s["decay_range"][0] for s in out["suites"].values())
        hi = max(s["decay_range"][1] for s in out["suites"].values())
        lines += [
            "",
            f"Recall@10 (p50 ms from the page). Orama hybrid at similarity {sim:g}; pymemory "
            "hybrid includes embedding the question with MiniLM in the worker, Orama is given "
            f"the question's vector. pymemory's time-decay factors in these results: "
            f"{lo:.4f}-{hi:.4f}. Background embedding in the worker (MiniLM on "
            "onnxruntime-web, from attach to idle): "
            + ", ".join(
                f"{n} {s['embed_turns_per_s']:.0f} turns/s" for n, s in out["suites"].items()
            )
            + ".",
        ]
    return "\n".join(lines)


def plot(out: dict) -> str:
    names = {
        "pymemory_bm25": "pymemory BM25",
        "pymemory_hybrid": "pymemory hybrid",
        "orama_bm25": "Orama BM25",
        "orama_hybrid": "Orama hybrid",
        "orama_bm25_sw": "Orama BM25 +stopw.",
        "orama_hybrid_sw": "Orama hybrid +stopw.",
    }
    series = {
        label: [(int(n), pct(r["rows"][key]["page"], 50)) for n, r in out["sizes"].items()]
        for key, label in names.items()
    }
    return line_plot(
        series,
        title="Retrieve p50 in Chromium (top 10, one query at a time)",
        x_label="items in the corpus",
        y_label="p50 ms (from the page, log scale)",
        log_x=True,
        log_y=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--similarity", type=float, default=0.0,
                        help="Orama's vector similarity threshold for hybrid search")  # fmt: skip
    parser.add_argument("--no-suites", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="time the parts of retrieve at the largest size")  # fmt: skip
    parser.add_argument("--wheel", type=Path,
                        help="serve this pymemory wheel instead of building one")  # fmt: skip
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    out: dict = {
        "machine": machine_info(),
        "date": str(dt.date.today()),
        "queries": args.queries,
        "warmup": args.warmup,
        "similarity": args.similarity,
        "sizes": {},
        "suites": {},
        "load_average": [os.getloadavg()[0]],
    }
    lock = json.loads((ROOT / "assets.lock.json").read_text())
    out["orama"] = next(s["version"] for s in lock["npm"] if s["name"] == "@orama/orama")
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        folder = Path(tmp)
        out["wheel_sha256"] = build_wheel(folder / "wheels", args.wheel)
        data = folder / "data"
        data.mkdir()
        print("preparing the corpus and vectors in CPython...", file=sys.stderr, flush=True)
        docs, queries = make_corpus(max(sizes, default=0), args.queries + args.warmup, args.seed)
        queries = queries[args.queries :] + queries[: args.queries]  # warm-up ones first
        (data / "queries.json").write_text(json.dumps(queries))
        hashing = HashingEmbedder()
        doc_vecs = asyncio.run(hashing.embed(docs))
        write_f32(data / "qvec.f32", asyncio.run(hashing.embed(queries)))
        for n in sizes:
            (data / f"corpus-{n}.jsonl").write_text(export_text(docs[:n]))
            (data / f"texts-{n}.json").write_text(json.dumps(docs[:n]))
            write_f32(data / f"docvec-{n}.f32", doc_vecs[:n])
        del doc_vecs
        if not args.no_suites:
            # One Memory per suite: the suites of one conversation (long-conversations, ten
            # chats, is measured in CPython by `pymemory eval`, one Memory per chat).
            suites = {name: load_suite(name) for name in SUITES}  # loaded once, used twice
            suites = {n: s for n, s in suites.items() if len(s.conversations) <= 1}
            out["suite_embedder"] = asyncio.run(suite_vectors(data, suites))

        # Serve the fresh wheel and the data from this process's server only.
        server.MOUNTS["/wheels/"] = folder / "wheels"
        server.MOUNTS[DATA] = data
        srv = server.start()
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=shutil.which("chromium"), args=ARGS + MEMORY_ARGS
            )
            out["chromium"] = browser.version
            for n in sizes:
                print(f"size {n:,}...", file=sys.stderr, flush=True)
                ctx, page = open_page(browser, base)
                out["sizes"][n] = run_size(page, n, args.queries, args.warmup, args.similarity)
                ctx.close()
            if args.profile and sizes:
                print(f"profile at {sizes[-1]:,}...", file=sys.stderr, flush=True)
                ctx, page = open_page(browser, base)
                out["profile"] = profile(page, sizes[-1], args.warmup)
                ctx.close()
            if not args.no_suites:
                ctx, page = open_page(browser, base)
                for name, suite in suites.items():
                    print(f"suite {name}...", file=sys.stderr, flush=True)
                    out["suites"][name] = run_suite(page, name, suite, args.similarity)
                ctx.close()
            browser.close()
        srv.shutdown()
    out["load_average"].append(os.getloadavg()[0])
    print(report(out))
    if args.plot:
        args.plot.write_text(plot(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
