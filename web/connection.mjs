// The page's connection to the pymemory store, shared by every client of the page: one
// per worker URL (the registry, connection()). It knows the store's status and who on this
// page listens to which database's changes; calls go through StoreTabs (leader.mjs: this
// tab's worker when it leads, the leader tab's otherwise). Nothing waits forever: boot has
// a timeout and a worker that cannot start rejects.

import { MemoryError } from "./errors.mjs";
import {
  ASSET_DEFAULTS,
  CONNECTION_DEFAULTS,
  CONNECTION_OPTIONS,
  checkOptions,
  DEFAULT_BOOT_TIMEOUT_MS,
  modelRequest,
  resolveAssets,
} from "./options.mjs";
import { encodeParams } from "./protocol.mjs";
import { StoreTabs } from "./leader.mjs";

/** How often status.models.embedding is refreshed while background embedding runs, in ms. */
const EMBEDDING_POLL_MS = 1000;

export class Connection {
  constructor(assets, options) {
    this.assets = assets;
    this.options = options;
    this.status = { phase: "starting", progress: 0, ready: false, error: null };
    this.statusListeners = new Set();
    this.changeListeners = new Map(); // dbName -> Set<fn>
    this.takeoverListeners = new Set();
    this.channels = new Map(); // dbName -> BroadcastChannel (change notices)
    this.ready = new Promise((resolve, reject) => {
      this._resolveReady = resolve;
      this._rejectReady = reject;
    });
    this.ready.catch(() => {}); // surfaced through calls and status
    this.tabs = new StoreTabs(assets, options, {
      workerStatus: (s, role) => {
        this._setStatus(this._fromWorker(s, role));
        if (s.ready) this._resolveReady(this.status);
      },
      following: () => this._setStatus({ ...this.status, role: "follower" }),
      changed: (db, broadcast) => this._deliver(db, broadcast),
      failed: (err) => this._rejectReady(err),
      tookOver: () => {
        for (const fn of this.takeoverListeners) fn();
      },
    });
    if (!this.tabs.shared) return;
    const timeoutMs = options.bootTimeoutMs ?? DEFAULT_BOOT_TIMEOUT_MS;
    const timer = setTimeout(() => {
      if (this.status.ready || this.status.error) return;
      this._setStatus({ ...this.status, phase: "error", error: { code: "boot_failed", message: `no store after ${timeoutMs} ms` } });
      this._rejectReady(new MemoryError("boot_failed", `no store after ${timeoutMs} ms (${this.role})`));
    }, timeoutMs);
    this.ready.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
  }

  /** This tab's id, its role ("starting" | "leader" | "follower") and, as leader, its
   * link to the store worker (benchmarks ask it for { op: "modelStats" }). */
  get tab() {
    return this.tabs.tab;
  }

  get role() {
    return this.tabs.role;
  }

  get link() {
    return this.tabs.link;
  }

  /**
   * Call `method` of database `dbName` once the store is ready; resolves with its result.
   * `unlock` ({ id, passphrase | key: CryptoKey, iterations? }): an encrypted database's
   * key, sent with every call of its client (structured-cloned, never JSON), so that the
   * worker of whichever tab leads, now or after a takeover, checks the client's first call
   * against the store's key record and refuses calls without a key.
   */
  async call(dbName, method, params, onProgress, unlock) {
    const json = encodeParams(params); // bad input rejects before waiting for the store
    await this.ready;
    return this.tabs.send({ db: dbName, method, params: json, unlock }, onProgress, false);
  }

  /** For benchmarks: the worker's answer as is, with `ms` (time spent in the worker). */
  async rawCall(dbName, method, params, unlock) {
    await this.ready;
    return this.tabs.send({ db: dbName, method, params: encodeParams(params), unlock }, null, true);
  }

  /** `fn` gets the current status at once, then every change; returns its unsubscribe. */
  onStatus(fn) {
    this.statusListeners.add(fn);
    fn(this.status);
    return () => this.statusListeners.delete(fn);
  }

  /** `fn()` runs when a new leader tab took over the store (this tab or another): its
   * worker started afresh, so what lived only in the old one's (live sync loops) must be
   * asked for again. Returns its unsubscribe. */
  onTakeover(fn) {
    this.takeoverListeners.add(fn);
    return () => this.takeoverListeners.delete(fn);
  }

  /** `fn()` runs whenever a memory of `dbName` may have changed: by a client of this page,
   * another tab, or the store's background work. Returns its unsubscribe. */
  onChange(dbName, fn) {
    if (!this.changeListeners.has(dbName)) {
      this.changeListeners.set(dbName, new Set());
      if (typeof BroadcastChannel !== "undefined") {
        const channel = new BroadcastChannel(`pymemory:${dbName}`);
        channel.onmessage = () => this._deliver(dbName, false);
        this.channels.set(dbName, channel);
      }
    }
    const set = this.changeListeners.get(dbName);
    set.add(fn);
    return () => set.delete(fn);
  }

  /** Tell the listeners of `dbName`, on this page and in other tabs, that its memories
   * changed (a client calls it after a call that mutates). */
  notifyChange(dbName) {
    this._deliver(dbName, true);
  }

  // navigator.storage.persist(): ask the browser to keep this origin's storage under storage
  // pressure (Chromium otherwise deletes a best-effort origin's data, IndexedDB and caches,
  // when the disk runs short). Pages only (workers cannot ask), once per page; the answer
  // shows in status.storage.persisted once the store's worker has measured again.
  persist() {
    this._persisting ??= (async () => {
      const storage = globalThis.navigator?.storage;
      const granted = typeof storage?.persist === "function" ? await storage.persist().catch(() => null) : null;
      await this.call("", "storageStatus", {}).catch(() => {});
      return granted;
    })();
    return this._persisting;
  }

  /** Attach local `models` (the `models` option: ["embedder", "summarizer"] or
   * { embedder: "multilingual-e5-small", ... }) to database `dbName`; their state shows in
   * status.models. */
  async loadModels(dbName, models, unlock) {
    const want = modelRequest(models);
    const kinds = Object.keys(want);
    const mark = (state, extra = {}) =>
      this._setStatus({
        ...this.status,
        models: { ...this.status.models, ...Object.fromEntries(kinds.map((m) => [m, state])), ...extra },
      });
    mark("loading");
    try {
      const result = await this.call(dbName, "loadModels", want, undefined, unlock);
      mark("ready", { info: result, ...(result.embedding ? { embedding: result.embedding } : {}) });
      this.notifyChange(dbName);
      this._followEmbedding(dbName, result.embedding, unlock);
      return result;
    } catch (err) {
      mark("error", { error: { code: err.code, message: err.message } });
      throw err;
    }
  }

  // Background embedding (a store re-embedded after a change of embedder, or items
  // stored before the embedder loaded): status.models.embedding follows stats().embedding
  // every EMBEDDING_POLL_MS, one request at a time, until every item is embedded.
  _followEmbedding(dbName, embedding, unlock) {
    if (!embedding || embedding.embedded >= embedding.items) return;
    setTimeout(async () => {
      let now;
      try {
        now = (await this.call(dbName, "stats", {}, undefined, unlock)).embedding;
      } catch {
        return;
      }
      if (!now) return;
      this._setStatus({ ...this.status, models: { ...this.status.models, embedding: now } });
      this._followEmbedding(dbName, now, unlock);
    }, EMBEDDING_POLL_MS);
  }

  // The worker's status, keeping what this page tracks itself (its clients' `models` and
  // `sync`): the worker reports again after boot (model files' bytes), without them.
  _fromWorker(s, role) {
    const own = Object.fromEntries(["models", "sync"].filter((k) => this.status[k]).map((k) => [k, this.status[k]]));
    return { ...s, ...own, role };
  }

  _setStatus(s) {
    if (JSON.stringify(s) === JSON.stringify(this.status)) return;
    this.status = { ...s };
    for (const fn of this.statusListeners) fn(this.status);
  }

  _deliver(dbName, broadcast) {
    for (const fn of this.changeListeners.get(dbName) ?? []) fn();
    if (broadcast) this.channels.get(dbName)?.postMessage("changed");
  }
}

// --- the registry: one connection per page and worker URL ---------------------------------

const connections = new Map();

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
