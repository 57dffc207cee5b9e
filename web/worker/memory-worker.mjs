// The pymemory store worker: boots Pyodide, loads numpy and the pymemory wheel, and serves
// the Memory API to the page. Asset locations come from the page (createAgentMemory's
// assetsUrl and overrides), so it imports nothing but its siblings and the package's
// protocol.mjs, and works the same bundled or served as-is.
//
// The messages are in ../protocol.mjs. The modules, by concern:
//   status.mjs       the status the page sees: phases, the progress bar, file bytes
//   assets.mjs       one file through Cache Storage (sha256-checked, byte progress)
//   asset-cache.mjs  Pyodide's fetches and the wheels' prefetch routed through it
//   boot.mjs         Pyodide + wheels, then the Python API and its bridges
//   snapshot.mjs     the Pyodide memory snapshot that speeds up repeat visits
//   quota.mjs        status.storage: persisted, usage, quota, reserve
//   token-ranks.mjs  the o200k_base ranks (tiktoken.mjs), parsed off the boot's path
//   dispatch.mjs     the messages: init, call, modelStats (and the helpers' own)
//   model-client.mjs -> model-worker.mjs over ort-bridge.mjs: onnxruntime-web
// Another instance of this file prefetches the wheels during the boot (asset-cache.mjs)
// and one makes the Pyodide snapshot (snapshot.mjs); they answer through dispatch too.

import { dispatch } from "./dispatch.mjs";

self.onmessage = ({ data }) => dispatch(data);
