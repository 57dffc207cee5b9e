// Offline from the first visit: register pymemory's service worker (sw.mjs, copied to the
// app's root) and hand it every file this visit loaded, so the second visit works with the
// network off. The service worker sees only the requests made after it took control, which
// on a first visit is after the page, its bundle and the store worker's modules loaded:
// those are what this module lists (the page's own resources, the worker's modules and
// Pyodide's loader) for it to cache. The large files (Pyodide's core, the wheels, the
// token ranks, the models) are in the store worker's own Cache Storage already.

import { MemoryError } from "./errors.mjs";
import { resolveAssets } from "./options.mjs";

const TIMEOUT_MS = 60_000;

// The store worker's modules (worker/) and the package modules they import.
export const WORKER_MODULES = Object.freeze([
  "asset-cache.mjs", "assets.mjs", "boot.mjs", "dispatch.mjs", "memory-worker.mjs", "model-client.mjs",
  "model-worker.mjs", "ort-bridge.mjs", "quota.mjs", "snapshot.mjs", "status.mjs", "tiktoken.mjs", "token-ranks.mjs",
]);
const PACKAGE_MODULES = ["protocol.mjs", "errors.mjs"];
const PYODIDE_LOADER = ["pyodide.mjs", "pyodide.asm.js"];

/** The same-origin URLs of what this page loaded and the store worker will load, given
 * `options` (createAgentMemory's asset options). */
export function loadedUrls(options = {}) {
  const assets = resolveAssets(options);
  const worker = new URL(".", assets.workerUrl);
  const urls = [
    location.href.split("#")[0],
    ...performance
      .getEntriesByType("resource")
      .filter((entry) => !(entry.responseStatus >= 400)) // e.g. a missing favicon
      .map((entry) => entry.name),
    ...WORKER_MODULES.map((name) => new URL(name, worker).href),
    ...PACKAGE_MODULES.map((name) => new URL(`../${name}`, worker).href),
    ...PYODIDE_LOADER.map((name) => new URL(name, assets.pyodideUrl).href),
  ];
  return [...new Set(urls)].filter((url) => new URL(url).origin === location.origin);
}

/**
 * Register the service worker at `swUrl` (default "/pymemory-sw.mjs"; a copy of the
 * package's sw.mjs) and have it cache what this visit loaded. Resolves with
 * { cached, failed } (URLs) once they are cached. `options`: the asset options the app
 * gives createAgentMemory (assetsUrl, workerUrl, pyodideUrl), and `timeoutMs` (default
 * 60 s) for the whole of it. Rejects with a MemoryError `offline_failed` where the browser
 * has no service workers, registering or caching failed, or it took longer than that.
 */
export async function registerOffline(swUrl = "/pymemory-sw.mjs", options = {}) {
  const fail = (why) => new MemoryError("offline_failed", `pymemory: offline caching failed: ${why}`);
  if (typeof navigator === "undefined" || !navigator.serviceWorker) throw fail("this browser has no service workers");
  const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(fail(`no answer within ${timeoutMs} ms (timeoutMs)`)), timeoutMs);
  });
  const work = (async () => {
    try {
      await navigator.serviceWorker.register(swUrl, { type: "module" });
    } catch (err) {
      throw fail(`${swUrl} did not register (${err?.message ?? err})`);
    }
    const { active } = await navigator.serviceWorker.ready;
    const urls = loadedUrls(options);
    return new Promise((resolve, reject) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = ({ data }) => (data.ok ? resolve(data) : reject(fail(data.error)));
      active.postMessage({ op: "pymemory-precache", urls }, [channel.port2]);
    });
  })();
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
