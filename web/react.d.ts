// Type declarations for web/react.mjs (the useAgentMemory hook; React is a peer dependency).

import type {
  AddMemoryInput,
  AgentMemory,
  ClearFilter,
  CreateAgentMemoryOptions,
  FeedbackKind,
  MemoryError,
  MemoryItem,
  Retrieval,
  RetrieveOptions,
  Status,
} from "./agent-memory.js";

/** createAgentMemory's options, plus `limit`. */
export interface UseAgentMemoryOptions extends CreateAgentMemoryOptions {
  /** how many memories a strategy object lists (default 50) */
  limit?: number;
}

export interface UseAgentMemory {
  memories: MemoryItem[];
  addMemory(input: string | AddMemoryInput): Promise<MemoryItem>;
  retrieve(query: string, options?: RetrieveOptions): Promise<Retrieval>;
  feedback(id: string, kind: FeedbackKind): Promise<void>;
  clear(filter?: ClearFilter): Promise<number>;
  /** boot and load progress: { phase, progress, ready, error } */
  status: Status;
  error: MemoryError | null;
  loaded: boolean;
  /** null until the component mounted in the browser (never during server rendering) */
  client: AgentMemory | null;
}

/** What the hook returns before its client started: during server rendering and the
 * first client render (so hydration matches), with status.phase "starting". */
export declare const STARTING: {
  readonly memories: readonly MemoryItem[];
  readonly status: Status;
  readonly error: null;
  readonly loaded: false;
};

export declare function useAgentMemory(options?: UseAgentMemoryOptions): UseAgentMemory;
