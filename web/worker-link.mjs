// The leader tab's link to its store worker (worker/memory-worker.mjs): starts it, sends
// it `init` with the asset folders, and matches its answers to calls by id (the messages
// are in protocol.mjs). Nothing waits forever: boot has a timeout, and a worker that
// cannot start or stops answering rejects `ready` and every call in flight.

import { MemoryError } from "./errors.mjs";
import { DEFAULT_BOOT_TIMEOUT_MS } from "./options.mjs";
import { errorFromWire } from "./protocol.mjs";

export class WorkerLink {
  /** `onStatus(status)`: every status the worker reports; `onChange(db)`: background
   * work in the worker changed a memory of database `db`. */
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
    if (typeof Worker === "undefined") {
      this.fail(
        "boot_failed",
        "there is no Web Worker here (server rendering or Node.js?): create pymemory's client in the " +
          "browser, e.g. with useAgentMemory in a client component or createAgentMemory in an effect",
      );
      return;
    }
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

  /** Send `message` ({ op, ... }); resolves with its answer's result (`raw`: the whole
   * answer, { ok, result | error, ms }). */
  request(message, onProgress, raw = false) {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress, raw });
      this.worker.postMessage({ ...message, id });
    });
  }

  /** A method call, once the worker is ready. `params`: JSON text; `unlock`: the calling
   * client's key for an encrypted database (see Connection.call). */
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
    else entry.reject(errorFromWire(data.error));
  }

  /** The worker cannot serve any more: reject `ready` and every call in flight. */
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
