// The boot: Pyodide (from its snapshot when there is one), numpy and the pymemory wheel,
// then the Python API the worker serves (pymemory.browser.pyodide's create_api) with its
// bridges: IndexedDB (the wheel's own), the token counter and onnxruntime-web (in the
// model worker unless `modelWorker: false`). Progress goes to the page as status.

import { cacheFetches, folder, readManifest } from "./asset-cache.mjs";
import * as modelWorker from "./model-client.mjs"; // inference in the model worker
import * as sameThread from "./ort-bridge.mjs"; // inference on this thread (modelWorker: false)
import { measureStorage, setReserve } from "./quota.mjs";
import { SNAPSHOT_DELAY_MS, saveSnapshot, startPyodide } from "./snapshot.mjs";
import { countInPhase, current, onFile, RANGES, report, setModelsFolder } from "./status.mjs";
import * as tokens from "./token-ranks.mjs";

let api = null; // the Python RpcApi, once booted
let ort = modelWorker; // the inference bridge Python uses
let booting = null;

/** The Python API the worker serves (null before the boot is done). */
export function pythonApi() {
  return api;
}

/** The inference bridge in use (its stats() answer `modelStats`). */
export function inference() {
  return ort;
}

/** Boot once (later calls wait for the same boot); resolves with the status, which holds
 * the error when the boot failed. */
export function init(options) {
  booting ??= boot(options ?? {}).catch((err) => {
    report({
      phase: "error",
      error: { code: "boot_failed", message: String(err?.message ?? err) },
    });
  });
  return booting.then(() => current());
}

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
  // The wheels' manifest, first thing (the wheels download while Pyodide starts), by the
  // network's fetch: taken before cacheFetches routes the wheels' folder to the cache.
  const manifestRead = readManifest(`${urls.wheels}manifest.json`, globalThis.fetch.bind(globalThis));
  manifestRead.catch(() => {}); // awaited below
  // The o200k_base ranks: the data file beside the wheels (the npm package's), else js-tiktoken's.
  const ranksFile = manifestRead.then(
    (m) => (m.o200k_base ? { url: new URL(m.o200k_base, urls.wheels).href, sha256: m.o200k_base_sha256 } : null),
    () => null,
  );
  tokens.load(urls.tiktoken, t0, ranksFile);
  const pyodideModule = `${urls.pyodide}pyodide.mjs`;
  const { loadPyodide, version } = await import(pyodideModule).catch((err) => {
    throw new Error(`cannot load Pyodide from ${pyodideModule}: ${err?.message ?? err}`);
  });
  const expected = new Map();
  const cacheName = `pymemory-runtime-${version}`;
  const { prefetch, settled, failed: assetFailed } = cacheFetches([urls.pyodide, urls.wheels], cacheName, expected);
  // A download that fails (a network drop mid-file included) fails the boot at once, naming
  // its URL: Pyodide itself may only log it and wait (a WebAssembly compile that never ends).
  const orFail = (promise) => Promise.race([promise, assetFailed]);
  const wheels = [];
  const manifestReady = manifestRead.then((manifest) => {
    for (const [key, hash] of [["numpy", "numpy_sha256"], ["pymemory", "sha256"]]) {
      if (!manifest[key]) continue; // no numpy beside the wheel: Pyodide's own from indexURL
      const url = new URL(manifest[key], urls.wheels).href;
      expected.set(url, manifest[hash] ? { sha256: manifest[hash] } : null);
      countInPhase(url, "packages"); // their bytes move the packages' range of the bar
      wheels.push(url);
    }
    if (!manifest.pymemory) throw new Error(`${urls.wheels}manifest.json names no pymemory wheel`);
    wheels.forEach(prefetch);
    return manifest;
  });
  manifestReady.catch(() => {}); // awaited below, after loadPyodide
  const useSnapshot = options.pyodideSnapshot !== false;
  const pyodide = await orFail(startPyodide(loadPyodide, urls.pyodide, cacheName, useSnapshot));
  report({ phase: "packages", progress: RANGES.packages[0] });
  const manifest = await orFail(manifestReady);
  // loadPackage takes the wheels' URLs: both load in one step, without micropip (its
  // dependency resolver is not needed: numpy is the only dependency).
  const packages = manifest.numpy ? wheels : ["numpy", ...wheels];
  const failed = []; // loadPackage reports a package it could not load here, and goes on
  await orFail(pyodide.loadPackage(packages, { messageCallback: () => {}, errorCallback: (m) => failed.push(m) }));
  if (failed.length) throw new Error(`cannot load the packages: ${failed.join("; ")}`);
  report({ phase: "opening", progress: 0.95 });
  // Token budgets count with the same o200k_base as the Python side (seed 004).
  pyodide.registerJsModule("pymemory_js_tokens", tokens.module);
  const browser = pyodide.pyimport("pymemory.browser.pyodide");
  const kwargs = { durability: options.durability ?? "strict" };
  if (options.feedbackFlushMs != null) kwargs.feedback_flush_s = options.feedbackFlushMs / 1000;
  if (options.autoArchiveDays != null) kwargs.auto_archive_days = options.autoArchiveDays;
  if (options.storageReserveBytes != null) kwargs.reserve_bytes = options.storageReserveBytes;
  // onnxruntime-web loads lazily, on the first model use; one WASM thread unless asked.
  // It runs in the model worker unless `modelWorker: false` (for comparisons).
  ort = options.modelWorker === false ? sameThread : modelWorker;
  setModelsFolder(urls.models);
  ort.onProgress(onFile); // model files' bytes in status.files, like Pyodide's and the wheels'
  ort.configure({
    numThreads: options.ortThreads ?? 1,
    ortUrl: urls.onnxruntime,
    modelsUrl: urls.models,
    manifestUrl: `${urls.models}build.json`,
  });
  api = browser.create_api.callKwargs({ ort }, kwargs); // IndexedDB: the wheel's own bridge
  // Background work (the summarizer rewriting an item) tells the pages, so hooks refresh.
  api.on_change = (db, kind, itemId) => self.postMessage({ op: "change", db, kind, itemId });
  setReserve(options.storageReserveBytes ?? browser.DEFAULT_RESERVE_BYTES);
  const [storage] = await Promise.all([measureStorage(), settled()]); // Pyodide's files cached
  if (tokens.failure()) throw tokens.failure();
  report({ phase: "ready", progress: 1, ready: true, bootMs: performance.now() - t0, storage });
  tokens.parseWhenIdle();
  if (useSnapshot && current().snapshot !== "restored") {
    const delay = options.snapshotDelayMs ?? SNAPSHOT_DELAY_MS;
    setTimeout(() => saveSnapshot(urls.pyodide, cacheName), delay);
  }
}
