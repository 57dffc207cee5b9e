// pymemory's debug panel (/debug/memory), seed 002 §5.2 tip 3: run a query with any
// strategy and see every candidate the orchestrator considered, each score component,
// why it was cut or kept, the exact text injected into the prompt and the token usage.

import { h, render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { createAgentMemory } from "../../agent-memory.mjs";

const html = htm.bind(h);

const TYPES = ["message", "tool_result", "user_feedback", "user_preference", "system_event"];
const EMPTY_STRATEGY = '{"kind":"compose","strategies":[]}';
const TOGGLED = new Set(["time_window", "by_tag", "by_type"]);
const STATUSES = {
  included: "injected into the prompt",
  max_items: "ranked below the max-items limit",
  token_budget: "did not fit in the remaining token budget",
  expired: "its TTL has passed",
  scope: "outside the requested scope(s)",
  type: "its type is not in by_type",
  time_window: "outside the time window",
  tag: "lacks the required tag(s)",
  below_floor: "not relevant: embedding too far from the query, too few of its words and none of its key terms (relevance floor)",
  zero_weight: "final score is 0 (a weight of 0)",
  no_match: "shares no term with the query (newest 100 shown)",
};

const MODE_HINTS = {
  bm25: " (relevance = the share of the query's BM25 weight matched + context part (a better-scoring neighbour turn))",
  hybrid: " (relevance = dense part (scaled cosine) + lexical part (scaled BM25) + context part (a better-scoring neighbour turn))",
  recency: " (no query terms: every memory has relevance 1, ranked by recency)",
};

const params = new URLSearchParams(location.search);
const DB_NAME = params.get("db") || "pymemory-demo";
const MODELS = params.get("models") === "0" ? [] : ["embedder"];
const client = createAgentMemory({ dbName: DB_NAME, models: MODELS });
window.pymemoryDebug = { client };

// --- helpers ---------------------------------------------------------------------------

const toError = (err) => ({ code: err?.code ?? "error", message: String(err?.message ?? err) });

function parseTags(value) {
  return [...new Set(value.split(/[,，;；]/).map((t) => t.trim()).filter(Boolean))];
}

function numberOrUndefined(value) {
  return String(value).trim() === "" ? undefined : Number(value);
}

function fmt(value, digits = 3) {
  return value == null ? "—" : Number(value).toFixed(digits);
}

function age(ms) {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

function stamp(ms) {
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// The JSON editor is the source of truth; the quick toggles read it and rewrite its
// top-level time_window / by_tag / by_type parts.
function togglesFrom(strategy) {
  const out = { hours: "", tags: "", match: "any", types: [] };
  const parts = strategy?.kind === "compose" ? strategy.strategies ?? [] : [strategy];
  for (const s of parts) {
    if (s?.kind === "time_window" && s.hours != null) out.hours = String(s.hours);
    if (s?.kind === "by_tag" && Array.isArray(s.tags)) {
      out.tags = s.tags.join(", ");
      out.match = s.match === "all" ? "all" : "any";
    }
    if (s?.kind === "by_type" && Array.isArray(s.types)) out.types = s.types;
  }
  return out;
}

function withToggles(strategy, t) {
  const kept =
    strategy == null
      ? []
      : strategy.kind === "compose"
        ? (strategy.strategies ?? []).filter((s) => !TOGGLED.has(s?.kind))
        : TOGGLED.has(strategy.kind)
          ? []
          : [strategy];
  const hours = numberOrUndefined(t.hours);
  if (hours !== undefined) kept.push({ kind: "time_window", hours });
  const tags = parseTags(t.tags);
  if (tags.length) kept.push({ kind: "by_tag", tags, match: t.match });
  if (t.types.length) kept.push({ kind: "by_type", types: t.types });
  return { kind: "compose", strategies: kept };
}

function formatStrategy(s) {
  if (s.kind !== "compose" || !s.strategies.length) return JSON.stringify(s);
  const lines = s.strategies.map((p) => `  ${JSON.stringify(p)}`).join(",\n");
  return `{"kind":"compose","strategies":[\n${lines}\n]}`;
}

function parseStrategy(text) {
  if (!text.trim()) return null; // the default ranking
  try {
    return JSON.parse(text);
  } catch (err) {
    const e = new Error(`the strategy is not valid JSON: ${err.message}`);
    e.code = "invalid_strategy";
    throw e;
  }
}

// --- pieces ----------------------------------------------------------------------------

function BootStatus({ status, readyMs, failure }) {
  const ready = readyMs != null;
  const phase = failure ? "error" : ready ? "ready" : status.phase;
  const progress = ready ? 1 : Math.max(0, Math.min(1, status.progress ?? 0));
  return html`<div class="status" data-testid="status" data-phase=${phase} data-ready=${String(ready)} role="status" aria-live="polite">
    <progress max="1" value=${progress} aria-label="Boot progress"></progress>
    ${failure
      ? html`<span><code>${failure.code}</code>: ${failure.message}</span>`
      : ready
        ? `Ready in ${Math.round(readyMs)} ms. Database "${DB_NAME}".`
        : `Booting the memory worker (${phase})… ${Math.round(progress * 100)}%`}
  </div>`;
}

function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert" data-testid="error" data-code=${error.code}>
    <code>${error.code}</code>: ${error.message}
  </p>`;
}

function StatusBadge({ status }) {
  return html`<span class=${`st st-${status}`} title=${STATUSES[status] ?? status}>${status}</span>`;
}

function Summary({ r, elapsed }) {
  const counts = {};
  for (const c of r.trace ?? []) counts[c.status] = (counts[c.status] ?? 0) + 1;
  const order = Object.keys(STATUSES).filter((s) => counts[s]);
  return html`<div class="summary-bar">
    <span data-testid="debug-mode" data-mode=${r.mode}>
      mode: <strong>${r.mode}</strong>
      <span class="hint">${MODE_HINTS[r.mode] ?? ""}</span>
      ${(r.notes ?? []).map((n) => html`<span class="hint" data-testid="debug-note"> · ${n}</span>`)}
    </span>
    <span data-testid="debug-tokens" class="tokens" data-used=${r.tokensUsed} data-max=${r.maxTokens}>
      tokens: <strong>${r.tokensUsed} / ${r.maxTokens}</strong>
    </span>
    <meter min="0" max=${r.maxTokens || 1} value=${r.tokensUsed} aria-label="Token budget used"></meter>
    <span>items: <strong>${r.memories.length} / ${r.maxItems}</strong></span>
    <span data-testid="debug-inject" data-inject=${r.inject}
      title="what the prompt gets of each memory: passages of its raw text, or its summary">inject: <strong>${r.inject}</strong></span>
    <span data-testid="debug-counts">
      ${(r.trace ?? []).length} candidates:${" "}
      ${order.map(
        (s) => html`<span data-status=${s} data-count=${counts[s]}><${StatusBadge} status=${s} /> ${counts[s]}${" "}</span>`,
      )}
    </span>
    <span class="hint">counter: ${r.tokenCounter}${elapsed != null ? `, ${Math.round(elapsed)} ms` : ""}</span>
  </div>`;
}

function TraceTable({ trace }) {
  if (!trace.length) {
    return html`<p class="empty" data-testid="debug-table" data-rows="0">
      No candidates. With a query, only memories sharing a term with it are candidates;
      an empty query considers every memory.
    </p>`;
  }
  return html`<div class="table-wrap">
    <table class="trace" data-testid="debug-table" data-rows=${trace.length}>
      <caption class="visually-hidden">Every candidate, best score first</caption>
      <thead>
        <tr>
          <th class="num" scope="col">#</th>
          <th scope="col">status</th>
          <th scope="col">type</th>
          <th scope="col">time</th>
          <th scope="col">content</th>
          <th class="num" scope="col" title="raw BM25 score of the query's terms">bm25</th>
          <th class="num" scope="col" title="cosine similarity of the embeddings (hybrid mode)">cosine</th>
          <th class="num" scope="col" title="relevance = dense part + lexical part + context part">relevance</th>
          <th class="num" scope="col" title="time decay factor (per memory type)">× decay</th>
          <th class="num" scope="col" title="feedback weight">× feedback</th>
          <th class="num" scope="col" title="lift for a memory inside the time span the query names">× time</th>
          <th class="num" scope="col" title="relevance × decay × feedback × time">= score</th>
          <th class="num" scope="col" title="tokens of the injected line (only for items that reached the budget)">tokens</th>
        </tr>
      </thead>
      <tbody>
        ${trace.map(
          (c, i) => html`<tr key=${c.id} data-testid="debug-row" data-status=${c.status} data-id=${c.id}>
            <td class="num">${i + 1}</td>
            <td><${StatusBadge} status=${c.status} />${c.condensed ? html` <small title="included with a shorter summary to fit the token budget">condensed</small>` : ""}</td>
            <td>${c.type}</td>
            <td class="time" title=${new Date(c.timestamp).toISOString()}>${stamp(c.timestamp)}<br />${age(c.timestamp)}</td>
            <td class="content" title=${c.id}>${c.content}${(c.passages ?? []).map(
              (p) => html`<div class="passage" data-testid="debug-passage" data-why=${p.why}
                title=${`characters ${p.start}-${p.end} of the raw text; BM25 ${fmt(p.score)}`}><small>${p.why}</small> ${p.text}</div>`,
            )}</td>
            <td class="num">${fmt(c.bm25)}</td>
            <td class="num">${c.dense == null ? "—" : fmt(c.dense)}</td>
            <td class="num" data-testid="debug-relevance" title=${`dense part ${fmt(c.densePart)} + lexical part ${fmt(c.lexicalPart)} + context part ${fmt(c.contextPart)}`}>
              ${fmt(c.relevance)}<br /><small>${fmt(c.densePart, 2)} + ${fmt(c.lexicalPart, 2)} + ${fmt(c.contextPart, 2)}</small>
            </td>
            <td class="num">${fmt(c.decay)}</td>
            <td class="num">${fmt(c.feedbackWeight, 2)}</td>
            <td class="num">${fmt(c.timeMatch, 2)}</td>
            <td class="num" data-testid="debug-score" data-score=${c.score} data-relevance=${c.relevance}
              data-dense-part=${c.densePart} data-lexical-part=${c.lexicalPart}
              data-context-part=${c.contextPart} data-decay=${c.decay}
              data-feedback=${c.feedbackWeight} data-time=${c.timeMatch}><strong>${fmt(c.score)}</strong></td>
            <td class="num">${c.tokens ?? "—"}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

// --- the page --------------------------------------------------------------------------

function App() {
  const [status, setStatus] = useState(client.status);
  const [readyMs, setReadyMs] = useState(null);
  const [failure, setFailure] = useState(null);
  const [query, setQuery] = useState(params.get("q") ?? "");
  const [maxItems, setMaxItems] = useState(params.get("maxItems") ?? "5");
  const [maxTokens, setMaxTokens] = useState(params.get("maxTokens") ?? "1500");
  const [strategyText, setStrategyText] = useState(EMPTY_STRATEGY);
  const [toggles, setToggles] = useState(togglesFrom(JSON.parse(EMPTY_STRATEGY)));
  const [result, setResult] = useState(null);
  const [elapsed, setElapsed] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const seq = useRef(0);
  const ready = readyMs != null;

  useEffect(() => {
    const off = client.onStatus(setStatus);
    setStatus(client.status);
    client.ready.then(
      () => setReadyMs(performance.now()),
      (err) => setFailure(toError(err)),
    );
    return off;
  }, []);

  // /debug/memory?q=...: run that query as soon as the worker is ready.
  useEffect(() => {
    if (ready && params.has("q")) run();
  }, [ready]);

  function editJson(text) {
    setStrategyText(text);
    try {
      setToggles(togglesFrom(text.trim() ? JSON.parse(text) : null));
    } catch {
      // keep the toggles while the JSON is being typed
    }
  }

  function toggle(patch) {
    const next = { ...toggles, ...patch };
    setToggles(next);
    try {
      const current = strategyText.trim() ? JSON.parse(strategyText) : null;
      setStrategyText(formatStrategy(withToggles(current, next)));
      setError(null);
    } catch (err) {
      setError({ code: "invalid_strategy", message: `fix the JSON first: ${err.message}` });
    }
  }

  async function run(e) {
    e?.preventDefault();
    const mine = ++seq.current;
    setError(null);
    setBusy(true);
    const t0 = performance.now();
    try {
      const strategy = parseStrategy(strategyText);
      const r = await client.debug(query, {
        strategy,
        maxItems: numberOrUndefined(maxItems),
        maxTokens: numberOrUndefined(maxTokens),
      });
      if (mine === seq.current) {
        setResult(r);
        setElapsed(performance.now() - t0);
      }
    } catch (err) {
      if (mine === seq.current) setError(toError(err));
    } finally {
      if (mine === seq.current) setBusy(false);
    }
  }

  const demoHref = DB_NAME === "pymemory-demo" ? "/" : `/?db=${encodeURIComponent(DB_NAME)}`;
  return html`<div class="page">
    <header class="top">
      <h1>pymemory · /debug/memory</h1>
      <span class="sub">What retrieval considered, how it scored each candidate, what it cut and why.</span>
      <a href=${demoHref}>← Demo</a>
    </header>
    <${BootStatus} status=${status} readyMs=${readyMs} failure=${failure} />
    <form class="grid" onSubmit=${run} noValidate>
      <section class="panel" aria-labelledby="q-h">
        <h2 id="q-h">Query</h2>
        <div class="field">
          <label for="debug-query">Query (empty: rank every memory by recency)</label>
          <input id="debug-query" data-testid="debug-query" type="search" value=${query}
            onInput=${(e) => setQuery(e.currentTarget.value)} />
        </div>
        <div class="row">
          <div class="field narrow">
            <label for="debug-max-items">Max items</label>
            <input id="debug-max-items" data-testid="debug-max-items" type="number" min="0" value=${maxItems}
              onInput=${(e) => setMaxItems(e.currentTarget.value)} />
          </div>
          <div class="field narrow">
            <label for="debug-max-tokens">Max tokens</label>
            <input id="debug-max-tokens" data-testid="debug-max-tokens" type="number" min="0" value=${maxTokens}
              onInput=${(e) => setMaxTokens(e.currentTarget.value)} />
          </div>
          <div class="field button">
            <button type="submit" class="primary" id="debug-run" data-testid="debug-run" disabled=${!ready || busy}>
              Run retrieval
            </button>
          </div>
        </div>
        <${ErrorBox} error=${error} />
        <dl class="legend" aria-label="Statuses">
          ${Object.entries(STATUSES).map(
            ([s, why]) => html`<dt><${StatusBadge} status=${s} /></dt><dd>${why}</dd>`,
          )}
        </dl>
      </section>
      <section class="panel" aria-labelledby="s-h">
        <h2 id="s-h">Strategy</h2>
        <div class="field">
          <label for="debug-strategy">Strategy JSON (empty: the default fusion, decay, feedback and floor)</label>
          <textarea id="debug-strategy" data-testid="debug-strategy" class="code" rows="6" spellcheck="false"
            value=${strategyText} onInput=${(e) => editJson(e.currentTarget.value)}></textarea>
        </div>
        <div class="row">
          <div class="field narrow">
            <label for="debug-hours">Time window (h)</label>
            <input id="debug-hours" data-testid="debug-hours" type="number" min="0" step="any" placeholder="any"
              value=${toggles.hours} onInput=${(e) => toggle({ hours: e.currentTarget.value })} />
          </div>
          <div class="field">
            <label for="debug-tags">Tags (comma separated)</label>
            <input id="debug-tags" data-testid="debug-tags" type="text" placeholder="any"
              value=${toggles.tags} onInput=${(e) => toggle({ tags: e.currentTarget.value })} />
          </div>
          <div class="field narrow">
            <label for="debug-match">Tag match</label>
            <select id="debug-match" data-testid="debug-match" value=${toggles.match}
              onChange=${(e) => toggle({ match: e.currentTarget.value })}>
              <option value="any">any</option>
              <option value="all">all</option>
            </select>
          </div>
        </div>
        <fieldset>
          <legend>Types (none checked: every type)</legend>
          <div class="checks">
            ${TYPES.map(
              (t) => html`<label>
                <input type="checkbox" data-testid=${`debug-type-${t}`} checked=${toggles.types.includes(t)}
                  onChange=${(e) =>
                    toggle({
                      types: e.currentTarget.checked
                        ? [...toggles.types, t]
                        : toggles.types.filter((x) => x !== t),
                    })} />
                ${" "}${t}
              </label>`,
            )}
          </div>
        </fieldset>
        <p class="hint">
          score = relevance × decay × feedback × time, and relevance = dense part +
          lexical part + context part. Filters combine with AND; a later time_decay, feedback_weight,
          fusion or relevance_floor replaces the default one.
        </p>
      </section>
    </form>
    ${result &&
    html`<section class="panel" style="margin-top:14px" aria-labelledby="r-h">
        <h2 id="r-h">Candidates</h2>
        <${Summary} r=${result} elapsed=${elapsed} />
        <${TraceTable} trace=${result.trace ?? []} />
      </section>
      <section class="panel" style="margin-top:14px" aria-labelledby="t-h">
        <h2 id="t-h">Injected text <span class="hint">(${result.tokensUsed} tokens)</span></h2>
        <pre class="injected" data-testid="debug-text">${result.text}</pre>
      </section>`}
  </div>`;
}

const root = document.getElementById("app");
root.textContent = ""; // drop the no-JavaScript placeholder
render(html`<${App} />`, root);
