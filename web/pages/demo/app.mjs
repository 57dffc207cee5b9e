// pymemory's demo page (/): boot progress, add memories, list them, retrieve for a query,
// give feedback, forget a scope. Everything runs in the browser: the memory core is
// Python in a Web Worker (Pyodide) over IndexedDB, reached through ../../agent-memory.mjs.

import { h, render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { createAgentMemory } from "../../agent-memory.mjs";

const html = htm.bind(h);

const TYPES = ["message", "tool_result", "user_feedback", "user_preference", "system_event"];
const SCOPES = ["conversation", "session", "user", "global"];
const PHASES = {
  idle: "Starting the worker",
  starting: "Starting the worker",
  runtime: "Loading the Python runtime (Pyodide)",
  packages: "Loading numpy",
  pymemory: "Installing pymemory",
  opening: "Opening IndexedDB",
  ready: "Opening the memory database",
  error: "Failed to start",
};
const FEEDBACK = [
  { kind: "liked", icon: "👍", label: "Like" },
  { kind: "disliked", icon: "👎", label: "Dislike" },
  { kind: "important", icon: "⭐", label: "Important" },
];

const params = new URLSearchParams(location.search);
const DB_NAME = params.get("db") || "pymemory-demo";
// ?models=0 turns the local models off (BM25 only, rule summaries).
const MODELS = params.get("models") === "0" ? [] : ["embedder", "summarizer"];
const client = createAgentMemory({ dbName: DB_NAME, scope: "conversation", models: MODELS });
window.pymemoryDemo = { client }; // handy from the console and in tests

// --- helpers ---------------------------------------------------------------------------

function toError(err) {
  return { code: err?.code ?? "error", message: String(err?.message ?? err) };
}

function parseTags(value) {
  // Commas, Chinese commas and semicolons all separate tags.
  return [...new Set(value.split(/[,，;；]/).map((t) => t.trim()).filter(Boolean))];
}

function when(ms) {
  return new Date(ms).toLocaleString(undefined, {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
  });
}

function expiresIn(item) {
  if (item.ttlMs == null) return null;
  const left = item.timestamp + item.ttlMs - Date.now();
  if (left <= 0) return "expired";
  const s = Math.round(left / 1000);
  if (s < 120) return `expires in ${s} s`;
  if (s < 7200) return `expires in ${Math.round(s / 60)} min`;
  return `expires in ${Math.round(s / 3600)} h`;
}

function intOrUndefined(value) {
  if (String(value).trim() === "") return undefined;
  return Number(value); // a bad number reaches the core, which answers with invalid_input
}

// --- pieces ----------------------------------------------------------------------------

function ErrorBox({ error, where }) {
  if (!error || error.where !== where) return null;
  return html`<p class="error" role="alert" data-testid="error" data-code=${error.code}>
    <code>${error.code}</code>: ${error.message}
  </p>`;
}

function BootStatus({ status, readyMs, failure }) {
  const ready = readyMs != null;
  const phase = failure ? "error" : ready ? "ready" : status.phase;
  const progress = ready ? 1 : Math.max(0, Math.min(1, status.progress ?? 0));
  let text;
  if (failure) text = html`<span><code>${failure.code}</code>: ${failure.message}</span>`;
  else if (ready) text = `Ready in ${Math.round(readyMs)} ms: Python memory core running in a Web Worker, stored in IndexedDB "${DB_NAME}".`;
  else text = `${PHASES[phase] ?? phase}… ${Math.round(progress * 100)}%`;
  return html`<div
    class="status"
    id="status"
    data-testid="status"
    data-phase=${phase}
    data-ready=${String(ready)}
    data-boot-ms=${ready ? Math.round(readyMs) : undefined}
    role="status"
    aria-live="polite"
  >
    <progress max="1" value=${progress} aria-label="Boot progress"></progress>
    ${text}
    <${ModelStatus} models=${status.models} />
  </div>`;
}

const MODEL_LABELS = { embedder: "MiniLM embeddings (hybrid search)", summarizer: "SmolLM2 summaries" };

function ModelStatus({ models }) {
  if (!models) return null;
  return html`<span class="models" data-testid="models">
    ${Object.keys(MODEL_LABELS)
      .filter((m) => models[m])
      .map(
        (m) => html`<span class="badge model-${models[m]}" data-testid=${`model-${m}`}
          data-state=${models[m]}>${MODEL_LABELS[m]}: ${models[m]}</span>`,
      )}
  </span>`;
}

function Badges({ item }) {
  const expiry = expiresIn(item);
  const fb = item.feedback ?? {};
  return html`<div class="meta">
    <span class="badge type" title="type">${item.type}</span>
    <span class="badge scope" title="scope">${item.scope}</span>
    ${item.tags.map((t) => html`<span class="badge tag" title="tag">#${t}</span>`)}
    ${item.contentMethod === "model"
      ? html`<span class="badge refined" data-testid="refined" title="summary rewritten by the local model (SmolLM2), checked by the guard"
          >refined by model</span
        >`
      : !["given", "verbatim"].includes(item.contentMethod) &&
        html`<span class="badge summary" title=${`content summarised from the raw text (${item.contentMethod})`}
          >summary</span
        >`}
    ${expiry && html`<span class="badge">${expiry}</span>`}
    ${fb.liked > 0 && html`<span title="likes">👍 ${fb.liked}</span>`}
    ${fb.disliked > 0 && html`<span title="dislikes">👎 ${fb.disliked}</span>`}
    ${fb.important && html`<span title="marked important">⭐</span>`}
    <span>${when(item.timestamp)}</span>
  </div>`;
}

function RawText({ item }) {
  if (!item.text || item.text === item.content) return null;
  return html`<details class="raw">
    <summary>raw text (${item.text.length} chars)</summary>
    <p>${item.text}</p>
  </details>`;
}

function FeedbackButtons({ item, onFeedback, disabled }) {
  return html`<div class="actions">
    ${FEEDBACK.map(
      (f) => html`<button
        type="button"
        class="small"
        data-testid=${`feedback-${f.kind}`}
        disabled=${disabled}
        aria-label=${`${f.label}: ${item.content}`}
        onClick=${() => onFeedback(item, f.kind)}
      >
        ${f.icon} ${f.label}
      </button>`,
    )}
  </div>`;
}

// --- sections --------------------------------------------------------------------------

function AddForm({ ready, run, error }) {
  const [type, setType] = useState("message");
  const [text, setText] = useState("");
  const [tags, setTags] = useState("");
  const [scope, setScope] = useState("conversation");
  const [ttl, setTtl] = useState("");
  const [note, setNote] = useState(null);

  async function submit(e) {
    e.preventDefault();
    setNote(null);
    const ttlSeconds = intOrUndefined(ttl);
    const input = { type, text, tags: parseTags(tags), scope, metadata: { source: "demo-page" } };
    if (ttlSeconds !== undefined) input.ttlMs = Math.round(ttlSeconds * 1000);
    const item = await run("add", () => client.addMemory(input));
    if (item) {
      setText("");
      setNote(`Stored as ${item.type} in ${item.scope}: “${item.content}”`);
    }
  }

  return html`<section class="panel" aria-labelledby="add-h">
    <h2 id="add-h">Add a memory</h2>
    <form onSubmit=${submit} noValidate>
      <div class="row">
        <div class="field">
          <label for="add-type">Type</label>
          <select id="add-type" data-testid="add-type" value=${type} onChange=${(e) => setType(e.currentTarget.value)}>
            ${TYPES.map((t) => html`<option value=${t}>${t}</option>`)}
          </select>
        </div>
        <div class="field">
          <label for="add-scope">Scope</label>
          <select id="add-scope" data-testid="add-scope" value=${scope} onChange=${(e) => setScope(e.currentTarget.value)}>
            ${SCOPES.map((s) => html`<option value=${s}>${s}</option>`)}
          </select>
        </div>
      </div>
      <div class="field">
        <label for="add-text">Text (raw input; long text is summarised to ≤ 200 characters)</label>
        <textarea
          id="add-text"
          data-testid="add-text"
          rows="3"
          required
          placeholder="e.g. I prefer answers as tables, and please keep them short."
          value=${text}
          onInput=${(e) => setText(e.currentTarget.value)}
        ></textarea>
      </div>
      <div class="row">
        <div class="field">
          <label for="add-tags">Tags (comma separated)</label>
          <input id="add-tags" data-testid="add-tags" type="text" placeholder="format, meeting" value=${tags}
            onInput=${(e) => setTags(e.currentTarget.value)} />
        </div>
        <div class="field narrow">
          <label for="add-ttl">TTL (seconds)</label>
          <input id="add-ttl" data-testid="add-ttl" type="number" min="1" step="any" placeholder="none" value=${ttl}
            onInput=${(e) => setTtl(e.currentTarget.value)} />
        </div>
        <div class="field button">
          <button type="submit" class="primary" id="add-submit" data-testid="add-submit" disabled=${!ready}>
            Add memory
          </button>
        </div>
      </div>
    </form>
    ${note && html`<p class="note" role="status" data-testid="add-note">${note}</p>`}
    <${ErrorBox} error=${error} where="add" />
  </section>`;
}

function MemoryList({ memories, loaded, ready, onFeedback, onDelete, error }) {
  return html`<section class="panel" aria-labelledby="list-h">
    <h2 id="list-h">Stored memories <span class="hint">(${memories.length}, newest first, every scope)</span></h2>
    <${ErrorBox} error=${error} where="list" />
    ${loaded && !memories.length && html`<p class="empty">No memories yet: add one.</p>`}
    <ul class="items" id="memory-list" data-testid="memory-list" aria-label="Stored memories">
      ${memories.map(
        (m) => html`<li key=${m.id} data-testid="memory-item" data-id=${m.id} data-type=${m.type} data-scope=${m.scope}>
          <p class="content">${m.content}</p>
          <${Badges} item=${m} />
          <${RawText} item=${m} />
          <div class="actions">
            <button type="button" class="small danger" data-testid="delete" disabled=${!ready}
              aria-label=${`Delete: ${m.content}`} onClick=${() => onDelete(m)}>Delete</button>
          </div>
        </li>`,
      )}
    </ul>
  </section>`;
}

function QueryPanel({ ready, retrieval, onQuery, onFeedback, error, busy }) {
  const [query, setQuery] = useState("");
  const [maxItems, setMaxItems] = useState("5");
  const [maxTokens, setMaxTokens] = useState("1500");

  function submit(e) {
    e.preventDefault();
    onQuery({ query, maxItems: intOrUndefined(maxItems), maxTokens: intOrUndefined(maxTokens) });
  }

  const r = retrieval;
  return html`<section class="panel" aria-labelledby="query-h">
    <h2 id="query-h">Retrieve for a prompt</h2>
    <form onSubmit=${submit} noValidate>
      <div class="field">
        <label for="query">Query (empty: the newest memories)</label>
        <input id="query" data-testid="query" type="search" placeholder="How should answers be formatted?"
          value=${query} onInput=${(e) => setQuery(e.currentTarget.value)} />
      </div>
      <div class="row">
        <div class="field narrow">
          <label for="query-max-items">Max items</label>
          <input id="query-max-items" data-testid="query-max-items" type="number" min="0" value=${maxItems}
            onInput=${(e) => setMaxItems(e.currentTarget.value)} />
        </div>
        <div class="field narrow">
          <label for="query-max-tokens">Max tokens</label>
          <input id="query-max-tokens" data-testid="query-max-tokens" type="number" min="0" value=${maxTokens}
            onInput=${(e) => setMaxTokens(e.currentTarget.value)} />
        </div>
        <div class="field button">
          <button type="submit" class="primary" id="query-submit" data-testid="query-submit" disabled=${!ready || busy}>
            Retrieve
          </button>
        </div>
      </div>
    </form>
    <${ErrorBox} error=${error} where="query" />
    ${r &&
    html`<p class="meta">
        <span id="tokens-used" data-testid="tokens-used" class="tokens" data-used=${r.tokensUsed} data-max=${r.maxTokens}>
          ${r.tokensUsed} / ${r.maxTokens} tokens used
        </span>
        <meter min="0" max=${r.maxTokens || 1} value=${r.tokensUsed} aria-label="Token budget used"></meter>
        <span>${r.memories.length} item${r.memories.length === 1 ? "" : "s"} (max ${r.maxItems})</span>
        <span>ranking: ${{ bm25: "relevance (share of the query's BM25 weight) × decay × feedback × time", hybrid: "relevance (cosine + BM25 share²) × decay × feedback × time", recency: "recency × feedback (no query terms)" }[r.mode]}</span>
      </p>
      ${!r.memories.length && html`<p class="empty" data-testid="nothing-relevant">Nothing relevant to this query in memory, so nothing is injected.</p>`}
      <ol class="items" id="results" data-testid="results" aria-label="Retrieved memories">
        ${r.memories.map(
          (m, i) => html`<li key=${m.item.id} data-testid="result-item" data-id=${m.item.id} data-score=${m.score}>
            <p class="content"><span class="score" title="final score">${i + 1}. ${m.score.toFixed(3)}</span> ${m.item.content}</p>
            <div class="meta">
              <span data-testid="score-parts" title=${`relevance (${m.densePart.toFixed(3)} dense + ${m.lexicalPart.toFixed(3)} lexical) × decay × feedback × time = score`}
                data-relevance=${m.relevance} data-decay=${m.decay} data-feedback=${m.feedbackWeight} data-time=${m.timeMatch}>
                ${m.relevance.toFixed(3)} × ${m.decay.toFixed(2)} × ${m.feedbackWeight.toFixed(2)} × ${m.timeMatch.toFixed(2)} = ${m.score.toFixed(3)}
              </span>
              <span>${m.tokens} tokens</span>
            </div>
            <${Badges} item=${m.item} />
            <${FeedbackButtons} item=${m.item} onFeedback=${onFeedback} disabled=${!ready} />
          </li>`,
        )}
      </ol>`}
    ${!r && html`<ol id="results" data-testid="results" class="items" aria-label="Retrieved memories"></ol>`}
  </section>`;
}

function ForgetPanel({ ready, run, error }) {
  const [scope, setScope] = useState("conversation");
  const [note, setNote] = useState(null);

  async function submit(e) {
    e.preventDefault();
    setNote(null);
    const n = await run("forget", () => client.clear({ scope }));
    if (n != null) setNote(`Forgot ${n} memor${n === 1 ? "y" : "ies"} in scope “${scope}”.`);
  }

  return html`<section class="panel" aria-labelledby="forget-h">
    <h2 id="forget-h">Forget</h2>
    <form onSubmit=${submit} class="row">
      <div class="field">
        <label for="forget-scope">Scope to forget</label>
        <select id="forget-scope" data-testid="forget-scope" value=${scope} onChange=${(e) => setScope(e.currentTarget.value)}>
          ${SCOPES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select>
      </div>
      <div class="field button">
        <button type="submit" class="danger" id="forget-submit" data-testid="forget-submit" disabled=${!ready}>
          Forget scope
        </button>
      </div>
    </form>
    ${note && html`<p class="note" role="status" data-testid="forget-note">${note}</p>`}
    <${ErrorBox} error=${error} where="forget" />
  </section>`;
}

// --- the page --------------------------------------------------------------------------

function App() {
  const [status, setStatus] = useState(client.status);
  const [readyMs, setReadyMs] = useState(null);
  const [failure, setFailure] = useState(null);
  const [memories, setMemories] = useState([]);
  const [loaded, setLoaded] = useState(false);
  const [retrieval, setRetrieval] = useState(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const lastQuery = useRef(null);
  const seq = useRef({ list: 0, query: 0 });
  const ready = readyMs != null;

  // Run an action, showing its failure (with its code) next to the section `where`.
  async function run(where, fn) {
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError({ where, ...toError(err) });
      return undefined;
    }
  }

  async function refreshList() {
    const mine = ++seq.current.list;
    try {
      const items = await client.list({ scope: null, limit: 200 }); // scope: null = every scope
      if (mine === seq.current.list) {
        setMemories(items);
        setLoaded(true);
      }
    } catch (err) {
      if (mine === seq.current.list) setError({ where: "list", ...toError(err) });
    }
  }

  async function query(opts) {
    lastQuery.current = opts;
    const mine = ++seq.current.query;
    setBusy(true);
    const r = await run("query", () =>
      client.retrieve(opts.query, { maxItems: opts.maxItems, maxTokens: opts.maxTokens }),
    );
    if (mine === seq.current.query) {
      setBusy(false);
      if (r) setRetrieval(r);
    }
  }

  useEffect(() => {
    const offStatus = client.onStatus(setStatus);
    setStatus(client.status); // onStatus only reports changes
    // Every change (here, in another tab) refreshes the list and the last retrieval.
    const offChange = client.subscribe(() => {
      refreshList();
      if (lastQuery.current) query(lastQuery.current);
    });
    client.ready.then(
      () => {
        setReadyMs(performance.now());
        refreshList();
      },
      (err) => setFailure(toError(err)),
    );
    // Feedback is persisted in batches (every 3 s); try to write the last batch when the
    // tab is hidden or closed.
    const flushSoon = () => document.visibilityState === "hidden" && client.flush().catch(() => {});
    document.addEventListener("visibilitychange", flushSoon);
    return () => {
      offStatus();
      offChange();
      document.removeEventListener("visibilitychange", flushSoon);
    };
  }, []);

  const feedback = (item, kind) => run("query", () => client.feedback(item.id, kind));
  const remove = (item) => run("list", () => client.delete(item.id));
  const debugHref = `/debug/memory${DB_NAME === "pymemory-demo" ? "" : `?db=${encodeURIComponent(DB_NAME)}`}`;

  return html`<div class="page">
    <header class="top">
      <h1>pymemory demo</h1>
      <span class="sub">Private, offline memory for client-side agents. Nothing leaves this browser.</span>
      <a href=${debugHref} data-testid="debug-link">Debug panel →</a>
    </header>
    <${BootStatus} status=${status} readyMs=${readyMs} failure=${failure} />
    <main class="grid">
      <div>
        <${AddForm} ready=${ready} run=${run} error=${error} />
        <div style="height:14px"></div>
        <${QueryPanel} ready=${ready} busy=${busy} retrieval=${retrieval} onQuery=${query} onFeedback=${feedback} error=${error} />
      </div>
      <div>
        <${MemoryList} memories=${memories} loaded=${loaded} ready=${ready} onDelete=${remove} error=${error} />
        <div style="height:14px"></div>
        <${ForgetPanel} ready=${ready} run=${run} error=${error} />
      </div>
    </main>
  </div>`;
}

const root = document.getElementById("app");
root.textContent = ""; // drop the no-JavaScript placeholder
render(html`<${App} />`, root);
