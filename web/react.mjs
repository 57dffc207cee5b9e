// useAgentMemory(): seed 002's React hook over the pymemory client.
// React is a peer dependency: this module imports it and never bundles it.

import { useCallback, useMemo, useSyncExternalStore } from "react";
import { checkStoreOptions, createAgentMemory, createMemoryStore } from "./agent-memory.mjs";

/**
 * const { memories, addMemory, retrieve, feedback, clear, status } =
 *   useAgentMemory({ scope: "conversation", strategy: "recent-5" });
 *
 * Every hook on a page shares one worker; a change made through any of them (or another
 * tab) refreshes the others. `status` carries boot progress: { phase, progress, ready, error }.
 */
export function useAgentMemory(options = {}) {
  const { limit, ...clientOptions } = options;
  const key = JSON.stringify([clientOptions, limit]);
  // `key` captures every option, so one client and store live as long as the options do.
  const { client, store } = useMemo(() => {
    checkStoreOptions({ limit }); // before the client starts anything
    const client = createAgentMemory(clientOptions);
    return { client, store: createMemoryStore(client, { limit }) };
  }, [key]);
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);

  const addMemory = useCallback((input) => client.addMemory(input), [client]);
  const retrieve = useCallback((query, opts) => client.retrieve(query, opts), [client]);
  const feedback = useCallback((id, kind) => client.feedback(id, kind), [client]);
  const clear = useCallback((filter) => client.clear(filter), [client]);

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
