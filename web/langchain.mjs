// pymemory for LangChain.js (npm `@langchain/core`, an optional peer dependency): a
// key-value store (a BaseStore) and a retriever that returns LangChain Documents.
//
//   import { PyMemoryStore, PyMemoryRetriever } from "pymemory/langchain";
//   const store = new PyMemoryStore(memory, { namespace: "cache" });
//   const retriever = new PyMemoryRetriever({ memory, maxItems: 4 });
//   const docs = await retriever.invoke("what does the user like?");

import { Document } from "@langchain/core/documents";
import { BaseRetriever } from "@langchain/core/retrievers";
import { BaseStore } from "@langchain/core/stores";
import { MemoryError } from "./errors.mjs";

const STRUCTURED = "semantic"; // the structured-memory namespace the store keeps its keys in
const BYTES = "$pymemory.bytes"; // a Uint8Array value, as base64

/**
 * A LangChain BaseStore<string, V> over the memory's structured store (namespace
 * "semantic", keys `lc:<namespace>:<key>`, no expiry): mget (undefined for a missing
 * key), mset, mdelete, yieldKeys(prefix). Values are what JSON can hold, or a Uint8Array
 * (so it serves as a ByteStore); anything else rejects with invalid_input.
 */
export class PyMemoryStore extends BaseStore {
  lc_namespace = ["pymemory", "stores"];

  constructor(memory, options = {}) {
    super(options);
    const { namespace = "langchain" } = options;
    if (typeof namespace !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(namespace)) {
      throw new MemoryError("invalid_input", "namespace must be 1-64 letters, digits, _ . or -");
    }
    this.memory = memory;
    this.prefix = `lc:${namespace}:`;
  }

  async mget(keys) {
    const entries = await Promise.all(keys.map((k) => this.memory.structured.get(STRUCTURED, this.prefix + k)));
    return entries.map((entry) => (entry ? decode(entry.value) : undefined));
  }

  async mset(keyValuePairs) {
    const encoded = keyValuePairs.map(([k, v]) => [this.prefix + k, encode(v)]); // all checked first
    for (const [key, value] of encoded) {
      await this.memory.structured.put(STRUCTURED, key, value, { ttlMs: null });
    }
  }

  async mdelete(keys) {
    for (const k of keys) await this.memory.structured.delete(STRUCTURED, this.prefix + k, { purge: true });
  }

  async *yieldKeys(prefix = "") {
    const entries = await this.memory.structured.list(STRUCTURED, { prefix: this.prefix + prefix });
    for (const entry of entries) yield entry.key.slice(this.prefix.length);
  }
}

/**
 * A LangChain retriever over `memory.retrieve(query, options)`: one Document per
 * retrieved memory, best first. `pageContent` is the memory's line as retrieval puts it
 * into a prompt; `metadata` has id, score, type, scope, tags, timestamp and content (the
 * summary). Options: memory, maxItems, maxTokens, strategy, scope, inject, and
 * BaseRetriever's.
 */
export class PyMemoryRetriever extends BaseRetriever {
  lc_namespace = ["pymemory", "retrievers"];

  constructor(fields) {
    super(fields);
    if (!fields?.memory) throw new MemoryError("invalid_input", "PyMemoryRetriever needs { memory }");
    this.memory = fields.memory;
    this.options = Object.fromEntries(
      ["maxItems", "maxTokens", "strategy", "scope", "inject"].filter((n) => fields[n] !== undefined).map((n) => [n, fields[n]]),
    );
  }

  async _getRelevantDocuments(query) {
    const found = await this.memory.retrieve(query, this.options);
    return found.memories.map(
      (m) =>
        new Document({
          pageContent: m.line,
          id: m.item.id,
          metadata: {
            id: m.item.id,
            score: m.score,
            type: m.item.type,
            scope: m.item.scope,
            tags: m.item.tags,
            timestamp: m.item.timestamp,
            content: m.item.content,
          },
        }),
    );
  }
}

function encode(value) {
  if (value instanceof Uint8Array) {
    let binary = "";
    for (const byte of value) binary += String.fromCharCode(byte);
    return { [BYTES]: btoa(binary) };
  }
  let text;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new MemoryError("invalid_input", `a store value must be JSON or a Uint8Array: ${err.message}`);
  }
  if (text === undefined) throw new MemoryError("invalid_input", "a store value must be JSON or a Uint8Array");
  return JSON.parse(text);
}

function decode(value) {
  if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 1 && BYTES in value) {
    return Uint8Array.from(atob(value[BYTES]), (c) => c.charCodeAt(0));
  }
  return value;
}
