// The error every pymemory call rejects with: a MemoryError whose `code` is stable.

export const ERROR_CODES = Object.freeze([
  "invalid_input", // wrong types, missing or unknown fields, values that are not JSON
  "invalid_strategy", // an unknown or malformed retrieval strategy
  "invalid_import", // a malformed JSON Lines import (message names the line)
  "not_found", // no memory with that id (or it expired / was archived)
  "conflict", // an imported id exists (pass onConflict), or the item left expectedVersion
  "schema_mismatch", // the database was written by a newer pymemory
  "storage_error", // IndexedDB failed (aborted transaction, disk error); nothing was written
  "quota_exceeded", // the write would cross the storage reserve; nothing was written, deletes still work
  "closed", // the client or database was closed
  "wrong_key", // an encrypted store refused the key or passphrase; nothing was written
  "sync_failed", // a sync round failed (server unreachable, timed out, HTTP error, not CouchDB)
  "sync_integrity", // the sync server served a replayed, moved or forged encrypted record
  "boot_failed", // the worker or an asset could not load (message names the URL), or boot timed out
  "offline_failed", // registerOffline: no service workers, or the service worker did not register or cache in time
  "worker_failed", // the worker stopped while calls were in flight; retry after reload
  "leader_lost", // the tab running the store closed during the call; it may have been applied
  "not_ready", // a call reached the worker before it was initialised
  "unknown_method", // the worker does not know the method (version mismatch)
  "model_unavailable", // a local model could not load (not built or not served)
  "embedder_unavailable", // the embedding model could not load
  "llm_error", // a model call failed (HTTP error, network, malformed reply): observer.flush
  "internal", // a bug: please report it
]);

// `retryable` (only on the errors that say, e.g. sync_failed and storage_error): true
// when the same call may succeed later (the hub was down, answered 5xx or timed out),
// false when it would fail the same way (wrong credentials, not a CouchDB database).
export class MemoryError extends Error {
  constructor(code, message, options = undefined) {
    super(message);
    this.name = "MemoryError";
    this.code = code;
    if (typeof options?.retryable === "boolean") this.retryable = options.retryable;
  }
}
