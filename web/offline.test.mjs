// node --test: offline.mjs lists every module of the store worker (so a first visit's
// precache holds them all).
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { test } from "node:test";
import { WORKER_MODULES } from "./offline.mjs";

test("WORKER_MODULES are the worker folder's modules", () => {
  const modules = readdirSync(new URL("./worker/", import.meta.url)).filter((n) => n.endsWith(".mjs") && !n.endsWith(".test.mjs"));
  assert.deepEqual([...WORKER_MODULES].sort(), modules.sort());
});
