// Which tab runs the store: one store worker per origin and worker URL. The tab that holds
// a Web Lock (the leader) runs the worker (worker-link.mjs); the other tabs (followers)
// forward their calls to it over a BroadcastChannel. When the leader's tab closes or
// crashes, the browser releases its lock and the next tab in the lock's queue takes over:
// it starts its own worker, which loads the store from IndexedDB, and announces itself.
//
// Calls in flight when the leader goes: a call the old leader never acknowledged is sent
// again to the new one (it was never applied); an acknowledged call without an answer
// rejects with `leader_lost` (it may or may not have been applied: retry if that is safe).
//
// Messages on the channel `pymemory-rpc:<workerUrl>` ({ t, from?, to?, ... }; a message
// with `to` is for that tab only):
//   follower -> all     { t: "hello", from }                   who leads? (answered with status)
//   follower -> leader  { t: "call", from, to, id, db, method, params, unlock? }
//   leader -> follower  { t: "ack", to, id }                   the call reached the leader
//                       { t: "progress", to, id, done, total }
//                       { t: "reply", to, id, answer }         the worker's whole answer
//   leader -> all       { t: "leader", from }                  a new leader
//                       { t: "status", from, status }          its worker's status
//                       { t: "change", db }                    its worker changed a memory

import { MemoryError } from "./errors.mjs";
import { errorFromWire, wireError } from "./protocol.mjs";
import { WorkerLink } from "./worker-link.mjs";

export class StoreTabs {
  /**
   * Elect a leader among the page's tabs (or lead alone: `options.tabs` "own", or no Web
   * Locks or BroadcastChannel). `host` hears what happens:
   *   workerStatus(status, role)  a status of the store's worker (this tab's or the leader's)
   *   following()                 this tab follows another
   *   changed(db, broadcast)      the store's worker changed a memory of `db`
   *   failed(err)                 this tab's worker could not start
   *   tookOver()                  another tab (or this one) took over from a leader that
   *                               went: its worker starts afresh (no live sync loops)
   */
  constructor(assets, options, host) {
    this.assets = assets;
    this.options = options;
    this.host = host;
    this.tab = crypto.randomUUID();
    this.role = "starting"; // "leader" | "follower"
    this.leader = null; // the leader tab's id, as a follower
    this.link = null; // the WorkerLink, as leader
    this.calls = new Map(); // id -> a call not answered yet: { message, acked, resolve, reject, ... }
    this.nextId = 1;
    const locks = globalThis.navigator?.locks;
    this.shared = !(options.tabs === "own" || !locks || typeof BroadcastChannel === "undefined");
    if (!this.shared) {
      this._lead();
      return;
    }
    this.rpc = new BroadcastChannel(`pymemory-rpc:${assets.workerUrl}`);
    this.rpc.onmessage = ({ data }) => this._onRpc(data);
    const name = `pymemory-store:${assets.workerUrl}`;
    const forever = () => new Promise(() => {}); // the lock is held for the page's life
    locks.request(name, { ifAvailable: true }, (lock) => {
      if (lock) {
        this._lead();
        return forever();
      }
      this._follow();
      // In the queue: the next tab to take over when the leader goes.
      locks.request(name, () => {
        this._lead();
        return forever();
      });
      return null;
    });
  }

  /** Send a call ({ db, method, params: JSON text, unlock? }) to the store, in this tab or
   * the leader's; resolves with its result (`raw`: the worker's whole answer). */
  send(message, onProgress, raw = false) {
    return new Promise((resolve, reject) => {
      const id = `${this.tab}:${this.nextId++}`;
      const call = { message, acked: false, resolve, reject, onProgress, raw };
      this.calls.set(id, call);
      this._send(id, call);
    });
  }

  _lead() {
    const wasFollower = this.role === "follower";
    this.role = "leader";
    this.leader = this.tab;
    this.link = new WorkerLink(
      this.assets,
      this.options,
      (s) => {
        this.host.workerStatus(s, "leader");
        this.rpc?.postMessage({ t: "status", from: this.tab, status: s });
      },
      (db) => {
        this.host.changed(db, true);
        this.rpc?.postMessage({ t: "change", db });
      },
    );
    this.link.ready.catch((err) => this.host.failed(err));
    this.rpc?.postMessage({ t: "leader", from: this.tab });
    if (wasFollower) {
      this._leaderChanged();
      this.host.tookOver?.();
    }
  }

  _follow() {
    this.role = "follower";
    this.host.following();
    this.rpc.postMessage({ t: "hello", from: this.tab });
  }

  // A new leader: resend what the old one never acknowledged; reject what it took.
  _leaderChanged() {
    for (const [id, call] of this.calls) {
      if (call.acked) {
        this.calls.delete(id);
        call.reject(
          new MemoryError(
            "leader_lost",
            `the tab running the store closed during ${call.message.method}; it may or may not have been applied (retry if that is safe)`,
          ),
        );
      } else {
        this._send(id, call);
      }
    }
  }

  _send(id, call) {
    if (this.role === "leader") {
      this.calls.delete(id);
      const { db, method, params, unlock } = call.message;
      this.link.call(db, method, params, call.onProgress, call.raw, unlock).then(call.resolve, call.reject);
    } else if (this.leader) {
      this.rpc.postMessage({ t: "call", from: this.tab, to: this.leader, id, ...call.message });
    } // else: no leader known yet; sent when one announces itself
  }

  _onRpc(data) {
    if (data.to && data.to !== this.tab) return;
    if (this.role === "leader") return this._serve(data);
    switch (data.t) {
      case "leader":
      case "status": {
        const before = this.leader;
        this.leader = data.from;
        if (data.t === "status") this.host.workerStatus(data.status, "follower");
        if (before !== data.from) {
          this._leaderChanged();
          if (before !== null) this.host.tookOver?.(); // not the first leader this tab met
        }
        break;
      }
      case "change":
        this.host.changed(data.db, false);
        break;
      case "ack": {
        const call = this.calls.get(data.id);
        if (call) call.acked = true;
        break;
      }
      case "progress":
        this.calls.get(data.id)?.onProgress?.(data.done, data.total);
        break;
      case "reply": {
        const call = this.calls.get(data.id);
        if (!call) break;
        this.calls.delete(data.id);
        if (call.raw) call.resolve(data.answer);
        else if (data.answer.ok) call.resolve(data.answer.result);
        else call.reject(errorFromWire(data.answer.error));
        break;
      }
    }
  }

  // As leader: answer a follower.
  async _serve(data) {
    if (data.t === "hello") {
      this.rpc.postMessage({ t: "status", from: this.tab, status: this.link.status });
      return;
    }
    if (data.t !== "call") return;
    const reply = (answer) => this.rpc.postMessage({ t: "reply", to: data.from, id: data.id, answer });
    this.rpc.postMessage({ t: "ack", to: data.from, id: data.id });
    const progress = (done, total) =>
      this.rpc.postMessage({ t: "progress", to: data.from, id: data.id, done, total });
    try {
      reply(await this.link.call(data.db, data.method, data.params, progress, true, data.unlock));
    } catch (err) {
      reply({ ok: false, error: wireError(err) });
    }
  }
}
