// The store worker's side of the model workers (worker/model-worker.mjs): the same bridge
// Python's OrtWebRuntime uses (configure, settings, modelsUrl, fetchAsset, load), with
// sessions living in model workers. Model files are read here and there through the same
// Cache Storage (ort-bridge.mjs); tensors cross as transferred buffers.
//
// Two model workers: "background" runs everything by default (embedding new items, the
// summarizer's tokens); "urgent" gets runs marked urgent (priority > 0: the query
// embedding of a retrieve), with its own session of that model, made on first use, so a
// query never waits for a background batch to finish.

import * as ort from "./ort-bridge.mjs";

export { fetchAsset, modelsUrl, settings } from "./ort-bridge.mjs";

let options = {};
let progressListener = null;

// onProgress(url, loaded, total, source) for the model files read here and in the model
// workers (Cache Storage or the network), so the page's status can show their bytes.
export function onProgress(listener) {
  progressListener = listener;
  ort.onProgress(listener);
}

class ModelWorker {
  constructor(name) {
    this.name = name;
    this.worker = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> { resolve, reject }
    this.failure = null;
    this.sessions = new Map(); // url -> Promise<{ handle, info, inputNames, outputNames }>
  }

  start() {
    this.worker = new Worker(new URL("./model-worker.mjs", import.meta.url), {
      type: "module",
      name: `pymemory-models-${this.name}`,
    });
    this.worker.onmessage = ({ data }) => {
      if (data.op === "progress") {
        progressListener?.(data.url, data.loaded, data.total, data.source);
        return;
      }
      const entry = this.pending.get(data.id);
      if (!entry) return;
      this.pending.delete(data.id);
      if (data.ok) entry.resolve(data.result);
      else entry.reject(new Error(data.error.message));
    };
    this.worker.onerror = (event) => {
      event.preventDefault?.();
      this.failure = new Error(`the ${this.name} model worker failed: ${event.message || "it did not load"}`);
      for (const { reject } of this.pending.values()) reject(this.failure);
      this.pending.clear();
    };
    this.call("configure", { options });
  }

  call(op, message = {}, transfer = []) {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.worker) this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id, op }, transfer);
    });
  }

  session(url, loadOptions) {
    let pending = this.sessions.get(url);
    if (!pending) {
      pending = this.call("load", { url, options: loadOptions });
      pending.catch(() => this.sessions.delete(url));
      this.sessions.set(url, pending);
    }
    return pending;
  }
}

const workers = { background: new ModelWorker("background"), urgent: new ModelWorker("urgent") };

// Settings apply here (models URL, the manifest) and in the model workers (threads).
export function configure(settingsIn = {}) {
  options = { ...options, ...settingsIn };
  for (const w of Object.values(workers)) if (w.worker) w.call("configure", { options: settingsIn });
  return ort.configure(settingsIn);
}

function buffersOf(feeds) {
  const seen = new Set();
  for (const value of Object.values(feeds)) {
    const bytes = value?.bytes;
    if (bytes?.buffer instanceof ArrayBuffer && bytes.byteLength === bytes.buffer.byteLength) {
      seen.add(bytes.buffer);
    }
  }
  return [...seen];
}

// A session in the background model worker; `run(feeds, outputNames, priority)` queues
// there, or in the urgent worker when priority > 0.
export async function load(url, loadOptions = {}) {
  const { info, inputNames, outputNames } = await workers.background.session(url, loadOptions);
  return {
    info,
    inputNames,
    outputNames,
    async run(feeds, names, priority = 0) {
      const worker = priority > 0 ? workers.urgent : workers.background;
      const { handle } = await worker.session(url, loadOptions);
      return worker.call("run", { handle, feeds, outputNames: names ?? null, priority }, buffersOf(feeds));
    },
    async release() {
      for (const w of Object.values(workers)) {
        const pending = w.sessions.get(url);
        if (!pending) continue;
        w.sessions.delete(url);
        await w.call("release", { handle: (await pending).handle });
      }
    },
  };
}

export async function stats() {
  const out = { ...ort.stats() };
  for (const [name, w] of Object.entries(workers)) out[name] = w.worker ? await w.call("stats") : null;
  out.queue = out.background?.queue ?? null; // the background worker's queue
  return out;
}
