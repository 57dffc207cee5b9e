// Type declarations for web/offline.mjs (pymemory/offline: offline from the first visit).

import type { CreateAgentMemoryOptions } from "./agent-memory.js";

/** The asset options the app gives createAgentMemory, as far as offline caching needs them. */
export type OfflineAssetOptions = Pick<CreateAgentMemoryOptions, "assetsUrl" | "workerUrl" | "pyodideUrl">;

/** The store worker's modules (worker/), which the service worker caches. */
export declare const WORKER_MODULES: readonly string[];

/** The same-origin URLs this page loaded and the store worker will load. */
export declare function loadedUrls(options?: OfflineAssetOptions): string[];

/**
 * Register the service worker at `swUrl` (default "/pymemory-sw.mjs": a copy of the
 * package's sw.mjs) and have it cache what this visit loaded. Resolves once they are
 * cached; rejects where the browser has no service workers.
 */
export declare function registerOffline(
  swUrl?: string,
  options?: OfflineAssetOptions,
): Promise<{ ok: true; cached: string[]; failed: string[] }>;
