// node --test: createAgentMemory where there is no Worker (server rendering, Node.js):
// `ready` rejects with a MemoryError whose code is boot_failed, and no promise of the
// client is left rejected unhandled, whether or not the caller awaits `ready`.
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { test } from "node:test";

import { createAgentMemory, MemoryError } from "./agent-memory.mjs";

globalThis.crypto ??= webcrypto;

test("without a Worker, ready rejects boot_failed and nothing is left unhandled", async () => {
  assert.equal(typeof globalThis.Worker, "undefined");
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const awaited = createAgentMemory({ dbName: "server-a", workerUrl: "https://app.test/a/worker.mjs" });
    createAgentMemory({ dbName: "server-b", workerUrl: "https://app.test/b/worker.mjs" }); // never awaited
    await assert.rejects(awaited.ready, (err) => {
      assert.ok(err instanceof MemoryError);
      assert.equal(err.code, "boot_failed");
      assert.match(err.message, /no Web Worker here/);
      return true;
    });
    assert.equal(awaited.status.error.code, "boot_failed");
    await assert.rejects(awaited.addMemory("a call after a failed boot"), (err) => err.code === "boot_failed");
    await new Promise((resolve) => setTimeout(resolve, 50)); // let Node report what it would
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});
