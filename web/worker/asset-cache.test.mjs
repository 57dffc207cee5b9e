// node --test: routing fetches through Cache Storage (asset-cache.mjs, over assets.mjs)
// and the status they report (status.mjs), over a fake network and an in-memory Cache
// Storage.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

const posted = [];
globalThis.self = globalThis;
globalThis.location = { href: "https://app.test/web/worker/memory-worker.mjs" };
globalThis.postMessage = (message) => posted.push(structuredClone(message));

const { cacheFetches, folder, readManifest } = await import("./asset-cache.mjs");
const { countInPhase, current, onFile, report } = await import("./status.mjs");

const network = [];
const files = {
  "https://app.test/pyodide/pyodide.asm.wasm": new Uint8Array([1, 2, 3, 4]),
  "https://app.test/wheels/pymemory.whl": new TextEncoder().encode("wheel bytes"),
  "https://app.test/wheels/manifest.json": new TextEncoder().encode('{"pymemory": "pymemory.whl"}'),
  "https://app.test/other.txt": new TextEncoder().encode("elsewhere"),
};
const networkFetch = async (input, init) => {
  const url = typeof input === "string" ? input : input.url;
  network.push([url, init?.method ?? "GET"]);
  const body = files[url];
  if (!body) return new Response("missing", { status: 404 });
  return new Response(body, { headers: { "content-length": String(body.byteLength), "content-type": "application/x-test" } });
};
globalThis.fetch = networkFetch;

// Cache Storage in memory: name -> Map(url -> Response).
const stores = new Map();
globalThis.caches = {
  async open(name) {
    if (!stores.has(name)) stores.set(name, new Map());
    const store = stores.get(name);
    return {
      match: async (url) => store.get(String(url))?.clone(),
      put: async (url, response) => void store.set(String(url), response.clone()),
      delete: async (url) => store.delete(String(url)),
    };
  },
};

/** A fresh routing of fetches (each test starts from the network's fetch). */
function route(...args) {
  globalThis.fetch = networkFetch;
  return cacheFetches(...args);
}

const near = (a, b) => assert.ok(Math.abs(a - b) < 1e-9, `${a} != ${b}`);
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

test("folder(): absolute, ending in a slash, relative to the worker; a missing one is an error", () => {
  assert.equal(folder("../../pyodide", "pyodide"), "https://app.test/pyodide/");
  assert.equal(folder("https://cdn.test/x/", "x"), "https://cdn.test/x/");
  assert.throws(() => folder("", "wheels"), /assets.wheels must be a URL/);
});

test("fetches under the prefixes are read (and checked); others go to the network as they are", async () => {
  const progress = [];
  const expected = new Map([["https://app.test/wheels/pymemory.whl", { sha256: sha256(files["https://app.test/wheels/pymemory.whl"]) }]]);
  const { settled } = route(["https://app.test/pyodide/", "https://app.test/wheels/"], "test-cache", expected, (...a) => progress.push(a));
  const wasm = await fetch("/pyodide/pyodide.asm.wasm");
  assert.deepEqual(new Uint8Array(await wasm.arrayBuffer()), files["https://app.test/pyodide/pyodide.asm.wasm"]);
  assert.equal(wasm.headers.get("content-type"), "application/x-test");
  assert.deepEqual(progress.at(-1), ["https://app.test/pyodide/pyodide.asm.wasm", 4, 4, "network"]);
  const wheel = await fetch(new Request("https://app.test/wheels/pymemory.whl"));
  assert.equal(await wheel.text(), "wheel bytes");
  const other = await fetch("https://app.test/other.txt");
  assert.equal(await other.text(), "elsewhere");
  await fetch("https://app.test/wheels/pymemory.whl", { method: "HEAD" });
  assert.deepEqual(network.slice(-2), [["https://app.test/other.txt", "GET"], ["https://app.test/wheels/pymemory.whl", "HEAD"]]);
  await settled(); // Pyodide's own files are cached after they are handed on
  const before = network.length;
  const again = await fetch("https://app.test/pyodide/pyodide.asm.wasm");
  assert.equal((await again.arrayBuffer()).byteLength, 4);
  assert.equal(network.length, before); // the second visit reads the cache
  assert.deepEqual(progress.at(-1), ["https://app.test/pyodide/pyodide.asm.wasm", 4, 4, "cache"]);
});

test("a cached copy that no longer matches its sha256 is dropped and downloaded again", async () => {
  const url = "https://app.test/pyodide/python_stdlib.zip";
  files[url] = new Uint8Array([9, 9, 9]);
  const cache = await caches.open("corrupt-cache");
  await cache.put(url, new Response(new Uint8Array([1]), { headers: { "x-pymemory-sha256": sha256(files[url]) } }));
  route(["https://app.test/pyodide/"], "corrupt-cache", new Map(), () => {});
  const before = network.length;
  assert.deepEqual(new Uint8Array(await (await fetch(url)).arrayBuffer()), files[url]);
  assert.equal(network.length, before + 1);
});

test("a file whose sha256 is not the expected one is refused", async () => {
  const expected = new Map([["https://app.test/wheels/pymemory.whl", { sha256: "0".repeat(64) }]]);
  route(["https://app.test/wheels/"], "test-cache", expected, () => {});
  await assert.rejects(fetch("https://app.test/wheels/pymemory.whl"), /do not match the expected/);
});

test("a prefetched file is read once, before anyone asks for it", async () => {
  const { prefetch } = route(["https://app.test/wheels/"], "test-cache", new Map(), () => {});
  const before = network.length;
  prefetch("https://app.test/wheels/pymemory.whl"); // no Worker in Node: read on this thread
  const response = await fetch("https://app.test/wheels/pymemory.whl");
  assert.equal(await response.text(), "wheel bytes");
  assert.equal(network.length - before, 1);
});

test("the manifest: from the network, from the cache when offline", async () => {
  const url = "https://app.test/wheels/manifest.json";
  assert.deepEqual(await readManifest(url, networkFetch), { pymemory: "pymemory.whl" });
  const offline = async () => {
    throw new TypeError("offline");
  };
  assert.deepEqual(await readManifest(url, offline), { pymemory: "pymemory.whl" }); // the cached copy
  await assert.rejects(readManifest("https://app.test/wheels/none.json", offline), /offline/);
});

test("status: files' bytes move their phase's range of the bar", () => {
  report({ phase: "runtime", progress: 0.05 });
  onFile("https://app.test/pyodide/pyodide.asm.wasm", 50, 100, "network");
  near(current().progress, 0.05 + 0.55 * 0.5);
  assert.deepEqual(current().files["pyodide.asm.wasm"], { loaded: 50, total: 100, source: "network" });
  countInPhase("https://app.test/wheels/pymemory.whl", "packages"); // prefetched: waits for its phase
  onFile("https://app.test/wheels/pymemory.whl", 10, 10, "network");
  near(current().progress, 0.05 + 0.55 * 0.5);
  assert.deepEqual(current().bytes, { loaded: 60, total: 110 });
  report({ phase: "packages", progress: 0.6 });
  onFile("https://app.test/wheels/pymemory.whl", 10, 10, "cache");
  near(current().progress, 0.9);
  assert.deepEqual(posted.at(-1), { op: "status", status: current() });
});
