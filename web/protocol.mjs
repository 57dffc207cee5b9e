// The one protocol between a page and pymemory's store worker: the JSON API's methods,
// which of them change memories, how parameters and errors travel. The client
// (agent-memory.mjs, connection.mjs, leader.mjs, worker-link.mjs) and the worker
// (worker/dispatch.mjs) import it; tests/rpc/test_protocol.py checks METHODS against the
// Python API (RpcApi's `_m_<name>` methods, the agent primitives' `<area>.<name>` ones and
// the table of mutations in pymemory.browser.rpc) and against the .d.ts.
//
// Messages, page -> worker (worker-link.mjs; a follower tab's calls reach the leader's
// worker through leader.mjs first):
//   { id, op: "init", options }                       -> { id, ok, result: status }
//   { id, op: "call", db, method, params, unlock? }   -> { id, ok, result, ms } | { id, ok: false, error }
//       params: JSON text (encodeParams), parsed and checked in Python;
//       unlock: an encrypted database's key, with every call of a client that has one:
//       { id, passphrase | key: CryptoKey, iterations? } (Python: rpc Unlock)
//   { id, op: "modelStats" }                          -> { id, ok, result }  (benchmarks)
// worker -> page:
//   { op: "status", status }          boot progress, then ready or an error
//   { op: "change", db, kind, itemId }  background work changed a memory
//   { op: "progress", id, done, total } progress of a long call (importJsonl)
// Internal, between instances of the worker file: { op: "prefetch" } -> { op: "prefetched" }
// (worker/asset-cache.mjs) and { op: "snapshot" } -> { op: "snapshotted" } (worker/snapshot.mjs).
// Errors travel as { code, message, retryable? } (wireError) so the stable code survives the trip.

import { ERROR_CODES, MemoryError } from "./errors.mjs";

export { ERROR_CODES, MemoryError };

// One method: `client`, the member of a createAgentMemory() client that calls it ("a.b":
// member b of client.a; null: called by the client or connection themselves, or only
// through connection().call); `mutates`: it changes the database's memories, so a
// client's subscribers (the hook) refresh after it succeeds.
const method = (client, mutates = false) => Object.freeze({ client, mutates });

/** Every method of the JSON API the store worker's Python serves, by name. */
export const METHODS = Object.freeze({
  open: method(null), // the client's `ready`: opens the database
  close: method(null),
  addMemory: method("addMemory", true),
  addMany: method("addMany", true),
  get: method("get"),
  history: method("history"),
  update: method("update", true),
  delete: method("delete", true),
  list: method("list"),
  retrieve: method("retrieve"), // also client.debug
  feedback: method("feedback", true),
  flush: method("flush"),
  clear: method("clear", true),
  archiveOlderThan: method("archiveOlderThan", true),
  searchArchive: method("searchArchive"),
  sweep: method("sweep", true),
  stats: method("stats"),
  exportJsonl: method("exportJsonl"),
  importJsonl: method("importJsonl", true),
  loadModels: method(null), // the `models` option
  modelsIdle: method(null), // tests and benchmarks: wait for the models' background work
  embed: method(null), // tests: embeddings of texts
  runKvConformance: method("runKvConformance"),
  sync: method("sync", true), // one round with a CouchDB hub (the `sync` option); pulls change memories
  syncStatus: method(null), // the client polls it during a round (status.sync.round)
  // The agent primitives, `<area>.<name>`, on the same database.
  "blocks.open": method("blocks.open"),
  "blocks.get": method("blocks.get"),
  "blocks.list": method("blocks.list"),
  "blocks.render": method("blocks.render"),
  "blocks.message": method("blocks.message"),
  "blocks.setValue": method("blocks.setValue"),
  "structured.put": method("structured.put"),
  "structured.get": method("structured.get"),
  "structured.list": method("structured.list"),
  "structured.search": method("structured.search"),
  "structured.delete": method("structured.delete"),
  "structured.history": method("structured.history"),
  "structured.decay": method("structured.decay"),
  "tools.call": method("callTool"),
  "tools.schemas": method("toolSchemas"),
  "checkpoints.save": method("checkpoints.save"),
  "checkpoints.latest": method("checkpoints.latest"),
  "checkpoints.list": method("checkpoints.list"),
  "checkpoints.load": method("checkpoints.load"),
  "checkpoints.deleteRun": method("checkpoints.deleteRun"),
  "checkpoints.runs": method("checkpoints.runs"),
  "observer.configure": method("observer.configure"),
  "observer.noteStep": method("observer.noteStep"),
  "observer.flush": method("observer.flush"),
  "observer.status": method("observer.status"),
  "observer.list": method("observer.list"),
  "observer.prompt": method("observer.prompt"),
});

/** The methods after which a client tells its subscribers that memories changed. */
export const MUTATIONS = Object.freeze(new Set(Object.keys(METHODS).filter((name) => METHODS[name].mutates)));

/** Methods the worker answers itself, in JavaScript (never reaching Python):
 * storageStatus measures the origin's storage again (Connection.persist). */
export const WORKER_METHODS = Object.freeze(["storageStatus"]);

/** The one method served before the token ranks are parsed: the client's `open`. */
export const OPEN = "open";

/** The JSON text of a call's parameters; a value JSON cannot carry (a function, a
 * symbol, NaN, Infinity) is invalid_input naming it. */
export function encodeParams(params) {
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

/** An error as it travels: { code, message, retryable? } ("internal" when it has no code). */
export function wireError(err) {
  const out = { code: err?.code ?? "internal", message: String(err?.message ?? err) };
  if (typeof err?.retryable === "boolean") out.retryable = err.retryable;
  return out;
}

/** A failed answer: { ok: false, error: { code, message } }. */
export function failure(code, message) {
  return { ok: false, error: { code, message: String(message) } };
}

/** The MemoryError of a travelled { code, message, retryable? }. */
export function errorFromWire(error) {
  return new MemoryError(error.code, error.message, { retryable: error.retryable });
}

/** The result of an answer { ok, result | error }, or its MemoryError thrown. */
export function resultOf(answer) {
  if (answer.ok) return answer.result;
  throw errorFromWire(answer.error);
}
