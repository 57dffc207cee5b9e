// status.storage: the origin's storage as this worker sees it. `persisted`: the browser
// keeps it under storage pressure (a page asks with navigator.storage.persist(); workers
// cannot); `usage`/`quota`: navigator.storage.estimate() (Chromium reports an artificial
// quota, usage + up to 10 GiB, not the one it enforces); `reserve`: what writes leave free
// under that quota (storageReserveBytes). Measured at boot, on request (the page after
// persist(), the `storageStatus` method) and after a write fails for storage.

import { report } from "./status.mjs";

let reserveBytes = null;

/** The error codes after which the worker measures the storage again. */
export const STORAGE_ERRORS = Object.freeze(["quota_exceeded", "storage_error"]);

/** What writes leave free under the quota (the store's own reserve, for status.storage). */
export function setReserve(bytes) {
  reserveBytes = bytes;
}

export async function measureStorage() {
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

/** Measure again and report it in status.storage. */
export async function refreshStorage() {
  const storage = await measureStorage();
  report({ storage });
  return storage;
}
