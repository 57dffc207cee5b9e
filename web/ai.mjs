// pymemory for the Vercel AI SDK (npm `ai`, an optional peer dependency): the memory tools
// as AI SDK tools, and a language-model middleware that gives each call what the memory
// retrieves for it and stores each exchange afterwards.
//
//   import { generateText, wrapLanguageModel, stepCountIs } from "ai";
//   import { memoryMiddleware, memoryTools } from "pymemory/ai";
//   const model = wrapLanguageModel({ model: yourModel, middleware: memoryMiddleware(memory) });
//   await generateText({ model, tools: await memoryTools(memory), stopWhen: stepCountIs(5), prompt });

import { jsonSchema, tool } from "ai";
import { MemoryError } from "./errors.mjs";

/**
 * The memory tools `memory.toolSchemas(options)` describes (memory, memory_kv; with
 * `setId` the block tools), as an AI SDK ToolSet: each one's JSON schema as its
 * `inputSchema`, and `execute` runs it with `memory.callTool` (the same operation). A bad
 * call by the model comes back to it as the tool's text (prefixed "Error: "), as
 * callTool's `isError` says; a failure of the store rejects.
 */
export async function memoryTools(memory, options = {}) {
  const { setId, letta } = options;
  const schemas = await memory.toolSchemas({ format: "openai", setId, letta });
  const tools = {};
  for (const entry of schemas) {
    const { name, description, parameters } = entry.function;
    tools[name] = tool({
      description,
      inputSchema: jsonSchema(parameters),
      execute: async (args) => {
        const result = await memory.callTool(name, args, setId ? { setId } : undefined);
        return result.isError ? `Error: ${result.content}` : result.content;
      },
    });
  }
  return tools;
}

/**
 * A LanguageModelMiddleware (wrapLanguageModel's `middleware`). Before each call it
 * retrieves with the last user message as the query and puts the retrieval's `text` into
 * the system prompt (after your own system text, under `heading`); after a call that
 * answered in text it stores the exchange (the user's message and the answer) with
 * `addMemory` (`store: false` turns that off). Options: `maxTokens`, `maxItems`,
 * `strategy`, `scope` (retrieve's options), `heading`, `store`, `type` (the stored items'
 * type, default "message"), `onError(err)` (a failed retrieve or add: the call goes on
 * without memory; by default it rejects).
 */
export function memoryMiddleware(memory, options = {}) {
  const { heading = "What you remember about the user (from earlier conversations):", store = true, type = "message", onError } = options;
  const retrieveOptions = pick(options, ["maxTokens", "maxItems", "strategy", "scope", "inject"]);
  const failed = (err) => {
    if (!onError) throw err;
    onError(err);
    return null;
  };

  const remember = async (params, answer) => {
    const question = lastUserText(params.prompt);
    if (!store || !question || !answer) return;
    await memory.addMemory({ text: `User: ${question}\nAssistant: ${answer}`, type }).catch(failed);
  };

  return {
    specificationVersion: "v4",
    async transformParams({ params }) {
      const query = lastUserText(params.prompt);
      if (!query) return params;
      const found = await memory.retrieve(query, retrieveOptions).catch(failed);
      if (!found?.text) return params;
      return { ...params, prompt: withSystem(params.prompt, `${heading}\n${found.text}`) };
    },
    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const answer = (result.content ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
      await remember(params, answer);
      return result;
    },
    async wrapStream({ doStream, params }) {
      const { stream, ...rest } = await doStream();
      let answer = "";
      const watched = stream.pipeThrough(
        new TransformStream({
          transform(part, controller) {
            if (part.type === "text-delta") answer += part.delta ?? part.textDelta ?? "";
            controller.enqueue(part);
          },
          async flush() {
            await remember(params, answer);
          },
        }),
      );
      return { stream: watched, ...rest };
    },
  };
}

/** The system prompt with `text` added: to the first system message, or as a new one. */
function withSystem(prompt, text) {
  if (!Array.isArray(prompt)) throw new MemoryError("invalid_input", "the model call has no prompt messages");
  const at = prompt.findIndex((m) => m.role === "system");
  if (at < 0) return [{ role: "system", content: text }, ...prompt];
  return prompt.map((m, i) => (i === at ? { ...m, content: `${m.content}\n\n${text}` } : m));
}

/** The text of the last user message, or "" (a call that only carries tool results). */
function lastUserText(prompt) {
  if (!Array.isArray(prompt)) return "";
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i];
    if (m.role !== "user") continue;
    if (typeof m.content === "string") return m.content.trim();
    return m.content
      .filter((p) => p.type === "text")
      .map((p) => p.text)
      .join("\n")
      .trim();
  }
  return "";
}

function pick(obj, names) {
  return Object.fromEntries(names.filter((n) => obj[n] !== undefined).map((n) => [n, obj[n]]));
}
