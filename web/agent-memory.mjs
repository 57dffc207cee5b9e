// pymemory's JavaScript client: createAgentMemory() talks to the pymemory Web Worker
// (Pyodide + IndexedDB) over postMessage. All clients of a page share one connection, and
// all tabs of an origin one worker (connection.mjs: the leader tab runs it).
// Failures reject with a MemoryError whose `code` is stable (see ERROR_CODES); no call
// and no `ready` can hang: a worker that cannot start rejects with `boot_failed`; a client
// method never throws synchronously (bad arguments reject too).

import { ERROR_CODES, MemoryError } from "./errors.mjs";
import {
  ASSET_DEFAULTS,
  CONNECTION_OPTIONS,
  checkOptions,
  Connection,
  DEFAULT_BOOT_TIMEOUT_MS,
  optionChecks,
  resolveAssets,
} from "./connection.mjs";

export { ASSET_DEFAULTS, DEFAULT_BOOT_TIMEOUT_MS, ERROR_CODES, MemoryError, resolveAssets };

// --- strategies: the same values as Python's pymemory.retrieval.strategies ---------------------

const list = (values) => (Array.isArray(values[0]) ? values[0] : values);
const given = (obj) => Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));

export const strategies = Object.freeze({
  timeWindow: ({ hours = null, sinceMs = null, untilMs = null } = {}) => ({
    kind: "time_window",
    hours,
    since_ms: sinceMs,
    until_ms: untilMs,
  }),
  byTag: (tags, { match = "any" } = {}) => ({
    kind: "by_tag",
    tags: Array.isArray(tags) ? tags : [tags],
    match,
  }),
  byType: (...types) => ({ kind: "by_type", types: list(types) }),
  byScope: (...scopes) => ({ kind: "by_scope", scopes: list(scopes) }),
  // Options left out take the core's defaults (pymemory.retrieval.strategies), kept in one place.
  // timeDecay() keeps the per-type defaults; halfLifeHours and/or floor set one decay for
  // every type; byType overrides single types: { tool_result: { halfLifeHours: 6 } }.
  timeDecay: ({ halfLifeHours, floor, byType, queryWindow } = {}) =>
    given({
      kind: "time_decay",
      half_life_hours: halfLifeHours,
      floor,
      by_type:
        byType === undefined
          ? undefined
          : Object.fromEntries(
              Object.entries(byType).map(([type, rule]) => [
                type,
                given({ half_life_hours: rule?.halfLifeHours, floor: rule?.floor }),
              ]),
            ),
      query_window: queryWindow,
    }),
  feedbackWeight: ({ liked, disliked, important } = {}) =>
    given({ kind: "feedback_weight", liked, disliked, important }),
  fusion: ({ method, k, lexical, dense, power, depth, context } = {}) =>
    given({ kind: "fusion", method, k, lexical, dense, power, depth, context }),
  relevanceFloor: ({ minDense, minLexical } = {}) =>
    given({ kind: "relevance_floor", min_dense: minDense, min_lexical: minLexical }),
  compose: (...parts) => ({ kind: "compose", strategies: list(parts) }),
});

// Seed 002's presets: "recent-5" (the five newest), "all" (default ranking, nothing
// dropped), "by-tag" (needs `tags`), "custom" (needs `custom`: a strategy object).
export const PRESETS = Object.freeze(["recent-5", "all", "by-tag", "custom"]);

export function resolveStrategy(strategy, { tags, custom } = {}) {
  if (strategy == null || strategy === "all") return { strategy: null, listing: {} };
  if (strategy === "recent-5") return { strategy: null, listing: { limit: 5 } };
  if (strategy === "by-tag") {
    if (!tags || !tags.length) throw new MemoryError("invalid_strategy", '"by-tag" needs tags');
    return { strategy: strategies.byTag(tags), listing: { tags } };
  }
  if (strategy === "custom") {
    if (!custom || typeof custom !== "object") {
      throw new MemoryError("invalid_strategy", '"custom" needs a `custom` strategy object');
    }
    return { strategy: custom, listing: null };
  }
  if (typeof strategy === "object") return { strategy, listing: null };
  throw new MemoryError(
    "invalid_strategy",
    `unknown strategy ${JSON.stringify(strategy)}; use ${PRESETS.join(", ")} or a strategy object`,
  );
}

// --- the shared worker connection ----------------------------------------------------

/** Local models a client can ask for: MiniLM embeddings, the SmolLM2 summarizer. */
export const MODELS = Object.freeze(["embedder", "summarizer"]);

const connections = new Map();

// What the worker and the connection use for an option left out (worker/memory-worker.mjs).
const CONNECTION_DEFAULTS = Object.freeze({
  bootTimeoutMs: DEFAULT_BOOT_TIMEOUT_MS,
  tabs: "shared",
  durability: "strict",
  ortThreads: 1,
  modelWorker: true,
  pyodideSnapshot: true,
  feedbackFlushMs: 3000,
  autoArchiveDays: null,
  storageReserveBytes: 32 * 1024 * 1024,
});

/** The page's connection to the worker at the resolved `workerUrl` (one per URL). Its
 * options are the first caller's: a later caller that gives one of them another value
 * gets invalid_input rather than a connection that silently ignores it. */
export function connection(options = {}) {
  checkOptions(options, CONNECTION_OPTIONS);
  const assets = resolveAssets(options);
  const { assetsUrl, ...rest } = options;
  for (const name of Object.keys(ASSET_DEFAULTS)) delete rest[name];
  let conn = connections.get(assets.workerUrl);
  if (!conn) {
    conn = new Connection(assets, rest);
    connections.set(assets.workerUrl, conn);
    return conn;
  }
  const given = (name) => options[name] !== undefined || (options.assetsUrl !== undefined && name in ASSET_DEFAULTS);
  const differs = [
    ...Object.keys(ASSET_DEFAULTS).filter((name) => given(name) && assets[name] !== conn.assets[name]),
    ...Object.keys(rest).filter(
      (name) => given(name) && rest[name] !== (conn.options[name] ?? CONNECTION_DEFAULTS[name]),
    ),
  ];
  if (differs.length) {
    throw new MemoryError(
      "invalid_input",
      `option ${differs[0]} differs from this page's connection to ${assets.workerUrl}, which` +
        " every client of the page shares and which the first client's options made; give" +
        " every client the same value, or leave it out",
    );
  }
  return conn;
}

// --- the client ----------------------------------------------------------------------

const MUTATIONS = new Set([
  "addMemory",
  "addMany",
  "update",
  "delete",
  "feedback",
  "clear",
  "archiveOlderThan",
  "importJsonl",
  "sweep",
]);

// The `encryption` option as it travels with every call of its client: its secret and a
// random id the store worker knows the client by once the secret opened the database.
function unlockOf(encryption) {
  if (encryption == null) return undefined;
  const bad = (message) => new MemoryError("invalid_input", `encryption: ${message}`);
  if (typeof encryption !== "object" || Array.isArray(encryption)) {
    throw bad("must be { passphrase } or { key: CryptoKey }");
  }
  const { passphrase, key, iterations, ...rest } = encryption;
  if (Object.keys(rest).length) throw bad(`unknown option(s) ${Object.keys(rest).join(", ")}`);
  if ((passphrase == null) === (key == null)) throw bad("give exactly one of passphrase or key");
  if (passphrase != null && (typeof passphrase !== "string" || !passphrase)) {
    throw bad("passphrase must be a non-empty string");
  }
  if (key != null) {
    if (typeof CryptoKey === "undefined" || !(key instanceof CryptoKey)) throw bad("key must be a CryptoKey");
    if (key.algorithm?.name !== "AES-GCM" || key.algorithm.length !== 256) {
      throw bad("key must be an AES-GCM key of 256 bits");
    }
    if (!key.usages.includes("encrypt") || !key.usages.includes("decrypt")) {
      throw bad('key must allow "encrypt" and "decrypt"');
    }
  }
  if (iterations != null && !(Number.isInteger(iterations) && iterations >= 1000 && iterations <= 1e8)) {
    throw bad("iterations must be an integer from 1000 to 100000000");
  }
  const secret = passphrase != null ? { passphrase } : { key };
  return { id: crypto.randomUUID(), ...secret, ...(iterations != null ? { iterations } : {}) };
}

function asObject(name, value) {
  if (value == null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new MemoryError("invalid_input", `${name} must be an object`);
  }
  return value;
}

// Python's item.SCOPE_RE (dbName below: as the worker's api.py takes it).
const SCOPE_RE = /^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,127}$/;
const isObject = (v) => (v !== null && typeof v === "object" && !Array.isArray(v)) || "an object";

// Every option createAgentMemory takes: the client's own and its connection's. A name not
// here is refused rather than ignored: a typo such as `presist: true` would otherwise
// silently keep the default. `strategy` and `encryption` are checked below, with their
// own messages.
const OPTIONS = Object.freeze({
  dbName: (v) => (typeof v === "string" && v.length >= 1 && v.length <= 128) || "a string of 1 to 128 characters",
  scope: (v) =>
    (typeof v === "string" && SCOPE_RE.test(v)) ||
    "a string of 1 to 128 letters, digits and _.:/@- that starts with a letter or digit",
  strategy: () => true,
  tags: optionChecks.nullOr(
    (v) => (Array.isArray(v) && v.every((t) => typeof t === "string" && t !== "")) || "an array of non-empty strings",
  ),
  custom: optionChecks.nullOr(isObject),
  models: optionChecks.nullOr(
    (v) => (Array.isArray(v) && v.every((m) => MODELS.includes(m))) || `an array of ${MODELS.map((m) => `"${m}"`).join(", ")}`,
  ),
  encryption: () => true,
  persist: optionChecks.boolean,
  ...CONNECTION_OPTIONS,
});

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
 * wrong_key); asset locations: assetsUrl (the package folder) and the overrides in
 * ASSET_DEFAULTS (workerUrl, wheelsUrl, modelsUrl, pyodideUrl, onnxruntimeUrl, tiktokenUrl).
 * Throws MemoryError invalid_input (invalid_strategy for a bad strategy) naming the
 * option for an unknown option or a value of the wrong type or range, before anything
 * starts or is written.
 */
export function createAgentMemory(options = {}) {
  checkOptions(options, OPTIONS);
  const {
    dbName = "pymemory",
    scope = "conversation",
    strategy = "all",
    tags,
    custom,
    models,
    encryption,
    persist = false,
    ...connectionOptions
  } = options;
  // Per client, never a connection option: the connection (and its worker) is shared.
  const unlock = unlockOf(encryption);
  const resolved = resolveStrategy(strategy, { tags, custom });
  const conn = connection(connectionOptions);
  let closed = false;

  async function call(method, params, onProgress) {
    if (closed) throw new MemoryError("closed", "this memory client is closed");
    const result = await conn.call(dbName, method, params, onProgress, unlock);
    if (MUTATIONS.has(method)) conn._emit(dbName);
    return result;
  }

  const opened = conn.ready.then(() => call("open", {}));
  opened.catch(() => {});
  // Persistent storage: the answer shows in status.storage.persisted (not awaited by
  // `ready`: a browser may ask the user).
  if (persist) conn.persist().catch(() => {});
  // Local models load after the store opens; until then retrieval is BM25 only and new
  // items keep their rule summaries. Progress shows in status.models.
  const modelsLoaded = models?.length
    ? opened.then(() => conn.loadModels(dbName, models, unlock))
    : Promise.resolve({});
  modelsLoaded.catch(() => {});

  const client = {
    dbName,
    scope,
    strategy: resolved.strategy,
    // What the hook lists: a `list()` filter for the presets, null to rank with `strategy`.
    listing: resolved.listing,
    get status() {
      return conn.status;
    },
    ready: opened.then(() => conn.status),
    /** Resolves when the requested local models are attached (see `models`). */
    modelsReady: modelsLoaded,
    // `fn` gets the current status at once, then every change.
    onStatus(fn) {
      conn.statusListeners.add(fn);
      fn(conn.status);
      return () => conn.statusListeners.delete(fn);
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
    },
  };
  return client;
}

function stripNull(obj) {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v != null));
}

// A framework-free store of the memories a client lists under its strategy, for hooks:
// subscribe/getSnapshot in the shape useSyncExternalStore wants.
/** The options of createMemoryStore (and useAgentMemory's own): `limit`, how many
 * memories it lists, a whole number from 1 to 100000. Throws invalid_input. */
export function checkStoreOptions(options) {
  checkOptions(options ?? {}, { limit: optionChecks.wholeIn(1, 100_000) });
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
globalThis.__pymemory ??= {
  open: (dbName, options = {}) => createAgentMemory({ ...options, dbName }),
  MemoryError,
};
