"""The independent memory agent (seed 004): tools, budget, status block, isolation, loop."""

from __future__ import annotations

import asyncio
import json

import pytest

from pymemory.agent.llm import (
    ChatRequest,
    ChatResponse,
    HttpxTransport,
    LlmError,
    OpenAIChatModel,
    ToolCall,
)
from pymemory.agent.memory_agent import (
    BudgetAlreadyExceededError,
    BudgetWouldExceedError,
    MemoryAgent,
    MemoryBudgetError,
    MemoryEntry,
    Usage,
)
from pymemory.errors import PymemoryError, ValidationError
from pymemory.storage import MapKv

pytest_plugins = ["llm_server"]  # the llm_server fixture


class WordCounter:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class ScriptedModel:
    """Answers with queued ChatResponses (or raises queued exceptions); records requests."""

    def __init__(self, *replies: ChatResponse | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    async def __call__(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        reply = self.replies.pop(0) if self.replies else ChatResponse("Nothing to change.")
        if isinstance(reply, Exception):
            raise reply
        return reply


def agent(model=None, kv=None, clock=None, **kw) -> MemoryAgent:
    kw.setdefault("token_limit", 10)
    return MemoryAgent(
        model or ScriptedModel(),
        kv if kv is not None else MapKv(),
        token_counter=WordCounter(),
        clock=clock,
        **kw,
    )


@pytest.fixture
async def transport():
    t = HttpxTransport()
    yield t
    await t.close()


# -- tools -----------------------------------------------------------------------------------


async def test_tools_return_confirmation_and_artifact(clock):
    kv = MapKv()
    a = agent(kv=kv, clock=clock)
    assert a.tools.names() == ["set_memory", "delete_memory"]
    saved = await a.tools.call("set_memory", {"key": "name", "value": "Ada Lovelace"})
    assert not saved.is_error
    assert saved.content == "Saved memory 'name'. Usage 3/10 tokens, 7 remaining."
    assert saved.artifact == {
        "op": "set_memory",
        "ok": True,
        "key": "name",
        "value": "Ada Lovelace",
        "previous": None,
        "tokens": 3,  # "name: Ada Lovelace"
        "usage": {"total": 3, "limit": 10, "remaining": 7},
    }
    updated = await a.tools.call("set_memory", {"key": "name", "value": "Ada"})
    assert updated.content.startswith("Updated memory 'name'.")
    assert updated.artifact["previous"] == "Ada Lovelace"
    assert updated.artifact["usage"]["total"] == 2
    assert [k for k, _ in await kv.scan("")] == ["ns:memory_agent:default:name"]
    assert json.loads(await kv.get("ns:memory_agent:default:name")) == {
        "key": "name",
        "value": "Ada",
        "updated_at_ms": clock.now,
    }
    deleted = await a.tools.call("delete_memory", {"key": "name"})
    assert (deleted.is_error, deleted.artifact["ok"]) == (False, True)
    assert deleted.artifact["usage"] == {"total": 0, "limit": 10, "remaining": 10}
    missing = await a.tools.call("delete_memory", {"key": "name"})
    assert missing.is_error and missing.artifact["error"] == "not_found"
    assert await kv.scan("") == []


async def test_invalid_tool_arguments_are_error_results():
    a = agent()
    for args in ({"key": "k"}, {"key": "", "value": "v"}, {"key": "k", "value": 3}):
        result = await a.tools.call("set_memory", args)
        assert result.is_error and result.artifact["error"] == "invalid_input"
    assert (await a.tools.call("delete_memory", {})).artifact["error"] == "invalid_input"
    assert await a.memories() == []


# -- budget ----------------------------------------------------------------------------------


async def test_budget_would_exceed_rejects_one_write():
    a = agent(token_limit=10)
    await a.set_memory("city", "Paris")  # 2 tokens
    result = await a.tools.call(
        "set_memory", {"key": "bio", "value": "one two three four five six seven eight nine"}
    )
    assert result.is_error
    assert result.artifact == {
        "op": "set_memory",
        "ok": False,
        "error": "would_exceed",
        "key": "bio",
        "tokens": 10,
        "usage": {"total": 2, "limit": 10, "remaining": 8},
    }
    assert "needs 10 tokens but only 8 of 10 remain" in result.content
    assert [e.key for e in await a.memories()] == ["city"]  # unchanged
    with pytest.raises(BudgetWouldExceedError) as info:
        await a.set_memory("bio", "one two three four five six seven eight nine")
    assert isinstance(info.value, MemoryBudgetError) and isinstance(info.value, PymemoryError)
    assert info.value.code == "would_exceed"
    # A smaller write still fits; replacing a memory counts only the difference.
    await a.set_memory("bio", "five words fit the rest now")  # 7 tokens: total 9
    await a.set_memory("bio", "six words fit the rest now ok")  # 8 tokens: total 10
    assert await a.usage() == Usage(10, 10)


async def test_budget_already_exceeded_rejects_every_write():
    kv = MapKv()
    a = agent(kv=kv, token_limit=4)
    await a.set_memory("a", "x")
    await a.set_memory("b", "y")  # 4 of 4 tokens: nothing remains
    for args in ({"key": "c", "value": "z"}, {"key": "a", "value": "x"}):
        result = await a.tools.call("set_memory", args)
        assert result.is_error
        assert result.artifact["error"] == "already_exceeded"
        assert result.artifact["usage"] == {"total": 4, "limit": 4, "remaining": 0}
        assert "already used up (4/4 tokens)" in result.content
    with pytest.raises(BudgetAlreadyExceededError) as info:
        await a.set_memory("c", "z")
    assert info.value.code == "already_exceeded"
    # Over the limit (a smaller limit on the same store): still already_exceeded.
    tight = agent(kv=kv, token_limit=3)
    assert (await tight.usage()).remaining == -1
    with pytest.raises(BudgetAlreadyExceededError):
        await tight.set_memory("c", "z")
    # Deleting frees capacity again.
    assert await a.delete_memory("b") is True
    await a.set_memory("c", "z")
    assert [e.key for e in await a.memories()] == ["a", "c"]


async def test_status_block_appears_only_near_the_limit():
    a = agent(token_limit=10, status_threshold=0.8)
    await a.set_memory("pet", "a cat named Mia")  # 5 tokens: 50%
    assert await a.status_block() == ""
    assert "# Memory Status:" not in await a.system_prompt()
    await a.set_memory("city", "Paris, France")  # 3 more: 80%
    prompt = await a.system_prompt()
    assert prompt.endswith(
        "# Memory Status:\n"
        "Current memory usage: 8 tokens\n"
        "Token limit: 10 tokens\n"
        "Remaining capacity: 2 tokens"
    )
    assert "# Current memories\n- city: Paris, France\n- pet: a cat named Mia" in prompt
    await a.set_memory("job", "dev")
    assert "Memory is full" in await a.status_block()


async def test_memories_persist_and_scopes_are_separate(clock):
    kv = MapKv()
    await agent(kv=kv, clock=clock, scope="user:1").set_memory("lang", "Rust")
    await agent(kv=kv, clock=clock, scope="user:2").set_memory("lang", "Go")
    again = agent(kv=kv, scope="user:1")
    assert await again.memories() == [MemoryEntry("lang", "Rust", 2, clock.now)]
    assert await again.format_for_prompt() == "# Memories\n- lang: Rust"
    assert await agent(kv=kv, scope="nobody").format_for_prompt() == ""
    assert sorted(k for k, _ in await kv.scan("ns:memory_agent:")) == [
        "ns:memory_agent:user%3A1:lang",
        "ns:memory_agent:user%3A2:lang",
    ]


# -- the loop --------------------------------------------------------------------------------


async def test_process_runs_a_bounded_tool_loop():
    looping = ChatResponse("", [ToolCall("c", "set_memory", {"key": "k", "value": "v"})])
    model = ScriptedModel(looping, looping, looping, looping)
    a = agent(model, max_steps=3)
    run = await a.process("user: remember k=v")
    assert (run.steps, run.stopped, len(model.requests)) == (3, "max_steps", 3)
    assert len(run.outcomes) == 3 and a.last_run is run


async def test_unknown_tool_and_bad_arguments_are_reported_to_the_model():
    model = ScriptedModel(
        ChatResponse("", [ToolCall("c1", "forget_all", {}), ToolCall("c2", "set_memory", {}, "{")]),
        ChatResponse("Gave up."),
    )
    run = await agent(model).process([{"role": "user", "content": "hi"}])
    assert [o.result.artifact["error"] for o in run.outcomes] == ["unknown_tool", "invalid_input"]
    tool_messages = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == ["c1", "c2"]
    assert all(m.is_error for m in tool_messages)
    assert run.text == "Gave up." and run.stopped == "done"


# -- failure isolation -----------------------------------------------------------------------


async def test_schedule_isolates_a_model_that_raises(caplog):
    a = agent(ScriptedModel(RuntimeError("model exploded")))
    task = a.schedule([{"role": "user", "content": "I moved to Lyon."}])  # does not raise
    assert task is not None
    await a.flush()
    assert await task is None
    assert isinstance(a.last_error, RuntimeError)
    assert "memory agent failed" in caplog.text
    assert await a.memories() == []


async def test_schedule_isolates_http_500(llm_server, transport):
    llm_server.reply({"error": {"message": "internal error"}}, 500)
    model = OpenAIChatModel(llm_server.url + "/v1", "sk", "gpt-4.1-mini", transport=transport)
    a = agent(model)
    a.schedule("user: I moved to Lyon.")
    await a.flush()
    assert isinstance(a.last_error, LlmError)
    assert a.last_error.status == 500
    assert len(llm_server.requests) == 1


async def test_schedule_never_raises_on_bad_input_or_without_a_loop():
    a = agent()
    assert a.schedule(42) is None  # type: ignore[arg-type]
    assert isinstance(a.last_error, TypeError)
    task = a.schedule("   ")
    await a.flush()
    assert await task is None and isinstance(a.last_error, ValidationError)
    assert await asyncio.to_thread(a.schedule, "user: hi") is None  # no running loop there
    assert isinstance(a.last_error, RuntimeError)


async def test_schedule_snapshots_the_conversation():
    model = ScriptedModel()
    a = agent(model)
    conversation = [{"role": "user", "content": "I like tea."}]
    a.schedule(conversation)
    conversation.append({"role": "user", "content": "LATER MESSAGE"})
    await a.flush()
    assert "LATER MESSAGE" not in model.requests[0].messages[0].content


# -- against the local HTTP server -----------------------------------------------------------


async def test_full_loop_against_local_openai_server(llm_server, transport):
    llm_server.reply_openai(
        None,
        [
            ("call_1", "set_memory", {"key": "name", "value": "Ada"}),
            ("call_2", "set_memory", {"key": "diet", "value": "vegetarian"}),
        ],
    )
    llm_server.reply_openai(
        "Replacing the old city.",
        [
            ("call_3", "delete_memory", {"key": "city"}),
            ("call_4", "set_memory", {"key": "city", "value": "Lyon"}),
        ],
    )
    llm_server.reply_openai("Saved name, diet and city.")
    model = OpenAIChatModel(llm_server.url + "/v1", "sk-mem", "gpt-4.1-mini", transport=transport)
    a = agent(model, token_limit=100)
    await a.set_memory("city", "Paris")
    conversation = [
        {"role": "user", "content": "Hi, I'm Ada. I'm vegetarian and I just moved to Lyon."},
        {"role": "assistant", "content": "Welcome to Lyon, Ada!"},
    ]
    run = await a.process(conversation)

    assert (run.steps, run.stopped, run.text) == (3, "done", "Saved name, diet and city.")
    assert [(m.key, m.value) for m in await a.memories()] == [
        ("city", "Lyon"),
        ("diet", "vegetarian"),
        ("name", "Ada"),
    ]
    assert [(x["op"], x["key"], x["ok"]) for x in run.artifacts] == [
        ("set_memory", "name", True),
        ("set_memory", "diet", True),
        ("delete_memory", "city", True),
        ("set_memory", "city", True),
    ]
    first, second, third = (r.body for r in llm_server.requests)
    assert first["model"] == "gpt-4.1-mini"
    assert first["temperature"] == 0.4
    assert first["max_tokens"] == 1024
    assert [t["function"]["name"] for t in first["tools"]] == ["set_memory", "delete_memory"]
    system, user = first["messages"]
    assert system["role"] == "system"
    assert "# Current memories\n- city: Paris" in system["content"]
    assert "# Memory Status:" not in system["content"]
    assert user["role"] == "user"
    assert "user: Hi, I'm Ada. I'm vegetarian and I just moved to Lyon." in user["content"]
    assert "assistant: Welcome to Lyon, Ada!" in user["content"]
    assert second["messages"][2]["tool_calls"][1]["function"] == {
        "name": "set_memory",
        "arguments": '{"key": "diet", "value": "vegetarian"}',
    }
    assert second["messages"][3:] == [
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Saved memory 'name'. Usage 4/100 tokens, 96 remaining.",
        },
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": "Saved memory 'diet'. Usage 6/100 tokens, 94 remaining.",
        },
    ]
    assert [m["role"] for m in third["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "tool",
    ]
    assert third["messages"][5]["content"] == "Replacing the old city."


async def test_bedrock_gpt5_memory_agent_request(llm_server, transport):
    llm_server.reply_openai("Nothing to save.")
    model = OpenAIChatModel(
        llm_server.url + "/v1", "sk", "openai.gpt-5-mini", transport=transport, provider="bedrock"
    )
    a = agent(model, token_limit=10)
    await a.set_memory("pet", "a grey cat named Mia")  # 6 tokens: 60%
    await a.set_memory("city", "Lyon")  # 8 tokens: 80%, status block shown
    await a.process("user: nothing new")
    body = llm_server.requests[0].body
    assert "temperature" not in body and body["max_completion_tokens"] == 1024
    (message,) = body["messages"]
    assert message["role"] == "user"
    assert message["content"].startswith("You maintain the long-term memory")
    assert "# Memory Status:\nCurrent memory usage: 8 tokens" in message["content"]
    assert message["content"].endswith("<conversation>\nuser: nothing new\n</conversation>")
