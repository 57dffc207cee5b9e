// The store worker's side of the model worker (worker/model-worker.mjs): the same bridge
// Python's OrtWebRuntime uses (configure, settings, modelsUrl, fetchAsset, load), with
// sessions living in the model worker. Model files are read here and there through the
// same Cache Storage (ort-bridge.mjs); tensors cross as transferred buffers.

import * as ort from "./ort-bridge.mjs";

export { fetchAsset, modelsUrl, settings } from "./ort-bridge.mjs";

let worker = null;
let nextId = 1;
const pending = new Map(); // id -> { resolve, reject }
let options = {};
let failure = null;

function start() {
  worker = new Worker(new URL("./model-worker.mjs", import.meta.url), {
    type: "module",
    name: "pymemory-models",
  });
  worker.onmessage = ({ data }) => {
    const entry = pending.get(data.id);
    if (!entry) return;
    pending.delete(data.id);
    if (data.ok) entry.resolve(data.result);
    else entry.reject(new Error(data.error.message));
  };
  worker.onerror = (event) => {
    event.preventDefault?.();
    failure = new Error(`the model worker failed: ${event.message || "it did not load"}`);
    for (const { reject } of pending.values()) reject(failure);
    pending.clear();
  };
  call("configure", { options });
}

function call(op, message = {}, transfer = []) {
  if (failure) return Promise.reject(failure);
  if (!worker) start();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ ...message, id, op }, transfer);
  });
}

// Settings apply here (models URL, the manifest) and in the model worker (threads).
export function configure(settingsIn = {}) {
  options = { ...options, ...settingsIn };
  if (worker) call("configure", { options: settingsIn });
  return ort.configure(settingsIn);
}

function buffersOf(feeds) {
  const seen = new Set();
  for (const value of Object.values(feeds)) {
    const buffer = value?.bytes?.buffer;
    if (buffer instanceof ArrayBuffer && buffer.byteLength === value.bytes.byteLength) seen.add(buffer);
  }
  return [...seen];
}

// A session in the model worker; `run(feeds, outputNames, priority)` queues there.
export async function load(url, loadOptions = {}) {
  const { handle, info, inputNames, outputNames } = await call("load", { url, options: loadOptions });
  return {
    info,
    inputNames,
    outputNames,
    run: (feeds, names, priority = 0) =>
      call("run", { handle, feeds, outputNames: names ?? null, priority }, buffersOf(feeds)),
    release: () => call("release", { handle }),
  };
}

export function stats() {
  return worker ? call("stats") : Promise.resolve({ ...ort.stats(), queue: null });
}
