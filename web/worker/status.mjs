// The store worker's status, as the page sees it ({ op: "status", status } after every
// change): the boot phase and its progress bar, each file's bytes, then `ready` or the
// error, and what later measurements add (storage, snapshot, tokensMs).

let status = { phase: "starting", progress: 0, ready: false, error: null, files: {} };

/** Post a message to the page (or to the instance of the worker that started this one). */
export function post(message, transfer) {
  if (transfer) self.postMessage(message, transfer);
  else self.postMessage(message);
}

/** The current status. */
export function current() {
  return status;
}

const phaseStart = { at: performance.now(), phase: "starting" };
const phaseMs = {}; // how long each boot phase took, in status.phaseMs once ready

/** Merge `patch` into the status and tell the page. A new phase ends the timing of the
 * one before (status.phaseMs, once ready). */
export function report(patch) {
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

// --- file progress: status.files, status.bytes and the bar ---------------------------------

// The bar moves through each phase's range by the bytes of the files that phase loads:
// runtime 5-60% (Pyodide's core), packages 60-90% (the wheels).
export const RANGES = Object.freeze({ runtime: [0.05, 0.6], packages: [0.6, 0.9] });
const phaseOf = new Map(); // file URL -> the phase that started it

let modelsFolder = null; // model files show as "<model>/<file>" in status.files

/** The folder of the model files (their names in status.files are relative to it). */
export function setModelsFolder(url) {
  modelsFolder = url;
}

/** Count the bytes of `url` in `phase`'s range of the bar (a wheel prefetched before its phase). */
export function countInPhase(url, phase) {
  phaseOf.set(url, phase);
}

function fileName(url) {
  if (modelsFolder && url.startsWith(modelsFolder)) return url.slice(modelsFolder.length);
  return url.slice(url.lastIndexOf("/") + 1);
}

/** A file's progress: `loaded` of `total` bytes (null: unknown) from `source` ("network" | "cache"). */
export function onFile(url, loaded, total, source) {
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
