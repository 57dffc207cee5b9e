// node --test: offline.mjs lists every module of the store worker (so a first visit's
// precache holds them all).
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { test } from "node:test";
import { MemoryError } from "./errors.mjs";
import { registerOffline, WORKER_MODULES } from "./offline.mjs";

test("WORKER_MODULES are the worker folder's modules", () => {
  const modules = readdirSync(new URL("./worker/", import.meta.url)).filter((n) => n.endsWith(".mjs") && !n.endsWith(".test.mjs"));
  assert.deepEqual([...WORKER_MODULES].sort(), modules.sort());
});

test("registerOffline without service workers rejects with offline_failed", async () => {
  await assert.rejects(registerOffline(), (err) => err instanceof MemoryError && err.code === "offline_failed");
});

test("registerOffline rejects with offline_failed when the service worker never answers", async () => {
  const saved = Object.getOwnPropertyDescriptor(globalThis, "navigator");
  const never = new Promise(() => {});
  Object.defineProperty(globalThis, "navigator", {
    configurable: true,
    value: { serviceWorker: { register: async () => ({}), ready: never } },
  });
  try {
    await assert.rejects(registerOffline("/sw.mjs", { timeoutMs: 50 }), (err) => err.code === "offline_failed" && /50 ms/.test(err.message));
    Object.defineProperty(globalThis, "navigator", {
      configurable: true,
      value: { serviceWorker: { register: async () => { throw new Error("404"); }, ready: never } },
    });
    await assert.rejects(registerOffline("/sw.mjs", { timeoutMs: 5000 }), (err) => err.code === "offline_failed" && /did not register \(404\)/.test(err.message));
  } finally {
    if (saved) Object.defineProperty(globalThis, "navigator", saved);
    else delete globalThis.navigator;
  }
});
