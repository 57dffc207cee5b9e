// A Pyodide memory snapshot for repeat visits. Pyodide 0.27 can snapshot its memory right
// after loadPyodide (not after loadPackage: packages leave JS references it cannot
// serialise). A repeat visit restores it instead of initialising Python, most of the
// `runtime` phase. The snapshot is made once, a while after `ready`, by a second instance
// of the worker (so the serving Pyodide never runs in snapshot mode), and kept in Cache
// Storage with the sha256 of the Pyodide files it was made from. A snapshot that is
// corrupt, stale or refused by Pyodide is deleted and the boot falls back to loadPyodide,
// with a console warning; status.snapshot says which:
// "restored" | "absent" | "corrupt" | "stale" | "refused" | "off" (options.pyodideSnapshot false);
// status.snapshotSave: "saving" | "saved" | "failed: <why>".

import { cachedSha256, dropCached, readCacheOnly, storeInCache } from "./assets.mjs";
import { cacheFetches } from "./asset-cache.mjs";
import { report } from "./status.mjs";

const SNAPSHOT_FILES = ["pyodide.asm.wasm", "python_stdlib.zip"];
export const SNAPSHOT_DELAY_MS = 10_000; // after ready: leave the first calls the CPU
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

/** loadPyodide from the snapshot when there is a good one (`useSnapshot`), else plainly. */
export async function startPyodide(loadPyodide, indexURL, cacheName, useSnapshot) {
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

/** Have a second instance of the worker make and store the snapshot (status.snapshotSave). */
export function saveSnapshot(indexURL, cacheName) {
  report({ snapshotSave: "saving" });
  let child;
  let timer;
  const done = new Promise((resolve, reject) => {
    // self.location: the worker's own script (memory-worker.mjs), whose makeSnapshot answers.
    child = new Worker(self.location.href, { type: "module", name: "pymemory-snapshot" });
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

/** In the snapshot worker: load Pyodide from the files the boot cached, snapshot, store. */
export async function makeSnapshot({ indexURL, cacheName }) {
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
