// The pymemory Web Worker: boots Pyodide, loads numpy and the pymemory wheel, and serves
// the Memory API to the page. Asset locations come from the page (createAgentMemory's
// assetsUrl and overrides), so this file imports nothing but its siblings and works the
// same bundled or served as-is.
//
// Messages (one small protocol, see web/agent-memory.mjs):
//   page -> worker  { id, op: "init", options }            -> { id, ok, result: status }
//                   { id, op: "call", db, method, params, unlock? }
//                                                          -> { id, ok, result } | { id, ok: false, error }
//                   unlock: an encrypted database's key, with every call of a client that
//                   has one: { id, passphrase | key: CryptoKey, iterations? } (api.py Unlock)
//   worker -> page  { op: "status", status }   boot progress, then ready or an error
//                   { op: "change", db, kind, itemId }      background work changed a memory
//                   { op: "progress", id, done, total }     progress of a long call (import)
// Errors travel as { code, message } so the stable code survives the trip.
// Internal: { op: "snapshot", indexURL, cacheName } -> { op: "snapshotted", ok, error? }, to
// the second instance of this file that makes the Pyodide snapshot (see saveSnapshot).

import { cachedSha256, dropCached, readCached, readCacheOnly, storeInCache } from "./assets.mjs";
import * as modelWorker from "./model-client.mjs"; // inference in the model worker
import * as sameThread from "./ort-bridge.mjs"; // inference on this thread (modelWorker: false)
import * as tiktoken from "./tiktoken.mjs";

let api = null; // the Python RpcApi
// The o200k_base ranks, parsed while the rest boots. Python counts tokens synchronously
// (JsTokenCounter), so every call waits for them: `ready` does not, which keeps the parse
// off the boot's critical path with every count exact. The ranks download from the boot's
// start; their parse (0.1-0.4 s of this thread, which loadPyodide keeps busy) waits until
// after `ready`: for the first call that needs them, the end of the first call (the
// client's `open`) or TOKENS_IDLE_MS, whichever comes first.
let tokensReady = null;
let parseTokens = () => {}; // starts the ranks' parse
const TOKENS_IDLE_MS = 1000;
let tokensFailed = null;
let ort = modelWorker; // the inference bridge Python uses
let booting = null;
let status = { phase: "starting", progress: 0, ready: false, error: null, files: {} };

function post(message) {
  self.postMessage(message);
}

const phaseStart = { at: performance.now(), phase: "starting" };
const phaseMs = {}; // how long each boot phase took, in status.phaseMs once ready

function report(patch) {
  if (patch.phase && patch.phase !== phaseStart.phase) {
    const now = performance.now();
    phaseMs[phaseStart.phase] = Math.round(now - phaseStart.at);
    Object.assign(phaseStart, { at: now, phase: patch.phase });
    if (patch.phase === "ready") patch = { ...patch, phaseMs: { ...phaseMs } };
  }
  status = { ...status, ...patch };
  if (patch.progress != null) status.progress = Math.max(status.progress, patch.progress);
  post({ op: "status", status });
}

// --- assets through Cache Storage, with byte progress ------------------------------------

function folder(url, name) {
  if (typeof url !== "string" || !url) throw new Error(`assets.${name} must be a URL`);
  const href = new URL(url, self.location.href).href;
  return href.endsWith("/") ? href : `${href}/`;
}

// The bar moves through each phase's range by the bytes of the files that phase loads:
// runtime 5-60% (Pyodide's core), packages 60-90% (the wheels).
const RANGES = { runtime: [0.05, 0.6], packages: [0.6, 0.9] };
const phaseOf = new Map(); // file URL -> the phase that started it

let modelsFolder = null; // model files show as "<model>/<file>" in status.files

function fileName(url) {
  if (modelsFolder && url.startsWith(modelsFolder)) return url.slice(modelsFolder.length);
  return url.slice(url.lastIndexOf("/") + 1);
}

function onFile(url, loaded, total, source) {
  if (!phaseOf.has(url)) phaseOf.set(url, status.phase);
  const name = fileName(url);
  const files = { ...status.files, [name]: { loaded, total, source } };
  const sum = (names, key) => names.reduce((n, f) => n + (files[f][key] ?? files[f].loaded), 0);
  const all = Object.keys(files);
  const patch = { files, bytes: { loaded: sum(all, "loaded"), total: sum(all, "total") } };
  const range = RANGES[phaseOf.get(url)];
  if (range && phaseOf.get(url) === status.phase) { // a prefetched wheel waits for its phase
    const mine = [...phaseOf]
      .filter(([u, p]) => p === phaseOf.get(url) && fileName(u) in files) // started ones
      .map(([u]) => fileName(u));
    const share = sum(mine, "total") ? sum(mine, "loaded") / sum(mine, "total") : 0;
    patch.progress = range[0] + (range[1] - range[0]) * share;
  }
  report(patch);
}

// Pyodide fetches its core files and packages with the global fetch: route those under
// `prefixes` through Cache Storage so a second visit reads them locally (and offline).
// Returns prefetch(url): start reading a file Pyodide will ask for
// later (the wheels, while loadPyodide runs), so its fetch finds it read; and settled():
// wait until the files Pyodide got before they were cached are (see read).
function cacheFetches(prefixes, cacheName, expected, progress = onFile) {
  const network = globalThis.fetch.bind(globalThis);
  const early = new Map(); // url -> the read prefetch started
  const storing = new Set(); // cache writes of files already handed to Pyodide
  // A file with nothing to check (Pyodide's own; the wheels have a sha256) is handed on
  // before it is cached: the cache write (~0.1 s for the WebAssembly) would delay its
  // compile. `ready` waits for those writes (settled()).
  const read = async (url) => {
    let source = "network";
    const expect = expected.get(url) ?? null;
    const got = await readCached(url, {
      cacheName,
      expect,
      fetchFn: network,
      onProgress: (loaded, total) => progress(url, loaded, total, source),
      storeLater: !expect,
    });
    if (got.stored) {
      storing.add(got.stored);
      got.stored.finally(() => storing.delete(got.stored));
      delete got.stored; // not for postMessage
    }
    source = got.source;
    progress(url, got.size, got.size, got.source);
    return got;
  };
  globalThis.fetch = async (input, init) => {
    const url = new URL(typeof input === "string" ? input : (input.url ?? String(input)), self.location.href).href;
    const method = init?.method ?? input?.method ?? "GET";
    if (method !== "GET" || !prefixes.some((p) => url.startsWith(p))) return network(input, init);
    const pending = early.get(url);
    early.delete(url);
    const got = await (pending ?? read(url));
    if (pending) progress(url, got.size, got.size, got.source); // now in its own phase
    return new Response(got.bytes, { headers: { "content-type": got.type } });
  };
  // Downloads to prefetch run in a helper instance of this file: this thread is busy
  // through most of loadPyodide, and would read, check and cache the wheels only after it.
  // A cached wheel (a repeat visit) is read here: that is quicker than starting the helper.
  let helper = null;
  const waiting = new Map(); // url -> { resolve, reject } of a prefetch the helper runs
  const cached = async (url) => {
    try {
      return !!(await (await caches.open(cacheName)).match(url));
    } catch {
      return false; // no Cache Storage: readCached downloads
    }
  };
  const helped = async (url) => ((await cached(url)) ? read(url) : viaHelper(url));
  const viaHelper = (url) => {
    if (helper === null) {
      try {
        helper = new Worker(import.meta.url, { type: "module", name: "pymemory-prefetch" });
      } catch {
        helper = false;
      }
      if (helper) {
        helper.onmessage = ({ data }) => {
          if (data?.op === "progress") return progress(data.url, data.loaded, data.total, data.source);
          const wait = waiting.get(data?.url);
          if (data?.op !== "prefetched" || !wait) return;
          waiting.delete(data.url);
          if (data.ok) wait.resolve(data.got);
          else wait.reject(new Error(data.error));
          if (waiting.size) return;
          helper.terminate(); // its work is done: a later prefetch starts another
          helper = null;
        };
        helper.onerror = (event) => {
          event.preventDefault?.();
          for (const [u, wait] of waiting) wait.resolve(read(u)); // on this thread after all
          waiting.clear();
        };
      }
    }
    if (!helper) return read(url);
    return new Promise((resolve, reject) => {
      waiting.set(url, { resolve, reject });
      helper.postMessage({ op: "prefetch", url, cacheName, expect: expected.get(url) ?? null });
    });
  };
  const prefetch = (url) => {
    const pending = helped(url);
    pending.catch(() => {}); // its fetch reports a failure; unused, it is dropped
    early.set(url, pending);
  };
  const settled = () => Promise.allSettled([...storing]);
  return { prefetch, settled };
}

async function readManifest(url, network) {
  // Network first (it names the current wheel), the cached copy when offline.
  const cache = await caches.open("pymemory-manifests-v1").catch(() => null);
  try {
    const response = await network(url, { cache: "no-store" });
    if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
    const manifest = await response.clone().json();
    await cache?.put(url, response);
    return manifest;
  } catch (err) {
    const hit = await cache?.match(url);
    if (hit) return hit.json();
    throw err;
  }
}

// --- boot ----------------------------------------------------------------------------

async function boot(options) {
  const t0 = performance.now();
  const assets = options.assets ?? {};
  const urls = {
    pyodide: folder(assets.pyodide, "pyodide"),
    onnxruntime: folder(assets.onnxruntime, "onnxruntime"),
    tiktoken: folder(assets.tiktoken, "tiktoken"),
    wheels: folder(assets.wheels, "wheels"),
    models: folder(assets.models, "models"),
  };
  report({ phase: "runtime", progress: 0.05, assets: urls });
  tokensReady = loadTokens(urls.tiktoken, t0, new Promise((resolve) => (parseTokens = resolve)));
  // The wheels' manifest, first thing too (the wheels download while Pyodide starts), by
  // the network's fetch: taken before cacheFetches routes the wheels' folder to the cache.
  const manifestRead = readManifest(`${urls.wheels}manifest.json`, globalThis.fetch.bind(globalThis));
  manifestRead.catch(() => {}); // awaited below
  const pyodideModule = `${urls.pyodide}pyodide.mjs`;
  const { loadPyodide, version } = await import(pyodideModule).catch((err) => {
    throw new Error(`cannot load Pyodide from ${pyodideModule}: ${err?.message ?? err}`);
  });
  const expected = new Map();
  const cacheName = `pymemory-runtime-${version}`;
  const { prefetch, settled } = cacheFetches([urls.pyodide, urls.wheels], cacheName, expected);
  const wheels = [];
  const manifestReady = manifestRead.then((manifest) => {
    for (const [key, hash] of [["numpy", "numpy_sha256"], ["pymemory", "sha256"]]) {
      if (!manifest[key]) continue; // no numpy beside the wheel: Pyodide's own from indexURL
      const url = new URL(manifest[key], urls.wheels).href;
      expected.set(url, manifest[hash] ? { sha256: manifest[hash] } : null);
      phaseOf.set(url, "packages"); // their bytes move the packages' range of the bar
      wheels.push(url);
    }
    if (!manifest.pymemory) throw new Error(`${urls.wheels}manifest.json names no pymemory wheel`);
    wheels.forEach(prefetch);
    return manifest;
  });
  manifestReady.catch(() => {}); // awaited below, after loadPyodide
  const useSnapshot = options.pyodideSnapshot !== false;
  const pyodide = await startPyodide(loadPyodide, urls.pyodide, cacheName, useSnapshot);
  report({ phase: "packages", progress: RANGES.packages[0] });
  const manifest = await manifestReady;
  // loadPackage takes the wheels' URLs: both load in one step, without micropip (its
  // dependency resolver is not needed: numpy is the only dependency).
  const packages = manifest.numpy ? wheels : ["numpy", ...wheels];
  const failed = []; // loadPackage reports a package it could not load here, and goes on
  await pyodide.loadPackage(packages, { messageCallback: () => {}, errorCallback: (m) => failed.push(m) });
  if (failed.length) throw new Error(`cannot load the packages: ${failed.join("; ")}`);
  report({ phase: "opening", progress: 0.95 });
  // Token budgets count with the same o200k_base as the Python side (seed 004).
  pyodide.registerJsModule("pymemory_js_tokens", { count: tiktoken.count, name: tiktoken.name });
  const browser = pyodide.pyimport("pymemory.browser.pyodide");
  const kwargs = { durability: options.durability ?? "strict" };
  if (options.feedbackFlushMs != null) kwargs.feedback_flush_s = options.feedbackFlushMs / 1000;
  if (options.autoArchiveDays != null) kwargs.auto_archive_days = options.autoArchiveDays;
  if (options.storageReserveBytes != null) kwargs.reserve_bytes = options.storageReserveBytes;
  // onnxruntime-web loads lazily, on the first model use; one WASM thread unless asked.
  // It runs in the model worker unless `modelWorker: false` (for comparisons).
  ort = options.modelWorker === false ? sameThread : modelWorker;
  modelsFolder = urls.models;
  ort.onProgress(onFile); // model files' bytes in status.files, like Pyodide's and the wheels'
  ort.configure({
    numThreads: options.ortThreads ?? 1,
    ortUrl: urls.onnxruntime,
    modelsUrl: urls.models,
    manifestUrl: `${urls.models}build.json`,
  });
  api = browser.create_api.callKwargs({ ort }, kwargs); // IndexedDB: the wheel's own bridge
  // Background work (the summarizer rewriting an item) tells the pages, so hooks refresh.
  api.on_change = (db, kind, itemId) => post({ op: "change", db, kind, itemId });
  reserveBytes = options.storageReserveBytes ?? browser.DEFAULT_RESERVE_BYTES;
  const [storage] = await Promise.all([measureStorage(), settled()]); // Pyodide's files cached
  if (tokensFailed) throw tokensFailed;
  report({ phase: "ready", progress: 1, ready: true, bootMs: performance.now() - t0, storage });
  setTimeout(parseTokens, TOKENS_IDLE_MS);
  if (useSnapshot && status.snapshot !== "restored") {
    const delay = options.snapshotDelayMs ?? SNAPSHOT_DELAY_MS;
    setTimeout(() => saveSnapshot(urls.pyodide, cacheName), delay);
  }
}

// --- a Pyodide memory snapshot for repeat visits -----------------------------------------
// Pyodide 0.27 can snapshot its memory right after loadPyodide (not after loadPackage:
// packages leave JS references it cannot serialise). A repeat visit restores it instead of
// initialising Python, most of the `runtime` phase. The snapshot is made once, a while
// after `ready`, by a second instance of this file (so the serving Pyodide never runs in
// snapshot mode), and kept in Cache Storage with the sha256 of the Pyodide files it was
// made from. A snapshot that is corrupt, stale or refused by Pyodide is deleted and the
// boot falls back to loadPyodide, with a console warning; status.snapshot says which:
// "restored" | "absent" | "corrupt" | "stale" | "refused" | "off" (options.pyodideSnapshot false);
// status.snapshotSave: "saving" | "saved" | "failed: <why>".

const SNAPSHOT_FILES = ["pyodide.asm.wasm", "python_stdlib.zip"];
const SNAPSHOT_DELAY_MS = 10_000; // after ready: leave the first calls the CPU
const SNAPSHOT_TIMEOUT_MS = 300_000;

function snapshotUrl(indexURL) {
  return `${indexURL}pymemory-snapshot.bin`;
}

// The cached Pyodide files a snapshot belongs to, by sha256 (null: not all cached).
async function snapshotSource(indexURL, cacheName) {
  const hashes = await Promise.all(SNAPSHOT_FILES.map((f) => cachedSha256(`${indexURL}${f}`, cacheName)));
  return hashes.includes(null) ? null : hashes.join(",");
}

async function readSnapshot(indexURL, cacheName) {
  const got = await readCacheOnly(snapshotUrl(indexURL), cacheName);
  if (!got.bytes) return got;
  const source = await snapshotSource(indexURL, cacheName);
  if (source === null || got.headers.get("x-pymemory-made-from") !== source) {
    await dropCached(snapshotUrl(indexURL), cacheName);
    return { bytes: null, reason: "stale" };
  }
  return got;
}

async function startPyodide(loadPyodide, indexURL, cacheName, useSnapshot) {
  if (!useSnapshot) {
    report({ snapshot: "off" });
    return loadPyodide({ indexURL });
  }
  let snapshot;
  try {
    snapshot = await readSnapshot(indexURL, cacheName);
  } catch (err) {
    snapshot = { bytes: null, reason: "refused", error: err };
  }
  if (snapshot.bytes) {
    try {
      const pyodide = await loadPyodide({ indexURL, _loadSnapshot: snapshot.bytes });
      report({ snapshot: "restored" });
      return pyodide;
    } catch (err) {
      snapshot = { reason: "refused", error: err };
      await dropCached(snapshotUrl(indexURL), cacheName).catch(() => {});
    }
  }
  if (snapshot.reason !== "absent") {
    const why = snapshot.error ? `: ${snapshot.error?.message ?? snapshot.error}` : "";
    console.warn(`pymemory: the Pyodide snapshot was ${snapshot.reason} (deleted)${why}; booting without it`);
  }
  report({ snapshot: snapshot.reason });
  return loadPyodide({ indexURL });
}

function saveSnapshot(indexURL, cacheName) {
  report({ snapshotSave: "saving" });
  let child;
  let timer;
  const done = new Promise((resolve, reject) => {
    child = new Worker(import.meta.url, { type: "module", name: "pymemory-snapshot" });
    child.onmessage = ({ data }) => {
      if (data?.op !== "snapshotted") return;
      if (data.ok) resolve(data);
      else reject(new Error(data.error));
    };
    child.onerror = (event) => {
      event.preventDefault?.();
      reject(new Error(event.message || "the snapshot worker did not load"));
    };
    timer = setTimeout(() => reject(new Error(`no snapshot after ${SNAPSHOT_TIMEOUT_MS} ms`)), SNAPSHOT_TIMEOUT_MS);
    child.postMessage({ op: "snapshot", indexURL, cacheName });
  });
  done
    .then(
      () => report({ snapshotSave: "saved" }),
      (err) => {
        console.warn(`pymemory: no Pyodide snapshot saved: ${err.message}`);
        report({ snapshotSave: `failed: ${err.message}` });
      },
    )
    .finally(() => {
      clearTimeout(timer);
      child?.terminate();
    });
}

// In the prefetch helper: read a file through Cache Storage, bytes back to the boot.
async function prefetchFile({ url, cacheName, expect }) {
  try {
    const got = await readCached(url, {
      cacheName,
      expect,
      onProgress: (loaded, total) => post({ op: "progress", url, loaded, total, source: "network" }),
    });
    self.postMessage({ op: "prefetched", url, ok: true, got }, [got.bytes.buffer]);
  } catch (err) {
    post({ op: "prefetched", url, ok: false, error: String(err?.message ?? err) });
  }
}

// In the snapshot worker: load Pyodide from the files the boot cached, snapshot, store.
async function makeSnapshot({ indexURL, cacheName }) {
  try {
    const { loadPyodide } = await import(`${indexURL}pyodide.mjs`);
    const { settled } = cacheFetches([indexURL], cacheName, new Map(), () => {});
    const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true });
    const bytes = pyodide.makeMemorySnapshot();
    await settled(); // the files it read, if it had to download them, cached
    const source = await snapshotSource(indexURL, cacheName);
    if (source === null) throw new Error("the Pyodide files are not in Cache Storage");
    await storeInCache(snapshotUrl(indexURL), bytes, cacheName, { "x-pymemory-made-from": source });
    return { ok: true, bytes: bytes.byteLength };
  } catch (err) {
    return { ok: false, error: String(err?.message ?? err) };
  }
}

// status.storage: the origin's storage as this worker sees it. `persisted`: the browser
// keeps it under storage pressure (a page asks with navigator.storage.persist(); workers
// cannot); `usage`/`quota`: navigator.storage.estimate() (Chromium reports an artificial
// quota, usage + up to 10 GiB, not the one it enforces); `reserve`: what writes leave free
// under that quota (storageReserveBytes). Measured at boot, on request (the page after
// persist()) and after a write fails for storage.
let reserveBytes = null;

async function measureStorage() {
  const storage = globalThis.navigator?.storage;
  const estimate = await storage?.estimate?.().catch(() => null);
  const persisted = await storage?.persisted?.().catch(() => null);
  return {
    persisted: typeof persisted === "boolean" ? persisted : null,
    usage: estimate?.usage ?? null,
    quota: estimate?.quota ?? null,
    reserve: reserveBytes,
  };
}

async function refreshStorage() {
  const storage = await measureStorage();
  report({ storage });
  return storage;
}

// The ranks' load, timed (status.tokensMs: from the boot's start). A failure fails the
// worker loudly: budgets are never counted with anything but o200k_base.
function loadTokens(url, t0, parseAfter) {
  const loading = tiktoken.init(url, { parseAfter }).then(() => {
    report({ tokensMs: Math.round(performance.now() - t0) });
  });
  loading.catch((err) => {
    tokensFailed = new Error(`cannot load the o200k_base token ranks: ${err?.message ?? err}`);
    console.error(`pymemory: ${tokensFailed.message}`);
    // Before `ready`, boot() throws it; after, the worker turns to the error state.
    if (status.ready) report({ phase: "error", ready: false, error: { code: "boot_failed", message: tokensFailed.message } });
  });
  return loading;
}

function init(options) {
  booting ??= boot(options ?? {}).catch((err) => {
    report({
      phase: "error",
      error: { code: "boot_failed", message: String(err?.message ?? err) },
    });
  });
  return booting.then(() => status);
}

async function call(id, db, method, params, unlock) {
  if (!api) {
    return { ok: false, error: status.error ?? { code: "not_ready", message: "init() first" } };
  }
  if (method === "storageStatus") return { ok: true, result: await refreshStorage() }; // Connection.persist
  try {
    // Any call but `open` (the client's `ready`) may count tokens: budgets, blocks, the
    // assembler. A count before the ranks are parsed would throw, never guess.
    if (method !== "open") {
      parseTokens();
      await tokensReady;
    }
  } catch {
    return { ok: false, error: { code: "boot_failed", message: tokensFailed.message } };
  }
  let json;
  try {
    // The client sends its parameters as JSON text (checked in Python before parsing), so
    // a deeply nested value never has to survive a structured clone.
    json = typeof params === "string" ? params : JSON.stringify(params ?? {});
  } catch (err) {
    return { ok: false, error: { code: "invalid_input", message: String(err.message) } };
  }
  const progress = (done, total) => post({ op: "progress", id, done, total });
  const t0 = performance.now();
  const answer = JSON.parse(await api.call(db, method, json, progress, unlock ?? undefined));
  parseTokens(); // after the first call: the client's `open`, answered without them
  answer.ms = performance.now() - t0; // time spent in the worker, for benchmarks
  return answer;
}

self.onmessage = async ({ data }) => {
  const { id, op } = data ?? {};
  let reply;
  try {
    if (op === "init") reply = { ok: true, result: await init(data.options) };
    else if (op === "call") {
      reply = await call(id, data.db, data.method, data.params, data.unlock);
      if (["quota_exceeded", "storage_error"].includes(reply.error?.code)) refreshStorage().catch(() => {});
    }
    else if (op === "modelStats") reply = { ok: true, result: await ort.stats() };
    else if (op === "snapshot") return post({ op: "snapshotted", ...(await makeSnapshot(data)) });
    else if (op === "prefetch") return prefetchFile(data);
    else reply = { ok: false, error: { code: "unknown_method", message: `unknown op ${op}` } };
  } catch (err) {
    reply = { ok: false, error: { code: "internal", message: String(err?.message ?? err) } };
  }
  post({ id, ...reply });
};
