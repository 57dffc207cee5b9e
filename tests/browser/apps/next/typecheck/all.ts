// Every subpath export of pymemory, as a TypeScript app imports it (`tsc --strict`).
import { createAgentMemory, MemoryError, type Retrieval } from "pymemory";
import { useAgentMemory, type UseAgentMemory } from "pymemory/react";
import { registerOffline, loadedUrls } from "pymemory/offline";
import { memoryMiddleware, memoryTools } from "pymemory/ai";
import { PyMemoryRetriever, PyMemoryStore } from "pymemory/langchain";
import { generateText, stepCountIs, wrapLanguageModel, type LanguageModel, type ToolSet } from "ai";
import { BaseStore } from "@langchain/core/stores";
import type { Document } from "@langchain/core/documents";

const memory = createAgentMemory({ dbName: "types", assetsUrl: "/pymemory/" });
const found: Retrieval = await memory.retrieve("query", { maxTokens: 200 });
const text: string = found.text;

const offline: { cached: string[]; failed: string[] } = await registerOffline("/pymemory-sw.mjs", { assetsUrl: "/pymemory/", timeoutMs: 30_000 });
const urls: string[] = loadedUrls();

declare const base: LanguageModel & object;
const tools: ToolSet = await memoryTools(memory, { setId: "agent" });
const model = wrapLanguageModel({ model: base as Parameters<typeof wrapLanguageModel>[0]["model"], middleware: memoryMiddleware(memory, { maxTokens: 300 }) });
const answer = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "hi" });

const store = new PyMemoryStore<{ likes: string } | Uint8Array>(memory, { namespace: "prefs" });
const asBase: BaseStore<string, { likes: string } | Uint8Array> = store;
await store.mset([["a", { likes: "tea" }], ["b", new Uint8Array([1, 2])]]);
const values: ({ likes: string } | Uint8Array | undefined)[] = await store.mget(["a", "b"]);
for await (const key of store.yieldKeys("a")) console.log(key.toUpperCase());
const retriever = new PyMemoryRetriever({ memory, maxItems: 3 });
const docs: Document[] = await retriever.invoke("what does the user like?");
const score: number = docs[0].metadata.score;

function Hook(): string {
  const hook: UseAgentMemory = useAgentMemory({ dbName: "types", limit: 10 });
  return hook.client === null ? hook.status.phase : hook.client.dbName;
}

console.log(text, offline, urls, answer.text, asBase, values, score, Hook, MemoryError);
