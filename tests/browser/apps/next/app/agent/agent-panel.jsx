"use client";
// An AI SDK agent with pymemory: docs/browser.md's `converse` (generateText with the memory
// tools and the retrieval middleware; the test writes it to converse.js) driven with the AI
// SDK's own MockLanguageModelV4, scripted as a model would act: asked to remember, it calls
// the memory_kv tool; asked a question, it answers from what its system prompt says (where
// the middleware put the memories).
import { useEffect } from "react";
import { simulateReadableStream, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { useAgentMemory } from "pymemory/react";
import { memoryMiddleware } from "pymemory/ai";
import { converse } from "./converse";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const textOf = (m) => (typeof m.content === "string" ? m.content : m.content.filter((p) => p.type === "text").map((p) => p.text).join(""));
const answer = (text) => ({ content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] });

function scriptedModel(seen) {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      seen.push(prompt);
      const last = prompt[prompt.length - 1];
      if (last.role === "tool") return answer("Saved to memory.");
      const fact = /^remember:\s*(.+)$/i.exec(textOf(last));
      if (fact) {
        const input = JSON.stringify({ operation: "write", key: "user-fact", text: fact[1] });
        return {
          content: [{ type: "tool-call", toolCallId: `call-${seen.length}`, toolName: "memory_kv", input }],
          finishReason: { unified: "tool-calls", raw: "tool_calls" },
          usage,
          warnings: [],
        };
      }
      const system = prompt.filter((m) => m.role === "system").map((m) => m.content).join("\n");
      const line = system.split("\n").find((l) => /sister/i.test(l) && !/remember about/i.test(l));
      return answer(line ? `From memory: ${line.trim()}` : "I do not know.");
    },
  });
}

// A streaming model: its answer comes in three deltas; it saw `seen` as its prompt.
function streamingModel(seen, words) {
  return new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      seen.push(prompt);
      const chunks = [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t" },
        ...words.map((delta) => ({ type: "text-delta", id: "t", delta })),
        { type: "text-end", id: "t" },
        { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
      ];
      return { stream: simulateReadableStream({ chunks }) };
    },
  });
}

export default function AgentPanel() {
  const { client, status } = useAgentMemory({ dbName: "next-agent", scope: "user", assetsUrl: "/pymemory/" });
  useEffect(() => {
    if (!client) return;
    window.converse = async (text) => {
      const seen = [];
      const reply = await converse(client, scriptedModel(seen), text);
      return { text: reply, prompts: seen };
    };
    window.streamOnce = async (text, words) => {
      const seen = [];
      const model = wrapLanguageModel({ model: streamingModel(seen, words), middleware: memoryMiddleware(client) });
      const result = streamText({ model, prompt: text });
      let streamed = "";
      for await (const delta of result.textStream) streamed += delta;
      await result.text;
      return { text: streamed, prompts: seen };
    };
  }, [client]);
  return <p id="status">{status.error ? `error ${status.error.code}: ${status.error.message}` : status.phase}</p>;
}
