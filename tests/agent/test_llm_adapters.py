"""The OpenAI and Anthropic adapters against a real local HTTP server, through httpx."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import types

import httpx
import pytest

from pymemory.agent.llm import (
    AnthropicModel,
    ChatRequest,
    FetchTransport,
    HttpxTransport,
    LlmError,
    Message,
    OpenAIChatModel,
    RuleObserver,
    ToolCall,
    default_transport,
    is_reasoning_model,
)
from pymemory.agent.llm import transport as transport_module
from pymemory.agent.tools import Tool, ToolResult
from pymemory.errors import PymemoryError

pytest_plugins = ["llm_server"]  # the llm_server fixture


async def _noop(args: dict) -> ToolResult:
    return ToolResult("ok")


NOTE_TOOL = Tool(
    name="note",
    description="Write a note.",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    handler=_noop,
)


@pytest.fixture
async def transport():
    t = HttpxTransport()
    yield t
    await t.close()


def openai_model(server, transport, model="gpt-4.1-mini", **kw) -> OpenAIChatModel:
    return OpenAIChatModel(server.url + "/v1", "sk-test", model, transport=transport, **kw)


def anthropic_model(server, transport, **kw) -> AnthropicModel:
    return AnthropicModel(server.url, "ak-test", "claude-haiku-4-5", transport=transport, **kw)


# -- OpenAI ----------------------------------------------------------------------------------


async def test_openai_request_body_headers_and_reply(llm_server, transport):
    llm_server.reply_openai("Hello, Ada.")
    model = openai_model(llm_server, transport)
    reply = await model(
        ChatRequest(
            [Message.user("Hi, I'm Ada")], system="Be brief.", temperature=0.2, max_tokens=50
        )
    )
    assert reply.text == "Hello, Ada."
    assert reply.tool_calls == []
    assert reply.stop_reason == "stop"
    (req,) = llm_server.requests
    assert req.method == "POST"
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.headers["content-type"] == "application/json"
    assert req.body == {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi, I'm Ada"},
        ],
        "temperature": 0.2,
        "max_tokens": 50,
    }


async def test_openai_tools_round_trip(llm_server, transport):
    llm_server.reply_openai(
        None, [("call_2", "note", {"text": "Ada likes tea"}), ("call_3", "note", "{")]
    )
    model = openai_model(llm_server, transport)
    history = [
        Message.user("Remember I like tea"),
        Message.assistant("", [ToolCall("call_1", "note", {"text": "tea"})]),
        Message.tool_result("call_1", "ok", name="note"),
    ]
    reply = await model(ChatRequest(history, tools=[NOTE_TOOL]))
    assert reply.text == ""
    assert reply.stop_reason == "tool_calls"
    assert reply.tool_calls[0] == ToolCall("call_2", "note", {"text": "Ada likes tea"})
    assert reply.tool_calls[1].arguments == {}
    assert reply.tool_calls[1].invalid_arguments == "{"
    body = llm_server.requests[0].body
    assert body["tools"] == [NOTE_TOOL.openai_schema()]
    assert body["messages"] == [
        {"role": "user", "content": "Remember I like tea"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "note", "arguments": '{"text": "tea"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ]
    assert "temperature" not in body and "max_tokens" not in body


async def test_bedrock_conversation_starts_with_user_message(llm_server, transport):
    llm_server.reply_openai("ok")
    llm_server.reply_openai("ok")
    model = openai_model(
        llm_server, transport, model="anthropic.claude-3-haiku", provider="bedrock"
    )
    await model(ChatRequest([Message.user("What do I like?")], system="You keep memories."))
    await model(
        ChatRequest(
            [Message.assistant("Welcome back."), Message.user("Hi")], system="You keep memories."
        )
    )
    first, second = (r.body["messages"] for r in llm_server.requests)
    assert first == [{"role": "user", "content": "You keep memories.\n\nWhat do I like?"}]
    assert second == [
        {"role": "user", "content": "You keep memories."},
        {"role": "assistant", "content": "Welcome back."},
        {"role": "user", "content": "Hi"},
    ]
    assert all(m["role"] != "system" for m in first + second)


@pytest.mark.parametrize("name", ["gpt-5", "gpt-5-mini", "gpt-5.1", "openai/gpt-5-nano", "o3-mini"])
async def test_gpt5_sends_no_temperature_and_max_completion_tokens(llm_server, transport, name):
    llm_server.reply_openai("ok")
    model = openai_model(llm_server, transport, model=name)
    await model(ChatRequest([Message.user("hi")], temperature=0.4, max_tokens=300))
    body = llm_server.requests[0].body
    assert "temperature" not in body
    assert "max_tokens" not in body
    assert body["max_completion_tokens"] == 300


@pytest.mark.parametrize(
    ("name", "reasoning"),
    [
        ("gpt-4.1-mini", False),
        ("gpt-4o", False),
        ("gpt-oss-120b", False),
        ("gpt-5", True),
        ("o1", True),
        ("o4-mini", True),
        ("claude-opus-4", False),
        ("models/o3", True),
    ],
)
def test_is_reasoning_model(name, reasoning):
    assert is_reasoning_model(name) is reasoning


async def test_openai_thinking_drops_temperature(llm_server, transport):
    llm_server.reply_openai("ok")
    model = openai_model(llm_server, transport, model="deepseek-reasoner", thinking=True)
    await model(ChatRequest([Message.user("hi")], temperature=0.4, max_tokens=64))
    body = llm_server.requests[0].body
    assert "temperature" not in body
    assert body["max_tokens"] == 64


# -- Anthropic -------------------------------------------------------------------------------


async def test_anthropic_request_body_headers_and_tool_blocks(llm_server, transport):
    llm_server.reply_anthropic(
        [
            {"type": "text", "text": "Saving."},
            {"type": "tool_use", "id": "toolu_2", "name": "note", "input": {"text": "tea"}},
        ],
        stop_reason="tool_use",
    )
    model = anthropic_model(llm_server, transport)
    history = [
        Message.user("I like tea and cake"),
        Message.assistant(
            "", [ToolCall("toolu_1", "note", {"text": "tea"}), ToolCall("toolu_9", "note", {})]
        ),
        Message.tool_result("toolu_1", "ok"),
        Message.tool_result("toolu_9", "text is required", is_error=True),
    ]
    reply = await model(
        ChatRequest(history, tools=[NOTE_TOOL], system="Keep notes.", temperature=0.3)
    )
    assert reply.text == "Saving."
    assert reply.tool_calls == [ToolCall("toolu_2", "note", {"text": "tea"})]
    assert reply.stop_reason == "tool_use"
    (req,) = llm_server.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "ak-test"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.body == {
        "model": "claude-haiku-4-5",
        "max_tokens": 1024,
        "system": "Keep notes.",
        "temperature": 0.3,
        "tools": [NOTE_TOOL.anthropic_schema()],
        "messages": [
            {"role": "user", "content": "I like tea and cake"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {"text": "tea"}},
                    {"type": "tool_use", "id": "toolu_9", "name": "note", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_9",
                        "content": "text is required",
                        "is_error": True,
                    },
                ],
            },
        ],
    }


async def test_anthropic_thinking_sends_no_temperature_and_keeps_thinking_blocks(
    llm_server, transport
):
    thinking = {"type": "thinking", "thinking": "The user likes tea.", "signature": "sig=="}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {"text": "tea"}}
    llm_server.reply_anthropic([thinking, tool_use], stop_reason="tool_use")
    llm_server.reply_anthropic([{"type": "text", "text": "Done."}])
    model = anthropic_model(llm_server, transport, thinking=True, thinking_budget=2000)
    request = ChatRequest(
        [Message.user("I like tea")], tools=[NOTE_TOOL], temperature=0.4, max_tokens=500
    )
    first = await model(request)
    assert first.text == ""
    assert first.tool_calls == [ToolCall("toolu_1", "note", {"text": "tea"})]
    history = [*request.messages, first.to_message(), Message.tool_result("toolu_1", "ok")]
    second = await model(ChatRequest(history, tools=[NOTE_TOOL], temperature=0.4, max_tokens=500))
    assert second.text == "Done."
    bodies = [r.body for r in llm_server.requests]
    for body in bodies:
        assert "temperature" not in body
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
        assert body["max_tokens"] == 2500
    assert bodies[1]["messages"][1] == {"role": "assistant", "content": [thinking, tool_use]}


async def test_anthropic_in_the_browser_opts_in_to_direct_access(
    llm_server, transport, monkeypatch
):
    llm_server.reply_anthropic([{"type": "text", "text": "hi"}])
    llm_server.reply_anthropic([{"type": "text", "text": "hi"}])
    await anthropic_model(llm_server, transport)(ChatRequest([Message.user("hi")]))
    monkeypatch.setattr(transport_module.sys, "platform", "emscripten")
    await anthropic_model(llm_server, transport)(ChatRequest([Message.user("hi")]))
    cpython, browser = (r.headers for r in llm_server.requests)
    assert "anthropic-dangerous-direct-browser-access" not in cpython
    assert browser["anthropic-dangerous-direct-browser-access"] == "true"


# -- errors ----------------------------------------------------------------------------------


async def test_http_error_is_a_typed_llm_error(llm_server, transport):
    llm_server.reply({"error": {"message": "Incorrect API key provided", "type": "auth"}}, 401)
    model = openai_model(llm_server, transport)
    with pytest.raises(LlmError) as info:
        await model(ChatRequest([Message.user("hi")]))
    err = info.value
    assert isinstance(err, PymemoryError)
    assert err.code == "llm_error"
    assert err.status == 401
    assert "Incorrect API key provided" in str(err)
    assert '"type": "auth"' in err.body


async def test_anthropic_error_body_is_excerpted(llm_server, transport):
    detail = "Overloaded " + "x" * 2000
    llm_server.reply(
        {"type": "error", "error": {"type": "overloaded_error", "message": detail}}, 529
    )
    with pytest.raises(LlmError) as info:
        await anthropic_model(llm_server, transport)(ChatRequest([Message.user("hi")]))
    assert info.value.status == 529
    assert info.value.provider == "anthropic"
    assert len(info.value.body) <= 300
    assert info.value.body.startswith('{"type": "error"')
    assert len(str(info.value)) < 300


async def test_reply_that_is_not_json_or_lacks_choices(llm_server, transport):
    llm_server.reply_raw(b"<html>bad gateway</html>", 200, ctype="html")
    llm_server.reply({"object": "chat.completion", "choices": []})
    model = openai_model(llm_server, transport)
    with pytest.raises(LlmError, match="not JSON") as info:
        await model(ChatRequest([Message.user("hi")]))
    assert "bad gateway" in info.value.body
    with pytest.raises(LlmError, match="no choices"):
        await model(ChatRequest([Message.user("hi")]))


async def test_connection_failure_is_an_llm_error_without_status(transport):
    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    model = OpenAIChatModel(url + "/v1", "sk", "gpt-4.1-mini", transport=transport)
    with pytest.raises(LlmError) as info:
        await model(ChatRequest([Message.user("hi")]))
    assert info.value.status is None
    assert "ConnectError" in str(info.value)


# -- transports ------------------------------------------------------------------------------


def _fake_pyodide(monkeypatch, pyfetch) -> None:
    http = types.ModuleType("pyodide.http")
    http.pyfetch = pyfetch
    package = types.ModuleType("pyodide")
    package.http = http
    monkeypatch.setitem(sys.modules, "pyodide", package)
    monkeypatch.setitem(sys.modules, "pyodide.http", http)


class _FakeFetchResponse:
    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.headers = dict(response.headers)
        self._body = response.content

    async def bytes(self) -> bytes:
        return self._body


async def test_fetch_transport_speaks_pyfetch(llm_server, monkeypatch):
    calls = []

    async def pyfetch(url, **options):  # forwards to the real server, as fetch would
        calls.append((url, options))
        async with httpx.AsyncClient() as client:
            body = options.get("body")
            response = await client.request(
                options["method"],
                url,
                headers=options["headers"],
                content=body.encode() if body is not None else None,
            )
        return _FakeFetchResponse(response)

    _fake_pyodide(monkeypatch, pyfetch)
    llm_server.reply_openai("from fetch")
    model = OpenAIChatModel(
        llm_server.url + "/v1", "sk-b", "gpt-4.1-mini", transport=FetchTransport()
    )
    reply = await model(ChatRequest([Message.user("hi")]))
    assert reply.text == "from fetch"
    ((url, options),) = calls
    assert url == llm_server.url + "/v1/chat/completions"
    assert options["method"] == "POST"
    assert isinstance(options["body"], str)  # fetch gets text, not bytes
    assert options["headers"]["authorization"] == "Bearer sk-b"
    assert llm_server.requests[0].body["messages"] == [{"role": "user", "content": "hi"}]


async def test_fetch_transport_failure_is_an_llm_error(monkeypatch):
    async def pyfetch(url, **options):
        raise OSError("Failed to fetch")

    _fake_pyodide(monkeypatch, pyfetch)
    with pytest.raises(LlmError, match="Failed to fetch") as info:
        await FetchTransport().request("POST", "http://x/y", headers={}, body=b"{}")
    assert info.value.status is None


def test_default_transport_follows_the_platform(monkeypatch):
    assert isinstance(default_transport(), HttpxTransport)
    monkeypatch.setattr(transport_module.sys, "platform", "emscripten")
    assert isinstance(default_transport(), FetchTransport)


def test_cpython_never_imports_browser_modules():
    code = (
        "import sys, pymemory.agent.llm, pymemory.agent.observational, pymemory.agent.memory_agent\n"
        "bad = [m for m in sys.modules if m == 'js' or m.split('.')[0] in ('pyodide', 'httpx')]\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_rule_observer_answers_the_observer_contract():
    reply = await RuleObserver()(
        ChatRequest(
            [
                Message.user(
                    "[step 1]\nuser: Thanks! We decided to ship on Friday.\n"
                    "assistant: Great, noted."
                )
            ],
            system="observer prompt",
        )
    )
    data = json.loads(reply.text)
    assert data["priority"] == "high"
    assert "We decided to ship on Friday." in data["text"]
    assert "[step 1]" not in data["text"] and "user:" not in data["text"]
