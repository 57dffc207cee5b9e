// A scripted agent loop for tests/browser/test_agent_e2e.py. The page asks a model that
// speaks OpenAI Chat Completions (a local test server) for each turn, runs the model's tool
// calls through client.callTool, notes each step to the worker's observer (whose own model
// is the same server, reached by Pyodide's fetch), and checkpoints after every step.
// Calling runAgent again (after a reload, say) resumes the run from its latest checkpoint.

const SYSTEM = [
  "You are a travel-planning assistant with persistent memory.",
  "Keep what you learn about the user in your core memory blocks and your notes in /memories.",
].join(" ");

const TASK = "Plan my trip to Lyon in May. I prefer metric units. Keep notes as you go.";

const BLOCKS = [
  { label: "human", description: "What you know about the user.", limit: 500 },
  { label: "persona", value: "A careful travel planner.", readOnly: true },
];

// The observer reads text: an assistant turn's tool calls become "called name(args)" lines.
function forObserver(message) {
  if (message.role === "tool") {
    return { role: "tool", tool_call_id: message.tool_call_id, name: message.name, content: message.content };
  }
  const calls = (message.tool_calls ?? []).map((c) => `called ${c.function.name}(${c.function.arguments})`);
  return { role: "assistant", content: [message.content ?? "", ...calls].filter(Boolean).join("\n") };
}

async function askModel(modelUrl, apiKey, body) {
  const response = await fetch(`${modelUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`the model answered HTTP ${response.status}`);
  return (await response.json()).choices[0].message;
}

async function memorySnapshot(client, setId, sessionId) {
  const notes = await client.callTool("memory", { command: "view", path: "/memories/notes.md" });
  return {
    render: await client.blocks.render(setId),
    notes,
    observations: await client.observer.list(sessionId),
  };
}

export async function runAgent(pm, { modelUrl, dbName, runId, stopAfterSteps = Infinity }) {
  const client = pm.createAgentMemory({ dbName });
  await client.ready;
  const setId = `${runId}/core`;
  const sessionId = runId;
  const apiKey = "sk-local-test";

  const resumed = await client.checkpoints.latest(runId);
  const atResume = resumed ? await memorySnapshot(client, setId, sessionId) : null;
  const state = resumed
    ? resumed.state
    : { step: 0, done: false, finalText: null, messages: [{ role: "user", content: TASK }] };
  const opened = await client.blocks.open(setId, BLOCKS);
  await client.observer.configure({
    sessionId,
    model: { kind: "openai", baseUrl: `${modelUrl}/v1`, apiKey: "sk-observer", model: "observer-model" },
    tokenThreshold: 1, // observe every step at once, so the test is deterministic
    keepRecentSteps: 0,
  });
  const tools = await client.toolSchemas({ format: "openai", setId });

  const toolResults = [];
  let steps = 0;
  while (!state.done && steps < stopAfterSteps) {
    const blocks = await client.blocks.message(setId); // re-rendered every turn
    const message = await askModel(modelUrl, apiKey, {
      model: "agent-model",
      messages: [{ role: "system", content: SYSTEM }, blocks, ...state.messages],
      tools,
      temperature: 0,
    });
    const turn = [{ role: "assistant", content: message.content ?? null }];
    if (message.tool_calls?.length) turn[0].tool_calls = message.tool_calls;
    for (const call of message.tool_calls ?? []) {
      const result = await client.callTool(call.function.name, call.function.arguments, { setId });
      toolResults.push({ name: call.function.name, ...result });
      turn.push({ role: "tool", tool_call_id: call.id, name: call.function.name, content: result.content });
    }
    state.messages.push(...turn.map(({ name, ...m }) => m)); // Chat Completions: no name on tool turns
    state.step += 1;
    if (!message.tool_calls?.length) {
      state.done = true;
      state.finalText = message.content;
    }
    await client.observer.noteStep(sessionId, turn.map(forObserver));
    await client.observer.flush(sessionId);
    await client.checkpoints.save(runId, state, { status: state.done ? "done" : "running" });
    steps += 1;
  }

  return {
    resumedFromSeq: resumed?.seq ?? null,
    blocksCreated: opened.created,
    atResume,
    steps,
    state,
    toolResults,
    final: await memorySnapshot(client, setId, sessionId),
    kv: await client.callTool("memory_kv", { operation: "read", key: "trip:status" }),
    observerStatus: await client.observer.status(sessionId),
    prompt: await client.observer.prompt(sessionId),
    checkpoints: await client.checkpoints.list(runId),
  };
}
