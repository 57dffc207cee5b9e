// Retrieval benchmark helpers for web/pages/bench/retrieval.html, driven through Playwright by
// benchmarks/bench_retrieval_browser.py. pymemory runs in its Web Worker (reached through
// the client's connection); Orama is imported into this page and runs on the main thread.
// Both are timed with performance.now() around one call per query, one query at a time.
// Corpora, texts and float32 vectors come from URLs the driver serves (no giant JSON
// through page.evaluate).

import { connection } from "../../agent-memory.mjs";
import { create, insertMultiple, search } from "/vendor/orama/index.js";

const oramas = new Map(); // name -> Orama instance

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

async function vectorsFrom(url) {
  return url ? new Float32Array(await (await fetchOk(url)).arrayBuffer()) : null;
}

async function remote() {
  const conn = connection();
  await conn.ready;
  return { call: (db, method, params) => conn.rawCall(db, method, params) };
}

function checked(method, answer) {
  if (!answer.ok) throw new Error(`${method}: ${answer.error.code}: ${answer.error.message}`);
  return answer;
}

/** One worker call: { result, pageMs, workerMs } (throws on an error answer). */
export async function call(db, method, params = {}) {
  const worker = await remote();
  const t0 = performance.now();
  const answer = checked(method, await worker.call(db, method, params));
  return { result: answer.result, pageMs: performance.now() - t0, workerMs: answer.ms };
}

/** importJsonl of the JSON Lines text at `url` into `db`. */
export async function importUrl(db, url) {
  const text = await (await fetchOk(url)).text();
  return call(db, "importJsonl", { text });
}

/**
 * Retrieve every query in turn; the first `warmup` ones are untimed and not returned
 * (they warm caches and the JIT). Returns page and in-worker
 * milliseconds, how many answers came in each mode, the top ids (metadata.turn when the
 * item has one) and the distinct time-decay factors seen.
 */
export async function retrieveAll(db, queries, { maxItems = 10, maxTokens = 1e6, warmup = 0 } = {}) {
  const worker = await remote();
  for (const query of queries.slice(0, warmup)) {
    checked("retrieve", await worker.call(db, "retrieve", { query, maxItems, maxTokens }));
  }
  const page = [], inWorker = [], modes = {}, top = [], decays = new Set();
  for (const query of queries.slice(warmup)) {
    const t0 = performance.now();
    const answer = await worker.call(db, "retrieve", { query, maxItems, maxTokens });
    page.push(performance.now() - t0);
    const { result } = checked("retrieve", answer);
    inWorker.push(answer.ms);
    modes[result.mode] = (modes[result.mode] ?? 0) + 1;
    top.push(result.memories.map((m) => m.item.metadata?.turn ?? m.item.id));
    for (const m of result.memories) decays.add(m.decay);
  }
  return { page, worker: inWorker, modes, top, decays: [...decays] };
}

/**
 * Index the JSON array of texts at `textsUrl` (and, with `vectorsUrl`, their float32
 * vectors, `dim` per row) into a new Orama instance `name`. Document ids are the row
 * numbers as strings. Orama's schema check wants plain arrays for vectors, so the rows
 * are copied into arrays first (`prepMs`, not counted in `indexMs`). `stopWords`: a list
 * for Orama's English tokenizer (default: none, as Orama ships).
 */
export async function oramaBuild(name, textsUrl, vectorsUrl = null, dim = 0, stopWords = null) {
  const texts = await (await fetchOk(textsUrl)).json();
  const flat = await vectorsFrom(vectorsUrl);
  const schema = flat ? { text: "string", embedding: `vector[${dim}]` } : { text: "string" };
  const t0 = performance.now();
  const docs = texts.map((text, i) =>
    flat
      ? { id: String(i), text, embedding: Array.from(flat.subarray(i * dim, (i + 1) * dim)) }
      : { id: String(i), text },
  );
  const prepMs = performance.now() - t0;
  const t1 = performance.now();
  const components = stopWords ? { tokenizer: { language: "english", stopWords } } : {};
  const db = await create({ schema, components });
  await insertMultiple(db, docs);
  const indexMs = performance.now() - t1;
  oramas.set(name, db);
  return { docs: texts.length, prepMs, indexMs };
}

/**
 * Search Orama instance `name` with every query in turn (the first `warmup` untimed):
 * `mode` "fulltext" (BM25 on `term`) or "hybrid" (`term` plus the query's row of the
 * float32 vectors at `vectorsUrl`, with the given `similarity` threshold). Returns the
 * milliseconds per query, the top ids and the total match count of each query.
 */
export async function oramaSearch(
  name,
  queries,
  { mode = "fulltext", vectorsUrl = null, dim = 0, similarity = 0, limit = 10, warmup = 0 } = {},
) {
  const db = oramas.get(name);
  if (!db) throw new Error(`no Orama instance ${name}`);
  const flat = mode === "hybrid" ? await vectorsFrom(vectorsUrl) : null;
  const params = queries.map((term, i) =>
    mode === "hybrid"
      ? {
          mode: "hybrid",
          term,
          vector: { value: flat.slice(i * dim, (i + 1) * dim), property: "embedding" },
          similarity,
          limit,
        }
      : { term, limit },
  );
  for (const p of params.slice(0, warmup)) await search(db, p);
  const ms = [], top = [], counts = [];
  for (const p of params.slice(warmup)) {
    const t0 = performance.now();
    const result = await search(db, p);
    ms.push(performance.now() - t0);
    top.push(result.hits.map((h) => h.id));
    counts.push(result.count);
  }
  return { ms, top, counts };
}

/** Forget Orama instance `name` (so the next memory reading no longer counts it). */
export function oramaDrop(name) {
  oramas.delete(name);
}

/**
 * What the page can read about memory (after a garbage collection of the page, when the
 * browser exposes gc): the origin's storage usage (IndexedDB and the
 * rest), `performance.measureUserAgentSpecificMemory()` split by realm (the page's window
 * and the pymemory worker; needs cross-origin isolation) and Chrome's used JS heap size
 * of this page.
 */
export async function memory() {
  globalThis.gc?.(); // exposed by --js-flags=--expose-gc: count live objects, not garbage
  const out = { crossOriginIsolated: self.crossOriginIsolated };
  if (navigator.storage?.estimate) {
    const e = await navigator.storage.estimate();
    out.storage = { usage: e.usage, details: e.usageDetails ?? null };
  }
  if (performance.measureUserAgentSpecificMemory) {
    const m = await performance.measureUserAgentSpecificMemory();
    out.uasm = {
      bytes: m.bytes,
      breakdown: m.breakdown.map((b) => ({
        bytes: b.bytes,
        types: b.types,
        scopes: b.attribution.map((a) => a.scope),
        urls: b.attribution.map((a) => a.url),
      })),
    };
  }
  if (performance.memory) out.jsHeap = performance.memory.usedJSHeapSize;
  return out;
}
