// Type declarations for web/langchain.mjs (pymemory/langchain: LangChain.js, an optional peer dependency).

import type { BaseRetrieverInput } from "@langchain/core/retrievers";
import { BaseRetriever } from "@langchain/core/retrievers";
import { BaseStore } from "@langchain/core/stores";
import type { Document } from "@langchain/core/documents";
import type { AgentMemory, RetrieveOptions } from "./agent-memory.js";

/** A value the store keeps: JSON, or bytes (so it serves as a ByteStore). */
export type StoreValue = Uint8Array | string | number | boolean | null | StoreValue[] | { [key: string]: StoreValue };

/** A BaseStore over the memory's structured store (namespace "semantic", keys lc:<namespace>:<key>). */
export declare class PyMemoryStore<V extends StoreValue = StoreValue> extends BaseStore<string, V> {
  lc_namespace: string[];
  constructor(memory: AgentMemory, options?: { namespace?: string });
  mget(keys: string[]): Promise<(V | undefined)[]>;
  mset(keyValuePairs: [string, V][]): Promise<void>;
  mdelete(keys: string[]): Promise<void>;
  yieldKeys(prefix?: string): AsyncGenerator<string>;
}

export interface PyMemoryRetrieverInput
  extends BaseRetrieverInput,
    Pick<RetrieveOptions, "maxItems" | "maxTokens" | "strategy" | "scope" | "inject"> {
  memory: AgentMemory;
}

export interface RetrievedMetadata {
  id: string;
  score: number;
  type: string;
  scope: string;
  tags: string[];
  timestamp: number;
  /** the memory's summary */
  content: string;
}

/** A retriever over memory.retrieve(): one Document per memory, best first. */
export declare class PyMemoryRetriever extends BaseRetriever<RetrievedMetadata> {
  lc_namespace: string[];
  constructor(fields: PyMemoryRetrieverInput);
  _getRelevantDocuments(query: string): Promise<Document<RetrievedMetadata>[]>;
}
