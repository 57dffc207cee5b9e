"""The agent memory tools: the 4-operation key -> text tool and the memory_20250818 tree."""

import asyncio
import inspect
import json

import pytest

from pymemory.agent.memory_tool import (
    MEMORY_TOOL_SYSTEM_PROMPT,
    AnthropicMemoryTool,
    create_anthropic_memory_tool,
    create_memory_tool,
    normalize_memory_path,
)
from pymemory.agent.tools import Tool, ToolResult, ToolSet
from pymemory.errors import ValidationError
from pymemory.storage import MapKv, SqliteKv

T0 = 1_780_000_000_000  # a fixed "now" in epoch ms


class Clock:
    """A settable epoch-ms clock (kept local: ``conftest`` is ambiguous with tests/browser/)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


LISTING = (
    "Here're the files and directories up to 2 levels deep in {}, "
    "excluding hidden items and node_modules:"
)


class SpyKv(MapKv):
    """MapKv that records every write batch."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[list[str], list[str]]] = []

    async def put_many(self, items, *, deletes=()):
        self.batches.append(([k for k, _ in items], list(deletes)))
        await super().put_many(items, deletes=deletes)


@pytest.fixture
def kv():
    return SpyKv()


@pytest.fixture
def memory(kv):
    return create_anthropic_memory_tool(kv)


async def dump(kv) -> dict[str, bytes]:
    return dict(await kv.scan(""))


async def call(tool: Tool, **args) -> ToolResult:
    return await tool.call(args)


async def ok(tool: Tool, **args) -> ToolResult:
    result = await tool.call(args)
    assert not result.is_error, result.content
    return result


async def fail(tool: Tool, code: str, **args) -> ToolResult:
    result = await tool.call(args)
    assert result.is_error, result.content
    # The memory_20250818 tool returns the bare message with is_error, as the SDK helpers
    # do; the 4-operation tool keeps our "Error: " prefix.
    assert result.content.startswith("Error: ") == (tool.name != "memory"), result.content
    assert result.artifact["outcome"] == "error"
    assert result.artifact["error"] == code, result.content
    return result


async def put(kv, path: str, text: str) -> None:
    await kv.put_many([("fs:" + path, text.encode())])


# --- path safety --------------------------------------------------------------------------

# How a refused path is worded: the SDK helpers' two messages (anthropic-sdk-python
# src/anthropic/lib/tools/_beta_builtin_memory_tool.py, _validate_path), then ours for the
# refusals they do not make.
REFUSALS = ("Path must start with /memories, got: ", "Path ", "Invalid path ")

DEEP_16 = "/memories/" + "/".join(f"d{i}" for i in range(16))
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


# --- view -----------------------------------------------------------------------------------


async def test_view_empty_root(memory):
    result = await ok(memory, command="view", path="/memories")
    assert result.content == LISTING.format("/memories") + "\n0B\t/memories"
    assert result.artifact == {
        "tool": "memory",
        "command": "view",
        "path": "/memories",
        "outcome": "listed",
        "entries": 0,
        "files": 0,
        "bytes": 0,
    }


async def test_view_directory_lists_two_levels_with_sizes(kv, memory):
    await put(kv, "/memories/prefs.md", "x" * 1536)
    await put(kv, "/memories/notes/todo.md", "abc")
    await put(kv, "/memories/notes/deep/er/file.md", "12345")
    await put(kv, "/memories/.secret", "hidden")
    await put(kv, "/memories/node_modules/pkg.js", "js")
    await put(kv, "/memories/notes2.md", "z")
    result = await ok(memory, command="view", path="/memories/")
    total = 1536 + 3 + 5 + 6 + 2 + 1
    assert result.content.split("\n") == [
        LISTING.format("/memories/"),  # as given; the rows are normalised paths
        f"{total / 1024:.1f}K\t/memories",
        "8B\t/memories/notes/",
        "5B\t/memories/notes/deep/",
        "3B\t/memories/notes/todo.md",
        "1B\t/memories/notes2.md",
        "1.5K\t/memories/prefs.md",
    ]
    sub = await ok(memory, command="view", path="/memories/notes")
    assert sub.content.split("\n")[1:] == [
        "8B\t/memories/notes",
        "5B\t/memories/notes/deep/",
        "5B\t/memories/notes/deep/er/",
        "3B\t/memories/notes/todo.md",
    ]


async def test_view_sizes_use_du_units(kv, memory):
    await put(kv, "/memories/big.md", "y" * (2 * 1024 * 1024))
    result = await ok(memory, command="view", path="/memories")
    assert result.content.split("\n")[1:] == ["2M\t/memories", "2M\t/memories/big.md"]


async def test_view_file_shows_numbered_lines(kv, memory):
    await put(kv, "/memories/prefs.md", "# Sam\nTone: brief.\nUnits: metric.\n")
    result = await ok(memory, command="view", path="/memories/prefs.md")
    assert result.content == (
        "Here's the content of /memories/prefs.md with line numbers:\n"
        "     1\t# Sam\n     2\tTone: brief.\n     3\tUnits: metric.\n     4\t"
    )
    assert result.artifact["lines"] == [1, 4]
    ranged = await ok(memory, command="view", path="/memories/prefs.md", view_range=[2, 3])
    assert ranged.content.split("\n")[1:] == ["     2\tTone: brief.", "     3\tUnits: metric."]
    to_end = await ok(memory, command="view", path="/memories/prefs.md", view_range=[3, -1])
    assert to_end.content.split("\n")[1:] == ["     3\tUnits: metric.", "     4\t"]
    many = "\n".join(f"line {i}" for i in range(1, 1001))
    await put(kv, "/memories/long.md", many)
    last = await ok(memory, command="view", path="/memories/long.md", view_range=[1000, 1000])
    assert last.content.endswith("\n  1000\tline 1000")


@pytest.mark.parametrize(
    ("view_range", "needle"),
    [
        ([0, 2], "first element `0`"),
        ([5, 5], "first element `5`"),
        ([3, 2], "second element `2`"),
        ([1, 9], "second element `9`"),
        ([1], "two integers"),
        ("1-2", "two integers"),
        ([1.5, 2], "two integers"),
        ([True, 2], "two integers"),
    ],
)
async def test_view_range_refused(kv, memory, view_range, needle):
    await put(kv, "/memories/a.md", "one\ntwo\nthree")
    result = await fail(
        memory, "invalid_input", command="view", path="/memories/a.md", view_range=view_range
    )
    assert needle in result.content


async def test_view_errors(kv, memory):
    result = await fail(memory, "not_found", command="view", path="/memories/nope.md")
    assert result.content == (
        "The path /memories/nope.md does not exist. Please provide a valid path."
    )
    assert result.artifact["path"] == "/memories/nope.md"
    await put(kv, "/memories/dir/a.md", "a")
    result = await fail(
        memory, "invalid_input", command="view", path="/memories/dir", view_range=[1, 1]
    )
    assert "not allowed when `path` points to a directory" in result.content
    assert kv.batches[1:] == []  # views never write


# --- create ---------------------------------------------------------------------------------


async def test_create_writes_one_key(kv, memory):
    result = await ok(
        memory, command="create", path="/memories/notes/todo.md", file_text="- milk\n"
    )
    assert result.content == "File created successfully at: /memories/notes/todo.md"
    assert result.artifact == {
        "tool": "memory",
        "command": "create",
        "path": "/memories/notes/todo.md",
        "outcome": "created",
        "bytes": 7,
    }
    assert await dump(kv) == {"fs:/memories/notes/todo.md": b"- milk\n"}
    assert kv.batches == [(["fs:/memories/notes/todo.md"], [])]
    empty = await ok(memory, command="create", path="/memories/empty.md", file_text="")
    assert empty.artifact["bytes"] == 0
    assert await kv.get("fs:/memories/empty.md") == b""


async def test_create_refusals_leave_store_unchanged(kv, memory):
    await put(kv, "/memories/a.md", "old")
    await put(kv, "/memories/dir/b.md", "b")
    before = await dump(kv)
    exists = await fail(
        memory, "already_exists", command="create", path="/memories/a.md", file_text="new"
    )
    assert exists.content.startswith("File /memories/a.md already exists")
    is_dir = await fail(
        memory, "is_directory", command="create", path="/memories/dir", file_text="x"
    )
    assert "is a directory" in is_dir.content
    await fail(memory, "is_directory", command="create", path="/memories", file_text="x")
    parent = await fail(
        memory, "parent_is_file", command="create", path="/memories/a.md/c.md", file_text="x"
    )
    assert "/memories/a.md is a file" in parent.content
    missing = await fail(memory, "invalid_input", command="create", path="/memories/c.md")
    assert "`file_text` is required" in missing.content
    await fail(memory, "invalid_input", command="create", path="/memories/c.md", file_text=3)
    await fail(memory, "invalid_input", command="create", path="/memories/c.md", file_text="\ud800")
    assert await dump(kv) == before


async def test_file_size_cap(kv):
    memory = create_anthropic_memory_tool(kv, max_file_bytes=10)
    await ok(memory, command="create", path="/memories/a.md", file_text="é" * 5)  # 10 bytes
    too_big = await fail(
        memory, "too_large", command="create", path="/memories/b.md", file_text="x" * 11
    )
    assert "11 bytes; the limit is 10 bytes" in too_big.content
    await fail(
        memory, "too_large", command="str_replace", path="/memories/a.md", old_str="é" * 5,
        new_str="é" * 5 + "!",
    )  # fmt: skip
    await fail(
        memory, "too_large", command="insert", path="/memories/a.md", insert_line=0, insert_text=""
    )  # a new line adds one byte
    assert await dump(kv) == {"fs:/memories/a.md": "é".encode() * 5}
    default = create_anthropic_memory_tool(MapKv())
    await ok(default, command="create", path="/memories/max.md", file_text="x" * 100_000)
    await fail(
        default, "too_large", command="create", path="/memories/over.md", file_text="x" * 100_001
    )


async def test_total_files_cap(kv):
    memory = create_anthropic_memory_tool(kv, max_files=2)
    await ok(memory, command="create", path="/memories/1.md", file_text="1")
    await ok(memory, command="create", path="/memories/d/2.md", file_text="2")
    result = await fail(
        memory, "too_many_files", command="create", path="/memories/3.md", file_text="3"
    )
    assert "already holds 2 files, the limit" in result.content
    await ok(memory, command="rename", old_path="/memories/1.md", new_path="/memories/one.md")
    await ok(memory, command="delete", path="/memories/one.md")
    await ok(memory, command="create", path="/memories/3.md", file_text="3")


# --- str_replace ----------------------------------------------------------------------------


async def test_str_replace_unique_match(kv, memory):
    await put(kv, "/memories/p.md", "a\nb\nTone: brief.\nc\nd\ne")
    result = await ok(
        memory, command="str_replace", path="/memories/p.md", old_str="brief", new_str="warm"
    )
    assert result.content == (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n     1\ta\n     2\tb\n     3\tTone: warm.\n     4\tc\n     5\td"
    )
    assert result.artifact["line"] == 3
    assert await kv.get("fs:/memories/p.md") == b"a\nb\nTone: warm.\nc\nd\ne"
    assert kv.batches[-1] == (["fs:/memories/p.md"], [])
    multi = await ok(
        memory, command="str_replace", path="/memories/p.md", old_str="c\nd\n", new_str=""
    )
    assert "     4\te" in multi.content
    assert await kv.get("fs:/memories/p.md") == b"a\nb\nTone: warm.\ne"


async def test_str_replace_requires_exactly_one_match(kv, memory):
    await put(kv, "/memories/p.md", "- milk\n- eggs\nbanana")
    before = await dump(kv)
    none = await fail(
        memory, "no_match", command="str_replace", path="/memories/p.md", old_str="tea", new_str=""
    )
    assert none.content.startswith(
        "No replacement was performed, old_str `tea` did not appear verbatim in /memories/p.md."
    )
    two = await fail(
        memory, "multiple_matches", command="str_replace", path="/memories/p.md", old_str="- ",
        new_str="* ",
    )  # fmt: skip
    assert "Multiple occurrences of old_str `- ` in lines: 1, 2" in two.content
    assert two.content.endswith("in lines: 1, 2. Please ensure it is unique")
    overlapping = await fail(
        memory, "multiple_matches", command="str_replace", path="/memories/p.md", old_str="ana",
        new_str="x",
    )  # fmt: skip
    assert overlapping.content.endswith("in lines: 3. Please ensure it is unique")
    await fail(
        memory, "invalid_input", command="str_replace", path="/memories/p.md", old_str="",
        new_str="x",
    )  # fmt: skip
    await fail(memory, "invalid_input", command="str_replace", path="/memories/p.md", old_str="m")
    await fail(
        memory, "not_found", command="str_replace", path="/memories/q.md", old_str="a", new_str="b"
    )
    await put(kv, "/memories/d/x.md", "x")
    before = await dump(kv)
    await fail(
        memory, "is_directory", command="str_replace", path="/memories/d", old_str="x", new_str="y"
    )
    assert await dump(kv) == before


# --- insert ---------------------------------------------------------------------------------


async def test_insert(kv, memory):
    await put(kv, "/memories/p.md", "one\ntwo")
    result = await ok(
        memory, command="insert", path="/memories/p.md", insert_line=0, insert_text="zero\n"
    )
    assert result.content == "The file /memories/p.md has been edited."
    assert result.artifact["outcome"] == "edited"
    assert await kv.get("fs:/memories/p.md") == b"zero\none\ntwo"
    await ok(memory, command="insert", path="/memories/p.md", insert_line=3, insert_text="three")
    await ok(memory, command="insert", path="/memories/p.md", insert_line=2, insert_text="1.5\n1.7")
    assert await kv.get("fs:/memories/p.md") == b"zero\none\n1.5\n1.7\ntwo\nthree"
    assert len(kv.batches) == 4  # the seed and one batch per insert


@pytest.mark.parametrize("line", [-1, 3, True, "1", None])
async def test_insert_refused(kv, memory, line):
    await put(kv, "/memories/p.md", "one\ntwo")
    before = await dump(kv)
    result = await fail(
        memory, "invalid_input", command="insert", path="/memories/p.md", insert_line=line,
        insert_text="x",
    )  # fmt: skip
    if isinstance(line, int) and not isinstance(line, bool):
        assert result.content == (
            f"Invalid `insert_line` parameter: {line}. It should be within the range "
            "of lines of the file: [0, 2]."
        )
    else:
        assert "`insert_line` is required" in result.content
    assert await dump(kv) == before


# --- delete ---------------------------------------------------------------------------------


async def test_delete_file_and_directory(kv, memory):
    for path in ("/memories/notes/a.md", "/memories/notes/sub/b.md", "/memories/notes2.md"):
        await put(kv, path, "x")
    await put(kv, "/memories/keep.md", "k")
    result = await ok(memory, command="delete", path="/memories/notes2.md")
    assert result.content == "Successfully deleted /memories/notes2.md"
    result = await ok(memory, command="delete", path="/memories/notes/")
    assert result.content == "Successfully deleted /memories/notes/"  # as given
    assert result.artifact["deleted"] == 2
    assert kv.batches[-1] == ([], ["fs:/memories/notes/a.md", "fs:/memories/notes/sub/b.md"])
    assert await dump(kv) == {"fs:/memories/keep.md": b"k"}
    missing = await fail(memory, "not_found", command="delete", path="/memories/notes")
    assert missing.content == "The path /memories/notes does not exist."
    root = await fail(memory, "invalid_path", command="delete", path="/memories")
    assert "Cannot delete the /memories directory itself" in root.content
    assert await dump(kv) == {"fs:/memories/keep.md": b"k"}


# --- rename ---------------------------------------------------------------------------------


async def test_rename_file(kv, memory):
    await put(kv, "/memories/a.md", "A")
    result = await ok(
        memory, command="rename", old_path="/memories/a.md", new_path="/memories/x/b.md"
    )
    assert result.content == "Successfully renamed /memories/a.md to /memories/x/b.md"
    assert result.artifact == {
        "tool": "memory",
        "command": "rename",
        "path": "/memories/a.md",
        "new_path": "/memories/x/b.md",
        "outcome": "renamed",
        "moved": 1,
    }
    assert await dump(kv) == {"fs:/memories/x/b.md": b"A"}
    assert kv.batches[-1] == (["fs:/memories/x/b.md"], ["fs:/memories/a.md"])


async def test_rename_directory_is_one_atomic_batch(kv, memory):
    files = {
        "/memories/proj/a.md": "a",
        "/memories/proj/sub/b.md": "b",
        "/memories/proj/sub/deeper/c.md": "c",
        "/memories/project.md": "sibling",  # shares the prefix "proj", must stay
    }
    for path, text in files.items():
        await put(kv, path, text)
    seeded = len(kv.batches)
    result = await ok(
        memory, command="rename", old_path="/memories/proj", new_path="/memories/archive/2025"
    )
    assert result.artifact["moved"] == 3
    assert await dump(kv) == {
        "fs:/memories/archive/2025/a.md": b"a",
        "fs:/memories/archive/2025/sub/b.md": b"b",
        "fs:/memories/archive/2025/sub/deeper/c.md": b"c",
        "fs:/memories/project.md": b"sibling",
    }
    assert len(kv.batches) == seeded + 1
    puts, deletes = kv.batches[-1]
    assert sorted(deletes) == [
        "fs:/memories/proj/a.md",
        "fs:/memories/proj/sub/b.md",
        "fs:/memories/proj/sub/deeper/c.md",
    ]
    assert len(puts) == 3


async def test_rename_refusals_leave_store_unchanged(kv, memory):
    await put(kv, "/memories/a.md", "A")
    await put(kv, "/memories/b.md", "B")
    await put(kv, "/memories/d/x.md", "X")
    await put(kv, DEEP_16 + ".md", "deep")  # 16 levels: moving its tree one level down fails
    before = await dump(kv)
    taken = await fail(
        memory, "already_exists", command="rename", old_path="/memories/a.md",
        new_path="/memories/b.md",
    )  # fmt: skip
    assert taken.content == "The destination /memories/b.md already exists."
    await fail(
        memory,
        "already_exists",
        command="rename",
        old_path="/memories/a.md",
        new_path="/memories/d",
    )
    missing = await fail(
        memory, "not_found", command="rename", old_path="/memories/zz", new_path="/memories/b.md"
    )
    assert missing.content == "The path /memories/zz does not exist."
    into = await fail(
        memory, "invalid_path", command="rename", old_path="/memories/d", new_path="/memories/d/e"
    )
    assert "into itself" in into.content
    await fail(
        memory, "invalid_path", command="rename", old_path="/memories", new_path="/memories/x"
    )
    await fail(
        memory, "parent_is_file", command="rename", old_path="/memories/d",
        new_path="/memories/a.md/d",
    )  # fmt: skip
    deep = await fail(
        memory, "invalid_path", command="rename", old_path="/memories/d0",
        new_path="/memories/z/d0",
    )  # fmt: skip
    assert "levels below /memories" in deep.content
    await fail(memory, "invalid_input", command="rename", old_path="/memories/a.md")
    assert await dump(kv) == before


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
