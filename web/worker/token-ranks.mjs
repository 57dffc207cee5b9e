// The o200k_base ranks (tiktoken.mjs), loaded while the rest boots. Python counts tokens
// synchronously (JsTokenCounter), so every call waits for them: `ready` does not, which
// keeps the parse off the boot's critical path with every count exact. The ranks download
// from the boot's start; their parse (0.1-0.4 s of this thread, which loadPyodide keeps
// busy) waits until after `ready`: for the first call that needs them, the end of the
// first call (the client's `open`) or TOKENS_IDLE_MS, whichever comes first.

import { readCached } from "./assets.mjs";
import { current, report } from "./status.mjs";
import * as tiktoken from "./tiktoken.mjs";

const RANKS_CACHE = "pymemory-ranks-v1";

const TOKENS_IDLE_MS = 1000;
let loading = null; // the ranks' load: fetched, then parsed once `parse` is called
let parse = () => {}; // starts the ranks' parse
let failed = null;

/** What Python imports as `pymemory_js_tokens`: count(text) and the encoding's name. */
export const module = Object.freeze({ count: tiktoken.count, name: tiktoken.name });

/** Start fetching the ranks; their load is timed from `t0` (status.tokensMs). `ranksFile`:
 * a promise of { url, sha256 } of the o200k_base.tiktoken the wheels' manifest names
 * (read through Cache Storage, checked against the sha256), or of null: then js-tiktoken's
 * module from its dist/ folder `url`. A failure fails the worker loudly: budgets are never
 * counted with anything but o200k_base. */
export function load(url, t0, ranksFile = Promise.resolve(null)) {
  const parseAfter = new Promise((resolve) => (parse = resolve));
  const fetchFn = globalThis.fetch.bind(globalThis); // the network's (before asset-cache routes it)
  const ranks = async () => {
    const file = await ranksFile;
    if (!file) return null;
    const got = await readCached(file.url, { cacheName: RANKS_CACHE, expect: { sha256: file.sha256 }, fetchFn });
    return got.bytes;
  };
  loading = tiktoken.init(url, { parseAfter, ranks }).then(() => {
    report({ tokensMs: Math.round(performance.now() - t0) });
  });
  loading.catch((err) => {
    failed = new Error(`cannot load the o200k_base token ranks: ${err?.message ?? err}`);
    console.error(`pymemory: ${failed.message}`);
    // Before `ready`, the boot throws it; after, the worker turns to the error state.
    if (current().ready) report({ phase: "error", ready: false, error: { code: "boot_failed", message: failed.message } });
  });
  return loading;
}

/** The load's error, once it failed (null until then). */
export function failure() {
  return failed;
}

/** Parse now (a call is done, or one needs the ranks). */
export function parseNow() {
  parse();
}

/** Parse once the worker has been idle a while after `ready`. */
export function parseWhenIdle() {
  setTimeout(parse, TOKENS_IDLE_MS);
}

/** Resolves once the ranks are parsed (starting the parse); rejects if they cannot load. */
export function parsed() {
  parse();
  return loading;
}
