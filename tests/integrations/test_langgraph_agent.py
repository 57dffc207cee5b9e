"""LangGraph graphs on pymemory's store: a synchronous graph, and an agent (against a local
OpenAI-shaped server) that saves a fact in one thread and recalls it in another."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from pymemory.agent.llm import ChatRequest, HttpxTransport, Message, OpenAIChatModel, ToolCall
from pymemory.integrations.langgraph import PymemoryStore
from pymemory.storage import MapKv, SqliteKv

pytest_plugins = ["llm_server"]  # the llm_server fixture

# --- a LangGraph agent that remembers across threads ------------------------------------


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    parameters: dict


SAVE = Spec(
    "save_memory",
    "Save a fact about the user for later conversations.",
    {"type": "object", "properties": {"memory": {"type": "string"}}, "required": ["memory"]},
)


def _to_pymemory(message: Any) -> Message:
    if isinstance(message, ToolMessage):
        return Message.tool_result(message.tool_call_id, str(message.content))
    if isinstance(message, AIMessage):
        calls = [ToolCall(c["id"], c["name"], c["args"]) for c in message.tool_calls]
        return Message.assistant(str(message.content), calls)
    return Message.user(str(message.content))


def build_agent(model: OpenAIChatModel) -> StateGraph:
    async def call_model(state: MessagesState, config: RunnableConfig, *, store: BaseStore):
        namespace = (config["configurable"]["user_id"], "memories")
        last = state["messages"][-1]
        query = str(last.content) if last.type == "human" else None
        found = await store.asearch(namespace, query=query, limit=3)
        system = "You are a helpful assistant. What you know about the user:\n" + "\n".join(
            f"- {item.value['memory']}" for item in found
        )
        reply = await model(
            ChatRequest([_to_pymemory(m) for m in state["messages"]], tools=[SAVE], system=system)
        )
        calls = [{"id": c.id, "name": c.name, "args": c.arguments} for c in reply.tool_calls]
        return {"messages": [AIMessage(content=reply.text, tool_calls=calls)]}

    async def save_memories(state: MessagesState, config: RunnableConfig, *, store: BaseStore):
        namespace = (config["configurable"]["user_id"], "memories")
        out = []
        for call in state["messages"][-1].tool_calls:
            await store.aput(namespace, str(uuid.uuid4()), {"memory": call["args"]["memory"]})
            out.append(ToolMessage(content="saved", tool_call_id=call["id"]))
        return {"messages": out}

    def route(state: MessagesState) -> str:
        return "save_memories" if state["messages"][-1].tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("call_model", call_model)
    graph.add_node("save_memories", save_memories)
    graph.add_edge(START, "call_model")
    graph.add_conditional_edges("call_model", route, ["save_memories", END])
    graph.add_edge("save_memories", "call_model")
    return graph


def test_a_synchronous_graph_uses_the_sync_api(tmp_path):
    """graph.invoke runs sync nodes without an event loop: store.put/search work there."""

    def remember(state: MessagesState, *, store: BaseStore):
        store.put(("u",), "fact", {"memory": state["messages"][-1].content})
        found = store.search(("u",), query="tea")
        return {"messages": [AIMessage(content=found[0].value["memory"])]}

    kv = MapKv()
    graph = StateGraph(MessagesState)
    graph.add_node("remember", remember)
    graph.add_edge(START, "remember")
    app = graph.compile(store=PymemoryStore(kv))
    out = app.invoke({"messages": [{"role": "user", "content": "I drink green tea."}]})
    assert out["messages"][-1].content == "I drink green tea."


async def test_langgraph_agent_recalls_a_fact_in_another_thread(llm_server, tmp_path):
    kv = await SqliteKv.open(tmp_path / "agent.db")
    transport = HttpxTransport()
    try:
        model = OpenAIChatModel(
            llm_server.url + "/v1", "sk-test", "gpt-4.1-mini", transport=transport
        )
        app = build_agent(model).compile(checkpointer=InMemorySaver(), store=PymemoryStore(kv))
        # Thread 1: the model decides to save a fact, then answers.
        llm_server.reply_openai(
            tool_calls=[("call_1", "save_memory", {"memory": "The user's dog is called Biscuit."})]
        )
        llm_server.reply_openai("Noted: Biscuit.")
        thread1 = {"configurable": {"thread_id": "1", "user_id": "ada"}}
        out = await app.ainvoke(
            {"messages": [{"role": "user", "content": "My dog is called Biscuit."}]}, thread1
        )
        assert out["messages"][-1].content == "Noted: Biscuit."
        # Thread 2: a new conversation; the store brings the fact back into the prompt.
        llm_server.reply_openai("Your dog is Biscuit.")
        thread2 = {"configurable": {"thread_id": "2", "user_id": "ada"}}
        out = await app.ainvoke(
            {"messages": [{"role": "user", "content": "What is my dog called?"}]}, thread2
        )
        assert out["messages"][-1].content == "Your dog is Biscuit."

        assert len(llm_server.requests) == 3
        first, _, recall = (r.body for r in llm_server.requests)
        assert "Biscuit" not in first["messages"][0]["content"]  # nothing stored yet
        system, *turns = recall["messages"]
        assert (
            system["role"] == "system"
            and "- The user's dog is called Biscuit." in system["content"]
        )
        # The checkpointer keeps threads apart: thread 2's request holds only its own turn.
        assert turns == [{"role": "user", "content": "What is my dog called?"}]
        assert recall["tools"][0]["function"]["name"] == "save_memory"
        # Another user's namespace does not see it.
        assert await PymemoryStore(kv).asearch(("bob", "memories")) == []
    finally:
        await transport.close()
        await kv.close()
