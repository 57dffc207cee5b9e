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
  | "closed"
  | "boot_failed"
  | "not_ready"
  | "unknown_method"
  | "internal";

export declare const ERROR_CODES: readonly ErrorCode[];

export declare class MemoryError extends Error {
  readonly name: "MemoryError";
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string);
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
  | { kind: "time_decay"; half_life_hours?: number | null; floor?: number }
  | { kind: "feedback_weight"; liked?: number; disliked?: number; important?: number }
  | { kind: "compose"; strategies: Strategy[] };

export type StrategyPreset = "recent-5" | "all" | "by-tag" | "custom";

export declare const PRESETS: readonly StrategyPreset[];

export declare const strategies: {
  timeWindow(opts: { hours?: number; sinceMs?: number; untilMs?: number }): Strategy;
  byTag(tags: string | string[], opts?: { match?: "any" | "all" }): Strategy;
  byType(...types: MemoryType[] | [MemoryType[]]): Strategy;
  byScope(...scopes: Scope[] | [Scope[]]): Strategy;
  timeDecay(opts?: { halfLifeHours?: number | null; floor?: number }): Strategy;
  feedbackWeight(opts?: { liked?: number; disliked?: number; important?: number }): Strategy;
  compose(...parts: Strategy[] | [Strategy[]]): Strategy;
};

export interface ScoredMemory {
  item: MemoryItem;
  score: number;
  bm25: number;
  decay: number;
  feedbackWeight: number;
  tokens: number;
  /** the line injected into the prompt */
  line: string;
}

export interface Candidate {
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
}

export interface Retrieval {
  query: string;
  /** "bm25" for a query with terms, "recency" for an empty one */
  mode: "bm25" | "recency";
  memories: ScoredMemory[];
  /** the lines to inject into the prompt, best first */
  text: string;
  tokensUsed: number;
  maxTokens: number;
  maxItems: number;
  tokenCounter: string;
  trace: Candidate[] | null;
}

export interface RetrieveOptions {
  strategy?: Strategy | StrategyPreset | null;
  maxItems?: number;
  maxTokens?: number;
  trace?: boolean;
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

export interface Status {
  phase: "starting" | "idle" | "runtime" | "packages" | "pymemory" | "opening" | "ready" | "error";
  /** 0..1 */
  progress: number;
  ready: boolean;
  error: { code: ErrorCode; message: string } | null;
  bootMs?: number;
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
}

export interface ArchivedItem {
  id: string;
  type: MemoryType;
  timestamp: number;
  content: string;
}

export interface CreateAgentMemoryOptions {
  dbName?: string;
  scope?: Scope;
  strategy?: StrategyPreset | Strategy;
  /** for the "by-tag" preset */
  tags?: string[];
  /** for the "custom" preset */
  custom?: Strategy;
  workerUrl?: string;
  /** IndexedDB transaction durability (default "strict") */
  durability?: "strict" | "relaxed";
  feedbackFlushMs?: number;
  autoArchiveDays?: number;
}

export interface AgentMemory {
  readonly dbName: string;
  readonly scope: Scope;
  readonly strategy: Strategy | null;
  readonly listing: ListFilters | null;
  readonly status: Status;
  readonly ready: Promise<Status>;
  onStatus(fn: (status: Status) => void): () => void;
  /** called after any change to this database from this page or another tab */
  subscribe(fn: () => void): () => void;

  addMemory(input: string | AddMemoryInput): Promise<MemoryItem>;
  addMany(entries: Array<string | AddMemoryInput>): Promise<MemoryItem[]>;
  get(id: string): Promise<MemoryItem>;
  update(id: string, changes: Omit<AddMemoryInput, "timestamp">): Promise<MemoryItem>;
  delete(id: string): Promise<void>;
  list(filters?: ListFilters): Promise<MemoryItem[]>;
  retrieve(query: string, options?: RetrieveOptions): Promise<Retrieval>;
  /** retrieve with `trace: true`: every candidate, its scores and why it was cut */
  debug(query: string, options?: RetrieveOptions): Promise<Retrieval>;
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
  close(): Promise<void>;
}

export declare function createAgentMemory(options?: CreateAgentMemoryOptions): AgentMemory;

export interface MemorySnapshot {
  memories: MemoryItem[];
  status: Status;
  error: MemoryError | null;
  loaded: boolean;
}

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
