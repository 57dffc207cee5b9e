"""The agent memory tools: path safety, dispatch and artifacts, the schemas, the
4-operation key -> text tool, and a round trip through ToolSet on both backends.

The ``memory_20250818`` commands themselves are in test_memory_commands.py."""

import asyncio
import inspect
import json

import pytest
from memory_tool_kit import DEEP_16, LISTING, T0, Clock, SpyKv, dump, fail, ok, put

from pymemory.agent.memory_tool import (
    MEMORY_TOOL_SYSTEM_PROMPT,
    AnthropicMemoryTool,
    create_anthropic_memory_tool,
    create_memory_tool,
    normalize_memory_path,
)
from pymemory.agent.tools import Tool, ToolSet
from pymemory.errors import ValidationError
from pymemory.storage import MapKv, SqliteKv


@pytest.fixture
def kv():
    return SpyKv()


@pytest.fixture
def memory(kv):
    return create_anthropic_memory_tool(kv)


# --- path safety --------------------------------------------------------------------------

# How a refused path is worded: the SDK helpers' two messages (anthropic-sdk-python
# src/anthropic/lib/tools/_beta_builtin_memory_tool.py, _validate_path), then ours for the
# refusals they do not make.
REFUSALS = ("Path must start with /memories, got: ", "Path ", "Invalid path ")

DEEP_17 = DEEP_16 + "/x"

PATHS = [
    # (raw path, normalised path or None when refused)
    ("/memories", "/memories"),
    ("/memories/", "/memories"),
    ("/memories/notes.md", "/memories/notes.md"),
    ("/memories/notes/todo.md", "/memories/notes/todo.md"),
    ("/memories/notes/", "/memories/notes"),
    ("/memories/a b/c-d_e.md", "/memories/a b/c-d_e.md"),
    ("/memories/日本語/メモ.md", "/memories/日本語/メモ.md"),
    ("/memories/e\u0301te.md", "/memories/\u00e9te.md"),  # NFC
    ("/memories/.hidden", "/memories/.hidden"),
    ("/memories/a..b.md", "/memories/a..b.md"),
    ("/memories/...", "/memories/..."),
    ("/memories/100% sure.md", "/memories/100% sure.md"),
    ("/memories/" + "a" * 255, "/memories/" + "a" * 255),
    (DEEP_16, DEEP_16),
    ("", None),
    ("notes.md", None),
    ("memories/notes.md", None),
    ("~/memories/notes.md", None),
    (" /memories/notes.md", None),
    ("/etc/passwd", None),
    ("/", None),
    ("/Memories/notes.md", None),
    ("/memories_x", None),
    ("/memories_x/notes.md", None),
    ("/memoriesX", None),
    ("/memories/..", None),  # resolves to the root's parent: escapes
    ("/memories/../etc/passwd", None),
    ("/memories/notes/../../etc", None),
    ("/memories/../memoriesX/a", None),
    ("/memories/../../memories/a", None),
    ("/memories/%2e%2e/etc", None),
    ("/memories/%2E%2E", None),
    ("/memories%2Fetc", None),
    ("/memories/a%2Fb", None),
    ("/memories/..%2fetc", None),
    ("/memories\\..\\etc", None),
    ("/memories/a\\b.md", None),
    ("/memories/a\x00b", None),
    ("/memories/a\nb", None),
    ("/memories/a\tb", None),
    ("/memories/\x7f", None),
    ("/memories/a\x85b", None),  # C1 control
    ("/memories/a\u2028b", None),  # line separator
    ("/memories/evil\u202egnp.md", None),  # bidi override
    ("/memories//notes.md", None),
    ("/memories/a//b", None),
    ("//memories/a", None),
    ("/memories/a//", None),
    ("/memories/" + "a" * 256, None),
    ("/memories/" + "é" * 128, None),  # 256 bytes in UTF-8
    ("/memories/" + "/".join(["b" * 250] * 5), None),  # 1,264 bytes
    (DEEP_17, None),
]


@pytest.mark.parametrize(("raw", "expected"), PATHS, ids=[repr(p[0])[:40] for p in PATHS])
async def test_path_safety(kv, memory, raw, expected):
    assert len(PATHS) >= 25
    if expected is None:
        with pytest.raises(ValidationError):
            normalize_memory_path(raw)
        for args in (
            {"command": "view", "path": raw},
            {"command": "create", "path": raw, "file_text": "x"},
            {"command": "delete", "path": raw},
            {"command": "rename", "old_path": raw, "new_path": "/memories/ok.md"},
            {"command": "rename", "old_path": "/memories/seed.md", "new_path": raw},
        ):
            await put(kv, "/memories/seed.md", "seed")
            before = await dump(kv)
            result = await fail(memory, "invalid_path", **args)
            assert result.content.startswith(REFUSALS), result.content
            assert await dump(kv) == before
        return
    assert normalize_memory_path(raw) == expected
    assert normalize_memory_path(expected) == expected  # idempotent
    # Stored under the normalised path; the message echoes the path as given (the SDKs').
    if expected == "/memories":
        result = await ok(memory, command="view", path=raw)
        assert result.content.startswith(LISTING.format(raw) + "\n0B\t/memories")
        return
    result = await ok(memory, command="create", path=raw, file_text="hello")
    assert result.content == f"File created successfully at: {raw}"
    assert await kv.get("fs:" + expected) == b"hello"
    viewed = await ok(memory, command="view", path=expected)
    assert viewed.content.endswith("     1\thello")


async def test_path_must_be_a_string_and_fit_a_kv_key(kv, memory):
    await fail(memory, "invalid_input", command="view", path=7)
    await fail(memory, "invalid_input", command="view")
    with pytest.raises(ValidationError, match="string"):
        normalize_memory_path(None)  # type: ignore[arg-type]
    longest = "/memories/" + "/".join(["c" * 200] * 5) + "/" + "d" * 9  # 1,024 bytes
    assert normalize_memory_path(longest) == longest
    result = await fail(memory, "invalid_path", command="create", path=longest, file_text="x")
    assert "too long to store" in result.content
    assert await dump(kv) == {}


# --- dispatch, artifacts, concurrency, layout -----------------------------------------------


@pytest.mark.parametrize("args", [{}, {"command": "cat"}, {"command": None}, {"command": ["view"]}])
async def test_unknown_command(memory, args):
    result = await memory.call(args)
    assert result.is_error
    assert result.artifact["error"] == "unknown_command"
    assert "view, create, str_replace, insert, delete, rename" in result.content


async def test_error_artifact_records_raw_path(memory):
    result = await fail(memory, "invalid_path", command="view", path="/etc/passwd")
    assert result.artifact == {
        "tool": "memory",
        "command": "view",
        "path": "/etc/passwd",
        "outcome": "error",
        "error": "invalid_path",
    }


async def test_concurrent_creates_of_one_path(kv, memory):
    results = await asyncio.gather(
        *(
            memory.call({"command": "create", "path": "/memories/race.md", "file_text": str(i)})
            for i in range(5)
        )
    )
    assert sum(not r.is_error for r in results) == 1
    assert {r.artifact["error"] for r in results if r.is_error} == {"already_exists"}


async def test_key_prefix_separates_trees():
    kv = MapKv()
    alice = create_anthropic_memory_tool(kv, key_prefix="fs:alice:")
    bob = create_anthropic_memory_tool(kv, key_prefix="fs:bob:")
    await ok(alice, command="create", path="/memories/a.md", file_text="mine")
    listing = await ok(bob, command="view", path="/memories")
    assert listing.content.endswith("\n0B\t/memories")
    assert [k for k, _ in await kv.scan("")] == ["fs:alice:/memories/a.md"]
    with pytest.raises(ValidationError):
        create_anthropic_memory_tool(kv, key_prefix="fs")
    with pytest.raises(ValidationError):
        create_anthropic_memory_tool(kv, max_files=0)


# --- schemas --------------------------------------------------------------------------------


def test_anthropic_tool_schemas():
    tool = create_anthropic_memory_tool(MapKv())
    assert isinstance(tool, AnthropicMemoryTool) and isinstance(tool, Tool)
    assert tool.name == "memory"
    full = tool.anthropic_schema()
    assert set(full) == {"name", "description", "input_schema"}
    schema = full["input_schema"]
    assert schema["required"] == ["command"]
    assert schema["properties"]["command"]["enum"] == [
        "view", "create", "str_replace", "insert", "delete", "rename",
    ]  # fmt: skip
    assert set(schema["properties"]) == {
        "command", "path", "view_range", "file_text", "old_str", "new_str", "insert_line",
        "insert_text", "old_path", "new_path",
    }  # fmt: skip
    assert schema["properties"]["view_range"]["items"] == {"type": "integer"}
    assert schema["properties"]["insert_line"]["type"] == "integer"
    assert tool.anthropic_schema(native=True) == {"type": "memory_20250818", "name": "memory"}
    assert tool.native_schema() == {"type": "memory_20250818", "name": "memory"}
    openai = tool.openai_schema()
    assert openai["type"] == "function"
    assert openai["function"]["name"] == "memory"
    assert openai["function"]["parameters"] is schema
    json.dumps([full, openai])  # plain JSON

    native = create_anthropic_memory_tool(MapKv(), native=True)
    assert native.anthropic_schema() == {"type": "memory_20250818", "name": "memory"}
    assert native.anthropic_schema(native=False)["input_schema"] == schema
    assert ToolSet([native]).anthropic_schemas() == [{"type": "memory_20250818", "name": "memory"}]
    assert native.openai_schema()["function"]["parameters"] == schema


def test_crud_tool_schemas():
    tool = create_memory_tool(MapKv())
    assert tool.name == "memory_kv"
    params = tool.openai_schema()["function"]["parameters"]
    assert params["required"] == ["operation"]
    assert params["properties"]["operation"]["enum"] == ["read", "write", "list", "delete"]
    assert set(params["properties"]) == {"operation", "key", "text", "prefix"}
    assert tool.anthropic_schema()["input_schema"] is params
    assert create_memory_tool(MapKv(), name="memory").name == "memory"


# --- the 4-operation tool -------------------------------------------------------------------


async def test_crud_round_trip_and_key_layout():
    kv, clock = MapKv(), Clock()
    tool = create_memory_tool(kv, namespace="user42", clock=clock)
    created = await ok(tool, operation="write", key="note:about:rust", text="Prefers Rust.")
    assert created.content == "Saved memory 'note:about:rust' (13 chars)."
    assert created.artifact == {
        "tool": "memory_kv",
        "operation": "write",
        "namespace": "user42",
        "key": "note:about:rust",
        "outcome": "created",
        "bytes": 13,
    }
    raw = await kv.get("mt:user42:note:about:rust")
    assert json.loads(raw) == {"created_ms": T0, "text": "Prefers Rust.", "updated_ms": T0}
    clock.advance(5000)
    updated = await ok(tool, operation="write", key="note:about:rust", text="Prefers Zig now.")
    assert updated.content == "Updated memory 'note:about:rust' (16 chars)."
    assert updated.artifact["outcome"] == "updated"
    record = json.loads(await kv.get("mt:user42:note:about:rust"))
    assert record == {"created_ms": T0, "text": "Prefers Zig now.", "updated_ms": T0 + 5000}
    read = await ok(tool, operation="read", key="note:about:rust")
    assert read.content == "Prefers Zig now."
    await ok(tool, operation="write", key="user:profile", text="Name: Teller")
    listing = await ok(tool, operation="list")
    assert listing.content == "2 memories:\n- note:about:rust (16 chars)\n- user:profile (12 chars)"
    narrowed = await ok(tool, operation="list", prefix="user:")
    assert (
        narrowed.content == "1 memory with keys starting with 'user:':\n- user:profile (12 chars)"
    )
    gone = await ok(tool, operation="delete", key="user:profile")
    assert gone.content == "Deleted memory 'user:profile'."
    empty = await ok(tool, operation="list", prefix="user:")
    assert empty.content == "No memories stored with keys starting with 'user:'."
    assert [k for k, _ in await kv.scan("")] == ["mt:user42:note:about:rust"]
    await ok(tool, operation="write", key="blank", text="")
    assert (await ok(tool, operation="read", key="blank")).content == "Memory 'blank' is empty."


async def test_crud_errors_leave_store_unchanged():
    kv = SpyKv()
    tool = create_memory_tool(kv, max_text_bytes=8, max_records=1)
    await ok(tool, operation="write", key="a", text="12345678")
    before = await dump(kv)
    cases = [
        ("not_found", {"operation": "read", "key": "b"}, "Use operation 'list'"),
        ("not_found", {"operation": "delete", "key": "b"}, "nothing deleted"),
        ("unknown_operation", {"operation": "update", "key": "a"}, "read, write, list, delete"),
        ("unknown_operation", {}, "Use one of"),
        ("invalid_input", {"operation": "read"}, "`key` is required"),
        ("invalid_input", {"operation": "read", "key": ""}, "non-empty"),
        ("invalid_key", {"operation": "read", "key": "k" * 257}, "longer than 256"),
        ("invalid_key", {"operation": "write", "key": "a\x00", "text": "x"}, "U+0000"),
        ("invalid_input", {"operation": "write", "key": "a"}, "`text` is required"),
        ("too_large", {"operation": "write", "key": "a", "text": "123456789"}, "limit is 8"),
        ("too_many_files", {"operation": "write", "key": "b", "text": "x"}, "holds 1 records"),
        ("invalid_input", {"operation": "list", "prefix": 5}, "`prefix`"),
    ]
    for code, args, needle in cases:
        result = await fail(tool, code, **args)
        assert needle in result.content, result.content
    assert await dump(kv) == before
    assert len(kv.batches) == 1
    await ok(tool, operation="write", key="a", text="87654321")  # overwrite is not a new record


async def test_crud_list_is_bounded_and_namespaces_are_isolated():
    kv = MapKv()
    tool = create_memory_tool(kv)
    other = create_memory_tool(kv, namespace="default.b")
    for i in range(205):
        await ok(tool, operation="write", key=f"k{i:03d}", text="x")
    listing = await ok(tool, operation="list")
    lines = listing.content.split("\n")
    assert lines[0] == "205 memories:"
    assert len(lines) == 1 + 200 + 1
    assert lines[-1] == "... and 5 more; pass a prefix to narrow."
    assert (await ok(other, operation="list")).content == "No memories stored."
    for bad in ("", "a:b", ":x", "x" * 65, "-lead", 5):
        with pytest.raises(ValidationError):
            create_memory_tool(kv, namespace=bad)  # type: ignore[arg-type]


def test_system_prompt_is_in_the_docstring():
    assert "check memory first" in MEMORY_TOOL_SYSTEM_PROMPT.lower()
    assert "save progress" in MEMORY_TOOL_SYSTEM_PROMPT.lower()
    doc_lines = [line.strip() for line in inspect.getdoc(create_memory_tool).splitlines()]
    prompt_lines = MEMORY_TOOL_SYSTEM_PROMPT.strip().splitlines()
    assert len(prompt_lines) >= 6
    start = doc_lines.index(prompt_lines[0])
    assert doc_lines[start : start + len(prompt_lines)] == prompt_lines


# --- a full round trip through ToolSet.call, on both backends --------------------------------


@pytest.fixture(params=["map", "sqlite"])
async def any_kv(request, tmp_path):
    if request.param == "map":
        kv = MapKv()
    else:
        kv = await SqliteKv.open(tmp_path / "memory.db")
    yield kv
    await kv.close()


async def test_toolset_round_trip(any_kv):
    tools = ToolSet([create_anthropic_memory_tool(any_kv), create_memory_tool(any_kv)])
    assert tools.names() == ["memory", "memory_kv"]
    script = [
        ("memory", {"command": "view", "path": "/memories"}, False),
        ("memory", {"command": "create", "path": "/memories/prefs.md",
                    "file_text": "Tone: brief.\nUnits: metric."}, False),
        ("memory", {"command": "str_replace", "path": "/memories/prefs.md", "old_str": "brief",
                    "new_str": "warm"}, False),
        ("memory", {"command": "insert", "path": "/memories/prefs.md", "insert_line": 0,
                    "insert_text": "# Sam"}, False),
        ("memory", {"command": "create", "path": "/memories/tasks/now.md",
                    "file_text": "ship v1"}, False),
        ("memory", {"command": "rename", "old_path": "/memories/tasks",
                    "new_path": "/memories/done"}, False),
        ("memory", {"command": "view", "path": "/memories/../secrets"}, True),
        ("memory_kv", {"operation": "write", "key": "progress", "text": "step 2 of 3"}, False),
        ("memory", {"command": "delete", "path": "/memories/done"}, False),
    ]  # fmt: skip
    for name, args, is_error in script:
        result = await tools.call(name, args)
        assert result.is_error is is_error, (args, result.content)
    view = await tools.call("memory", {"command": "view", "path": "/memories/prefs.md"})
    assert view.content == (
        "Here's the content of /memories/prefs.md with line numbers:\n"
        "     1\t# Sam\n     2\tTone: warm.\n     3\tUnits: metric."
    )
    listing = await tools.call("memory", {"command": "view", "path": "/memories"})
    assert listing.content.split("\n")[1:] == ["32B\t/memories", "32B\t/memories/prefs.md"]
    read = await tools.call("memory_kv", {"operation": "read", "key": "progress"})
    assert read.content == "step 2 of 3"
    assert [k for k, _ in await any_kv.scan("")] == [
        "fs:/memories/prefs.md",
        "mt:default:progress",
    ]
