// useAgentMemory(): seed 002's React hook over the pymemory client.
// React is a peer dependency: this module imports it and never bundles it.
//
// Server-safe: rendering (on a server, or the first render in the browser) starts nothing.
// The client starts when React subscribes, which happens only in the browser after the
// component mounted; hooks with the same options share one client, which is closed when the
// last of them unmounts. Until then the hook shows STARTING, the same on the server and in
// the first client render, so a server-rendered page hydrates without a mismatch.

import { useCallback, useSyncExternalStore } from "react";
import { checkStoreOptions, createAgentMemory, createMemoryStore, MemoryError } from "./agent-memory.mjs";
import { CLIENT_OPTIONS, checkOptions } from "./options.mjs";

/** What the hook shows before its client started (server rendering, hydration). */
export const STARTING = Object.freeze({
  memories: Object.freeze([]),
  status: Object.freeze({ phase: "starting", progress: 0, ready: false, error: null }),
  error: null,
  loaded: false,
});

// options key -> { client, store, users }: one client per set of options on the page.
const shared = new Map();

function acquire(key, clientOptions, limit) {
  let entry = shared.get(key);
  if (!entry) {
    const client = createAgentMemory(clientOptions);
    entry = { client, store: createMemoryStore(client, { limit }), users: 0 };
    shared.set(key, entry);
  }
  return entry;
}

// Close a client nobody uses, a moment later: StrictMode unmounts and mounts again at
// once, and a remount in the same task keeps the client (and its worker) it had.
function sweepSoon(key) {
  setTimeout(() => {
    const entry = shared.get(key);
    if (entry && entry.users === 0) {
      shared.delete(key);
      entry.client.close();
    }
  }, 0);
}

const notStarted = () =>
  Promise.reject(
    new MemoryError("not_ready", "useAgentMemory's client starts once the component mounted in the browser"),
  );

/**
 * const { memories, addMemory, retrieve, feedback, clear, status } =
 *   useAgentMemory({ scope: "conversation", strategy: "recent-5" });
 *
 * Every hook on a page shares one worker; a change made through any of them (or another
 * tab) refreshes the others. `status` carries boot progress: { phase, progress, ready, error }.
 * `client` is null until the component mounted in the browser.
 */
export function useAgentMemory(options = {}) {
  const { limit, ...clientOptions } = options;
  // Pure checks: a bad option throws here, in render (to an error boundary), before
  // anything starts; what only createAgentMemory checks throws when the client starts.
  checkStoreOptions({ limit });
  checkOptions(clientOptions, CLIENT_OPTIONS);
  const key = JSON.stringify([clientOptions, limit]);

  // Runs only in the browser, after mount (React subscribes in an effect). `key` captures
  // every option, so the options of the render that made this callback are the ones.
  const subscribe = useCallback(
    (onChange) => {
      const entry = acquire(key, clientOptions, limit);
      entry.users += 1;
      const stop = entry.store.subscribe(onChange);
      return () => {
        stop();
        entry.users -= 1;
        if (entry.users === 0) sweepSoon(key);
      };
    },
    [key],
  );
  const getSnapshot = useCallback(() => shared.get(key)?.store.getSnapshot() ?? STARTING, [key]);
  const snapshot = useSyncExternalStore(subscribe, getSnapshot, serverSnapshot);
  const client = shared.get(key)?.client ?? null;

  const addMemory = useCallback((input) => client?.addMemory(input) ?? notStarted(), [client]);
  const retrieve = useCallback((query, opts) => client?.retrieve(query, opts) ?? notStarted(), [client]);
  const feedback = useCallback((id, kind) => client?.feedback(id, kind) ?? notStarted(), [client]);
  const clear = useCallback((filter) => client?.clear(filter) ?? notStarted(), [client]);

  return {
    memories: snapshot.memories,
    addMemory,
    retrieve,
    feedback,
    clear,
    status: snapshot.status,
    error: snapshot.error,
    loaded: snapshot.loaded,
    client,
  };
}

const serverSnapshot = () => STARTING;
