"""The observer methods of the worker's JSON API (observational memory): rules and LLM
models over HTTP, the token threshold, reconfiguring, and their error codes."""

from __future__ import annotations

import json

import pytest
from rpc_agent_harness import EAGER, RULES, Harness

from pymemory.browser.rpc import AgentCallError, agent_rpc

pytest_plugins = ["llm_server"]  # the llm_server fixture


@pytest.fixture
async def h():
    harness = Harness()
    yield harness
    await harness.close()


# --- observational memory ---------------------------------------------------------------------


async def test_observer_with_rules(h):
    status = await h.ok("observer.configure", {"sessionId": "s1", "model": RULES, **EAGER})
    assert status == {
        "sessionId": "s1",
        "model": {"kind": "rules"},
        "tokenThreshold": 1,
        "keepRecentSteps": 0,
        "scanning": False,
        "unobservedTokens": 0,
        "scans": 0,
        "observations": 0,
        "lastError": None,
    }
    noted = await h.ok("observer.noteStep", {"sessionId": "s1",
                                             "step": "The user decided to always use metric units."})  # fmt: skip
    assert noted["scanning"] is True and noted["unobservedTokens"] > 0
    flushed = await h.ok("observer.flush", {"sessionId": "s1"})
    assert flushed["scanning"] is False and flushed["observations"] == 1
    assert flushed["unobservedTokens"] == 0 and flushed["scans"] == 1
    step = [
        {"role": "assistant", "content": "Saving the plan."},
        {"role": "tool", "tool_call_id": "c1", "name": "memory", "content": "File created"},
    ]
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": step})
    await h.ok("observer.flush", {"sessionId": "s1"})
    observations = await h.ok("observer.list", {"sessionId": "s1"})
    assert observations[0] == {
        "seqId": 1,
        "createdAtMs": h.clock.now,
        "text": "The user decided to always use metric units.",
        "priority": "high",
        "coversSteps": {"from": 1, "to": 1},
    }
    assert [o["coversSteps"] for o in observations] == [{"from": 1, "to": 1}, {"from": 2, "to": 2}]
    prompt = await h.ok("observer.prompt", {"sessionId": "s1"})
    assert prompt.startswith("# Observations\n- [high] (steps 1-1) The user decided")
    assert (await h.ok("observer.status", {"sessionId": "s1"}))["observations"] == 2


async def test_observer_waits_for_the_threshold(h):
    await h.ok("observer.configure", {"sessionId": "s1", "model": {"kind": "rules", "maxChars": 50},
                                      "tokenThreshold": 10_000, "keepRecentSteps": 2})  # fmt: skip
    for i in range(3):
        status = await h.ok("observer.noteStep", {"sessionId": "s1", "step": f"step {i} done"})
        assert status["scanning"] is False
    status = await h.ok("observer.flush", {"sessionId": "s1"})
    assert status["observations"] == 0 and status["unobservedTokens"] > 0
    # Reconfiguring keeps the unobserved steps: a lower threshold observes all but two.
    again = await h.ok("observer.configure", {"sessionId": "s1", "model": RULES,
                                              "tokenThreshold": 1})  # fmt: skip
    assert again["keepRecentSteps"] == 2 and again["unobservedTokens"] == status["unobservedTokens"]
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "step 3 done"})
    await h.ok("observer.flush", {"sessionId": "s1"})
    observations = await h.ok("observer.list", {"sessionId": "s1"})
    assert [o["coversSteps"] for o in observations] == [{"from": 1, "to": 2}]


async def test_observer_over_http(h, llm_server):
    reply = {"priority": "medium", "text": "The agent saved the trip plan."}
    llm_server.reply_openai(json.dumps(reply))
    model = {"kind": "openai", "baseUrl": llm_server.url + "/v1", "apiKey": "sk-local",
             "model": "observer-mini", "timeoutMs": 10_000}  # fmt: skip
    status = await h.ok("observer.configure", {"sessionId": "s1", "model": model, **EAGER})
    # The status describes the model without its API key.
    assert status["model"] == {"kind": "openai", "baseUrl": llm_server.url + "/v1",
                               "model": "observer-mini"}  # fmt: skip
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "Saved /memories/plan.md"})
    await h.ok("observer.flush", {"sessionId": "s1"})
    [sent] = llm_server.requests
    assert (
        sent.path == "/v1/chat/completions" and sent.headers["authorization"] == "Bearer sk-local"
    )
    assert sent.body["model"] == "observer-mini"
    assert sent.body["messages"][0]["role"] == "system"
    assert "[step 1]\nSaved /memories/plan.md" in sent.body["messages"][1]["content"]
    [obs] = await h.ok("observer.list", {"sessionId": "s1"})
    assert obs["text"] == reply["text"] and obs["priority"] == "medium"

    # An HTTP failure: flush reports llm_error once; the step stays unobserved for later.
    llm_server.reply({"error": {"message": "overloaded"}}, 503)
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "Read the plan back"})
    answer = await h.call("observer.flush", {"sessionId": "s1"})
    assert answer["error"]["code"] == "llm_error" and "overloaded" in answer["error"]["message"]
    status = await h.ok("observer.flush", {"sessionId": "s1"})  # reported once
    assert status["lastError"]["code"] == "llm_error" and status["unobservedTokens"] > 0
    llm_server.reply_openai('{"priority": "low", "text": "Read the plan."}')
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "Done"})
    await h.ok("observer.flush", {"sessionId": "s1"})
    observations = await h.ok("observer.list", {"sessionId": "s1"})
    assert observations[-1]["coversSteps"] == {"from": 2, "to": 3}


async def test_observer_reconfigure_swaps_the_model(h, llm_server):
    llm_server.reply_openai('{"priority": "low", "text": "Over HTTP."}')
    model = {"kind": "openai", "baseUrl": llm_server.url, "model": "m"}
    await h.ok("observer.configure", {"sessionId": "s1", "model": model, **EAGER})
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "first"})
    state = await agent_rpc(h.api).state("db")
    http_model = state.observers["s1"].model
    # Reconfiguring while that scan is in flight lets it finish on the old model.
    status = await h.ok("observer.configure", {"sessionId": "s1", "model": RULES})
    assert status["model"] == {"kind": "rules"} and status["observations"] == 1
    assert http_model._transport._client is None  # the old model was closed
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "We decided to go by train."})
    await h.ok("observer.flush", {"sessionId": "s1"})
    texts = [o["text"] for o in await h.ok("observer.list", {"sessionId": "s1"})]
    assert texts == ["Over HTTP.", "We decided to go by train."]
    assert len(llm_server.requests) == 1


async def test_observer_anthropic_model(h, llm_server):
    llm_server.reply_anthropic([{"type": "text", "text": '{"priority": "high", "text": "Hi."}'}])
    model = {"kind": "anthropic", "baseUrl": llm_server.url, "apiKey": "k", "model": "claude-x"}
    await h.ok("observer.configure", {"sessionId": "s1", "model": model, **EAGER})
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "hello"})
    await h.ok("observer.flush", {"sessionId": "s1"})
    assert llm_server.requests[0].path == "/v1/messages"
    assert (await h.ok("observer.list", {"sessionId": "s1"}))[0]["text"] == "Hi."


async def test_observer_empty_reply_is_an_llm_error(h, llm_server):
    llm_server.reply_openai("")
    model = {"kind": "openai", "baseUrl": llm_server.url, "model": "m"}
    await h.ok("observer.configure", {"sessionId": "s1", "model": model, **EAGER})
    await h.ok("observer.noteStep", {"sessionId": "s1", "step": "hello"})
    assert await h.err("observer.flush", {"sessionId": "s1"}) == "llm_error"


async def test_observer_errors(h):
    await h.ok("observer.configure", {"sessionId": "s1", "model": RULES})
    openai = {"kind": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m"}
    # fmt: off
    cases = [
        ("observer.configure", {"sessionId": "s2"}, "invalid_input"),
        ("observer.configure", {"sessionId": "", "model": RULES}, "invalid_input"),
        ("observer.configure", {"sessionId": "x" * 129, "model": RULES}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": "rules"}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {"kind": "gemini"}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {"kind": "rules", "maxChars": 0}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {**openai, "baseUrl": "ftp://x"}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {"kind": "openai", "model": "m"}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {**openai, "apiKey": 5}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {**openai, "timeoutMs": 0}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {**openai, "temperature": 0}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": {"kind": "anthropic"}}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": RULES, "tokenThreshold": 0}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": RULES, "keepRecentSteps": -1}, "invalid_input"),
        ("observer.configure", {"sessionId": "s2", "model": RULES, "keepRecentSteps": True}, "invalid_input"),
        ("observer.noteStep", {"sessionId": "s2", "step": "x"}, "not_found"),
        ("observer.noteStep", {"sessionId": "s1"}, "invalid_input"),
        ("observer.noteStep", {"sessionId": "s1", "step": 5}, "invalid_input"),
        ("observer.noteStep", {"sessionId": "s1", "step": {"role": "robot", "content": "x"}}, "invalid_input"),
        ("observer.flush", {"sessionId": "s2"}, "not_found"),
        ("observer.status", {"sessionId": "s2"}, "not_found"),
        ("observer.list", {}, "invalid_input"),
        ("observer.prompt", {"sessionId": 5}, "invalid_input"),
    ]
    # fmt: on
    for method, params, code in cases:
        assert await h.err(method, params) == code, (method, params)
    state = await agent_rpc(h.api).state("db")
    assert list(state.observers) == ["s1"]  # failed configures created nothing
    # Unconfigured sessions have no observations yet, but list and prompt still answer.
    assert await h.ok("observer.list", {"sessionId": "s2"}) == []
    assert await h.ok("observer.prompt", {"sessionId": "s2"}) == ""


def test_agent_call_error_keeps_its_code():
    exc = AgentCallError("llm_error", "boom")
    assert exc.code == "llm_error" and str(exc) == "boom"
