// node --test: the protocol module (protocol.mjs). Its method list against Python's is
// checked in tests/rpc/test_protocol.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ERROR_CODES, MemoryError } from "./errors.mjs";
import * as protocol from "./protocol.mjs";

test("parameters travel as JSON text; what JSON cannot carry is invalid_input", () => {
  assert.equal(protocol.encodeParams(undefined), "{}");
  assert.equal(protocol.encodeParams({ a: [1, "x", null] }), '{"a":[1,"x",null]}');
  for (const [bad, pattern] of [
    [{ f: () => 1 }, /f is a function, not JSON/],
    [{ n: Number.NaN }, /n is NaN, not a finite number/],
    [{ deep: { x: Infinity } }, /x is Infinity/],
    [Symbol("s"), /value is a symbol/],
  ]) {
    assert.throws(() => protocol.encodeParams(bad), (err) => err instanceof MemoryError && err.code === "invalid_input" && pattern.test(err.message));
  }
  const cyclic = {};
  cyclic.self = cyclic;
  assert.throws(() => protocol.encodeParams(cyclic), (err) => err.code === "invalid_input");
});

test("errors travel as { code, message } and come back as MemoryError", () => {
  assert.deepEqual(protocol.wireError(new MemoryError("not_found", "no such id")), { code: "not_found", message: "no such id" });
  assert.deepEqual(protocol.wireError(new Error("boom")), { code: "internal", message: "boom" });
  assert.deepEqual(protocol.wireError("text"), { code: "internal", message: "text" });
  assert.deepEqual(protocol.failure("closed", "gone"), { ok: false, error: { code: "closed", message: "gone" } });
  const err = protocol.errorFromWire({ code: "conflict", message: "taken" });
  assert.ok(err instanceof MemoryError);
  assert.equal(err.code, "conflict");
  assert.equal("retryable" in err, false);
  // sync_failed (and storage_error) say whether the same call may succeed later
  const down = protocol.errorFromWire({ code: "sync_failed", message: "503", retryable: true });
  assert.equal(down.retryable, true);
  assert.deepEqual(protocol.wireError(down), { code: "sync_failed", message: "503", retryable: true });
  assert.equal(protocol.errorFromWire({ code: "sync_failed", message: "401", retryable: false }).retryable, false);
  assert.equal(protocol.resultOf({ ok: true, result: 3 }), 3);
  assert.throws(() => protocol.resultOf(protocol.failure("wrong_key", "no")), (e) => e.code === "wrong_key");
});

test("the error codes are the package's, each one once", () => {
  assert.equal(protocol.ERROR_CODES, ERROR_CODES);
  assert.equal(new Set(ERROR_CODES).size, ERROR_CODES.length);
  for (const code of ["invalid_input", "boot_failed", "leader_lost", "unknown_method", "internal"]) {
    assert.ok(ERROR_CODES.includes(code), code);
  }
});

test("the method table: frozen, mutations a subset, client members unique", () => {
  assert.ok(Object.isFrozen(protocol.METHODS));
  assert.ok(protocol.OPEN in protocol.METHODS);
  const names = Object.keys(protocol.METHODS);
  for (const name of protocol.MUTATIONS) assert.ok(names.includes(name), name);
  assert.deepEqual(
    [...protocol.MUTATIONS].sort(),
    ["addMany", "addMemory", "archiveOlderThan", "clear", "delete", "feedback", "importJsonl", "sweep", "sync", "update"],
  );
  const members = names.map((n) => protocol.METHODS[n].client).filter(Boolean);
  assert.equal(new Set(members).size, members.length);
  for (const name of protocol.WORKER_METHODS) assert.ok(!names.includes(name), name);
  // `<area>.<name>` methods keep their area as the client's member, but for the tools.
  for (const name of names.filter((n) => n.includes(".") && !n.startsWith("tools."))) {
    assert.equal(protocol.METHODS[name].client, name);
  }
});
