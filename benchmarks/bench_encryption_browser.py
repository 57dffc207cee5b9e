"""What encryption at rest (issue 16) costs in Chromium, one run: a plain IndexedDB store
against an encrypted one (EncryptedKv, WebCrypto), unlocked with a passphrase or an app's
CryptoKey.

Usage::

    python benchmarks/bench_encryption_browser.py [--items 5000] [--ops 200] [--rounds 3]
                                                  [--json out.json]

Each round runs every variant, in turn, in a fresh browser context (empty IndexedDB):

1. a page boots the store worker; the first ``open`` creates the store (for a passphrase,
   PBKDF2-SHA256 with the default 600,000 iterations; timed as "create");
2. ``importJsonl`` of ``--items`` memories in one call (the synthetic corpus of
   ``bench_bm25``);
3. the page reloads (a new worker); once it has booted, ``open`` loads the store: the
   key check (a passphrase: PBKDF2 again) and every item, decrypted ("open");
4. ``--ops`` single ``addMemory`` calls, then ``--ops`` ``retrieve`` calls (default
   strategy), on the store with ``--items`` memories.

Times are from the page (the whole round trip) and inside the worker (the Python call);
the table shows medians over rounds of each round's p50. The CryptoKey is non-extractable,
kept in the app's own IndexedDB database across the reload (as an app would keep it).
Needs ``python3 build.py setup`` and Debian's Chromium.
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

VARIANTS = ("plain", "passphrase", "CryptoKey")
PASSPHRASE = "correct horse battery staple"

# Defines window.unlock (the client's wire form of `encryption`, see web/agent-memory.mjs)
# and window.timed(method, paramsList) -> { page: [ms], worker: [ms] }.
SETUP = """async ([variant, passphrase]) => {
  const req = (r) => new Promise((ok, fail) => {
    r.onsuccess = () => ok(r.result);
    r.onerror = () => fail(r.error);
  });
  let unlock;
  if (variant === "passphrase") unlock = { id: crypto.randomUUID(), passphrase };
  if (variant === "CryptoKey") {
    const open = indexedDB.open("bench-app-keys", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("keys");
    const db = await req(open);
    let key = await req(db.transaction("keys").objectStore("keys").get("k"));
    if (!key) {
      const aes = { name: "AES-GCM", length: 256 };
      key = await crypto.subtle.generateKey(aes, false, ["encrypt", "decrypt"]);
      await req(db.transaction("keys", "readwrite").objectStore("keys").put(key, "k"));
    }
    db.close();
    unlock = { id: crypto.randomUUID(), key };
  }
  const conn = window.pymemory.connection();
  await conn.ready;
  window.timed = async (method, paramsList) => {
    const page = [], worker = [];
    for (const params of paramsList) {
      const t0 = performance.now();
      const answer = await conn.rawCall("bench", method, params, unlock);
      page.push(performance.now() - t0);
      if (!answer.ok) throw new Error(JSON.stringify(answer.error));
      worker.push(answer.ms);
    }
    return { page, worker };
  };
}"""

TIMED = "([method, paramsList]) => window.timed(method, paramsList)"


def one(browser, base: str, variant: str, text: str, adds: list, queries: list) -> dict:
    ctx, page = open_page(browser, base)
    try:
        page.evaluate(SETUP, [variant, PASSPHRASE])
        create = page.evaluate(TIMED, ["open", [{}]])
        imported = page.evaluate(TIMED, ["importJsonl", [{"text": text}]])
        page.reload()  # a new worker: the next open loads the store from IndexedDB
        page.wait_for_function("document.body.dataset.loaded === '1'")
        page.evaluate(SETUP, [variant, PASSPHRASE])
        opened = page.evaluate(TIMED, ["open", [{}]])
        add = page.evaluate(TIMED, ["addMemory", adds])
        retrieve = page.evaluate(TIMED, ["retrieve", [{"query": q} for q in queries]])
        stats = page.evaluate(TIMED, ["stats", [{}]])
    finally:
        ctx.close()
    return {
        "create_ms": create["page"][0],
        "import_ms": imported["page"][0],
        "open_ms": opened["page"][0],
        "open_worker_ms": opened["worker"][0],
        "add_p50": pct(add["page"], 50),
        "add_p95": pct(add["page"], 95),
        "add_worker_p50": pct(add["worker"], 50),
        "retrieve_p50": pct(retrieve["page"], 50),
        "retrieve_p95": pct(retrieve["page"], 95),
        "retrieve_worker_p50": pct(retrieve["worker"], 50),
        "stats_ms": stats["page"][0],
    }


ROWS = [
    ("create the store (first open; a passphrase runs PBKDF2)", "create_ms", "{:.0f} ms"),
    ("importJsonl of {items:,} items, one call", "import_ms", "{:.0f} ms"),
    ("  = items/s", "import_rate", "{:,.0f}"),
    ("open after reload: key check + load {items:,} items", "open_ms", "{:.0f} ms"),
    ("addMemory p50 (p95), page", "add", "{}"),
    ("addMemory p50, in worker", "add_worker_p50", "{:.2f} ms"),
    ("retrieve p50 (p95), page", "retrieve", "{}"),
    ("retrieve p50, in worker", "retrieve_worker_p50", "{:.2f} ms"),
]


def report(out: dict, version: str) -> str:
    items, rounds = out["items"], out["rounds"]
    med = {
        v: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        for v, runs in out["runs"].items()
    }
    for m in med.values():
        m["import_rate"] = items / (m["import_ms"] / 1000)
        m["add"] = f"{m['add_p50']:.2f} ({m['add_p95']:.2f}) ms"
        m["retrieve"] = f"{m['retrieve_p50']:.2f} ({m['retrieve_p95']:.2f}) ms"
    lines = [
        f"# bench_encryption_browser, {out['date']}, Chromium {version}, "
        f"{json.dumps(out['machine'])}",
        "",
        f"{items:,} items, {out['ops']} ops; median over {rounds} round(s) of each round's value",
        "",
        "| | " + " | ".join(VARIANTS) + " |",
        "|---|" + "---:|" * len(VARIANTS),
    ]
    for label, key, fmt in ROWS:
        cells = [fmt.format(med[v][key]) for v in VARIANTS]
        lines.append(f"| {label.format(items=items)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    docs, queries = make_corpus(args.items + args.ops, args.ops, seed=16)
    text = export_text(docs[: args.items])
    adds = [{"text": t, "tags": ["bench"]} for t in docs[args.items :]]
    srv = server.start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    out: dict = {
        "machine": machine_info(),
        "date": str(dt.date.today()),
        "items": args.items,
        "ops": args.ops,
        "rounds": args.rounds,
        "runs": {v: [] for v in VARIANTS},
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        version = browser.version
        for _ in range(args.rounds):  # interleaved, so drift hits every variant alike
            for variant in VARIANTS:
                out["runs"][variant].append(one(browser, base, variant, text, adds, queries))
        browser.close()
    srv.shutdown()
    print(report(out, version))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
