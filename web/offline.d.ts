// Type declarations for web/offline.mjs (pymemory/offline: offline from the first visit).

import type { CreateAgentMemoryOptions } from "./agent-memory.js";

/** The asset options the app gives createAgentMemory, as far as offline caching needs them. */
export type OfflineAssetOptions = Pick<CreateAgentMemoryOptions, "assetsUrl" | "workerUrl" | "pyodideUrl">;

/** The store worker's modules (worker/), which the service worker caches. */
export declare const WORKER_MODULES: readonly string[];

/** The same-origin URLs this page loaded and the store worker will load. */
export declare function loadedUrls(options?: OfflineAssetOptions): string[];

/** registerOffline's options: the asset options, and a bound on the whole of it. */
export type RegisterOfflineOptions = OfflineAssetOptions & {
  /** Reject with `offline_failed` after this long (default 60000 ms). */
  timeoutMs?: number;
};

/**
 * Register the service worker at `swUrl` (default "/pymemory-sw.mjs": a copy of the
 * package's sw.mjs) and have it cache what this visit loaded. Resolves once they are
 * cached; rejects with a MemoryError `offline_failed` where the browser has no service
 * workers, registering or caching failed, or it took longer than `timeoutMs`.
 */
export declare function registerOffline(
  swUrl?: string,
  options?: RegisterOfflineOptions,
): Promise<{ ok: true; cached: string[]; failed: string[] }>;
