// The model worker: onnxruntime-web inference off the store worker's thread. The store
// worker (worker/model-client.mjs) owns it; Python there only awaits results, so a model
// busy generating never blocks an add or a retrieve.
//
// Runs are queued by priority (higher first, then in arrival order) and execute one at a
// time: the query embedding of a retrieve goes before background work (embedding new
// items, the summarizer's next token), which yields between runs.
//
// Messages: { id, op: "configure", options } | { id, op: "load", url, options }
//           | { id, op: "run", handle, feeds, outputNames, priority }
//           | { id, op: "release", handle } | { id, op: "stats" }
//   answer: { id, ok: true, result } | { id, ok: false, error: { message } }
//   and, while a model file downloads: { op: "progress", url, loaded, total, source }

import * as ort from "./ort-bridge.mjs";

ort.onProgress((url, loaded, total, source) => self.postMessage({ op: "progress", url, loaded, total, source }));

const handles = new Map(); // handle id -> session handle from ort-bridge
let nextHandle = 1;
const queue = []; // { priority, seq, run, resolve, reject }
let seq = 0;
let running = false;
const counts = { runs: 0, urgent: 0, maxQueued: 0 };

function enqueue(priority, run) {
  return new Promise((resolve, reject) => {
    queue.push({ priority, seq: seq++, run, resolve, reject });
    counts.maxQueued = Math.max(counts.maxQueued, queue.length);
    pump();
  });
}

async function pump() {
  if (running) return;
  running = true;
  try {
    while (queue.length) {
      let best = 0;
      for (let i = 1; i < queue.length; i++) {
        const a = queue[i], b = queue[best];
        if (a.priority > b.priority || (a.priority === b.priority && a.seq < b.seq)) best = i;
      }
      const [job] = queue.splice(best, 1);
      counts.runs++;
      if (job.priority > 0) counts.urgent++;
      try {
        job.resolve(await job.run());
      } catch (err) {
        job.reject(err);
      }
    }
  } finally {
    running = false;
  }
}

// Only buffers an output owns whole (a view into the WASM heap must never be detached).
function transferables(outputs) {
  return outputs
    .map((o) => o.data)
    .filter((d) => d?.buffer instanceof ArrayBuffer && d.byteOffset === 0 && d.byteLength === d.buffer.byteLength)
    .map((d) => d.buffer);
}

const ops = {
  configure: ({ options }) => ort.configure(options),
  async load({ url, options }) {
    const session = await ort.load(url, options ?? {});
    const handle = nextHandle++;
    handles.set(handle, session);
    return { handle, info: session.info, inputNames: session.inputNames, outputNames: session.outputNames };
  },
  run({ handle, feeds, outputNames, priority }) {
    const session = handles.get(handle);
    if (!session) throw new Error(`no model session ${handle}`);
    return enqueue(priority ?? 0, () => session.run(feeds, outputNames));
  },
  async release({ handle }) {
    const session = handles.get(handle);
    handles.delete(handle);
    await session?.release();
  },
  stats: () => ({ ...ort.stats(), queue: { ...counts, queued: queue.length } }),
};

self.onmessage = async ({ data }) => {
  const { id, op } = data;
  try {
    if (!ops[op]) throw new Error(`unknown op ${op}`);
    const result = await ops[op](data);
    const transfer = op === "run" ? transferables(result.outputs) : [];
    self.postMessage({ id, ok: true, result }, transfer);
  } catch (err) {
    self.postMessage({ id, ok: false, error: { message: String(err?.message ?? err) } });
  }
};
