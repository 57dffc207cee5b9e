// The pymemory Web Worker: boots Pyodide from the same origin, loads numpy and the
// pymemory wheel, and serves the Memory API to pages through comlink.
// Every answer is { ok: true, result } or { ok: false, error: { code, message } }, so the
// error code survives the trip (comlink would drop custom fields of a thrown Error).

import * as Comlink from "../vendor/comlink/comlink.mjs";
import * as idb from "./idb-kv.mjs";
import * as ort from "./ort-bridge.mjs";
import * as tiktoken from "./tiktoken.mjs";

const base = new URL("../", import.meta.url);
let api = null; // the Python RpcApi
let booting = null;
let status = { phase: "starting", progress: 0, ready: false, error: null };
const listeners = new Set();
const changeListeners = new Set();

function report(phase, progress, extra = {}) {
  status = { ...status, phase, progress, ...extra };
  for (const fn of listeners) {
    Promise.resolve(fn(status)).catch(() => listeners.delete(fn)); // page gone: forget it
  }
}

async function boot(options) {
  const t0 = performance.now();
  report("runtime", 0.05);
  const tokensReady = tiktoken.init(); // o200k_base ranks load while Pyodide starts
  const { loadPyodide } = await import(new URL("vendor/pyodide/pyodide.mjs", base).href);
  const manifest = fetch(new URL("wheels/manifest.json", base)).then((r) => r.json());
  const pyodide = await loadPyodide({ indexURL: new URL("vendor/pyodide/", base).href });
  report("packages", 0.55);
  // loadPackage takes the wheel's URL beside numpy: both load in one step, without
  // micropip (its dependency resolver is not needed: numpy is the only dependency).
  const wheel = new URL(`wheels/${(await manifest).pymemory}`, base).href;
  await pyodide.loadPackage(["numpy", wheel], { messageCallback: () => {} });
  report("opening", 0.95);
  await tokensReady;
  // Token budgets count with the same o200k_base as the Python side (seed 004).
  pyodide.registerJsModule("pymemory_js_tokens", { count: tiktoken.count, name: tiktoken.name });
  const browser = pyodide.pyimport("pymemory.browser.pyodide");
  const kwargs = { durability: options.durability ?? "strict" };
  if (options.feedbackFlushMs != null) kwargs.feedback_flush_s = options.feedbackFlushMs / 1000;
  if (options.autoArchiveDays != null) kwargs.auto_archive_days = options.autoArchiveDays;
  // onnxruntime-web loads lazily, on the first model use; one WASM thread unless asked.
  ort.configure({ numThreads: options.ortThreads ?? 1 });
  api = browser.create_api.callKwargs({ ...idb, ort }, kwargs);
  // Background work (the summarizer rewriting an item) tells the pages, so hooks refresh.
  api.on_change = (db, kind, id) => {
    for (const fn of changeListeners) {
      Promise.resolve(fn(db, kind, id)).catch(() => changeListeners.delete(fn));
    }
  };
  report("ready", 1, { ready: true, bootMs: performance.now() - t0 });
}

const service = {
  // Start (or join) the boot; resolves with the final status. `onStatus` is a comlink proxy.
  async init(options = {}, onStatus) {
    if (onStatus) {
      listeners.add(onStatus);
      onStatus(status);
    }
    booting ??= boot(options).catch((err) => {
      report("error", status.progress, {
        error: { code: "boot_failed", message: String(err?.message ?? err) },
      });
    });
    await booting;
    return status;
  },

  status() {
    return status;
  },

  // `fn(dbName, kind, id)` (a comlink proxy) hears about changes made in the background.
  onChange(fn) {
    changeListeners.add(fn);
  },

  // One Memory API call. `params` is JSON text (or a JSON-able object); `onProgress` an
  // optional proxy.
  async call(dbName, method, params, onProgress) {
    if (!api) {
      const error = status.error ?? { code: "not_ready", message: "call init() first" };
      return { ok: false, error };
    }
    let json;
    try {
      // The client sends its parameters as JSON text (checked in Python before parsing).
      json = typeof params === "string" ? params : JSON.stringify(params ?? {});
    } catch (err) {
      return { ok: false, error: { code: "invalid_input", message: String(err.message) } };
    }
    const progress = onProgress ? (done, total) => onProgress(done, total) : undefined;
    const t0 = performance.now();
    const answer = JSON.parse(await api.call(dbName, method, json, progress));
    answer.ms = performance.now() - t0; // time spent in the worker, for benchmarks
    return answer;
  },
};

Comlink.expose(service);
