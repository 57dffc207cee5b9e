// The store worker's messages (protocol.mjs): `init` boots, `call` runs a method of the
// Python API (or `storageStatus`, answered here), `modelStats` asks the inference bridge;
// the helper instances' `prefetch` and `snapshot`. Every request gets one answer with its
// id; a failure is { ok: false, error: { code, message } }.

import { failure, OPEN } from "../protocol.mjs";
import { prefetchFile } from "./asset-cache.mjs";
import { inference, init, pythonApi } from "./boot.mjs";
import { refreshStorage, STORAGE_ERRORS } from "./quota.mjs";
import { makeSnapshot } from "./snapshot.mjs";
import { current, post } from "./status.mjs";
import * as tokens from "./token-ranks.mjs";

/** Serve one call of method `method` on database `db`; resolves with the answer
 * ({ ok, result, ms } | { ok: false, error }). */
export async function call(id, db, method, params, unlock) {
  const api = pythonApi();
  if (!api) {
    return { ok: false, error: current().error ?? { code: "not_ready", message: "init() first" } };
  }
  if (method === "storageStatus") return { ok: true, result: await refreshStorage() }; // Connection.persist
  try {
    // Any call but `open` (the client's `ready`) may count tokens: budgets, blocks, the
    // assembler. A count before the ranks are parsed would throw, never guess.
    if (method !== OPEN) await tokens.parsed();
  } catch {
    return failure("boot_failed", tokens.failure().message);
  }
  let json;
  try {
    // The client sends its parameters as JSON text (checked in Python before parsing), so
    // a deeply nested value never has to survive a structured clone.
    json = typeof params === "string" ? params : JSON.stringify(params ?? {});
  } catch (err) {
    return failure("invalid_input", err.message);
  }
  const progress = (done, total) => post({ op: "progress", id, done, total });
  const t0 = performance.now();
  const answer = JSON.parse(await api.call(db, method, json, progress, unlock ?? undefined));
  tokens.parseNow(); // after the first call: the client's `open`, answered without them
  answer.ms = performance.now() - t0; // time spent in the worker, for benchmarks
  return answer;
}

/** Answer one message from the page (or from the instance that started this one). */
export async function dispatch(data) {
  const { id, op } = data ?? {};
  let reply;
  try {
    if (op === "init") reply = { ok: true, result: await init(data.options) };
    else if (op === "call") {
      reply = await call(id, data.db, data.method, data.params, data.unlock);
      if (STORAGE_ERRORS.includes(reply.error?.code)) refreshStorage().catch(() => {});
    } else if (op === "modelStats") reply = { ok: true, result: await inference().stats() };
    else if (op === "snapshot") return post({ op: "snapshotted", ...(await makeSnapshot(data)) });
    else if (op === "prefetch") return prefetchFile(data);
    else reply = failure("unknown_method", `unknown op ${op}`);
  } catch (err) {
    reply = failure("internal", err?.message ?? err);
  }
  post({ id, ...reply });
}
