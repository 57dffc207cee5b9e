// Pyodide's files and the wheels through Cache Storage (assets.mjs reads one file): the
// worker routes Pyodide's own fetches of them through the cache, so a second visit reads
// them locally (and offline), with byte progress in status.files; the wheels download in
// a helper instance of the worker while Pyodide starts.

import { readCached } from "./assets.mjs";
import { onFile, post } from "./status.mjs";

/** The absolute URL of the folder `url` (ending in "/"); `name` names it in the error. */
export function folder(url, name) {
  if (typeof url !== "string" || !url) throw new Error(`assets.${name} must be a URL`);
  const href = new URL(url, self.location.href).href;
  return href.endsWith("/") ? href : `${href}/`;
}

/**
 * Route the global fetch of GET requests under `prefixes` through Cache Storage
 * (`cacheName`), checking a file against `expected` (url -> { sha256, size? } | null)
 * when it is downloaded. Returns prefetch(url): start reading a file Pyodide will ask for
 * later (the wheels, while loadPyodide runs), so its fetch finds it read; and settled():
 * wait until the files Pyodide got before they were cached are (see read).
 */
export function cacheFetches(prefixes, cacheName, expected, progress = onFile) {
  const network = globalThis.fetch.bind(globalThis);
  const early = new Map(); // url -> the read prefetch started
  let failedWith = null;
  const failed = new Promise((resolve, reject) => (failedWith = reject)); // the first failed read
  failed.catch(() => {});
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
    let got;
    try {
      got = await (pending ?? read(url));
    } catch (err) {
      failedWith(err); // the boot fails with it now, whatever Pyodide makes of the rejection
      throw err;
    }
    if (pending) progress(url, got.size, got.size, got.source); // now in its own phase
    return new Response(got.bytes, { headers: { "content-type": got.type } });
  };
  // Downloads to prefetch run in a helper instance of the worker: this thread is busy
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
        // self.location: the worker's own script (memory-worker.mjs), whose prefetchFile answers.
        helper = new Worker(self.location.href, { type: "module", name: "pymemory-prefetch" });
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
    pending.catch((err) => failedWith(err)); // the boot needs every file it prefetches
    early.set(url, pending);
  };
  const settled = () => Promise.allSettled([...storing]);
  return { prefetch, settled, failed };
}

/** In the prefetch helper: read a file through Cache Storage, its bytes back to the boot. */
export async function prefetchFile({ url, cacheName, expect }) {
  try {
    const got = await readCached(url, {
      cacheName,
      expect,
      onProgress: (loaded, total) => post({ op: "progress", url, loaded, total, source: "network" }),
    });
    post({ op: "prefetched", url, ok: true, got }, [got.bytes.buffer]);
  } catch (err) {
    post({ op: "prefetched", url, ok: false, error: String(err?.message ?? err) });
  }
}

/** The wheels' manifest: network first (it names the current wheel), the cached copy
 * when offline. `network`: the fetch to use (before cacheFetches routes the folder). */
export async function readManifest(url, network) {
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
