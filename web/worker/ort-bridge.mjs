// The onnxruntime-web side of pymemory's inference runtime (Python:
// pymemory/browser/pyodide.py OrtWebRuntime). Python hands tensors over as { type, dims, bytes: Uint8Array } and gets
// { type, dims, data: TypedArray } back, so each tensor crosses the boundary as one copy.
//
// Model files (model.onnx, tokenizer.json, config.json) are read through the Cache Storage
// API ("pymemory-models-v1"): the first visit downloads them, later visits read them from
// the cache without touching the network. Bytes are checked against the models manifest
// (/models/build.json: { <model>: { outputs: { <file>: { sha256, size } } } }) when it can
// be fetched; a cached copy that does not match is dropped and downloaded again, a download
// that does not match is an error. Offline (no manifest) the cached copy is checked against
// the sha256 recorded when it was stored.

import { readCached } from "./assets.mjs";

export const CACHE_NAME = "pymemory-models-v1";

const config = {
  numThreads: 1,
  // onnxruntime-web's dist/ folder (ort.wasm.min.mjs and its WASM), like its `wasmPaths`.
  ortUrl: new URL("../vendor/onnxruntime-web/", import.meta.url).href,
  modelsUrl: new URL("../models/", import.meta.url).href,
  manifestUrl: new URL("../models/build.json", import.meta.url).href,
};
let ortPromise = null;
let wasmThreads = null; // the threads onnxruntime-web runs with, known once a session exists
let manifestPromise = null;
const sessions = new Map(); // url -> Promise<handle>
const assets = new Map(); // url -> Promise<{ bytes, source, ... }> while in flight
const loads = []; // one record per asset read, for diagnostics

// Settings; call before the first load (threads are fixed once the WASM has started).
// numThreads > 1 is honoured only where the page is cross-origin isolated (COOP + COEP).
export function configure(options = {}) {
  if (options.numThreads != null) config.numThreads = Math.max(1, Number(options.numThreads) | 0);
  if (options.ortUrl) config.ortUrl = new URL(options.ortUrl, import.meta.url).href;
  if (options.modelsUrl) config.modelsUrl = new URL(options.modelsUrl, import.meta.url).href;
  if (options.manifestUrl) config.manifestUrl = new URL(options.manifestUrl, import.meta.url).href;
  if (options.manifestUrl !== undefined || options.modelsUrl) manifestPromise = null;
  return settings();
}

export function modelsUrl() {
  return config.modelsUrl;
}

function threads() {
  const isolated = globalThis.crossOriginIsolated === true;
  const cores = globalThis.navigator?.hardwareConcurrency ?? 1;
  return isolated && config.numThreads > 1 ? Math.min(config.numThreads, cores) : 1;
}

export function settings() {
  return {
    ...config,
    threads: threads(),
    crossOriginIsolated: globalThis.crossOriginIsolated === true,
    cacheName: CACHE_NAME,
  };
}

async function getOrt() {
  ortPromise ??= (async () => {
    const ort = await import(new URL("ort.wasm.min.mjs", config.ortUrl).href);
    ort.env.wasm.wasmPaths = config.ortUrl;
    ort.env.wasm.numThreads = threads();
    ort.env.wasm.proxy = false; // we already are in a worker
    ort.env.logLevel = "error";
    return ort;
  })().catch((err) => {
    ortPromise = null;
    throw err;
  });
  return ortPromise;
}

// --- model files through Cache Storage ------------------------------------------------

function getManifest() {
  manifestPromise ??= fetch(config.manifestUrl, { cache: "no-store" })
    .then((r) => (r.ok ? r.json() : null))
    .catch(() => null); // offline: cached files are checked against their own record
  return manifestPromise;
}

function expectedFor(url, manifest) {
  if (!manifest || !url.startsWith(config.modelsUrl)) return null;
  const [model, ...rest] = url.slice(config.modelsUrl.length).split("/");
  const entry = (manifest.models ?? manifest)[model];
  const want = entry?.outputs?.[rest.join("/")];
  return want?.sha256 ? want : null;
}

// onProgress(url, loaded, total, source) for every model file read: bytes as they arrive
// (at most every 100 ms), then once more when the file is complete.
let progressListener = null;
export function onProgress(listener) {
  progressListener = listener;
}

async function readAsset(url) {
  const manifest = await getManifest();
  let last = -Infinity; // the first bytes always report
  const onBytes = (loaded, total) => {
    const now = performance.now();
    if (now - last < 100) return;
    last = now;
    progressListener?.(url, loaded, total, "network");
  };
  const record = await readCached(url, {
    cacheName: CACHE_NAME,
    expect: expectedFor(url, manifest),
    onProgress: onBytes,
  });
  progressListener?.(url, record.size, record.size, record.source);
  const { bytes, type, ...rest } = record;
  loads.push(rest);
  return record;
}

// The bytes of a model file: { bytes: Uint8Array, source: "cache" | "network", size, sha256,
// verified, ms }. Concurrent reads of one URL share one download.
export function fetchAsset(url) {
  const key = new URL(url, import.meta.url).href;
  let pending = assets.get(key);
  if (!pending) {
    pending = readAsset(key).finally(() => assets.delete(key));
    assets.set(key, pending);
  }
  return pending;
}

// --- sessions -------------------------------------------------------------------------

const ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  float16: globalThis.Float16Array ?? Uint16Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
};

function toTensor(ort, name, { type, dims, bytes }) {
  const Ctor = ARRAYS[type];
  if (!Ctor) throw new Error(`input ${name}: unsupported tensor type ${type}`);
  let buf = bytes;
  if (buf.byteOffset % Ctor.BYTES_PER_ELEMENT) buf = buf.slice(); // realign
  const data = new Ctor(buf.buffer, buf.byteOffset, buf.byteLength / Ctor.BYTES_PER_ELEMENT);
  return new ort.Tensor(type, data, Array.from(dims));
}

function fromTensor(tensor) {
  return { type: tensor.type, dims: Array.from(tensor.dims), data: tensor.data };
}

async function createSession(url, options) {
  const ort = await getOrt();
  const asset = await fetchAsset(url);
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(asset.bytes, {
    executionProviders: ["wasm"],
    graphOptimizationLevel: options.graphOptimizationLevel ?? "all",
  });
  const createMs = performance.now() - t0;
  wasmThreads = ort.env.wasm.numThreads; // after its init: 1 where WASM threads are unavailable
  const info = {
    url,
    source: asset.source,
    size: asset.size,
    sha256: asset.sha256,
    verified: asset.verified,
    replaced: asset.replaced ?? null,
    fetchMs: asset.ms,
    createMs,
    threads: wasmThreads,
  };
  return {
    info,
    inputNames: [...session.inputNames],
    outputNames: [...session.outputNames],
    // feeds: { name: { type, dims, bytes } }; outputNames: array or null (all outputs).
    async run(feeds, outputNames) {
      const tensors = {};
      for (const [name, value] of Object.entries(feeds)) {
        tensors[name] = toTensor(ort, name, value);
      }
      const names = outputNames ? Array.from(outputNames) : [...session.outputNames];
      const results = await session.run(tensors, names);
      return { names, outputs: names.map((n) => fromTensor(results[n])) };
    },
    async release() {
      sessions.delete(url);
      await session.release();
    },
  };
}

// A session for the model at `url`, created once per URL and shared afterwards.
export function load(url, options = {}) {
  const key = new URL(url, import.meta.url).href;
  let pending = sessions.get(key);
  if (!pending) {
    pending = createSession(key, options ?? {});
    pending.catch(() => sessions.delete(key));
    sessions.set(key, pending);
  }
  return pending;
}

// Diagnostics: the settings, every asset read since the worker started, live sessions, and
// `wasmThreads`: the threads onnxruntime-web runs with (null before the first session).
export function stats() {
  return { ...settings(), wasmThreads, loads: loads.map((r) => ({ ...r })), sessions: [...sessions.keys()] };
}

// Delete every cached model file (sessions already created stay usable; a new worker
// downloads the files again).
export async function clearCache() {
  return caches.delete(CACHE_NAME);
}
