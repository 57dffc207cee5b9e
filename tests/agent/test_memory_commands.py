"""The ``memory_20250818`` commands over a KV: view, create, str_replace, insert, delete
and rename, with the SDK helpers' outputs and refusals that leave the store unchanged."""

import pytest
from memory_tool_kit import DEEP_16, LISTING, SpyKv, dump, fail, ok, put

from pymemory.agent.memory_tool import create_anthropic_memory_tool
from pymemory.storage import MapKv


@pytest.fixture
def kv():
    return SpyKv()


@pytest.fixture
def memory(kv):
    return create_anthropic_memory_tool(kv)


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
