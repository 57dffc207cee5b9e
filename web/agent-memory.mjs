// pymemory's JavaScript client: createAgentMemory() talks to the pymemory Web Worker
// (Pyodide + IndexedDB) over postMessage. All clients of a page share one connection, and
// all tabs of an origin one worker (connection.mjs; leader.mjs: the leader tab runs it).
// Failures reject with a MemoryError whose `code` is stable (see ERROR_CODES); no call
// and no `ready` can hang: a worker that cannot start rejects with `boot_failed`; a client
// method never throws synchronously (bad arguments reject too).

import { connection } from "./connection.mjs";
import { ERROR_CODES, MemoryError } from "./errors.mjs";
import {
  ASSET_DEFAULTS,
  CLIENT_OPTIONS,
  CONNECTION_OPTIONS,
  checkOptions,
  DEFAULT_BOOT_TIMEOUT_MS,
  EMBEDDERS,
  encryptionUnlock,
  MODELS,
  modelRequest,
  resolveAssets,
  STORE_OPTIONS,
  syncOptions,
} from "./options.mjs";
import { PRESETS, resolveStrategy, strategies } from "./presets.mjs";
import { MUTATIONS, wireError } from "./protocol.mjs";

export {
  ASSET_DEFAULTS,
  connection,
  DEFAULT_BOOT_TIMEOUT_MS,
  EMBEDDERS,
  ERROR_CODES,
  MemoryError,
  MODELS,
  PRESETS,
  resolveAssets,
  resolveStrategy,
  strategies,
};

function asObject(name, value) {
  if (value == null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new MemoryError("invalid_input", `${name} must be an object`);
  }
  return value;
}

/**
 * Open (or join) a memory database in the shared worker.
 * Options: dbName ("pymemory"), scope ("conversation"), strategy ("all" | "recent-5" |
 * "by-tag" | "custom" | a strategy object), tags, custom, models (["embedder",
 * "summarizer"]), durability ("strict" | "relaxed"), feedbackFlushMs, autoArchiveDays,
 * bootTimeoutMs, tabs ("shared" | "own"), ortThreads, modelWorker (false: inference on the
 * store worker's thread), pyodideSnapshot (false: never make or restore the Pyodide memory
 * snapshot that speeds up repeat visits); persist (true: ask for persistent storage, see status.storage),
 * storageReserveBytes (room writes leave under the quota the browser reports);
 * encryption ({ passphrase } or { key: CryptoKey }, optional iterations for a
 * new store: values AES-256-GCM encrypted at rest; a wrong one rejects `ready` with
 * wrong_key); sync ({ url, auth?, live?, timeoutMs? }: a CouchDB database to sync with,
 * docs/sync.md; `ready` runs a round first, `sync()` another, status.sync follows them);
 * asset locations: assetsUrl (the package folder) and the overrides in
 * ASSET_DEFAULTS (workerUrl, wheelsUrl, modelsUrl, pyodideUrl, onnxruntimeUrl, tiktokenUrl).
 * Throws MemoryError invalid_input (invalid_strategy for a bad strategy) naming the
 * option for an unknown option or a value of the wrong type or range, before anything
 * starts or is written.
 */
export function createAgentMemory(options = {}) {
  checkOptions(options, CLIENT_OPTIONS);
  pageClients.first ??= options; // PageMemory attaches to the page's own connection
  const {
    dbName = "pymemory",
    scope = "conversation",
    strategy = "all",
    tags,
    custom,
    models,
    encryption,
    sync,
    persist = false,
    ...connectionOptions
  } = options;
  // Per client, never a connection option: the connection (and its worker) is shared.
  const unlock = encryptionUnlock(encryption);
  const syncing = syncOptions(sync);
  const resolved = resolveStrategy(strategy, { tags, custom });
  const conn = connection(connectionOptions);
  let closed = false;

  async function call(method, params, onProgress) {
    if (closed) throw new MemoryError("closed", "this memory client is closed");
    const result = await conn.call(dbName, method, params, onProgress, unlock);
    if (MUTATIONS.has(method)) conn.notifyChange(dbName);
    return result;
  }

  // A round with the hub before the store opens (a new device of an encrypted store
  // learns the store's key there); its failure shows in status.sync. While it runs,
  // status.sync.round follows it (watchRound).
  const syncRound = async (atOpen) => {
    const mark = (patch) => conn._setStatus({ ...conn.status, sync: { ...conn.status.sync, dbName, ...patch } });
    mark({ state: "syncing", round: null });
    const stopWatching = watchRound(() => conn.call(dbName, "syncStatus", {}, undefined, unlock), (round) => {
      if (conn.status.sync?.dbName === dbName && conn.status.sync.state === "syncing") mark({ round });
    });
    try {
      const result = await call("sync", { ...syncing, atOpen });
      stopWatching();
      mark(result.error ? { state: "error", error: result.error, round: null } : { state: "idle", last: result, atMs: Date.now(), error: null, round: null });
      return result;
    } catch (err) {
      stopWatching();
      mark({ state: "error", error: wireError(err), round: null });
      throw err;
    }
  };
  const opened = conn.ready.then(() => (syncing ? syncRound(true) : null)).then(() => call("open", {}));
  opened.catch(() => {});
  // A live loop runs in the leader tab's worker and ends with it: when another tab's
  // worker takes over, every live client asks it again (one round, then the loop; the
  // worker keeps one loop per database and URL). A failure shows in status.sync.
  const stopTakeover = syncing?.live
    ? conn.onTakeover(() => {
        if (!closed) opened.then(() => syncRound(true)).catch(() => {});
      })
    : null;
  // Persistent storage: the answer shows in status.storage.persisted (not awaited by
  // `ready`: a browser may ask the user).
  if (persist) conn.persist().catch(() => {});
  // Local models load after the store opens; until then retrieval is BM25 only and new
  // items keep their rule summaries. Progress shows in status.models.
  const asked = modelRequest(models);
  const modelsLoaded = Object.keys(asked).length
    ? opened.then(() => conn.loadModels(dbName, asked, unlock))
    : Promise.resolve({});
  modelsLoaded.catch(() => {});
  // Models live in the leader's worker too: a new leader loads them again (each client
  // asks; loading is idempotent), BM25 only until they are ready, as at the first open.
  const stopModelsTakeover = Object.keys(asked).length
    ? conn.onTakeover(() => {
        if (!closed) opened.then(() => conn.loadModels(dbName, asked, unlock)).catch(() => {});
      })
    : null;

  // `ready` rejects (boot_failed, wrong_key, ...) for whoever awaits it; a page that never
  // does (or code that ran where there is no Worker, e.g. during server rendering) is not
  // left with an unhandled rejection.
  const ready = opened.then(() => conn.status);
  ready.catch(() => {});

  const client = {
    dbName,
    scope,
    strategy: resolved.strategy,
    // What the hook lists: a `list()` filter for the presets, null to rank with `strategy`.
    listing: resolved.listing,
    get status() {
      return conn.status;
    },
    ready,
    /** Resolves when the requested local models are attached (see `models`). */
    modelsReady: modelsLoaded,
    // `fn` gets the current status at once, then every change.
    onStatus(fn) {
      return conn.onStatus(fn);
    },
    subscribe(fn) {
      return conn.onChange(dbName, fn);
    },

    async addMemory(input) {
      const params = typeof input === "string" ? { text: input } : asObject("input", input);
      return call("addMemory", { scope, ...params });
    },
    addMany(entries) {
      if (!Array.isArray(entries)) {
        return Promise.reject(new MemoryError("invalid_input", "entries must be an array"));
      }
      return call("addMany", {
        entries: entries.map((e) => (typeof e === "string" ? { text: e, scope } : { scope, ...e })),
      });
    },
    get: (id) => call("get", { id }),
    history: (id) => call("history", { id }),
    update: async (id, changes) => call("update", { ...asObject("changes", changes), id }),
    delete: (id) => call("delete", { id }),
    async list(filters) {
      const f = asObject("filters", filters);
      return call("list", "scope" in f ? stripNull(f) : { scope, ...f });
    },
    // Searches every scope unless `scope` is given: a `user` preference should inform a
    // `conversation` question.
    async retrieve(query, opts) {
      const o = asObject("options", opts);
      const { scope: only, ...rest } = o;
      let strat = "strategy" in rest ? rest.strategy : resolved.strategy;
      if (typeof strat === "string") strat = resolveStrategy(strat, { tags, custom }).strategy;
      if (only != null) {
        const byScope = strategies.byScope(only);
        strat = strat ? strategies.compose(strat, byScope) : byScope;
      }
      return call("retrieve", { query, ...rest, strategy: strat ?? null });
    },
    async debug(query, opts) {
      return client.retrieve(query, { ...asObject("options", opts), trace: true });
    },
    // Resolves once the feedback is stored (a page may close right after a click); pass
    // { durable: false } to only queue it for the worker's next batch.
    feedback: async (id, kind, opts) => call("feedback", { id, kind, ...asObject("options", opts) }),
    flush: () => call("flush", {}),
    async clear(filter) {
      const f = asObject("filter", filter);
      return call("clear", Object.keys(f).length ? stripNull(f) : { scope });
    },
    archiveOlderThan: async (days, opts) => call("archiveOlderThan", { days, ...asObject("options", opts) }),
    searchArchive: async (query = "", opts) => call("searchArchive", { query, ...asObject("options", opts) }),
    sweep: () => call("sweep", {}),
    stats: () => call("stats", {}),
    exportJsonl: () => call("exportJsonl", {}),
    async importJsonl(text, opts) {
      const { onProgress, ...rest } = asObject("options", opts);
      return call("importJsonl", { text, ...rest }, onProgress);
    },
    runKvConformance: () => call("runKvConformance", {}),
    // One round with the `sync` option's hub, in the worker of the tab that runs the store.
    async sync() {
      if (!syncing) throw new MemoryError("invalid_input", "sync() needs the sync option: createAgentMemory({ sync: { url } })");
      await opened;
      return syncRound(false);
    },

    // --- agent primitives: same IndexedDB database, one instance per id in the worker ---

    // Core memory blocks (Letta-style). open() returns the stored set when there is one.
    blocks: {
      open: async (setId, blocks = [], opts) =>
        call("blocks.open", { setId, blocks, ...asObject("options", opts) }),
      get: (setId, label) => call("blocks.get", { setId, label }),
      list: (setId) => call("blocks.list", { setId }),
      render: async (setId, opts) => call("blocks.render", { setId, ...asObject("options", opts) }),
      message: async (setId, opts) => call("blocks.message", { setId, ...asObject("options", opts) }),
      setValue: (setId, label, value) => call("blocks.setValue", { setId, label, value }),
    },
    // Versioned JSON facts in the "episodic" | "semantic" | "procedural" namespaces.
    structured: {
      put: async (namespace, key, value, opts) =>
        call("structured.put", { namespace, key, value, ...asObject("options", opts) }),
      get: (namespace, key) => call("structured.get", { namespace, key }),
      list: async (namespace, opts) => call("structured.list", { namespace, ...asObject("options", opts) }),
      search: async (namespace, query, opts) =>
        call("structured.search", { namespace, query, ...asObject("options", opts) }),
      delete: async (namespace, key, opts) =>
        call("structured.delete", { namespace, key, ...asObject("options", opts) }),
      history: (namespace, key) => call("structured.history", { namespace, key }),
      decay: (namespace = null) => call("structured.decay", { namespace }),
    },
    // Run one of the memory tools a model asked for; `args` may be the model's JSON text.
    callTool: async (name, args = {}, opts) =>
      call("tools.call", { name, args, ...asObject("options", opts) }),
    toolSchemas: async (opts) => call("tools.schemas", asObject("options", opts)),
    checkpoints: {
      save: (runId, state, metadata) =>
        call("checkpoints.save", metadata == null ? { runId, state } : { runId, state, metadata }),
      latest: (runId) => call("checkpoints.latest", { runId }),
      list: (runId) => call("checkpoints.list", { runId }),
      load: (runId, seq) => call("checkpoints.load", { runId, seq }),
      deleteRun: (runId) => call("checkpoints.deleteRun", { runId }),
      runs: () => call("checkpoints.runs", {}),
    },
    // Observational memory: an observer model compresses noted steps in the worker.
    observer: {
      configure: async (opts) => call("observer.configure", asObject("options", opts)),
      noteStep: (sessionId, step) => call("observer.noteStep", { sessionId, step }),
      flush: (sessionId) => call("observer.flush", { sessionId }),
      status: (sessionId) => call("observer.status", { sessionId }),
      list: (sessionId) => call("observer.list", { sessionId }),
      prompt: (sessionId) => call("observer.prompt", { sessionId }),
    },

    async close() {
      closed = true;
      stopTakeover?.();
      stopModelsTakeover?.();
    },
  };
  return client;
}

/** How often status.sync.round is refreshed while a round runs, in ms. */
const SYNC_ROUND_POLL_MS = 250;

// Ask `poll()` (the worker's syncStatus) for the running round every SYNC_ROUND_POLL_MS,
// one request at a time, and hand its `round` ({ phase, pushed, pulled, startedMs } or
// null) to `show` until the returned stop() is called. A failed poll shows nothing.
function watchRound(poll, show) {
  let stopped = false;
  let timer = null;
  const next = () => {
    timer = setTimeout(async () => {
      let state = null;
      try {
        state = await poll();
      } catch {
        state = undefined;
      }
      if (stopped) return;
      if (state !== undefined) show(state?.round ?? null);
      next();
    }, SYNC_ROUND_POLL_MS);
  };
  next();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

function stripNull(obj) {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v != null));
}

// A framework-free store of the memories a client lists under its strategy, for hooks:
// subscribe/getSnapshot in the shape useSyncExternalStore wants.
/** The options of createMemoryStore (and useAgentMemory's own): `limit`, how many
 * memories it lists, a whole number from 1 to 100000. Throws invalid_input. */
export function checkStoreOptions(options) {
  checkOptions(options ?? {}, STORE_OPTIONS);
}

export function createMemoryStore(client, options = {}) {
  checkStoreOptions(options);
  const { limit = 50 } = options;
  let snapshot = { memories: [], status: client.status, error: null, loaded: false };
  const listeners = new Set();
  let pending = null;
  let version = 0;

  const set = (patch) => {
    snapshot = { ...snapshot, ...patch };
    for (const fn of listeners) fn();
  };

  async function load() {
    const mine = ++version;
    try {
      const memories = client.listing
        ? await client.list(client.listing)
        : (await client.retrieve("", { maxItems: limit })).memories.map((m) => m.item);
      if (mine === version) set({ memories, error: null, loaded: true });
    } catch (err) {
      if (mine === version) set({ error: err, loaded: true });
    }
  }

  const refresh = () => {
    pending ??= Promise.resolve().then(() => {
      pending = null;
      return load();
    });
    return pending;
  };

  let stop = [];
  return {
    subscribe(fn) {
      listeners.add(fn);
      if (listeners.size === 1) {
        stop = [client.subscribe(refresh), client.onStatus((status) => set({ status }))];
        client.ready.then(refresh, (err) => set({ error: err, status: client.status }));
      }
      return () => {
        listeners.delete(fn);
        if (!listeners.size) for (const s of stop.splice(0)) s();
      };
    },
    getSnapshot: () => snapshot,
    refresh,
  };
}

// For end-to-end tests of apps (pymemory.testing.PageMemory drives this from Playwright):
// reach the page's databases without going through the app's UI.
// open() takes the page's first client's connection options (asset URLs, ...) unless given
// its own: it attaches to the app's connection, and reports that connection's failure.
const pageClients = { first: null };
const CONNECTION_NAMES = Object.keys(CONNECTION_OPTIONS);
const pageConnection = () =>
  Object.fromEntries(CONNECTION_NAMES.filter((n) => pageClients.first?.[n] !== undefined).map((n) => [n, pageClients.first[n]]));
globalThis.__pymemory ??= {
  open: (dbName, options = {}) => createAgentMemory({ ...pageConnection(), ...options, dbName }),
  MemoryError,
};
