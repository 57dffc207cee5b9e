// Type declarations for web/agent-memory.mjs (the pymemory JS client).

export type MemoryType =
  | "message"
  | "tool_result"
  | "user_feedback"
  | "user_preference"
  | "system_event";
export type Scope = "conversation" | "session" | "user" | "global" | (string & {});
export type FeedbackKind = "liked" | "disliked" | "important";
export type CutReason =
  | "expired"
  | "scope"
  | "type"
  | "time_window"
  | "tag"
  | "below_floor"
  | "zero_weight"
  | "max_items"
  | "token_budget";

export type ErrorCode =
  | "invalid_input"
  | "invalid_strategy"
  | "invalid_import"
  | "not_found"
  | "conflict"
  | "schema_mismatch"
  | "storage_error"
  | "quota_exceeded"
  | "closed"
  | "wrong_key"
  | "sync_failed"
  | "sync_integrity"
  | "boot_failed"
  | "offline_failed"
  | "worker_failed"
  | "leader_lost"
  | "not_ready"
  | "unknown_method"
  | "model_unavailable"
  | "embedder_unavailable"
  | "llm_error"
  | "internal";

export declare const ERROR_CODES: readonly ErrorCode[];

export declare class MemoryError extends Error {
  readonly name: "MemoryError";
  readonly code: ErrorCode;
  /** only on the errors that say (sync_failed, storage_error): true when the same call may
   * succeed later (the hub was unreachable, answered 5xx or timed out), false when it
   * would fail the same way (refused credentials, not a CouchDB database) */
  readonly retryable?: boolean;
  constructor(code: ErrorCode, message: string, options?: { retryable?: boolean });
}

export interface MemoryItem {
  id: string;
  type: MemoryType;
  /** epoch milliseconds */
  timestamp: number;
  /** human-readable summary, at most 200 characters */
  content: string;
  /** the raw input the summary came from */
  text: string;
  /** which stage produced `content`: "rules", "given" (you passed it), later "model" */
  contentMethod: string;
  scope: Scope;
  tags: string[];
  ttlMs: number | null;
  feedback: { liked: number; disliked: number; important: boolean };
  metadata: {
    source: string;
    confidence: number;
    references: string[];
    [key: string]: unknown;
  };
  /** stored writes of this item: 1 when added, +1 per update, feedback flush or refinement */
  version: number;
}

export interface AddMemoryInput {
  /** raw input; summarised into `content` and kept whole */
  text?: string;
  /** your own summary (<= 200 chars) instead of the encoder's */
  content?: string;
  type?: MemoryType;
  metadata?: Record<string, unknown>;
  tags?: string[];
  scope?: Scope;
  ttlMs?: number;
  timestamp?: number;
}

export type Strategy =
  | { kind: "time_window"; hours?: number | null; since_ms?: number | null; until_ms?: number | null }
  | { kind: "by_tag"; tags: string[]; match?: "any" | "all" }
  | { kind: "by_type"; types: MemoryType[] }
  | { kind: "by_scope"; scopes: Scope[] }
  | {
      kind: "time_decay";
      half_life_hours?: number | null;
      floor?: number;
      by_type?: Partial<Record<MemoryType, { half_life_hours?: number | null; floor?: number }>>;
      query_window?: number;
    }
  | { kind: "feedback_weight"; liked?: number; disliked?: number; important?: number }
  | {
      kind: "fusion";
      method?: "minmax" | "score" | "rrf";
      k?: number;
      lexical?: number;
      dense?: number;
      power?: number;
      depth?: number;
      context?: number[];
    }
  | { kind: "relevance_floor"; min_dense?: number; min_lexical?: number }
  | { kind: "compose"; strategies: Strategy[] };

export type StrategyPreset = "recent-5" | "all" | "by-tag" | "custom";

export declare const PRESETS: readonly StrategyPreset[];

export declare const strategies: {
  timeWindow(opts: { hours?: number; sinceMs?: number; untilMs?: number }): Strategy;
  byTag(tags: string | string[], opts?: { match?: "any" | "all" }): Strategy;
  byType(...types: MemoryType[] | [MemoryType[]]): Strategy;
  byScope(...scopes: Scope[] | [Scope[]]): Strategy;
  /** Per-type decay by default (messages and preferences do not fade, tool results do);
   * halfLifeHours and/or floor set one decay for every type, byType overrides single
   * types; queryWindow lifts memories inside a span the query names ("last weekend"). */
  timeDecay(opts?: {
    halfLifeHours?: number | null;
    floor?: number;
    byType?: Partial<Record<MemoryType, { halfLifeHours?: number | null; floor?: number }>>;
    queryWindow?: number;
  }): Strategy;
  feedbackWeight(opts?: { liked?: number; disliked?: number; important?: number }): Strategy;
  /** How relevance is made from BM25 and the embedding once an embedder is loaded:
   * "minmax" (default) = lexical * bm25 / best + dense * cosine scaled over the
   * candidates; "score" = dense * cosine + lexical * share ** power; "rrf" = rank fusion.
   * context: how far a memory moves up towards a better-scoring neighbour turn (one
   * weight per distance, default [0.5, 0.4]; [] turns it off). */
  fusion(opts?: {
    method?: "minmax" | "score" | "rrf";
    k?: number;
    lexical?: number;
    dense?: number;
    power?: number;
    depth?: number;
    context?: number[];
  }): Strategy;
  /** Leave out memories below both thresholds (cosine, BM25 share); 0 and 0 turn it off. */
  relevanceFloor(opts?: { minDense?: number; minLexical?: number }): Strategy;
  compose(...parts: Strategy[] | [Strategy[]]): Strategy;
};

/** score = relevance × decay × feedbackWeight × timeMatch; relevance = densePart +
 * lexicalPart + contextPart (hybrid: the fused cosine and BM25; bm25 mode: the share of
 * the query's weight; recency: 1). */
export interface ScoreParts {
  score: number;
  relevance: number;
  densePart: number;
  lexicalPart: number;
  /** the lift from a better-scoring neighbour turn (fusion's context) */
  contextPart: number;
  /** the raw BM25 score */
  bm25: number;
  decay: number;
  feedbackWeight: number;
  /** the lift for a memory inside the time span the query names (1 otherwise) */
  timeMatch: number;
}

export interface ScoredMemory extends ScoreParts {
  item: MemoryItem;
  score: number;
  bm25: number;
  decay: number;
  feedbackWeight: number;
  tokens: number;
  /** this memory's lines in `text` (its passages, or its summary with inject "summary") */
  line: string;
  /** which spans of item.text went into the prompt, and why (inject "passages") */
  passages: Passage[];
  /** cosine similarity to the query, when dense retrieval ran (else null) */
  dense: number | null;
  /** shortened to fit the token budget: its best sentence (passages) or a shorter summary */
  condensed: boolean;
}

/** A span of a memory's raw text (item.text) that went into the prompt. */
export interface Passage {
  start: number;
  end: number;
  /** "whole" (a short memory), "best" (its best match), "match" (another match),
   * "meaning" (no query word, but it stands out by meaning: with an embedder),
   * "neighbour" (context next to one of those), "shortened" (the best sentence, to fit) */
  why: "whole" | "best" | "match" | "meaning" | "neighbour" | "shortened";
  /** its BM25 score for the query's terms (0: no term matched) */
  score: number;
  /** item.text.slice(start, end) */
  text: string;
}

export interface Candidate extends ScoreParts {
  id: string;
  type: MemoryType;
  timestamp: number;
  content: string;
  bm25: number;
  decay: number;
  feedbackWeight: number;
  score: number;
  status: "included" | CutReason;
  tokens: number | null;
  dense: number | null;
  condensed: boolean;
  passages: Passage[];
}

export interface Retrieval {
  query: string;
  /** "hybrid" once an embedder is loaded (BM25 and dense fused), "bm25" before, "recency"
   * for an empty query */
  mode: "bm25" | "hybrid" | "recency";
  memories: ScoredMemory[];
  /** what to inject into the prompt: with inject "passages" (the default) the passages of
   * the memories' raw text that answer the query, verbatim, grouped under a [YYYY-MM-DD]
   * line per day, in time order; with "summary" one summary line per memory, best first */
  text: string;
  tokensUsed: number;
  maxTokens: number;
  maxItems: number;
  tokenCounter: string;
  trace: Candidate[] | null;
  /** e.g. why dense retrieval did not take part */
  notes: string[];
  /** [startMs, endMs] of a time span the query names ("last weekend"), else null */
  window: [number, number] | null;
  inject: "passages" | "summary";
}

export interface RetrieveOptions {
  strategy?: Strategy | StrategyPreset | null;
  maxItems?: number;
  maxTokens?: number;
  trace?: boolean;
  /** let a memory over the remaining budget in shortened (default true) */
  condense?: boolean;
  /** what `text` carries of each memory: "passages" of its raw text (default) or its
   * "summary" (item.content) */
  inject?: "passages" | "summary";
  /** restrict to one scope (by default retrieve searches every scope) */
  scope?: Scope;
}

export interface ListFilters {
  /** defaults to the client's scope; null lists every scope */
  scope?: Scope | Scope[] | null;
  type?: MemoryType | MemoryType[];
  tags?: string[];
  sinceMs?: number;
  untilMs?: number;
  limit?: number;
}

export interface ClearFilter {
  scope?: Scope | Scope[];
  tags?: string[];
  type?: MemoryType | MemoryType[];
  sinceMs?: number;
  untilMs?: number;
  /** every memory and the archive */
  all?: boolean;
}

/** One version of a memory (`history`): the item as it was, from `validFrom` until
 * `validTo` (epoch ms; null for the current version). `conflict`: a version that lost a
 * sync conflict to another device's edit (docs/sync.md), kept beside the line of versions. */
export interface MemoryVersion {
  item: MemoryItem;
  validFrom: number;
  validTo: number | null;
  conflict: boolean;
}

/** Bytes of one downloaded (or cached) file: boot assets, then model files. */
export interface FileProgress {
  loaded: number;
  /** from Content-Length; null when the server sends none */
  total: number | null;
  source: "network" | "cache";
}

export type ModelName = "embedder" | "summarizer";
/** The local embedders (docs/models.md): "minilm" (all-MiniLM-L6-v2, English, 22.9 MB,
 * the default) or "multilingual-e5-small" (Chinese, Japanese, Korean and Latin-script
 * languages, 75.7 MB). */
export type EmbedderName = "minilm" | "multilingual-e5-small";
/** The `models` option: ["embedder", "summarizer"], or { embedder: true | EmbedderName,
 * summarizer: boolean } to name the embedder. */
export type ModelsOption = ModelName[] | { embedder?: boolean | EmbedderName; summarizer?: boolean };
export type ModelState = "loading" | "ready" | "error";

export interface Status {
  phase: "starting" | "runtime" | "packages" | "opening" | "ready" | "error";
  /** 0..1, never decreasing */
  progress: number;
  /** this tab runs the store worker ("leader") or forwards its calls to the tab that does */
  role?: "leader" | "follower";
  ready: boolean;
  error: { code: ErrorCode; message: string } | null;
  /** per file name (pyodide.asm.wasm, python_stdlib.zip, the wheels, ...; model files as
   * "<model>/<file>" while and after `models` load) */
  files?: Record<string, FileProgress>;
  /** the sum over `files` */
  bytes?: { loaded: number; total: number };
  /** the asset folders the worker loads from */
  assets?: Record<"pyodide" | "onnxruntime" | "tiktoken" | "wheels" | "models", string>;
  bootMs?: number;
  /** milliseconds each boot phase took (starting, runtime, packages, opening), once ready */
  phaseMs?: Partial<Record<"starting" | "runtime" | "packages" | "opening", number>>;
  /** local models asked for with `models`: their state, and `info`/`error` once known */
  models?: Partial<Record<ModelName, ModelState>> & {
    info?: Record<string, unknown>;
    error?: { code: ErrorCode; message: string };
    /** background embedding's progress (Stats.embedding), refreshed until it is done */
    embedding?: { model: string | null; embedded: number; items: number };
  };
  /** the origin's storage, once ready: measured at boot, after `persist` is answered and
   * after a write fails for storage */
  storage?: StorageStatus;
  /** the Pyodide memory snapshot of repeat visits: "restored" (this boot started from it),
   * "absent" (none yet), "corrupt" | "stale" | "refused" (deleted; this boot started
   * normally, with a console warning), "off" (`pyodideSnapshot: false`) */
  snapshot?: "restored" | "absent" | "corrupt" | "stale" | "refused" | "off";
  /** making the snapshot, a while after a first visit's `ready`: "saving" | "saved" | "failed: <why>" */
  snapshotSave?: string;
  /** the sync rounds this page's clients ran (the `sync` option, `sync()`); background
   * rounds of `live` show in `stats().sync` */
  sync?: SyncStatus;
}

export interface SyncStatus {
  dbName: string;
  state: "syncing" | "idle" | "error";
  /** the last round that succeeded, and when (epoch ms) */
  last?: SyncResult;
  atMs?: number;
  error?: { code: ErrorCode; message: string; retryable?: boolean } | null;
  /** the round running now, refreshed every 250 ms while `state` is "syncing"; null
   * before its first refresh and after it ends */
  round?: SyncRound | null;
}

/** A sync round as it runs: its phase, the records pushed and pulled so far (after each
 * batch or page) and when it started (epoch ms). */
export interface SyncRound {
  phase: "push" | "pull";
  pushed: number;
  pulled: number;
  startedMs: number;
}

/** What one sync round did (docs/sync.md). */
export interface SyncResult {
  /** records sent to the hub, received from it (own echoes not counted) */
  pushed: number;
  pulled: number;
  /** memories whose concurrent edits were decided (the loser kept in the item's history) */
  conflicts: number;
  /** the ids of those memories, each once */
  conflictItems: string[];
  /** the hub's feed position after the round (opaque) */
  checkpoint: unknown;
  /** request and response bodies on the wire */
  bytesSent: number;
  bytesReceived: number;
  requests: number;
  seconds: number;
  /** the round at `ready` failed (the store opened anyway) */
  error?: { code: ErrorCode; message: string; retryable?: boolean };
}

export interface SyncOptions {
  /** the CouchDB database of this user and store: http(s)://host/<database>; the hub
   * must allow this page's origin (CORS) */
  url: string;
  /** null, an Authorization value ("Bearer <jwt>") or HTTP basic credentials */
  auth?: string | { username: string; password: string } | null;
  /** keep syncing in the background (every 5 s, backing off while the hub fails), in
   * the worker of the tab that runs the store (started again in the worker of a tab
   * that takes over); default false */
  live?: boolean;
  /** how long one request to the hub may take, in ms, before the round fails with
   * sync_failed (retryable); default 30000 */
  timeoutMs?: number;
}

export interface StorageStatus {
  /** the browser keeps this origin's storage under storage pressure
   * (navigator.storage.persisted(); null where unknown); see `persist` */
  persisted: boolean | null;
  /** navigator.storage.estimate(), in bytes (null where unknown). Chromium reports an
   * artificial quota (usage + up to 10 GiB), not the one it enforces (60% of the disk). */
  usage: number | null;
  quota: number | null;
  /** bytes writes leave free under `quota` (storageReserveBytes) */
  reserve: number | null;
}

export interface Stats {
  items: number;
  expiredPendingSweep: number;
  archived: number;
  byType: Record<string, number>;
  byScope: Record<string, number>;
  byMethod: Record<string, number>;
  oldestMs: number | null;
  newestMs: number | null;
  pendingFeedback: number;
  unreadableRecords: number;
  schemaVersion: number;
  tokenCounter: string;
  /** background inference (the embedder, the summarizer) and the page's calls: model steps
   * taken, steps that waited for a call to end, steps that ran during one (a wait that ran
   * out after 0.5 s) */
  background: { steps: number; waited: number; overlapped: number };
  /** the attached embedder (null: none) and how many of the items it has embedded: after
   * a change of embedder, the background re-embedding's progress (docs/models.md) */
  embedding: { model: string | null; embedded: number; items: number };
  /** the room for writes, as Python's stats()["storage"] reports it */
  storage?: {
    available_bytes: number | null;
    usage_bytes: number | null;
    quota_bytes: number | null;
    reserve_bytes: number;
    persisted?: boolean | null;
  } | null;
  /** when this store last synced (any tab), local commits not pushed yet, live loops */
  sync?: {
    lastSyncMs: number | null;
    pending: number | null;
    lastRound?: { pushed: number; pulled: number; conflicts: number; conflictItems: string[] };
    live: Array<{ running: boolean; rounds: number; failures: number; lastError: string | null }>;
    /** the round running now in the store's worker (a live one too), null between rounds */
    round?: SyncRound | null;
  };
}

export interface ArchivedItem {
  id: string;
  type: MemoryType;
  timestamp: number;
  content: string;
}

/** Every option is checked when the client is created, before anything starts: an unknown
 * name (a typo such as `presist`) or a value of the wrong type or range throws a
 * MemoryError "invalid_input" that names the option ("invalid_strategy" for `strategy`).
 * An option left `undefined` takes its default. The options of the page's shared
 * connection (asset URLs, bootTimeoutMs, tabs, ortThreads, modelWorker, pyodideSnapshot, durability,
 * feedbackFlushMs, autoArchiveDays, storageReserveBytes) are the first client's: a later
 * client that gives one of them another value throws "invalid_input". */
export interface CreateAgentMemoryOptions {
  /** 1 to 128 characters (default "pymemory") */
  dbName?: string;
  /** default "conversation" */
  scope?: Scope;
  strategy?: StrategyPreset | Strategy | null;
  /** for the "by-tag" preset */
  tags?: string[] | null;
  /** for the "custom" preset */
  custom?: Strategy | null;
  /** local models to load after the store opens (progress in `status.models`) */
  models?: ModelsOption | null;
  /** the folder the package is served from (default: beside agent-memory.mjs) */
  assetsUrl?: string;
  /** per-asset overrides, relative to assetsUrl (see ASSET_DEFAULTS) */
  workerUrl?: string;
  wheelsUrl?: string;
  modelsUrl?: string;
  pyodideUrl?: string;
  onnxruntimeUrl?: string;
  tiktokenUrl?: string;
  /** `ready` rejects with boot_failed after this long: whole milliseconds from 1 to
   * 2147483647 (default 120000) */
  bootTimeoutMs?: number;
  /** "shared" (default): one store worker for all tabs, run by an elected tab; "own": this page's own */
  tabs?: "shared" | "own";
  /** onnxruntime-web WASM threads, 1 to 64 (more than 1 needs a cross-origin isolated
   * page; default 1) */
  ortThreads?: number;
  /** false: run the local models on the store worker's thread instead of a model worker of
   * their own (for comparisons; default true) */
  modelWorker?: boolean;
  /** false: never make or restore the Pyodide memory snapshot that shortens repeat visits
   * (kept in Cache Storage, checked by sha256; default true) */
  pyodideSnapshot?: boolean;
  /** IndexedDB transaction durability (default "strict") */
  durability?: "strict" | "relaxed";
  /** how often batched feedback is stored, in ms > 0 (default 3000) */
  feedbackFlushMs?: number;
  /** move memories older than this many days (> 0) to the archive in the background;
   * null or left out: never */
  autoArchiveDays?: number | null;
  /** Ask the browser for persistent storage (navigator.storage.persist(), from the page):
   * without it Chromium may delete the origin's data when the disk runs short. The answer
   * shows in `status.storage.persisted`; `ready` does not wait for it. Default false. */
  persist?: boolean;
  /** bytes writes leave free under the quota navigator.storage.estimate() reports, a
   * whole number >= 0 (default 32 MiB); a write that would cross it rejects with
   * quota_exceeded */
  storageReserveBytes?: number;
  /** Encrypt this database at rest (AES-256-GCM per value; key names stay readable). A
   * wrong passphrase or key rejects `ready` (and every call) with code "wrong_key" and
   * writes nothing; so does opening an encrypted database without one. */
  encryption?: EncryptionOptions | null;
  /** Sync this database with a CouchDB database (docs/sync.md): `ready` runs one round
   * first (a failed round shows in `status.sync`, the store opens anyway, except that a
   * new device of an encrypted store must pull the store's key once and rejects with
   * sync_failed); `sync()` runs another. */
  sync?: SyncOptions | null;
}

export type EncryptionOptions =
  | {
      /** PBKDF2-SHA256 (salt and iteration count stored in the database) */
      passphrase: string;
      key?: never;
      /** PBKDF2 iterations when this creates the database (default 600000, at least 1000;
       * an existing database keeps its own) */
      iterations?: number;
    }
  | {
      /** an AES-GCM CryptoKey of 256 bits with usages encrypt and decrypt; it may be
       * non-extractable. It wraps the database's data key. */
      key: CryptoKey;
      passphrase?: never;
      iterations?: never;
    };

export interface AgentMemory {
  readonly dbName: string;
  readonly scope: Scope;
  readonly strategy: Strategy | null;
  readonly listing: ListFilters | null;
  readonly status: Status;
  readonly ready: Promise<Status>;
  /** resolves when the models asked for with `models` are attached */
  readonly modelsReady: Promise<Record<string, unknown>>;
  onStatus(fn: (status: Status) => void): () => void;
  /** called after any change to this database from this page or another tab */
  subscribe(fn: () => void): () => void;

  addMemory(input: string | AddMemoryInput): Promise<MemoryItem>;
  addMany(entries: Array<string | AddMemoryInput>): Promise<MemoryItem[]>;
  get(id: string): Promise<MemoryItem>;
  /** Every version of a memory, oldest first, ending with the current one (`validTo`
   * null): each version `update` replaced, with when it was valid. Retrieval sees only
   * the current version; deleting the memory deletes its history. */
  history(id: string): Promise<MemoryVersion[]>;
  /** Applies `changes` to the latest stored version; with `expectedVersion`, rejects with
   * code "conflict" (changing nothing) unless the item is still at that version. */
  update(
    id: string,
    changes: Omit<AddMemoryInput, "timestamp"> & { expectedVersion?: number },
  ): Promise<MemoryItem>;
  delete(id: string): Promise<void>;
  list(filters?: ListFilters): Promise<MemoryItem[]>;
  retrieve(query: string, options?: RetrieveOptions): Promise<Retrieval>;
  /** retrieve with `trace: true`: every candidate, its scores and why it was cut */
  debug(query: string, options?: RetrieveOptions): Promise<Retrieval & { trace: Candidate[] }>;
  feedback(id: string, kind: FeedbackKind): Promise<void>;
  flush(): Promise<number>;
  clear(filter?: ClearFilter): Promise<number>;
  archiveOlderThan(days: number, options?: { keepImportant?: boolean }): Promise<number>;
  searchArchive(query?: string, options?: { limit?: number }): Promise<ArchivedItem[]>;
  sweep(): Promise<number>;
  stats(): Promise<Stats>;
  exportJsonl(): Promise<string>;
  importJsonl(
    text: string,
    options?: {
      onConflict?: "error" | "skip" | "replace";
      chunkSize?: number;
      /** called after each batch is durably written */
      onProgress?: (written: number, total: number) => void;
    },
  ): Promise<{ added: number; replaced: number; skipped: number; archived: number }>;
  runKvConformance(): Promise<Array<{ name: string; ok: boolean; error: string }>>;
  /** One round with the `sync` option's hub: push local changes, then pull the others'
   * (run by the worker of the tab that runs the store). Rejects with sync_failed,
   * sync_integrity or schema_mismatch; invalid_input without the `sync` option. */
  sync(): Promise<SyncResult>;

  // --- agent primitives (same database; one instance per id in the worker) -------------

  /** Core memory blocks: small labelled texts the model sees every turn. */
  readonly blocks: BlocksApi;
  /** Versioned JSON facts with per-namespace TTL. */
  readonly structured: StructuredApi;
  /**
   * Run a memory tool the model called: `core_memory_append` / `core_memory_replace` or
   * Letta's `memory_replace` / `memory_insert` / `memory_rethink` (these return the block's
   * new value; all five need `setId`), `memory` (Anthropic memory_20250818 commands on
   * /memories files) or `memory_kv` (read / write / list / delete). `args` is an object
   * or the model's raw JSON text. A bad call by the model resolves with `isError: true`
   * (feed it back to the model); an unknown tool rejects with "not_found", a block tool
   * without `setId` with "invalid_input".
   */
  callTool(name: ToolName | (string & {}), args?: object | string, options?: { setId?: string }): Promise<ToolCallResult>;
  /**
   * The tools' schemas: the block tools (with `setId`: core_memory_*, or with `letta: true`
   * Letta's memory_*), memory, memory_kv.
   */
  toolSchemas(options?: ToolSchemaOptions): Promise<Array<Record<string, unknown>>>;
  /** Pause a run and resume it later (after a reload, say) from its latest checkpoint. */
  readonly checkpoints: CheckpointsApi;
  /** Observational memory: an observer model compresses an agent's steps in the worker. */
  readonly observer: ObserverApi;

  close(): Promise<void>;
}

export interface MemoryBlock {
  label: string;
  value: string;
  /** the most characters `value` may hold */
  limit: number;
  description: string;
  /** the agent's tools may not edit it (the app may, with setValue) */
  readOnly: boolean;
  /** characters used */
  chars: number;
}

export interface MemoryBlockInput {
  /** 1-64 letters, digits, _ or -, starting with a letter or _ */
  label: string;
  value?: string;
  /** default 2000 */
  limit?: number;
  description?: string;
  readOnly?: boolean;
}

export interface MemoryBlockSet {
  setId: string;
  maxBlocks: number;
  /** how many changes the set has seen */
  revision: number;
  blocks: MemoryBlock[];
}

export interface BlocksApi {
  /**
   * Open a block set (ids: 1-128 of letters, digits, _.:/@-). A stored set wins over
   * `blocks`, so opening is how a run resumes; `created` says whether this call made it.
   */
  open(
    setId: string,
    blocks?: MemoryBlockInput[],
    options?: { maxBlocks?: number },
  ): Promise<MemoryBlockSet & { created: boolean }>;
  /** The other methods also find a set stored by an earlier page; an unknown one: "not_found". */
  get(setId: string, label: string): Promise<MemoryBlock>;
  list(setId: string): Promise<MemoryBlockSet>;
  /**
   * The blocks as the text of one user message (`<memory_blocks>...`). `lettaCompat`:
   * Letta's rendering instead (header line, `<description>`, `- chars_current=` /
   * `- chars_limit=` / `- read_only=true` metadata; "" when the set has no blocks).
   */
  render(setId: string, options?: { lettaCompat?: boolean }): Promise<string>;
  /** `{ role: "user", content: render() }`: put it right after the system prompt. */
  message(setId: string, options?: { lettaCompat?: boolean }): Promise<{ role: "user"; content: string }>;
  /** The app's edit: replaces the whole value (read-only blocks too). */
  setValue(setId: string, label: string, value: string): Promise<MemoryBlock>;
}

export type StructuredNamespace = "episodic" | "semantic" | "procedural";

export interface StructuredEntry {
  namespace: StructuredNamespace;
  key: string;
  value: unknown;
  version: number;
  /** epoch ms */
  validFrom: number;
  /** null for the current version */
  validTo: number | null;
  expiresAt: number | null;
  metadata: Record<string, unknown>;
}

export interface StructuredApi {
  /**
   * Write the new current version of `key` (the old one stays in its history).
   * `ttlMs`: absent for the namespace default (episodic: 7 days), null never expires.
   */
  put(
    namespace: StructuredNamespace,
    key: string,
    value: unknown,
    options?: { metadata?: Record<string, unknown>; ttlMs?: number | null },
  ): Promise<StructuredEntry>;
  /** The current, unexpired version, or null. */
  get(namespace: StructuredNamespace, key: string): Promise<StructuredEntry | null>;
  list(
    namespace: StructuredNamespace,
    options?: { prefix?: string; limit?: number },
  ): Promise<StructuredEntry[]>;
  /** BM25 over keys and the strings in values; entries sharing no term are left out. */
  search(
    namespace: StructuredNamespace,
    query: string,
    options?: { limit?: number; prefix?: string },
  ): Promise<Array<{ entry: StructuredEntry; score: number }>>;
  /** Ends the current version (kept in history); `purge` erases the key and its history.
   * Resolves with whether a live value was deleted. */
  delete(namespace: StructuredNamespace, key: string, options?: { purge?: boolean }): Promise<boolean>;
  /** Every unexpired version, oldest first. */
  history(namespace: StructuredNamespace, key: string): Promise<StructuredEntry[]>;
  /** Remove expired records of one namespace (or all); resolves with how many. */
  decay(namespace?: StructuredNamespace | null): Promise<number>;
}

export type ToolName =
  | "core_memory_append"
  | "core_memory_replace"
  | "memory_replace"
  | "memory_insert"
  | "memory_rethink"
  | "memory"
  | "memory_kv";

export interface ToolCallResult {
  /** what the model reads (send it back as the tool result) */
  content: string;
  /** the structured outcome, for the app (e.g. { tool, command, path, outcome }) */
  artifact: Record<string, unknown> | null;
  isError: boolean;
}

export interface ToolSchemaOptions {
  /** "openai" (Chat Completions `tools` entries, the default) or "anthropic" */
  format?: "openai" | "anthropic";
  /** include core_memory_append / core_memory_replace for this block set */
  setId?: string;
  /** with `setId`: Letta's memory_replace / memory_insert / memory_rethink instead of core_memory_* */
  letta?: boolean;
  /** anthropic format: the `memory` tool as Anthropic's native `memory_20250818` entry */
  native?: boolean;
}

export interface Checkpoint<S = Record<string, unknown>> {
  runId: string;
  /** 1, 2, 3, ... per run */
  seq: number;
  createdAtMs: number;
  state: S;
  metadata: Record<string, unknown>;
}

export interface CheckpointsApi {
  /** Store `state` (a JSON object, <= 4 MiB) as the run's next checkpoint. Run ids:
   * 1-128 of letters, digits and _.@/- (no ":"). */
  save<S extends Record<string, unknown>>(
    runId: string,
    state: S,
    metadata?: Record<string, unknown> | null,
  ): Promise<Checkpoint<S>>;
  /** Where to resume: the newest checkpoint, or null. */
  latest<S = Record<string, unknown>>(runId: string): Promise<Checkpoint<S> | null>;
  /** Oldest first. */
  list(runId: string): Promise<Checkpoint[]>;
  /** Rejects with "not_found" when absent. */
  load(runId: string, seq: number): Promise<Checkpoint>;
  /** Remove every checkpoint of the run; resolves with how many there were. */
  deleteRun(runId: string): Promise<number>;
  /** Ids of the runs that have checkpoints. */
  runs(): Promise<string[]>;
}

export type ObserverModel =
  | {
      kind: "openai";
      /** the API root, as in the OpenAI SDK: "https://api.openai.com/v1" */
      baseUrl: string;
      model: string;
      apiKey?: string | null;
      /** "openai" (default) or a compatible provider's name, e.g. "bedrock" */
      provider?: string;
      timeoutMs?: number;
    }
  | {
      kind: "anthropic";
      model: string;
      apiKey?: string | null;
      /** default "https://api.anthropic.com" (without /v1) */
      baseUrl?: string;
      timeoutMs?: number;
    }
  /** offline, rule-based: no network */
  | { kind: "rules"; maxChars?: number };

export interface ObserverOptions {
  /** 1-128 characters; observations are stored per session */
  sessionId: string;
  model: ObserverModel;
  /** observe once the unobserved steps cost more tokens than this (default 6000) */
  tokenThreshold?: number;
  /** the newest steps left unobserved by a scan (default 5) */
  keepRecentSteps?: number;
}

export interface ObserverStatus {
  sessionId: string;
  /** the model, without its API key */
  model: { kind: ObserverModel["kind"]; baseUrl?: string; model?: string };
  tokenThreshold: number;
  keepRecentSteps: number;
  /** a scan (an observer call) is in flight */
  scanning: boolean;
  unobservedTokens: number;
  scans: number;
  observations: number;
  lastError: { code: ErrorCode; message: string } | null;
}

export interface Observation {
  seqId: number;
  createdAtMs: number;
  text: string;
  priority: "high" | "medium" | "low";
  /** inclusive step numbers, counted per session across reloads */
  coversSteps: { from: number; to: number };
}

/** A step: text, a `{ role, content, tool_call_id?, name? }` message, or a list of them. */
export type ObserverStep =
  | string
  | { role: "system" | "user" | "assistant" | "tool"; content?: unknown; tool_call_id?: string; name?: string }
  | Array<string | { role: "system" | "user" | "assistant" | "tool"; content?: unknown; tool_call_id?: string; name?: string }>;

export interface ObserverApi {
  /** Configure a session's observer; reconfiguring waits for the scan in flight and keeps unobserved steps. */
  configure(options: ObserverOptions): Promise<ObserverStatus>;
  /** Record a step; past the threshold a scan starts in the worker's background. */
  noteStep(sessionId: string, step: ObserverStep): Promise<ObserverStatus>;
  /**
   * Wait for the scan in flight. If a scan failed since the last flush, rejects once with
   * its code ("llm_error" for the model); its steps stay unobserved for the next scan.
   */
  flush(sessionId: string): Promise<ObserverStatus>;
  /** noteStep / flush / status reject with "not_found" before configure in this worker. */
  status(sessionId: string): Promise<ObserverStatus>;
  /** Oldest first; also the stored observations of a session not configured yet. */
  list(sessionId: string): Promise<Observation[]>;
  /** The observations as a prompt block ("" when there are none). */
  prompt(sessionId: string): Promise<string>;
}

export declare function createAgentMemory(options?: CreateAgentMemoryOptions): AgentMemory;

export type AssetOptions = Pick<
  CreateAgentMemoryOptions,
  "assetsUrl" | "workerUrl" | "wheelsUrl" | "modelsUrl" | "pyodideUrl" | "onnxruntimeUrl" | "tiktokenUrl"
>;
export declare const ASSET_DEFAULTS: Readonly<Required<Omit<AssetOptions, "assetsUrl">>>;
export declare const DEFAULT_BOOT_TIMEOUT_MS: number;
/** The absolute asset URLs the options ask for (folders end in "/"). */
export declare function resolveAssets(options?: AssetOptions): Required<Omit<AssetOptions, "assetsUrl">>;

export interface MemorySnapshot {
  memories: MemoryItem[];
  status: Status;
  error: MemoryError | null;
  loaded: boolean;
}

/** Throws MemoryError "invalid_input" if `limit` is given and is not a whole number from
 * 1 to 100000, or for any other option name (useAgentMemory checks its own this way). */
export declare function checkStoreOptions(options?: { limit?: number }): void;

export declare function createMemoryStore(
  client: AgentMemory,
  options?: { limit?: number },
): {
  subscribe(fn: () => void): () => void;
  getSnapshot(): MemorySnapshot;
  refresh(): Promise<void>;
};

export declare function resolveStrategy(
  strategy: StrategyPreset | Strategy | null | undefined,
  options?: { tags?: string[]; custom?: Strategy },
): { strategy: Strategy | null; listing: ListFilters | null };
