"""The agent-primitive methods of the worker's JSON API (pymemory.browser.rpc.agent_api), in
CPython over MapKv: blocks, structured memory, tools and checkpoints (the observer is in
test_rpc_observer.py), their JS shapes, their error codes, one instance per (database,
id), and resuming in a new API over the same stores (what a page reload does)."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import DAY
from rpc_agent_harness import BLOCKS, EAGER, RULES, Harness

from pymemory.browser.rpc import agent_rpc


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
    state = await agent_rpc(h.api).state("db")
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
    state = await agent_rpc(h.api).state("db")
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
    before = await agents.state("db")
    await h.ok("close")
    # The next call reopens the database; the primitives follow its new Memory.
    assert (await h.ok("blocks.list", {"setId": "agent-1"}))["blocks"][0]["label"] == "human"
    after = await agents.state("db")
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
