// The page's connection to the pymemory store, shared by every client of the page.
//
// One store worker per origin and worker URL owns the store: the tab that holds a Web Lock
// (the leader) runs the worker; the other tabs (followers) forward their calls to it over
// a BroadcastChannel. When the leader's tab closes or crashes, the browser releases its
// lock and the next tab in the lock's queue takes over: it starts its own worker, which
// loads the store from IndexedDB, and announces itself.
//
// Calls in flight when the leader goes: a call the old leader never acknowledged is sent
// again to the new one (it was never applied); an acknowledged call without an answer
// rejects with `leader_lost` (it may or may not have been applied: retry if that is safe).
// Nothing waits forever: boot has a timeout and a worker that cannot start rejects.

import { MemoryError } from "./errors.mjs";

// Where the assets are. Defaults fit the npm package served as-is: the package folder
// holds worker/ and wheels/, and the npm dependencies are its siblings in node_modules/.
const PACKAGE_URL = new URL("./", import.meta.url).href;
export const ASSET_DEFAULTS = Object.freeze({
  workerUrl: "worker/memory-worker.mjs",
  wheelsUrl: "wheels/",
  modelsUrl: "models/",
  pyodideUrl: "../pyodide/",
  onnxruntimeUrl: "../onnxruntime-web/dist/",
  tiktokenUrl: "../js-tiktoken/dist/",
});
export const DEFAULT_BOOT_TIMEOUT_MS = 120_000;

/** The asset URLs `options` ask for: `assetsUrl` (the package folder) and per-asset overrides. */
export function resolveAssets(options = {}) {
  const here = globalThis.location?.href ?? PACKAGE_URL;
  const check = (name, value) => {
    if (value != null && typeof value !== "string" && !(value instanceof URL)) {
      throw new MemoryError("invalid_input", `${name} must be a URL string`);
    }
    return value;
  };
  const base = new URL(check("assetsUrl", options.assetsUrl) ?? PACKAGE_URL, here).href;
  const root = base.endsWith("/") ? base : `${base}/`;
  const out = {};
  for (const [name, fallback] of Object.entries(ASSET_DEFAULTS)) {
    const url = new URL(check(name, options[name]) ?? fallback, root).href;
    out[name] = name === "workerUrl" || url.endsWith("/") ? url : `${url}/`;
  }
  return out;
}

// --- options: every one checked before anything starts -----------------------------------

// A check returns true for a good value, else what the value must be. `undefined` is always
// "not given" (the default); `null` only where a check accepts it.
const wholeIn = (low, high) => (v) => (Number.isSafeInteger(v) && v >= low && v <= high) || `a whole number from ${low} to ${high}`;
const positive = (v) => (typeof v === "number" && Number.isFinite(v) && v > 0) || "a finite number > 0";
export const optionChecks = {
  boolean: (v) => typeof v === "boolean" || "true or false",
  oneOf: (...values) => (v) => values.includes(v) || `one of ${values.map((x) => JSON.stringify(x)).join(", ")}`,
  wholeIn,
  positive,
  nullOr: (check) => (v) => v === null || check(v),
};

// The options of a page's connection, shared by every client of the page (the first
// client's win). setTimeout fires at once for a delay over 2**31 - 1 ms, hence that bound.
export const CONNECTION_OPTIONS = Object.freeze({
  assetsUrl: (v) => typeof v === "string" || v instanceof URL || "a URL string",
  ...Object.fromEntries(
    Object.keys(ASSET_DEFAULTS).map((name) => [name, (v) => typeof v === "string" || v instanceof URL || "a URL string"]),
  ),
  bootTimeoutMs: wholeIn(1, 2 ** 31 - 1),
  tabs: optionChecks.oneOf("shared", "own"),
  durability: optionChecks.oneOf("strict", "relaxed"),
  ortThreads: wholeIn(1, 64),
  modelWorker: optionChecks.boolean,
  pyodideSnapshot: optionChecks.boolean,
  feedbackFlushMs: positive,
  autoArchiveDays: optionChecks.nullOr(positive),
  storageReserveBytes: wholeIn(0, Number.MAX_SAFE_INTEGER),
});

const shown = (v) => {
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (v === null || ["number", "boolean", "bigint", "undefined"].includes(typeof v)) return String(v);
  return Array.isArray(v) ? "an array" : `a ${typeof v}`;
};

// The edit distance of two short names (for "did you mean").
function distance(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

/** Throw invalid_input naming the first option of `options` that `checks` does not know
 * (with the nearest known name) or whose value its check refuses. */
export function checkOptions(options, checks) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new MemoryError("invalid_input", `options must be an object, not ${shown(options)}`);
  }
  for (const [name, value] of Object.entries(options)) {
    if (!Object.hasOwn(checks, name)) {
      const near = Object.keys(checks)
        .map((known) => [distance(name.toLowerCase(), known.toLowerCase()), known])
        .sort((a, b) => a[0] - b[0])[0];
      const hint = near && near[0] <= Math.max(2, name.length / 3) ? ` (did you mean ${near[1]}?)` : "";
      throw new MemoryError("invalid_input", `unknown option ${JSON.stringify(name)}${hint}`);
    }
    if (value === undefined) continue;
    const ok = checks[name](value);
    if (ok !== true) throw new MemoryError("invalid_input", `option ${name} must be ${ok}, not ${shown(value)}`);
  }
}

export function toJson(params) {
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

const wire = (err) => ({ code: err.code ?? "internal", message: String(err.message ?? err) });

// --- the worker, in the leader's tab ----------------------------------------------------

class WorkerLink {
  constructor(assets, options, onStatus, onChange) {
    this.onStatus = onStatus;
    this.onChange = onChange;
    this.pending = new Map(); // id -> { resolve, reject, onProgress, raw }
    this.nextId = 1;
    this.failure = null;
    this.ready = new Promise((resolve, reject) => {
      this._booted = resolve;
      this._bootFailed = reject;
    });
    this.ready.catch(() => {});
    this.status = { phase: "starting", progress: 0, ready: false, error: null };
    const timeoutMs = options.bootTimeoutMs ?? DEFAULT_BOOT_TIMEOUT_MS;
    const timer = setTimeout(() => {
      const where = `${this.status.phase} ${Math.round((this.status.progress ?? 0) * 100)}%`;
      this.fail("boot_failed", `boot timed out after ${timeoutMs} ms (at ${where})`);
    }, timeoutMs);
    this.ready.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
    const { bootTimeoutMs, tabs, ...workerOptions } = options;
    try {
      this.worker = new Worker(assets.workerUrl, { type: "module", name: "pymemory" });
    } catch (err) {
      this.fail("boot_failed", `cannot start the worker ${assets.workerUrl}: ${err?.message ?? err}`);
      return;
    }
    this.worker.onmessage = ({ data }) => this._receive(data);
    this.worker.onerror = (event) => {
      event.preventDefault?.();
      const detail = event.message || "it did not load (missing, wrong MIME type or a syntax error)";
      if (!this.status.ready) this.fail("boot_failed", `the worker ${assets.workerUrl} failed: ${detail}`);
    };
    this.worker.onmessageerror = () => this.fail("worker_failed", "a worker message could not be read");
    const folders = {
      pyodide: assets.pyodideUrl,
      onnxruntime: assets.onnxruntimeUrl,
      tiktoken: assets.tiktokenUrl,
      wheels: assets.wheelsUrl,
      models: assets.modelsUrl,
    };
    this.request({ op: "init", options: { ...workerOptions, assets: folders } }).then(
      (s) => {
        this._status(s);
        if (s.error) this.fail(s.error.code, s.error.message);
        else this._booted(s);
      },
      (err) => this.fail(err.code ?? "boot_failed", err.message),
    );
  }

  // `raw`: resolve with the worker's whole answer ({ ok, result | error, ms }).
  request(message, onProgress, raw = false) {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress, raw });
      this.worker.postMessage({ ...message, id });
    });
  }

  // `unlock`: the calling client's key for an encrypted database (see _call).
  async call(db, method, params, onProgress, raw = false, unlock = undefined) {
    await this.ready;
    return this.request({ op: "call", db, method, params, unlock }, onProgress, raw);
  }

  _status(s) {
    this.status = s;
    this.onStatus(s);
  }

  _receive(data) {
    if (data.op === "status") return this._status(data.status);
    if (data.op === "change") return this.onChange(data.db);
    const entry = this.pending.get(data.id);
    if (!entry) return;
    if (data.op === "progress") {
      try {
        entry.onProgress?.(data.done, data.total);
      } catch (err) {
        console.error("pymemory: onProgress failed", err);
      }
      return;
    }
    this.pending.delete(data.id);
    if (entry.raw) entry.resolve(data);
    else if (data.ok) entry.resolve(data.result);
    else entry.reject(new MemoryError(data.error.code, data.error.message));
  }

  // The worker cannot serve any more: reject `ready` and every call in flight.
  fail(code, message) {
    if (this.failure) return;
    this.failure = new MemoryError(code, message);
    this._status({ ...this.status, phase: "error", ready: false, error: { code, message } });
    this._bootFailed(this.failure);
    for (const { reject } of this.pending.values()) reject(this.failure);
    this.pending.clear();
    this.worker?.terminate();
  }
}

// --- the page's connection: leader or follower ------------------------------------------

export class Connection {
  constructor(assets, options) {
    this.assets = assets;
    this.options = options;
    this.tab = crypto.randomUUID();
    this.role = "starting"; // "leader" | "follower"
    this.leader = null; // the leader tab's id, as a follower
    this.link = null; // the WorkerLink, as leader
    this.status = { phase: "starting", progress: 0, ready: false, error: null };
    this.statusListeners = new Set();
    this.changeListeners = new Map(); // dbName -> Set<fn>
    this.channels = new Map(); // dbName -> BroadcastChannel (change notices)
    this.calls = new Map(); // id -> a follower's call: { message, acked, resolve, reject, ... }
    this.nextId = 1;
    this.ready = new Promise((resolve, reject) => {
      this._resolveReady = resolve;
      this._rejectReady = reject;
    });
    this.ready.catch(() => {}); // surfaced through calls and status
    const locks = globalThis.navigator?.locks;
    if (options.tabs === "own" || !locks || typeof BroadcastChannel === "undefined") {
      this._lead();
      return;
    }
    this.rpc = new BroadcastChannel(`pymemory-rpc:${assets.workerUrl}`);
    this.rpc.onmessage = ({ data }) => this._onRpc(data);
    const name = `pymemory-store:${assets.workerUrl}`;
    const forever = () => new Promise(() => {}); // the lock is held for the page's life
    locks.request(name, { ifAvailable: true }, (lock) => {
      if (lock) {
        this._lead();
        return forever();
      }
      this._follow();
      // In the queue: the next tab to take over when the leader goes.
      locks.request(name, () => {
        this._lead();
        return forever();
      });
      return null;
    });
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

  _lead() {
    const wasFollower = this.role === "follower";
    this.role = "leader";
    this.leader = this.tab;
    this.link = new WorkerLink(
      this.assets,
      this.options,
      (s) => {
        this._setStatus(this._fromWorker(s, "leader"));
        this.rpc?.postMessage({ t: "status", from: this.tab, status: s });
        if (s.ready) this._resolveReady(this.status);
      },
      (db) => {
        this._emit(db, true);
        this.rpc?.postMessage({ t: "change", db });
      },
    );
    this.link.ready.catch((err) => this._rejectReady(err));
    this.rpc?.postMessage({ t: "leader", from: this.tab });
    if (wasFollower) this._leaderChanged();
  }

  _follow() {
    this.role = "follower";
    this._setStatus({ ...this.status, role: "follower" });
    this.rpc.postMessage({ t: "hello", from: this.tab });
  }

  // A new leader: resend what the old one never acknowledged; reject what it took.
  _leaderChanged() {
    for (const [id, call] of this.calls) {
      if (call.acked) {
        this.calls.delete(id);
        call.reject(
          new MemoryError(
            "leader_lost",
            `the tab running the store closed during ${call.message.method}; it may or may not have been applied (retry if that is safe)`,
          ),
        );
      } else {
        this._send(id, call);
      }
    }
  }

  _send(id, call) {
    if (this.role === "leader") {
      this.calls.delete(id);
      const { db, method, params, unlock } = call.message;
      this.link.call(db, method, params, call.onProgress, call.raw, unlock).then(call.resolve, call.reject);
    } else if (this.leader) {
      this.rpc.postMessage({ t: "call", from: this.tab, to: this.leader, id, ...call.message });
    } // else: no leader known yet; sent when one announces itself
  }

  _onRpc(data) {
    if (data.to && data.to !== this.tab) return;
    if (this.role === "leader") return this._serve(data);
    switch (data.t) {
      case "leader":
      case "status": {
        const changed = this.leader !== data.from;
        this.leader = data.from;
        if (data.t === "status") {
          this._setStatus(this._fromWorker(data.status, "follower"));
          if (data.status.ready) this._resolveReady(this.status);
        }
        if (changed) this._leaderChanged();
        break;
      }
      case "change":
        this._emit(data.db, false);
        break;
      case "ack": {
        const call = this.calls.get(data.id);
        if (call) call.acked = true;
        break;
      }
      case "progress":
        this.calls.get(data.id)?.onProgress?.(data.done, data.total);
        break;
      case "reply": {
        const call = this.calls.get(data.id);
        if (!call) break;
        this.calls.delete(data.id);
        if (call.raw) call.resolve(data.answer);
        else if (data.answer.ok) call.resolve(data.answer.result);
        else call.reject(new MemoryError(data.answer.error.code, data.answer.error.message));
        break;
      }
    }
  }

  // As leader: answer a follower.
  async _serve(data) {
    if (data.t === "hello") {
      this.rpc.postMessage({ t: "status", from: this.tab, status: this.link.status });
      return;
    }
    if (data.t !== "call") return;
    const reply = (answer) => this.rpc.postMessage({ t: "reply", to: data.from, id: data.id, answer });
    this.rpc.postMessage({ t: "ack", to: data.from, id: data.id });
    const progress = (done, total) =>
      this.rpc.postMessage({ t: "progress", to: data.from, id: data.id, done, total });
    try {
      reply(await this.link.call(data.db, data.method, data.params, progress, true, data.unlock));
    } catch (err) {
      reply({ ok: false, error: wire(err) });
    }
  }

  // The worker's status, keeping what this page tracks itself (its clients' `models`): the
  // worker reports again after boot (model files' bytes), without them.
  _fromWorker(s, role) {
    return this.status.models ? { ...s, models: this.status.models, role } : { ...s, role };
  }

  _setStatus(s) {
    if (JSON.stringify(s) === JSON.stringify(this.status)) return;
    this.status = { ...s };
    for (const fn of this.statusListeners) fn(this.status);
  }

  // `unlock` ({ id, passphrase | key: CryptoKey, iterations? }): an encrypted database's
  // key, sent with every call of its client (structured-cloned, never JSON), so that the
  // worker of whichever tab leads, now or after a takeover, checks the client's first call
  // against the store's key record and refuses calls without a key (api.py RpcApi.memory).
  _call(db, method, params, onProgress, raw, unlock) {
    const message = { db, method, params: toJson(params), unlock }; // params: JSON text, parsed in Python
    return new Promise((resolve, reject) => {
      const id = `${this.tab}:${this.nextId++}`;
      const call = { message, acked: false, resolve, reject, onProgress, raw };
      this.calls.set(id, call);
      this._send(id, call);
    });
  }

  async call(dbName, method, params, onProgress, unlock) {
    toJson(params); // bad input rejects before waiting for the store
    await this.ready;
    return this._call(dbName, method, params, onProgress, false, unlock);
  }

  /** For benchmarks: the worker's answer as is, with `ms` (time spent in the worker). */
  async rawCall(dbName, method, params, unlock) {
    await this.ready;
    return this._call(dbName, method, params, null, true, unlock);
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

  async loadModels(dbName, models, unlock) {
    const want = Object.fromEntries(models.map((m) => [m, true]));
    const mark = (state, extra = {}) =>
      this._setStatus({
        ...this.status,
        models: { ...this.status.models, ...Object.fromEntries(models.map((m) => [m, state])), ...extra },
      });
    mark("loading");
    try {
      const result = await this.call(dbName, "loadModels", want, undefined, unlock);
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
