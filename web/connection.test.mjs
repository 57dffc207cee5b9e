// node --test: the page's connection (connection.mjs), the tabs' leader election and call
// forwarding (leader.mjs) and the worker link (worker-link.mjs), over a fake store worker,
// fake Web Locks and Node's own BroadcastChannel.
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { after, test } from "node:test";

import { connection } from "./connection.mjs";
import { StoreTabs } from "./leader.mjs";

globalThis.crypto ??= webcrypto; // Node 18: WebCrypto is not a global yet

// --- fakes --------------------------------------------------------------------------------

const workers = [];

/** A store worker: boots at once; a call answers with what it got, except `hold`, which
 * waits until release() (a call in flight). */
class FakeWorker {
  constructor(url) {
    this.url = url;
    this.held = [];
    this.calls = [];
    workers.push(this);
  }

  postMessage(message) {
    setTimeout(() => this._handle(message), 0);
  }

  _handle({ id, op, db, method, params }) {
    if (this.terminated) return;
    const answer = (reply) => this.onmessage?.({ data: { id, ...reply } });
    if (op === "init") {
      const status = { phase: "ready", progress: 1, ready: true, error: null };
      this.onmessage?.({ data: { op: "status", status } });
      return answer({ ok: true, result: status });
    }
    this.calls.push(method);
    if (method === "hold") return this.held.push(() => answer({ ok: true, result: "held" }));
    if (method === "fail") return answer({ ok: false, error: { code: "not_found", message: "no such id" } });
    answer({ ok: true, result: { db, method, params: JSON.parse(params) }, ms: 1 });
  }

  release() {
    for (const reply of this.held.splice(0)) reply();
  }

  terminate() {
    this.terminated = true;
  }
}

/** Web Locks for one origin: a lock is held until release(name); then the queue's next gets it. */
class FakeLocks {
  held = new Set();
  queue = new Map();

  request(name, options, callback) {
    if (typeof options === "function") [callback, options] = [options, {}];
    if (!this.held.has(name)) {
      this.held.add(name);
      callback({ name });
    } else if (options.ifAvailable) {
      callback(null);
    } else {
      this.queue.set(name, [...(this.queue.get(name) ?? []), callback]);
    }
    return Promise.resolve();
  }

  release(name) {
    this.held.delete(name);
    const next = this.queue.get(name)?.shift();
    if (next) this.request(name, next);
  }
}

globalThis.Worker = FakeWorker;
const locks = new FakeLocks();
globalThis.navigator = { locks };
const opened = [];
after(() => {
  for (const tabs of opened) tabs.rpc?.close();
  for (const conn of opened) for (const channel of conn.channels?.values() ?? []) channel.close();
});

const assets = (name) => ({
  workerUrl: `https://app.test/${name}/worker.mjs`,
  pyodideUrl: "https://app.test/pyodide/",
  onnxruntimeUrl: "https://app.test/ort/",
  tiktokenUrl: "https://app.test/tiktoken/",
  wheelsUrl: "https://app.test/wheels/",
  modelsUrl: "https://app.test/models/",
});
const json = (v) => JSON.stringify(v);
const host = (log = []) => ({
  workerStatus: (status, role) => log.push(["status", role, status.ready]),
  following: () => log.push(["following"]),
  changed: (db, broadcast) => log.push(["changed", db, broadcast]),
  failed: (err) => log.push(["failed", err.code]),
  tookOver: () => log.push(["tookOver"]),
  log,
});
const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

// --- the registry ---------------------------------------------------------------------------

test("one connection per worker URL; a differing option is refused, not ignored", async () => {
  const a = connection({ workerUrl: "https://app.test/one/worker.mjs", tabs: "own" });
  opened.push(a);
  assert.equal(connection({ workerUrl: "https://app.test/one/worker.mjs" }), a);
  assert.equal(connection({ workerUrl: "https://app.test/one/worker.mjs", durability: "strict" }), a); // the default
  assert.throws(
    () => connection({ workerUrl: "https://app.test/one/worker.mjs", durability: "relaxed" }),
    (e) => e.code === "invalid_input" && /option durability differs from this page's connection/.test(e.message),
  );
  const b = connection({ workerUrl: "https://app.test/two/worker.mjs", tabs: "own" });
  opened.push(b);
  assert.notEqual(a, b);
  assert.throws(() => connection({ tabz: "own" }), (e) => e.code === "invalid_input" && /did you mean tabs/.test(e.message));
  assert.equal((await a.ready).ready, true);
  assert.equal(a.role, "leader");
});

test("calls go to the worker as JSON text; errors come back as MemoryError", async () => {
  const conn = connection({ workerUrl: "https://app.test/calls/worker.mjs", tabs: "own" });
  opened.push(conn);
  assert.deepEqual(await conn.call("db", "get", { id: "x" }), { db: "db", method: "get", params: { id: "x" } });
  const raw = await conn.rawCall("db", "stats", {});
  assert.equal(raw.ok, true);
  assert.equal(raw.ms, 1);
  await assert.rejects(conn.call("db", "fail", {}), (e) => e.name === "MemoryError" && e.code === "not_found");
  await assert.rejects(conn.call("db", "get", { f() {} }), (e) => e.code === "invalid_input");
});

test("status and change listeners: public subscribe and notify", async () => {
  const conn = connection({ workerUrl: "https://app.test/listen/worker.mjs", tabs: "own" });
  opened.push(conn);
  await conn.ready;
  const seen = [];
  const stop = conn.onStatus((s) => seen.push(s.phase));
  assert.deepEqual(seen, ["ready"]); // the current status at once
  stop();
  let changes = 0;
  const unsubscribe = conn.onChange("notes", () => changes++);
  conn.notifyChange("notes");
  conn.notifyChange("other");
  assert.equal(changes, 1);
  unsubscribe();
  conn.notifyChange("notes");
  assert.equal(changes, 1);
});

test("status.models.embedding follows background embedding until it is done", async () => {
  const conn = connection({ workerUrl: "https://app.test/embedding/worker.mjs", tabs: "own" });
  opened.push(conn);
  await conn.ready;
  const progress = [0, 2, 3];
  const asked = [];
  conn.call = async (db, method) => {
    asked.push(method);
    const embedding = { model: "hashing-s7", embedded: progress.shift(), items: 3 };
    return method === "loadModels" ? { embedder: { name: "hashing-s7" }, embedding } : { embedding };
  };
  const seen = [];
  conn.onStatus((s) => s.models?.embedding && seen.push(s.models.embedding.embedded));
  await conn.loadModels("db", ["embedder"]);
  assert.equal(conn.status.models.embedder, "ready");
  for (let i = 0; i < 40 && conn.status.models.embedding.embedded < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.deepEqual(seen, [0, 2, 3]);
  await new Promise((resolve) => setTimeout(resolve, 1200));
  assert.deepEqual(asked, ["loadModels", "stats", "stats"]); // no polling once done
});

test("a worker that cannot start rejects ready with boot_failed", async () => {
  const saved = globalThis.Worker;
  globalThis.Worker = class {
    constructor() {
      throw new Error("no workers here");
    }
  };
  try {
    const conn = connection({ workerUrl: "https://app.test/broken/worker.mjs", tabs: "own" });
    opened.push(conn);
    await assert.rejects(conn.ready, (e) => e.code === "boot_failed" && /no workers here/.test(e.message));
    assert.equal(conn.status.error.code, "boot_failed");
  } finally {
    globalThis.Worker = saved;
  }
});

// --- leader and followers -----------------------------------------------------------------

test("a follower's calls reach the leader's worker; the leader's changes reach followers", async () => {
  const leaderHost = host();
  const followerHost = host();
  const leader = new StoreTabs(assets("tabs"), {}, leaderHost);
  const follower = new StoreTabs(assets("tabs"), {}, followerHost);
  opened.push(leader, follower);
  assert.equal(leader.role, "leader");
  assert.equal(follower.role, "follower");
  await tick(20);
  assert.deepEqual(followerHost.log.filter(([k]) => k === "status").at(-1), ["status", "follower", true]);
  const result = await follower.send({ db: "d", method: "list", params: json({ limit: 2 }) });
  assert.deepEqual(result, { db: "d", method: "list", params: { limit: 2 } });
  const worker = leader.link.worker;
  assert.deepEqual(worker.calls, ["list"]);
  await assert.rejects(follower.send({ db: "d", method: "fail", params: "{}" }), (e) => e.code === "not_found");
  const raw = await follower.send({ db: "d", method: "stats", params: "{}" }, null, true);
  assert.equal(raw.ok, true);
  worker.onmessage({ data: { op: "change", db: "d" } }); // background work in the leader's worker
  await tick();
  assert.deepEqual(leaderHost.log.at(-1), ["changed", "d", true]);
  assert.deepEqual(followerHost.log.at(-1), ["changed", "d", false]);
});

test("when the leader goes: an acknowledged call rejects leader_lost, an unacknowledged one is sent again", async () => {
  const a = new StoreTabs(assets("takeover"), {}, host());
  const bHost = host();
  const b = new StoreTabs(assets("takeover"), {}, bHost);
  opened.push(a, b);
  await tick(20);
  const inFlight = b.send({ db: "d", method: "hold", params: "{}" }); // the old leader acknowledges it
  await tick(20);
  assert.equal([...b.calls.values()][0].acked, true);
  // The leader's tab closes: its channel and worker go, then the browser frees its lock.
  a.rpc.close();
  a.link.worker.terminate();
  const unsent = b.send({ db: "d", method: "get", params: json({ id: "x" }) }); // nobody acknowledges it
  await tick(20);
  locks.release(`pymemory-store:${assets("takeover").workerUrl}`);
  assert.equal(b.role, "leader");
  await assert.rejects(inFlight, (e) => e.code === "leader_lost" && /closed during hold/.test(e.message));
  assert.deepEqual(await unsent, { db: "d", method: "get", params: { id: "x" } });
  assert.deepEqual(b.link.worker.calls, ["get"]);
  assert.ok(bHost.log.some(([k, role, ready]) => k === "status" && role === "leader" && ready));
});

test("a takeover is announced to the new leader and to the other followers, a first election is not", async () => {
  const hosts = [host(), host(), host()];
  const [a, b, c] = hosts.map((h) => new StoreTabs(assets("announce"), {}, h));
  opened.push(a, b, c);
  await tick(20);
  const tookOver = () => hosts.map((h) => h.log.filter(([k]) => k === "tookOver").length);
  assert.deepEqual(tookOver(), [0, 0, 0]); // b and c met their first leader
  a.rpc.close();
  a.link.worker.terminate();
  locks.release(`pymemory-store:${assets("announce").workerUrl}`);
  await tick(20);
  assert.equal(b.role, "leader");
  assert.equal(c.role, "follower");
  assert.deepEqual(tookOver(), [0, 1, 1]); // b's worker is new; c's calls now reach it
});

test("tabs: own leads alone, without a channel or a lock", async () => {
  const own = new StoreTabs(assets("own"), { tabs: "own" }, host());
  assert.equal(own.shared, false);
  assert.equal(own.role, "leader");
  assert.equal(own.rpc, undefined);
  assert.deepEqual(await own.send({ db: "d", method: "get", params: "{}" }), { db: "d", method: "get", params: {} });
});
