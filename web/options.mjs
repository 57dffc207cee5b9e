// The options of createAgentMemory() and of the page's connection: their checks (every
// one before anything starts), their defaults and the asset URLs they resolve to.

import { MemoryError } from "./errors.mjs";

// Where the assets are. Defaults fit the npm package served as-is: the package folder
// holds worker/ and wheels/, and the npm dependencies are its siblings in node_modules/.
// The folder is computed from this module's URL without the `new URL("./", import.meta.url)`
// form, which Vite rewrites to the module's own URL (so "worker/..." landed under
// ".../options.mjs/"); a query (Vite's ?v=) is dropped.
export function packageFolder(moduleUrl = import.meta.url) {
  const here = new URL(moduleUrl);
  here.search = "";
  here.hash = "";
  here.pathname = here.pathname.slice(0, here.pathname.lastIndexOf("/") + 1);
  return here.href;
}
const PACKAGE_URL = packageFolder();
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
  // A bundler that inlines import.meta.url as the source file's path (webpack) leaves a
  // file: default on an http(s) page: say so rather than start a worker that cannot load.
  if (options.assetsUrl == null && base.startsWith("file:") && /^https?:/.test(here)) {
    throw new MemoryError(
      "invalid_input",
      "pymemory's default assetsUrl is the folder of its bundled source file (your bundler " +
        "replaced import.meta.url with a file: URL): copy the package's assets into your " +
        "public folder (npx pymemory-assets <folder>) and pass assetsUrl",
    );
  }
  const root = base.endsWith("/") ? base : `${base}/`;
  const out = {};
  for (const [name, fallback] of Object.entries(ASSET_DEFAULTS)) {
    const url = new URL(check(name, options[name]) ?? fallback, root).href;
    out[name] = name === "workerUrl" || url.endsWith("/") ? url : `${url}/`;
  }
  return out;
}

// A check returns true for a good value, else what the value must be. `undefined` is always
// "not given" (the default); `null` only where a check accepts it.
const wholeIn = (low, high) => (v) => (Number.isSafeInteger(v) && v >= low && v <= high) || `a whole number from ${low} to ${high}`;
const positive = (v) => (typeof v === "number" && Number.isFinite(v) && v > 0) || "a finite number > 0";
const url = (v) => typeof v === "string" || v instanceof URL || "a URL string";
export const optionChecks = Object.freeze({
  boolean: (v) => typeof v === "boolean" || "true or false",
  oneOf: (...values) => (v) => values.includes(v) || `one of ${values.map((x) => JSON.stringify(x)).join(", ")}`,
  wholeIn,
  positive,
  nullOr: (check) => (v) => v === null || check(v),
});

// The options of a page's connection, shared by every client of the page (the first
// client's win). setTimeout fires at once for a delay over 2**31 - 1 ms, hence that bound.
export const CONNECTION_OPTIONS = Object.freeze({
  assetsUrl: url,
  ...Object.fromEntries(Object.keys(ASSET_DEFAULTS).map((name) => [name, url])),
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

// What the worker and the connection use for an option left out (worker/boot.mjs).
export const CONNECTION_DEFAULTS = Object.freeze({
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

/** Local models a client can ask for: an embedder, the SmolLM2 summarizer. */
export const MODELS = Object.freeze(["embedder", "summarizer"]);
/** The local embedders by name (Python's pymemory.models.LOCAL_EMBEDDERS; docs/models.md):
 * all-MiniLM-L6-v2 (English, the default) and multilingual-e5-small (Chinese, Japanese,
 * Korean and Latin-script languages). */
export const EMBEDDERS = Object.freeze(["minilm", "multilingual-e5-small"]);

const modelsOption = (v) => {
  const expected = `an array of ${MODELS.map((m) => `"${m}"`).join(", ")}, or an object { embedder, summarizer }`;
  if (Array.isArray(v)) return v.every((m) => MODELS.includes(m)) || expected;
  if (v === null || typeof v !== "object") return expected;
  const unknown = Object.keys(v).find((k) => !MODELS.includes(k));
  if (unknown !== undefined) return `${expected} (not ${JSON.stringify(unknown)})`;
  if (v.embedder !== undefined && ![true, false, ...EMBEDDERS].includes(v.embedder))
    return `an object whose embedder is true, false or one of ${EMBEDDERS.map((m) => `"${m}"`).join(", ")}`;
  if (v.summarizer !== undefined && typeof v.summarizer !== "boolean") return "an object whose summarizer is a boolean";
  return true;
};

/** The `models` option as what the worker's loadModels takes: { embedder?: name,
 * summarizer?: true } (["embedder"] and { embedder: true } ask for "minilm"). */
export function modelRequest(models) {
  const asked = Array.isArray(models) ? Object.fromEntries(models.map((m) => [m, true])) : { ...(models ?? {}) };
  const out = {};
  if (asked.embedder) out.embedder = asked.embedder === true ? "minilm" : asked.embedder;
  if (asked.summarizer) out.summarizer = true;
  return out;
}

// Python's item.SCOPE_RE (dbName below: as the worker's JSON API takes it).
const SCOPE_RE = /^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,127}$/;
const isObject = (v) => (v !== null && typeof v === "object" && !Array.isArray(v)) || "an object";

// Every option createAgentMemory takes: the client's own and its connection's. A name not
// here is refused rather than ignored: a typo such as `presist: true` would otherwise
// silently keep the default. `strategy` and `encryption` are checked with their own
// messages (presets.mjs resolveStrategy, encryptionUnlock below).
export const CLIENT_OPTIONS = Object.freeze({
  dbName: (v) => (typeof v === "string" && v.length >= 1 && v.length <= 128) || "a string of 1 to 128 characters",
  scope: (v) =>
    (typeof v === "string" && SCOPE_RE.test(v)) ||
    "a string of 1 to 128 letters, digits and _.:/@- that starts with a letter or digit",
  strategy: () => true,
  tags: optionChecks.nullOr(
    (v) => (Array.isArray(v) && v.every((t) => typeof t === "string" && t !== "")) || "an array of non-empty strings",
  ),
  custom: optionChecks.nullOr(isObject),
  models: optionChecks.nullOr(modelsOption),
  encryption: () => true,
  sync: () => true, // checked by syncOptions below
  persist: optionChecks.boolean,
  ...CONNECTION_OPTIONS,
});

/** createMemoryStore's options (and useAgentMemory's own). */
export const STORE_OPTIONS = Object.freeze({ limit: wholeIn(1, 100_000) });

const shown = (v) => {
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (v === null || ["number", "boolean", "bigint", "undefined"].includes(typeof v)) return String(v);
  return Array.isArray(v) ? "an array" : `a ${typeof v}`;
};

// The edit distance of two short names (for "did you mean").
export function distance(a, b) {
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

/** The `encryption` option as it travels with every call of its client: its secret and a
 * random id the store worker knows the client by once the secret opened the database
 * (undefined without encryption). Throws invalid_input. */
export function encryptionUnlock(encryption) {
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

/** The `sync` option ({ url, auth?, live?, timeoutMs? }) as the client sends it with
 * `sync` calls (undefined without one): `url` an http(s) CouchDB database URL; `auth`
 * null, an Authorization value ("Bearer <jwt>") or { username, password }; `live`
 * (false): keep syncing in the leader tab's worker; `timeoutMs` (SYNC_TIMEOUT_MS): how
 * long one request to the hub may take before the round fails with sync_failed
 * (retryable). Throws invalid_input. */
export const SYNC_TIMEOUT_MS = 30_000; // Python's sync.transport.DEFAULT_TIMEOUT_S
export function syncOptions(sync) {
  if (sync == null) return undefined;
  const bad = (message) => new MemoryError("invalid_input", `sync: ${message}`);
  if (typeof sync !== "object" || Array.isArray(sync)) throw bad("must be { url, auth?, live?, timeoutMs? }");
  const { url: where, auth = null, live = false, timeoutMs = SYNC_TIMEOUT_MS, ...rest } = sync;
  if (Object.keys(rest).length) throw bad(`unknown option(s) ${Object.keys(rest).join(", ")}`);
  let parsed = null;
  try {
    parsed = new URL(String(where));
  } catch {
    // reported below
  }
  if (!(typeof where === "string" || where instanceof URL) || !/^https?:$/.test(parsed?.protocol ?? "")) {
    throw bad("url must be the http(s) URL of a CouchDB database");
  }
  if (parsed.pathname.replace(/\/+$/, "") === "") throw bad("url must name a database: http(s)://host/<database>");
  const basic = auth !== null && typeof auth === "object" && !Array.isArray(auth);
  if (
    !(auth === null || (typeof auth === "string" && auth !== "") ||
      (basic && Object.keys(auth).sort().join() === "password,username" &&
        typeof auth.username === "string" && typeof auth.password === "string"))
  ) {
    throw bad('auth must be null, an Authorization value ("Bearer ...") or { username, password }');
  }
  if (typeof live !== "boolean") throw bad("live must be true or false");
  const timeout = wholeIn(1, 2 ** 31 - 1)(timeoutMs);
  if (timeout !== true) throw bad(`timeoutMs must be ${timeout}`);
  return { url: String(where), auth, live, timeoutMs };
}
