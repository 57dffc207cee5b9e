// pymemory's JavaScript client: createAgentMemory() talks to the pymemory Web Worker
// (Pyodide + IndexedDB) through comlink. All clients of a page share one worker.
// Failures reject with a MemoryError whose `code` is stable (see ERROR_CODES).

import * as Comlink from "comlink";

export const ERROR_CODES = Object.freeze([
  "invalid_input", // wrong types, missing or unknown fields, values that are not JSON
  "invalid_strategy", // an unknown or malformed retrieval strategy
  "invalid_import", // a malformed JSON Lines import (message names the line)
  "not_found", // no memory with that id (or it expired / was archived)
  "conflict", // an imported id already exists (pass onConflict)
  "schema_mismatch", // the database was written by a newer pymemory
  "storage_error", // IndexedDB failed (quota, aborted transaction); nothing was written
  "closed", // the client or database was closed
  "boot_failed", // the worker could not start Pyodide or install pymemory
  "not_ready", // a call reached the worker before it was initialised
  "unknown_method", // the worker does not know the method (version mismatch)
  "model_unavailable", // a local model could not load (not built or not served)
  "embedder_unavailable", // the embedding model could not load
  "llm_error", // a model call failed (HTTP error, network, malformed reply): observer.flush
  "internal", // a bug: please report it
]);

export class MemoryError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "MemoryError";
    this.code = code;
  }
}

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
  fusion: ({ method, k, lexical, dense, power, depth } = {}) =>
    given({ kind: "fusion", method, k, lexical, dense, power, depth }),
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

const DEFAULT_WORKER_URL = new URL("../worker/memory-worker.mjs", import.meta.url).href;
const connections = new Map();

function toJson(params) {
  try {
    return JSON.stringify(params ?? {}, (key, value) => {
      if (typeof value === "function" || typeof value === "symbol") {
        throw new TypeError(`${key || "value"} is a ${typeof value}, not JSON`);
      }
      if (typeof value === "number" && !Number.isFinite(value)) {
        throw new TypeError(`${key || "value"} is ${value}, not a finite number`);
      }
      return value;
    });
  } catch (err) {
    throw new MemoryError("invalid_input", String(err.message ?? err));
  }
}

class Connection {
  constructor(workerUrl, options) {
    this.worker = new Worker(workerUrl, { type: "module", name: "pymemory" });
    this.remote = Comlink.wrap(this.worker);
    this.status = { phase: "starting", progress: 0, ready: false, error: null };
    this.statusListeners = new Set();
    this.changeListeners = new Map(); // dbName -> Set<fn>
    this.channels = new Map(); // dbName -> BroadcastChannel
    this.ready = this.remote
      .init(
        options,
        Comlink.proxy((s) => this._setStatus(s)),
      )
      .then((s) => {
        this._setStatus(s);
        if (s.error) throw new MemoryError(s.error.code, s.error.message);
        return s;
      });
    this.ready.catch(() => {}); // surfaced through calls and status
    this.remote.onChange(Comlink.proxy((dbName) => this._emit(dbName, true)));
  }

  _setStatus(s) {
    if (JSON.stringify(s) === JSON.stringify(this.status)) return;
    this.status = { ...s };
    for (const fn of this.statusListeners) fn(this.status);
  }

  async call(dbName, method, params, onProgress) {
    await this.ready;
    const json = toJson(params);
    const progress = onProgress ? Comlink.proxy(onProgress) : undefined;
    let answer;
    try {
      answer = await this.remote.call(dbName, method, JSON.parse(json), progress);
    } catch (err) {
      throw new MemoryError("internal", `worker call failed: ${err?.message ?? err}`);
    }
    if (!answer.ok) throw new MemoryError(answer.error.code, answer.error.message);
    return answer.result;
  }

  async loadModels(dbName, models) {
    const want = Object.fromEntries(models.map((m) => [m, true]));
    const mark = (state, extra = {}) =>
      this._setStatus({
        ...this.status,
        models: { ...this.status.models, ...Object.fromEntries(models.map((m) => [m, state])), ...extra },
      });
    mark("loading");
    try {
      const result = await this.call(dbName, "loadModels", want);
      mark("ready", { info: result });
      this._emit(dbName);
      return result;
    } catch (err) {
      mark("error", { error: { code: err.code, message: err.message } });
      throw err;
    }
  }

  onChange(dbName, fn) {
    if (!this.changeListeners.has(dbName)) {
      this.changeListeners.set(dbName, new Set());
      if (typeof BroadcastChannel !== "undefined") {
        const channel = new BroadcastChannel(`pymemory:${dbName}`);
        channel.onmessage = () => this._emit(dbName, false);
        this.channels.set(dbName, channel);
      }
    }
    const set = this.changeListeners.get(dbName);
    set.add(fn);
    return () => set.delete(fn);
  }

  _emit(dbName, broadcast = true) {
    for (const fn of this.changeListeners.get(dbName) ?? []) fn();
    if (broadcast) this.channels.get(dbName)?.postMessage("changed");
  }
}

export function connection(workerUrl = DEFAULT_WORKER_URL, options = {}) {
  let conn = connections.get(workerUrl);
  if (!conn) {
    conn = new Connection(workerUrl, options);
    connections.set(workerUrl, conn);
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
 * "by-tag" | "custom" | a strategy object), tags, custom, workerUrl, durability
 * ("strict" | "relaxed"), feedbackFlushMs, autoArchiveDays.
 */
export function createAgentMemory(options = {}) {
  const {
    dbName = "pymemory",
    scope = "conversation",
    strategy = "all",
    tags,
    custom,
    workerUrl = DEFAULT_WORKER_URL,
    models,
    ...workerOptions
  } = options;
  if (models != null && (!Array.isArray(models) || models.some((m) => !MODELS.includes(m)))) {
    throw new MemoryError("invalid_input", `models must be a list of: ${MODELS.join(", ")}`);
  }
  const conn = connection(workerUrl, workerOptions);
  const resolved = resolveStrategy(strategy, { tags, custom });
  let closed = false;

  async function call(method, params, onProgress) {
    if (closed) throw new MemoryError("closed", "this memory client is closed");
    const result = await conn.call(dbName, method, params, onProgress);
    if (MUTATIONS.has(method)) conn._emit(dbName);
    return result;
  }

  const opened = conn.ready.then(() => call("open", {}));
  opened.catch(() => {});
  // Local models load after the store opens; until then retrieval is BM25 only and new
  // items keep their rule summaries. Progress shows in status.models.
  const modelsLoaded = models?.length
    ? opened.then(() => conn.loadModels(dbName, models))
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

    addMemory(input) {
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
    update: (id, changes) => call("update", { ...asObject("changes", changes), id }),
    delete: (id) => call("delete", { id }),
    list(filters) {
      const f = asObject("filters", filters);
      return call("list", "scope" in f ? stripNull(f) : { scope, ...f });
    },
    // Searches every scope unless `scope` is given: a `user` preference should inform a
    // `conversation` question.
    retrieve(query, opts) {
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
    debug(query, opts) {
      return client.retrieve(query, { ...asObject("options", opts), trace: true });
    },
    // Resolves once the feedback is stored (a page may close right after a click); pass
    // { durable: false } to only queue it for the worker's next batch.
    feedback: (id, kind, opts) => call("feedback", { id, kind, ...asObject("options", opts) }),
    flush: () => call("flush", {}),
    clear(filter) {
      const f = asObject("filter", filter);
      return call("clear", Object.keys(f).length ? stripNull(f) : { scope });
    },
    archiveOlderThan: (days, opts) => call("archiveOlderThan", { days, ...asObject("options", opts) }),
    searchArchive: (query = "", opts) => call("searchArchive", { query, ...asObject("options", opts) }),
    sweep: () => call("sweep", {}),
    stats: () => call("stats", {}),
    exportJsonl: () => call("exportJsonl", {}),
    importJsonl(text, opts) {
      const { onProgress, ...rest } = asObject("options", opts);
      return call("importJsonl", { text, ...rest }, onProgress);
    },
    runKvConformance: () => call("runKvConformance", {}),

    // --- agent primitives: same IndexedDB database, one instance per id in the worker ---

    // Core memory blocks (Letta-style). open() returns the stored set when there is one.
    blocks: {
      open: (setId, blocks = [], opts) =>
        call("blocks.open", { setId, blocks, ...asObject("options", opts) }),
      get: (setId, label) => call("blocks.get", { setId, label }),
      list: (setId) => call("blocks.list", { setId }),
      render: (setId) => call("blocks.render", { setId }),
      message: (setId) => call("blocks.message", { setId }),
      setValue: (setId, label, value) => call("blocks.setValue", { setId, label, value }),
    },
    // Versioned JSON facts in the "episodic" | "semantic" | "procedural" namespaces.
    structured: {
      put: (namespace, key, value, opts) =>
        call("structured.put", { namespace, key, value, ...asObject("options", opts) }),
      get: (namespace, key) => call("structured.get", { namespace, key }),
      list: (namespace, opts) => call("structured.list", { namespace, ...asObject("options", opts) }),
      search: (namespace, query, opts) =>
        call("structured.search", { namespace, query, ...asObject("options", opts) }),
      delete: (namespace, key, opts) =>
        call("structured.delete", { namespace, key, ...asObject("options", opts) }),
      history: (namespace, key) => call("structured.history", { namespace, key }),
      decay: (namespace = null) => call("structured.decay", { namespace }),
    },
    // Run one of the memory tools a model asked for; `args` may be the model's JSON text.
    callTool: (name, args = {}, opts) =>
      call("tools.call", { name, args, ...asObject("options", opts) }),
    toolSchemas: (opts) => call("tools.schemas", asObject("options", opts)),
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
      configure: (opts) => call("observer.configure", asObject("options", opts)),
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
export function createMemoryStore(client, { limit = 50 } = {}) {
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
