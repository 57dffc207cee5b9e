import json

import pytest

from pymemory.agent.block_tools import core_memory_tools
from pymemory.agent.blocks import (
    DEFAULT_BLOCK_LIMIT,
    DEFAULT_MAX_BLOCKS,
    MemoryBlock,
    MemoryBlockSet,
    block_key,
)
from pymemory.agent.tools import ToolSet
from pymemory.errors import ConflictError, NotFoundError, ValidationError
from pymemory.storage import MapKv, SqliteKv


def make_set(**kw) -> MemoryBlockSet:
    return MemoryBlockSet(
        [
            {"label": "persona", "value": "I am a coding assistant.", "read_only": True},
            {"label": "human", "value": "User name: Teller.", "description": "current user"},
        ],
        **kw,
    )


class FailingKv(MapKv):
    """A MapKv whose writes can be made to fail, to prove a failed write changes nothing."""

    fail = False

    async def put_many(self, items, *, deletes=()):
        if self.fail:
            raise OSError("disk full")
        await super().put_many(items, deletes=deletes)


# --- blocks and the set ---------------------------------------------------------------


def test_defaults():
    b = MemoryBlock("human")
    assert (b.value, b.limit, b.description, b.read_only) == ("", 2000, "", False)
    assert DEFAULT_BLOCK_LIMIT == 2000 and DEFAULT_MAX_BLOCKS == 5
    assert MemoryBlockSet().max_blocks == 5


@pytest.mark.parametrize(
    "kw",
    [
        {"label": ""},
        {"label": "has space"},
        {"label": "<x>"},
        {"label": "9lives"},
        {"label": 3},
        {"label": "ok", "value": 5},
        {"label": "ok", "limit": 0},
        {"label": "ok", "limit": True},
        {"label": "ok", "read_only": "yes"},
        {"label": "ok", "value": "x" * 11, "limit": 10},
        {"label": "ok", "value": "\ud800"},
        {"label": "ok", "description": "d" * 1001},
    ],
)
def test_block_validation(kw):
    with pytest.raises(ValidationError):
        MemoryBlock(**kw)


def test_set_construction_errors():
    with pytest.raises(ConflictError):
        MemoryBlockSet([{"label": "a"}, {"label": "a"}])
    with pytest.raises(ValidationError, match="max_blocks"):
        MemoryBlockSet([{"label": f"b{i}"} for i in range(6)])
    with pytest.raises(ValidationError, match="unknown block fields"):
        MemoryBlockSet([{"label": "a", "colour": "red"}])
    with pytest.raises(ValidationError):
        MemoryBlockSet("persona")
    assert len(MemoryBlockSet([{"label": f"b{i}"} for i in range(6)], max_blocks=6)) == 6


def test_reads():
    s = make_set()
    assert s.labels() == ["persona", "human"]
    assert "human" in s and "nobody" not in s
    assert [b.label for b in s] == ["persona", "human"]
    assert s.get("human").description == "current user"
    with pytest.raises(NotFoundError, match="labels: persona, human"):
        s.get("nobody")


async def test_append_joins_with_newline_and_counts_revisions():
    s = make_set()
    b = await s.append("human", "Prefers TypeScript.")
    assert b.value == "User name: Teller.\nPrefers TypeScript."
    assert s.get("human").value == b.value
    await s.add({"label": "task"})
    await s.append("task", "first")  # an empty block takes the content without a newline
    assert s.get("task").value == "first"
    assert s.revision == 3


async def test_replace_every_occurrence_and_delete_with_empty():
    s = MemoryBlockSet([{"label": "notes", "value": "a cat, a cat, a dog"}])
    await s.replace("notes", "cat", "fox")
    assert s.get("notes").value == "a fox, a fox, a dog"
    await s.replace("notes", ", a dog", "")
    assert s.get("notes").value == "a fox, a fox"


async def test_edit_refusals_change_nothing():
    s = make_set()
    before = s.to_dict()
    with pytest.raises(ValidationError, match="read-only"):
        await s.append("persona", "more")
    with pytest.raises(ValidationError, match="read-only"):
        await s.replace("persona", "coding", "cooking")
    with pytest.raises(NotFoundError, match="was not found"):
        await s.replace("human", "Alice", "Bob")
    with pytest.raises(ValidationError, match="must not be empty"):
        await s.replace("human", "", "x")
    with pytest.raises(ValidationError, match="over its limit of 2000"):
        await s.append("human", "x" * 2000)
    with pytest.raises(NotFoundError):
        await s.append("nobody", "x")
    with pytest.raises(ValidationError):
        await s.append("human", 42)
    assert s.to_dict() == before and s.revision == 0


async def test_limit_boundary_is_inclusive():
    s = MemoryBlockSet([{"label": "h", "value": "abc", "limit": 10}])
    await s.append("h", "123456")  # "abc\n123456" is exactly 10
    assert s.get("h").chars == 10
    with pytest.raises(ValidationError):
        await s.append("h", "")  # the newline alone would make 11
    with pytest.raises(ValidationError):
        await s.replace("h", "abc", "abcd")


async def test_app_edits():
    s = make_set()
    await s.set_value("persona", "I am a reviewer.")  # the app may edit read-only blocks
    assert s.get("persona").value == "I am a reviewer."
    with pytest.raises(ValidationError):
        await s.set_value("persona", "x" * 2001)
    with pytest.raises(ConflictError):
        await s.add(MemoryBlock("human"))
    for i in range(3):
        await s.add(MemoryBlock(f"extra{i}"))
    with pytest.raises(ValidationError, match="max_blocks=5"):
        await s.add(MemoryBlock("sixth"))
    removed = await s.remove("extra0")
    assert removed.label == "extra0" and "extra0" not in s
    with pytest.raises(NotFoundError):
        await s.remove("extra0")


def test_render_is_one_message_with_usage():
    s = make_set()
    msg = s.message()
    assert set(msg) == {"role", "content"} and msg["role"] == "user"
    text = msg["content"]
    assert text.startswith("<memory_blocks>\n") and text.endswith("\n</memory_blocks>")
    assert text.index("<persona>") < text.index("<human>")
    assert "chars_used=18 chars_limit=2000 read_only=false" in text
    assert "chars_used=24 chars_limit=2000 read_only=true" in text
    assert "<description>current user</description>" in text
    assert "<value>\nUser name: Teller.\n</value>\n</human>" in text
    assert text.count("<description>") == 1  # persona has none


def test_to_dict_round_trip():
    s = make_set(max_blocks=3)
    copy = MemoryBlockSet.from_dict(json.loads(json.dumps(s.to_dict())))
    assert copy.list() == s.list() and copy.max_blocks == 3


# --- the tools ------------------------------------------------------------------------


async def test_tools_schemas_are_letta_shaped():
    tools = ToolSet(core_memory_tools(make_set()))
    assert tools.names() == ["core_memory_append", "core_memory_replace"]
    openai = {s["function"]["name"]: s["function"]["parameters"] for s in tools.openai_schemas()}
    assert openai["core_memory_append"]["required"] == ["label", "content"]
    assert openai["core_memory_replace"]["required"] == ["label", "old_content", "new_content"]
    anthropic = tools.anthropic_schemas()
    assert anthropic[1]["input_schema"]["properties"].keys() == {
        "label",
        "old_content",
        "new_content",
    }


async def test_tool_calls_edit_the_set():
    s = make_set()
    tools = ToolSet(core_memory_tools(s))
    r = await tools.call("core_memory_append", {"label": "human", "content": "Likes tea."})
    assert not r.is_error
    assert r.content == "Appended to memory block 'human' (29/2000 characters used)."
    assert r.artifact["value"] == "User name: Teller.\nLikes tea." and r.artifact["chars"] == 29
    r = await tools.call(
        "core_memory_replace",
        {
            "label": "human",
            "old_content": "tea",
            "new_content": "coffee",
            "request_heartbeat": True,
        },
    )
    assert not r.is_error and r.artifact["replacements"] == 1
    assert s.get("human").value == "User name: Teller.\nLikes coffee."


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("core_memory_append", {"label": "persona", "content": "x"}, "read-only"),
        ("core_memory_append", {"label": "ghost", "content": "x"}, "no memory block labelled"),
        ("core_memory_append", {"label": "human", "content": "x" * 3000}, "over its limit"),
        ("core_memory_append", {"label": "human"}, "missing or not a string: content"),
        ("core_memory_append", {"label": "human", "content": 7}, "not a string: content"),
        ("core_memory_append", {"label": "human", "content": "x", "x": 1}, "unexpected: x"),
        (
            "core_memory_replace",
            {"label": "human", "old_content": "Alice", "new_content": "Bob"},
            "'Alice' was not found in memory block 'human'",
        ),
        (
            "core_memory_replace",
            {"label": "human", "old_content": "", "new_content": "Bob"},
            "must not be empty",
        ),
    ],
)
async def test_tool_errors_are_results(name, args, needle):
    s = make_set()
    before = s.to_dict()
    r = await ToolSet(core_memory_tools(s)).call(name, args)
    assert r.is_error and r.artifact is None
    assert r.content.startswith("Error: ") and needle in r.content
    assert s.to_dict() == before


# --- persistence ----------------------------------------------------------------------


async def test_snapshot_and_restore():
    kv = MapKv()
    s = make_set()
    await s.append("human", "Likes tea.")
    await s.snapshot(kv, "session-1")
    assert [k for k, _ in await kv.scan("blk:")] == ["blk:session-1"]
    record = json.loads(await kv.get("blk:session-1"))
    assert record["format"] == 1 and record["revision"] == 1 and len(record["blocks"]) == 2
    copy = await MemoryBlockSet.restore(kv, "session-1")
    assert copy.list() == s.list() and copy.revision == 1
    assert copy.bound_key is None  # a restored copy is in memory only
    await copy.append("human", "x")
    assert json.loads(await kv.get("blk:session-1"))["revision"] == 1
    with pytest.raises(NotFoundError):
        await MemoryBlockSet.restore(kv, "other")
    await MemoryBlockSet.delete_snapshot(kv, "session-1")
    assert await kv.get("blk:session-1") is None


async def test_open_binds_and_writes_every_change(tmp_path):
    path = tmp_path / "blocks.db"
    kv = await SqliteKv.open(path)
    s = await MemoryBlockSet.open(kv, "user:42", [{"label": "human", "value": "Name: Ana."}])
    assert s.bound_key == "blk:user:42"
    await s.append("human", "Speaks Portuguese.")
    await s.add({"label": "task", "value": "Plan a trip.", "limit": 100})
    await s.replace("task", "a trip", "a trip to Lisbon")
    await kv.close()

    kv = await SqliteKv.open(path)
    again = await MemoryBlockSet.open(kv, "user:42", [{"label": "ignored"}])
    assert again.labels() == ["human", "task"]
    assert again.get("human").value == "Name: Ana.\nSpeaks Portuguese."
    assert again.get("task") == MemoryBlock("task", "Plan a trip to Lisbon.", limit=100)
    assert again.revision == 3
    await kv.close()


async def test_failed_write_changes_nothing_in_memory_or_store():
    kv = FailingKv()
    s = await MemoryBlockSet.open(kv, "s", [{"label": "human", "value": "v1"}])
    stored = await kv.get("blk:s")
    kv.fail = True
    with pytest.raises(OSError):
        await s.append("human", "v2")
    with pytest.raises(OSError):
        await s.add({"label": "new"})
    assert s.get("human").value == "v1" and s.labels() == ["human"] and s.revision == 0
    assert await kv.get("blk:s") == stored


async def test_each_change_is_one_put_of_one_key():
    class CountingKv(MapKv):
        def __init__(self):
            super().__init__()
            self.batches = []

        async def put_many(self, items, *, deletes=()):
            self.batches.append(([k for k, _ in items], list(deletes)))
            await super().put_many(items, deletes=deletes)

    kv = CountingKv()
    s = await MemoryBlockSet.open(kv, "s", [{"label": "human"}])
    kv.batches.clear()
    await s.append("human", "a")
    await s.replace("human", "a", "b")
    await s.remove("human")
    assert kv.batches == [(["blk:s"], [])] * 3


async def test_concurrent_edits_are_not_lost():
    import asyncio

    kv = MapKv()
    s = await MemoryBlockSet.open(kv, "s", [{"label": "log", "limit": 500}])
    await asyncio.gather(*(s.append("log", f"line {i}") for i in range(20)))
    restored = await MemoryBlockSet.restore(kv, "s")
    assert restored.get("log").value.count("line") == 20 == s.get("log").value.count("line")


async def test_corrupt_snapshot_is_a_validation_error():
    kv = MapKv()
    for raw in [b"not json", b"{}", b'{"format":1,"blocks":[{"label":"a","limit":-1}]}']:
        await kv.put_many([("blk:bad", raw)])
        with pytest.raises(ValidationError, match="unreadable"):
            await MemoryBlockSet.restore(kv, "bad")


@pytest.mark.parametrize("set_id", ["", "a b", "x" * 129, ":lead", 5])
async def test_bad_set_id(set_id):
    with pytest.raises(ValidationError):
        block_key(set_id)
    with pytest.raises(ValidationError):
        await make_set().snapshot(MapKv(), set_id)
