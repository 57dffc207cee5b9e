"""The agent-primitive methods of the worker's JSON API (pymemory.browser.agent_api), in CPython
over MapKv: blocks, structured memory, tools, checkpoints and the observer, their JS
shapes, their error codes, one instance per (database, id), and resuming in a new API
over the same stores (what a page reload does)."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import DAY, Clock

from pymemory.browser.agent_api import AgentCallError, agent_rpc, close_agents
from pymemory.browser.api import RpcApi
from pymemory.storage import MapKv

pytest_plugins = ["llm_server"]  # the llm_server fixture

BLOCKS = [
    {"label": "human", "description": "What you know about the user.", "limit": 200},
    {"label": "persona", "value": "I am a careful assistant.", "readOnly": True},
]


class Harness:
    """RpcApis over shared MapKv stores: ``reopen()`` is a new worker over the same data."""

    def __init__(self) -> None:
        self.stores: dict[str, MapKv] = {}
        self.clock = Clock()
        self.apis: list[RpcApi] = []
        self.api = self.new_api()

    def new_api(self) -> RpcApi:
        async def factory(name: str) -> MapKv:
            # A new handle on the database's data each time, like IndexedDB: closing one
            # handle (the "close" method) leaves the data for the next.
            data = self.stores.setdefault(name, MapKv())
            kv = MapKv()
            kv._data, kv._keys = data._data, data._keys
            return kv

        api = RpcApi(factory, feedback_flush_s=3600, clock=self.clock)
        self.apis.append(api)
        return api

    def reopen(self) -> None:
        self.api = self.new_api()

    async def call(self, method: str, params: object = None, db: str = "db") -> dict:
        raw = json.dumps({} if params is None else params)
        return json.loads(await self.api.call(db, method, raw))

    async def ok(self, method: str, params: object = None, db: str = "db"):
        answer = await self.call(method, params, db)
        assert answer["ok"], (method, answer)
        return answer["result"]

    async def err(self, method: str, params: object = None, db: str = "db") -> str:
        answer = await self.call(method, params, db)
        assert not answer["ok"], (method, params, answer)
        return answer["error"]["code"]

    async def close(self) -> None:
        for api in self.apis:
            await close_agents(api)
            await api.close_all()


@pytest.fixture
async def h():
    harness = Harness()
    yield harness
    await harness.close()


async def open_set(h: Harness, set_id: str = "agent-1", **extra) -> dict:
    return await h.ok("blocks.open", {"setId": set_id, "blocks": BLOCKS, **extra})


# --- blocks ---------------------------------------------------------------------------------


async def test_blocks_open_get_list_render_message_set_value(h):
    opened = await open_set(h, maxBlocks=3)
    assert opened["created"] is True and opened["setId"] == "agent-1"
    assert opened["maxBlocks"] == 3 and opened["revision"] == 0
    assert opened["blocks"][0] == {
        "label": "human",
        "value": "",
        "limit": 200,
        "description": "What you know about the user.",
        "readOnly": False,
        "chars": 0,
    }
    assert opened["blocks"][1]["readOnly"] is True and opened["blocks"][1]["limit"] == 2000

    block = await h.ok("blocks.setValue", {"setId": "agent-1", "label": "human", "value": "Ana"})
    assert block["value"] == "Ana" and block["chars"] == 3
    # The app may edit a read-only block (the agent's tools may not).
    persona = {"setId": "agent-1", "label": "persona", "value": "I am terse."}
    assert (await h.ok("blocks.setValue", persona))["value"] == "I am terse."
    assert (await h.ok("blocks.get", {"setId": "agent-1", "label": "human"}))["value"] == "Ana"

    listed = await h.ok("blocks.list", {"setId": "agent-1"})
    assert [b["label"] for b in listed["blocks"]] == ["human", "persona"]
    assert listed["revision"] == 2 and "created" not in listed

    text = await h.ok("blocks.render", {"setId": "agent-1"})
    assert text.startswith("<memory_blocks>") and "<value>\nAna\n</value>" in text
    assert "chars_used=3 chars_limit=200 read_only=false" in text
    assert await h.ok("blocks.message", {"setId": "agent-1"}) == {"role": "user", "content": text}


async def test_blocks_open_again_keeps_the_stored_set(h):
    await open_set(h)
    await h.ok("blocks.setValue", {"setId": "agent-1", "label": "human", "value": "Ana"})
    again = await h.ok("blocks.open", {"setId": "agent-1", "blocks": [{"label": "other"}]})
    assert again["created"] is False
    assert [b["label"] for b in again["blocks"]] == ["human", "persona"]
    assert again["blocks"][0]["value"] == "Ana"
    empty = await h.ok("blocks.open", {"setId": "empty"})
    assert empty["blocks"] == [] and empty["created"] is True


async def test_blocks_errors(h):
    await open_set(h)
    # fmt: off
    cases = [
        ("blocks.open", {}, "invalid_input"),
        ("blocks.open", {"setId": "bad id!"}, "invalid_input"),
        ("blocks.open", {"setId": 7}, "invalid_input"),
        ("blocks.open", {"setId": "x", "blocks": {"label": "human"}}, "invalid_input"),
        ("blocks.open", {"setId": "x", "blocks": ["human"]}, "invalid_input"),
        ("blocks.open", {"setId": "x", "blocks": [{"label": "1bad"}]}, "invalid_input"),
        ("blocks.open", {"setId": "x", "blocks": [{"label": "a", "read_only": True}]}, "invalid_input"),
        ("blocks.open", {"setId": "x", "blocks": [{"label": "a", "value": "xx", "limit": 1}]}, "invalid_input"),
        ("blocks.open", {"setId": "x", "blocks": [{"label": "a"}, {"label": "a"}]}, "conflict"),
        ("blocks.open", {"setId": "x", "blocks": [{"label": "a"}], "maxBlocks": 0}, "invalid_input"),
        ("blocks.open", {"setId": "x", "blocks": [{"label": "a"}, {"label": "b"}], "maxBlocks": 1}, "invalid_input"),
        ("blocks.open", {"setId": "x", "colour": "red"}, "invalid_input"),
        ("blocks.get", {"setId": "agent-1", "label": "nope"}, "not_found"),
        ("blocks.get", {"setId": "agent-1"}, "invalid_input"),
        ("blocks.get", {"setId": "never-opened", "label": "human"}, "not_found"),
        ("blocks.list", {"setId": "never-opened"}, "not_found"),
        ("blocks.render", {}, "invalid_input"),
        ("blocks.message", {"setId": "never-opened"}, "not_found"),
        ("blocks.setValue", {"setId": "agent-1", "label": "human", "value": 5}, "invalid_input"),
        ("blocks.setValue", {"setId": "agent-1", "label": "human", "value": "x" * 201}, "invalid_input"),
        ("blocks.setValue", {"setId": "agent-1", "label": "nope", "value": ""}, "not_found"),
        ("blocks.nonsense", {}, "unknown_method"),
    ]
    # fmt: on
    for method, params, code in cases:
        assert await h.err(method, params) == code, (method, params)
    # A failed call changed nothing, and never created a set.
    assert (await h.ok("blocks.list", {"setId": "agent-1"}))["revision"] == 0
    assert await h.err("blocks.list", {"setId": "x"}) == "not_found"


async def test_one_block_set_instance_per_db_and_id(h):
    opened = await asyncio.gather(*(open_set(h) for _ in range(5)))
    assert sum(o["created"] for o in opened) == 1
    state = await agent_rpc(h.api)._db("db")
    first = state.blocksets["agent-1"]
    await h.ok("tools.call", {"name": "core_memory_append", "setId": "agent-1",
                              "args": {"label": "human", "content": "Ana"}})  # fmt: skip
    assert state.blocksets["agent-1"] is first and first.get("human").value == "Ana"
    # Another database has its own set under the same id.
    other = await h.ok("blocks.open", {"setId": "agent-1", "blocks": BLOCKS}, db="other")
    assert other["created"] is True and other["blocks"][0]["value"] == ""


# --- structured memory ----------------------------------------------------------------------


async def test_structured_put_get_list_search_history_delete(h):
    first = await h.ok("structured.put", {"namespace": "semantic", "key": "user:diet",
                                          "value": {"diet": "vegetarian"}, "metadata": {"src": "chat"}})  # fmt: skip
    assert first == {
        "namespace": "semantic",
        "key": "user:diet",
        "value": {"diet": "vegetarian"},
        "version": 1,
        "validFrom": h.clock.now,
        "validTo": None,
        "expiresAt": None,
        "metadata": {"src": "chat"},
    }
    h.clock.advance(1000)
    second = await h.ok("structured.put", {"namespace": "semantic", "key": "user:diet",
                                           "value": {"diet": "vegan"}})  # fmt: skip
    assert second["version"] == 2
    await h.ok("structured.put", {"namespace": "semantic", "key": "user:city", "value": "Lyon"})
    await h.ok("structured.put", {"namespace": "procedural", "key": "deploy", "value": None})

    got = await h.ok("structured.get", {"namespace": "semantic", "key": "user:diet"})
    assert got["value"] == {"diet": "vegan"}
    assert await h.ok("structured.get", {"namespace": "semantic", "key": "absent"}) is None
    listed = await h.ok("structured.list", {"namespace": "semantic"})
    assert [e["key"] for e in listed] == ["user:city", "user:diet"]
    limited = await h.ok(
        "structured.list", {"namespace": "semantic", "prefix": "user:", "limit": 1}
    )
    assert [e["key"] for e in limited] == ["user:city"]
    hits = await h.ok("structured.search", {"namespace": "semantic", "query": "vegan diet"})
    assert [hit["entry"]["key"] for hit in hits] == ["user:diet"] and hits[0]["score"] > 0
    assert await h.ok("structured.search", {"namespace": "semantic", "query": "x", "limit": 1,
                                            "prefix": "user:"}) == []  # fmt: skip

    history = await h.ok("structured.history", {"namespace": "semantic", "key": "user:diet"})
    assert [e["version"] for e in history] == [1, 2]
    assert history[0]["validTo"] == second["validFrom"] and history[1]["validTo"] is None

    assert await h.ok("structured.delete", {"namespace": "semantic", "key": "user:diet"}) is True
    assert await h.ok("structured.delete", {"namespace": "semantic", "key": "user:diet"}) is False
    assert await h.ok("structured.get", {"namespace": "semantic", "key": "user:diet"}) is None
    kept = await h.ok("structured.history", {"namespace": "semantic", "key": "user:diet"})
    assert len(kept) == 2
    purged = {"namespace": "semantic", "key": "user:diet", "purge": True}
    assert await h.ok("structured.delete", purged) is False
    assert await h.ok("structured.history", {"namespace": "semantic", "key": "user:diet"}) == []


async def test_structured_ttl_and_decay(h):
    # Episodic entries expire after 7 days by default; ttlMs overrides, null never expires.
    put = {"namespace": "episodic", "key": "visit", "value": "went to the market"}
    default = await h.ok("structured.put", put)
    assert default["expiresAt"] == h.clock.now + 7 * DAY
    short = await h.ok("structured.put", {**put, "key": "short", "ttlMs": 1000})
    assert short["expiresAt"] == h.clock.now + 1000
    forever = await h.ok("structured.put", {**put, "key": "forever", "ttlMs": None})
    assert forever["expiresAt"] is None
    h.clock.advance(2000)
    assert await h.ok("structured.get", {"namespace": "episodic", "key": "short"}) is None
    assert await h.ok("structured.decay", {"namespace": "episodic"}) == 1
    h.clock.advance(8 * DAY)
    assert await h.ok("structured.decay", {}) == 1
    assert await h.ok("structured.decay", {"namespace": None}) == 0
    left = await h.ok("structured.list", {"namespace": "episodic"})
    assert [e["key"] for e in left] == ["forever"]


async def test_structured_errors(h):
    # fmt: off
    cases = [
        ("structured.put", {"namespace": "semantic", "key": "k"}, "invalid_input"),
        ("structured.put", {"namespace": "facts", "key": "k", "value": 1}, "invalid_input"),
        ("structured.put", {"namespace": "semantic", "key": "", "value": 1}, "invalid_input"),
        ("structured.put", {"namespace": "semantic", "key": "k", "value": 1, "ttlMs": -5}, "invalid_input"),
        ("structured.put", {"namespace": "semantic", "key": "k", "value": 1, "metadata": [1]}, "invalid_input"),
        ("structured.put", {"namespace": "semantic", "key": "k", "value": "x" * 70_000}, "invalid_input"),
        ("structured.put", {"namespace": "semantic", "key": "k", "value": 1, "ttl": 5}, "invalid_input"),
        ("structured.get", {"namespace": "semantic"}, "invalid_input"),
        ("structured.get", {"namespace": "semantic", "key": 5}, "invalid_input"),
        ("structured.list", {"namespace": "semantic", "limit": 0}, "invalid_input"),
        ("structured.list", {}, "invalid_input"),
        ("structured.search", {"namespace": "semantic", "query": 5}, "invalid_input"),
        ("structured.search", {"namespace": "semantic", "query": "x", "limit": "all"}, "invalid_input"),
        ("structured.delete", {"namespace": "semantic", "key": "k", "purge": "yes"}, "invalid_input"),
        ("structured.history", {"namespace": "nope", "key": "k"}, "invalid_input"),
        ("structured.decay", {"namespace": "nope"}, "invalid_input"),
    ]
    # fmt: on
    for method, params, code in cases:
        assert await h.err(method, params) == code, (method, params)
    assert await h.ok("structured.list", {"namespace": "semantic"}) == []


# --- tools ----------------------------------------------------------------------------------


async def test_call_tool_core_memory_edits_the_block_set(h):
    await open_set(h)
    appended = await h.ok("tools.call", {"name": "core_memory_append", "setId": "agent-1",
                                         "args": {"label": "human", "content": "Name: Ana"}})  # fmt: skip
    assert appended["isError"] is False
    assert appended["content"].startswith("Appended to memory block 'human'")
    assert appended["artifact"]["op"] == "append" and appended["artifact"]["value"] == "Name: Ana"
    replaced = await h.ok("tools.call", {
        "name": "core_memory_replace", "setId": "agent-1",
        "args": json.dumps({"label": "human", "old_content": "Ana", "new_content": "Ana Silva"}),
    })  # fmt: skip
    assert replaced["isError"] is False and replaced["artifact"]["replacements"] == 1
    block = await h.ok("blocks.get", {"setId": "agent-1", "label": "human"})
    assert block["value"] == "Name: Ana Silva"
    assert "Name: Ana Silva" in await h.ok("blocks.render", {"setId": "agent-1"})

    # The model's mistakes come back as results with isError, and change nothing.
    for args in (
        {"label": "persona", "content": "I am sloppy."},  # read-only
        {"label": "nope", "content": "x"},
        {"label": "human"},
        {"label": "human", "content": "x" * 300},  # over the limit of 200
        "not json",
        "[1, 2]",
        None,
    ):
        result = await h.ok("tools.call", {"name": "core_memory_append", "setId": "agent-1",
                                           "args": args})  # fmt: skip
        assert result["isError"] is True and result["content"].startswith("Error"), args
    block = await h.ok("blocks.get", {"setId": "agent-1", "label": "human"})
    assert block["value"] == "Name: Ana Silva"
    raw = await h.ok("tools.call", {"name": "core_memory_append", "setId": "agent-1",
                                    "args": "{broken"})  # fmt: skip
    assert raw["artifact"] == {"tool": "core_memory_append", "outcome": "error",
                               "error": "invalid_arguments"}  # fmt: skip


async def test_call_tool_memory_files_and_memory_kv(h):
    created = await h.ok("tools.call", {"name": "memory", "args": {
        "command": "create", "path": "/memories/notes.md", "file_text": "# Notes\n- Lyon\n"}})  # fmt: skip
    assert created["isError"] is False and created["artifact"]["outcome"] == "created"
    viewed = await h.ok("tools.call", {"name": "memory", "args": {"command": "view",
                                                                  "path": "/memories/notes.md"}})  # fmt: skip
    assert "Lyon" in viewed["content"]
    listing = await h.ok("tools.call", {"name": "memory", "args": {"command": "view",
                                                                   "path": "/memories"}})  # fmt: skip
    assert "notes.md" in listing["content"]
    bad = await h.ok("tools.call", {"name": "memory", "args": {"command": "view", "path": "/etc"}})
    assert bad["isError"] is True and bad["artifact"]["error"] == "invalid_path"

    written = await h.ok("tools.call", {"name": "memory_kv", "args": {
        "operation": "write", "key": "trip:status", "text": "planning"}})  # fmt: skip
    assert written["artifact"]["outcome"] == "created" and written["isError"] is False
    read = await h.ok("tools.call", {"name": "memory_kv",
                                     "args": {"operation": "read", "key": "trip:status"}})  # fmt: skip
    assert read["content"] == "planning"
    missing = await h.ok("tools.call", {"name": "memory_kv",
                                        "args": {"operation": "read", "key": "nope"}})  # fmt: skip
    assert missing["isError"] is True and missing["artifact"]["error"] == "not_found"

    # The same tools, with or without a block set: one store per database.
    await open_set(h)
    again = await h.ok("tools.call", {"name": "memory_kv", "setId": "agent-1",
                                      "args": {"operation": "read", "key": "trip:status"}})  # fmt: skip
    assert again["content"] == "planning"
    state = await agent_rpc(h.api)._db("db")
    assert list(state.toolsets[None])[-2:] == list(state.toolsets["agent-1"])[-2:]
    assert await state.kv.get("fs:/memories/notes.md") == b"# Notes\n- Lyon\n"


async def test_call_tool_errors(h):
    await open_set(h)
    # fmt: off
    cases = [
        ({"name": "core_memory_append", "args": {"label": "human", "content": "x"}}, "invalid_input"),
        ({"name": "shell", "args": {}}, "not_found"),
        ({"name": "shell", "setId": "agent-1"}, "not_found"),
        ({"name": "memory", "setId": "never-opened"}, "not_found"),
        ({"name": "memory", "setId": 5}, "invalid_input"),
        ({"name": 5}, "invalid_input"),
        ({"args": {}}, "invalid_input"),
        ({"name": "memory", "arguments": {}}, "invalid_input"),
    ]
    # fmt: on
    for params, code in cases:
        assert await h.err("tools.call", params) == code, params


async def test_tool_schemas(h):
    await open_set(h)
    plain = await h.ok("tools.schemas", {})
    assert [t["function"]["name"] for t in plain] == ["memory", "memory_kv"]
    assert all(t["type"] == "function" for t in plain)
    openai = await h.ok("tools.schemas", {"format": "openai", "setId": "agent-1"})
    names = [t["function"]["name"] for t in openai]
    assert names == ["core_memory_append", "core_memory_replace", "memory", "memory_kv"]
    assert openai[0]["function"]["parameters"]["required"] == ["label", "content"]
    anthropic = await h.ok("tools.schemas", {"format": "anthropic", "setId": "agent-1"})
    assert [t["name"] for t in anthropic] == names
    assert anthropic[2]["input_schema"]["required"] == ["command"]
    native = await h.ok("tools.schemas", {"format": "anthropic", "native": True})
    assert native[0] == {"type": "memory_20250818", "name": "memory"}
    assert native[1]["name"] == "memory_kv"
    assert await h.err("tools.schemas", {"format": "gemini"}) == "invalid_input"
    assert await h.err("tools.schemas", {"native": "yes"}) == "invalid_input"
    assert await h.err("tools.schemas", {"setId": "never-opened"}) == "not_found"
    assert await h.err("tools.schemas", {"tools": []}) == "invalid_input"


# --- checkpoints ----------------------------------------------------------------------------


async def test_checkpoints_save_latest_list_load_delete(h):
    assert await h.ok("checkpoints.latest", {"runId": "run-1"}) is None
    assert await h.ok("checkpoints.list", {"runId": "run-1"}) == []
    first = await h.ok("checkpoints.save", {"runId": "run-1", "state": {"step": 1, "messages": []}})
    assert first == {"runId": "run-1", "seq": 1, "createdAtMs": h.clock.now,
                     "state": {"step": 1, "messages": []}, "metadata": {}}  # fmt: skip
    h.clock.advance(5)
    second = await h.ok("checkpoints.save", {"runId": "run-1", "state": {"step": 2},
                                             "metadata": {"waiting_for": "approval"}})  # fmt: skip
    assert second["seq"] == 2 and second["metadata"] == {"waiting_for": "approval"}
    await h.ok("checkpoints.save", {"runId": "run-2", "state": {}, "metadata": None})

    assert await h.ok("checkpoints.latest", {"runId": "run-1"}) == second
    assert [c["seq"] for c in await h.ok("checkpoints.list", {"runId": "run-1"})] == [1, 2]
    assert await h.ok("checkpoints.load", {"runId": "run-1", "seq": 1}) == first
    assert await h.ok("checkpoints.runs") == ["run-1", "run-2"]
    assert await h.ok("checkpoints.deleteRun", {"runId": "run-1"}) == 2
    assert await h.ok("checkpoints.deleteRun", {"runId": "run-1"}) == 0
    assert await h.ok("checkpoints.latest", {"runId": "run-1"}) is None
    assert await h.ok("checkpoints.runs") == ["run-2"]


async def test_checkpoint_errors(h):
    # fmt: off
    cases = [
        ("checkpoints.save", {"runId": "a:b", "state": {}}, "invalid_input"),
        ("checkpoints.save", {"runId": "r", "state": [1]}, "invalid_input"),
        ("checkpoints.save", {"runId": "r"}, "invalid_input"),
        ("checkpoints.save", {"runId": "r", "state": {}, "metadata": "m"}, "invalid_input"),
        ("checkpoints.save", {"runId": "r", "state": {"big": "x" * (4 * 1024 * 1024)}}, "invalid_input"),
        ("checkpoints.latest", {}, "invalid_input"),
        ("checkpoints.latest", {"runId": ""}, "invalid_input"),
        ("checkpoints.list", {"runId": 5}, "invalid_input"),
        ("checkpoints.load", {"runId": "r", "seq": 1}, "not_found"),
        ("checkpoints.load", {"runId": "r", "seq": 0}, "invalid_input"),
        ("checkpoints.load", {"runId": "r", "seq": "1"}, "invalid_input"),
        ("checkpoints.deleteRun", {"runId": "a b"}, "invalid_input"),
        ("checkpoints.runs", {"runId": "r"}, "invalid_input"),
    ]
    # fmt: on
    for method, params, code in cases:
        assert await h.err(method, params) == code, (method, params)
    assert await h.ok("checkpoints.runs") == []


# --- observational memory ---------------------------------------------------------------------

RULES = {"kind": "rules"}
EAGER = {"tokenThreshold": 1, "keepRecentSteps": 0}  # every step is observed at once


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
    state = await agent_rpc(h.api)._db("db")
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
    state = await agent_rpc(h.api)._db("db")
    assert list(state.observers) == ["s1"]  # failed configures created nothing
    # Unconfigured sessions have no observations yet, but list and prompt still answer.
    assert await h.ok("observer.list", {"sessionId": "s2"}) == []
    assert await h.ok("observer.prompt", {"sessionId": "s2"}) == ""


def test_agent_call_error_keeps_its_code():
    exc = AgentCallError("llm_error", "boom")
    assert exc.code == "llm_error" and str(exc) == "boom"


# --- resuming and lifecycle -----------------------------------------------------------------


async def test_a_new_worker_resumes_from_the_stores(h):
    """What a page reload does: a new API (new worker) over the same IndexedDB data."""
    await open_set(h)
    await h.ok("tools.call", {"name": "core_memory_append", "setId": "agent-1",
                              "args": {"label": "human", "content": "Prefers metric units."}})  # fmt: skip
    await h.ok("tools.call", {"name": "memory", "args": {
        "command": "create", "path": "/memories/notes.md", "file_text": "Day 1: Lyon"}})  # fmt: skip
    await h.ok("checkpoints.save", {"runId": "run-1", "state": {"step": 2}})
    await h.ok("observer.configure", {"sessionId": "run-1", "model": RULES, **EAGER})
    for text in ("The user must travel by train.", "Booked the Lyon hotel for 2 nights."):
        await h.ok("observer.noteStep", {"sessionId": "run-1", "step": text})
        await h.ok("observer.flush", {"sessionId": "run-1"})

    h.reopen()
    # Blocks are reopened from the store on first use, without blocks.open.
    assert "Prefers metric units." in await h.ok("blocks.render", {"setId": "agent-1"})
    appended = await h.ok("tools.call", {"name": "core_memory_append", "setId": "agent-1",
                                         "args": {"label": "human", "content": "Vegan."}})  # fmt: skip
    assert appended["artifact"]["value"] == "Prefers metric units.\nVegan."
    viewed = await h.ok("tools.call", {"name": "memory", "args": {"command": "view",
                                                                  "path": "/memories/notes.md"}})  # fmt: skip
    assert "Day 1: Lyon" in viewed["content"]
    assert (await h.ok("checkpoints.latest", {"runId": "run-1"}))["state"] == {"step": 2}
    # Observations are readable before configure; a configured observer continues the steps.
    assert len(await h.ok("observer.list", {"sessionId": "run-1"})) == 2
    await h.ok("observer.configure", {"sessionId": "run-1", "model": RULES, **EAGER})
    await h.ok("observer.noteStep", {"sessionId": "run-1", "step": "Decided to leave at 9."})
    status = await h.ok("observer.flush", {"sessionId": "run-1"})
    assert status["observations"] == 3
    observations = await h.ok("observer.list", {"sessionId": "run-1"})
    assert [o["coversSteps"]["from"] for o in observations] == [1, 2, 3]
    assert [o["seqId"] for o in observations] == [1, 2, 3]


async def test_close_then_reuse_binds_to_the_new_store(h):
    await open_set(h)
    await h.ok("observer.configure", {"sessionId": "s1", "model": RULES})
    agents = agent_rpc(h.api)
    before = await agents._db("db")
    await h.ok("close")
    # The next call reopens the database; the primitives follow its new Memory.
    assert (await h.ok("blocks.list", {"setId": "agent-1"}))["blocks"][0]["label"] == "human"
    after = await agents._db("db")
    assert after is not before and after.memory.kv is not before.memory.kv
    assert before.observers == {}  # the old observers were closed
    assert await h.err("observer.flush", {"sessionId": "s1"}) == "not_found"


async def test_databases_are_separate(h):
    await h.ok("structured.put", {"namespace": "semantic", "key": "k", "value": 1}, db="a")
    assert await h.ok("structured.get", {"namespace": "semantic", "key": "k"}, db="b") is None
    await h.ok("checkpoints.save", {"runId": "r", "state": {}}, db="a")
    assert await h.ok("checkpoints.runs", db="b") == []
    # The primitives share the database's store with its memories.
    item = await h.ok("addMemory", {"text": "hello"}, db="a")
    assert (await h.ok("get", {"id": item["id"]}, db="a"))["text"] == "hello"
    assert await h.stores["a"].get("ckpt:r:head") is not None


async def test_dotted_names_that_are_not_methods(h):
    for method in ("blocks.", ".open", "blocks.open.x", "blocks.__init__", "blocks._db",
                   "observer.status2", "close.x", "a.b"):  # fmt: skip
        assert await h.err(method, {}) == "unknown_method", method
    # The existing methods are unchanged.
    assert (await h.ok("stats"))["items"] == 0
    assert await h.err("nonsense") == "unknown_method"
