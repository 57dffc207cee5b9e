"use client";
// LangChain.js with pymemory: docs/browser.md's `langchainTour` (the test writes it to
// tour.js), and the classes for the test's own checks of the store contract.
import { useEffect } from "react";
import { BaseStore } from "@langchain/core/stores";
import { BaseRetriever } from "@langchain/core/retrievers";
import { Document } from "@langchain/core/documents";
import { useAgentMemory } from "pymemory/react";
import { PyMemoryRetriever, PyMemoryStore } from "pymemory/langchain";
import { langchainTour } from "./tour";

export default function LangChainPanel() {
  const { client, status } = useAgentMemory({ dbName: "next-langchain", scope: "user", assetsUrl: "/pymemory/" });
  useEffect(() => {
    if (!client) return;
    window.langchain = { client, langchainTour, PyMemoryStore, PyMemoryRetriever, BaseStore, BaseRetriever, Document };
  }, [client]);
  return <p id="status">{status.error ? `error ${status.error.code}: ${status.error.message}` : status.phase}</p>;
}
