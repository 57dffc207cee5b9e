// node --test: the option checks (options.mjs).
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { test } from "node:test";

import {
  ASSET_DEFAULTS,
  CLIENT_OPTIONS,
  CONNECTION_DEFAULTS,
  CONNECTION_OPTIONS,
  checkOptions,
  distance,
  EMBEDDERS,
  encryptionUnlock,
  modelRequest,
  resolveAssets,
  STORE_OPTIONS,
} from "./options.mjs";

globalThis.crypto ??= webcrypto; // Node 18: WebCrypto is not a global yet

const rejects = (fn, code, pattern) =>
  assert.throws(fn, (err) => err.name === "MemoryError" && err.code === code && pattern.test(err.message));

test("an unknown option is refused with the nearest known name", () => {
  rejects(() => checkOptions({ presist: true }, CLIENT_OPTIONS), "invalid_input", /unknown option "presist" \(did you mean persist\?\)/);
  rejects(() => checkOptions({ zzzzzzzzzz: 1 }, CLIENT_OPTIONS), "invalid_input", /unknown option "zzzzzzzzzz"$/);
});

test("a value of the wrong type or range names the option and what it must be", () => {
  rejects(() => checkOptions({ bootTimeoutMs: 0 }, CONNECTION_OPTIONS), "invalid_input", /bootTimeoutMs must be a whole number from 1 to 2147483647, not 0/);
  rejects(() => checkOptions({ tabs: "mine" }, CONNECTION_OPTIONS), "invalid_input", /tabs must be one of "shared", "own", not "mine"/);
  rejects(() => checkOptions({ scope: "-x" }, CLIENT_OPTIONS), "invalid_input", /option scope must be a string of 1 to 128/);
  rejects(() => checkOptions({ models: ["gpt"] }, CLIENT_OPTIONS), "invalid_input", /models must be an array of "embedder", "summarizer", or an object \{ embedder, summarizer \}, not an array/);
  rejects(() => checkOptions({ limit: 1.5 }, STORE_OPTIONS), "invalid_input", /limit must be a whole number from 1 to 100000, not 1.5/);
  rejects(() => checkOptions([], CLIENT_OPTIONS), "invalid_input", /options must be an object, not an array/);
  rejects(() => checkOptions({ dbName: "x".repeat(50) }, { dbName: () => "short" }), "invalid_input", /"x{40}\.\.\."/);
});

test("good values, undefined and the nulls a check allows pass", () => {
  checkOptions({ dbName: "a", scope: "user", tags: null, custom: null, models: ["embedder"], persist: false, feedbackFlushMs: undefined, autoArchiveDays: null }, CLIENT_OPTIONS);
  checkOptions({}, STORE_OPTIONS);
});

test("every connection option has a check and every default a connection option", () => {
  for (const name of Object.keys(CONNECTION_DEFAULTS)) assert.ok(name in CONNECTION_OPTIONS, name);
  for (const name of Object.keys(ASSET_DEFAULTS)) assert.ok(name in CONNECTION_OPTIONS, name);
  for (const name of Object.keys(CONNECTION_OPTIONS)) assert.ok(name in CLIENT_OPTIONS, name);
});

test("asset URLs resolve against assetsUrl, each overridable; folders end in a slash", () => {
  const urls = resolveAssets({ assetsUrl: "https://x.test/pkg", pyodideUrl: "/py", workerUrl: "w.mjs" });
  assert.equal(urls.workerUrl, "https://x.test/pkg/w.mjs");
  assert.equal(urls.wheelsUrl, "https://x.test/pkg/wheels/");
  assert.equal(urls.pyodideUrl, "https://x.test/py/");
  assert.equal(urls.tiktokenUrl, "https://x.test/js-tiktoken/dist/");
  const here = resolveAssets();
  assert.equal(here.workerUrl, new URL("./worker/memory-worker.mjs", import.meta.url).href);
  rejects(() => resolveAssets({ modelsUrl: 5 }), "invalid_input", /modelsUrl must be a URL string/);
});

test("encryption: exactly one secret, checked; a random id per client", () => {
  assert.equal(encryptionUnlock(undefined), undefined);
  const a = encryptionUnlock({ passphrase: "s3cret", iterations: 2000 });
  const b = encryptionUnlock({ passphrase: "s3cret" });
  assert.deepEqual(Object.keys(a).sort(), ["id", "iterations", "passphrase"]);
  assert.notEqual(a.id, b.id);
  rejects(() => encryptionUnlock("pw"), "invalid_input", /must be \{ passphrase \}/);
  rejects(() => encryptionUnlock({}), "invalid_input", /exactly one of passphrase or key/);
  rejects(() => encryptionUnlock({ passphrase: "" }), "invalid_input", /non-empty string/);
  rejects(() => encryptionUnlock({ passphrase: "x", salt: 1 }), "invalid_input", /unknown option\(s\) salt/);
  rejects(() => encryptionUnlock({ passphrase: "x", iterations: 10 }), "invalid_input", /iterations must be/);
  rejects(() => encryptionUnlock({ key: {} }), "invalid_input", /key must be a CryptoKey/);
});

test("encryption: a CryptoKey must be AES-GCM 256 for encrypt and decrypt", async () => {
  const good = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
  assert.equal(encryptionUnlock({ key: good }).key, good);
  const short = await crypto.subtle.generateKey({ name: "AES-GCM", length: 128 }, false, ["encrypt", "decrypt"]);
  rejects(() => encryptionUnlock({ key: short }), "invalid_input", /AES-GCM key of 256 bits/);
  const oneWay = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt"]);
  rejects(() => encryptionUnlock({ key: oneWay }), "invalid_input", /allow "encrypt" and "decrypt"/);
});

test("models: an array of kinds or an object naming the embedder; what loadModels is asked", () => {
  checkOptions({ models: { embedder: "multilingual-e5-small", summarizer: false } }, CLIENT_OPTIONS);
  checkOptions({ models: { embedder: true } }, CLIENT_OPTIONS);
  rejects(() => checkOptions({ models: { embedder: "bge" } }, CLIENT_OPTIONS), "invalid_input", /embedder is true, false or one of "minilm", "multilingual-e5-small"/);
  rejects(() => checkOptions({ models: { embeder: "minilm" } }, CLIENT_OPTIONS), "invalid_input", /\(not "embeder"\)/);
  rejects(() => checkOptions({ models: { summarizer: "yes" } }, CLIENT_OPTIONS), "invalid_input", /summarizer is a boolean/);
  assert.deepEqual(EMBEDDERS, ["minilm", "multilingual-e5-small"]);
  assert.deepEqual(modelRequest(["embedder", "summarizer"]), { embedder: "minilm", summarizer: true });
  assert.deepEqual(modelRequest({ embedder: "multilingual-e5-small" }), { embedder: "multilingual-e5-small" });
  assert.deepEqual(modelRequest({ embedder: false, summarizer: true }), { summarizer: true });
  assert.deepEqual(modelRequest(null), {});
});

test("distance is the edit distance", () => {
  assert.equal(distance("presist", "persist"), 2);
  assert.equal(distance("", "abc"), 3);
  assert.equal(distance("same", "same"), 0);
});

test("the sync option: url, auth, live, timeoutMs checked; unknown fields refused", async () => {
  const { syncOptions, SYNC_TIMEOUT_MS } = await import("./options.mjs");
  assert.equal(syncOptions(undefined), undefined);
  assert.deepEqual(syncOptions({ url: "http://127.0.0.1:5984/memory-alice" }), {
    url: "http://127.0.0.1:5984/memory-alice",
    auth: null,
    live: false,
    timeoutMs: SYNC_TIMEOUT_MS,
  });
  assert.equal(SYNC_TIMEOUT_MS, 30_000);
  assert.equal(syncOptions({ url: "http://h/db", timeoutMs: 1500 }).timeoutMs, 1500);
  assert.deepEqual(syncOptions({ url: "https://h/db", auth: { username: "a", password: "b" }, live: true }).auth, {
    username: "a",
    password: "b",
  });
  for (const bad of [
    { url: "ftp://h/db" },
    { url: "http://h/" },
    { url: "http://h/db", auth: ["a", "b"] },
    { url: "http://h/db", live: "yes" },
    { url: "http://h/db", every: 5 },
    { url: "http://h/db", timeoutMs: 0 },
    { url: "http://h/db", timeoutMs: 1.5 },
    { url: "http://h/db", timeoutMs: "30000" },
    { url: "http://h/db", timeoutMs: 2 ** 31 },
    "http://h/db",
  ]) {
    assert.throws(() => syncOptions(bad), (err) => err.code === "invalid_input" && err.message.startsWith("sync:"));
  }
});
