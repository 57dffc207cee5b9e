// Type declarations for web/ai.mjs (pymemory/ai: the Vercel AI SDK, an optional peer dependency).

import type { LanguageModelMiddleware, ToolSet } from "ai";
import type { AgentMemory, RetrieveOptions, MemoryType } from "./agent-memory.js";

export interface MemoryToolsOptions {
  /** include the block tools of this block set (core_memory_*, or Letta's with `letta`) */
  setId?: string;
  letta?: boolean;
}

/** The memory tools (toolSchemas()) as AI SDK tools whose `execute` is callTool(). */
export declare function memoryTools(memory: AgentMemory, options?: MemoryToolsOptions): Promise<ToolSet>;

export interface MemoryMiddlewareOptions extends Pick<RetrieveOptions, "maxTokens" | "maxItems" | "strategy" | "scope" | "inject"> {
  /** the line above the retrieved text in the system prompt */
  heading?: string;
  /** store each exchange (user message + answer) with addMemory (default true) */
  store?: boolean;
  /** the stored items' type (default "message") */
  type?: MemoryType;
  /** a failed retrieve or add: the call goes on without memory (default: the call rejects) */
  onError?: (error: unknown) => void;
}

/** Retrieval into each call's system prompt, and each exchange stored afterwards. */
export declare function memoryMiddleware(memory: AgentMemory, options?: MemoryMiddlewareOptions): LanguageModelMiddleware;
