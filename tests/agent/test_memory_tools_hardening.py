"""Issue #15 (Anthropic parity), #17 (the memory tools never raise and never stall) and
#30 (success messages echo the path as given): one regression test per finding, named
after it.

Peers' behaviour restated as data, never their code:
- anthropic-sdk-python src/anthropic/lib/tools/_beta_builtin_memory_tool.py (_validate_path
  resolves the path and refuses one that leaves /memories; view refuses files over 999,999
  lines; errors are the bare message with is_error)
- anthropic-sdk-typescript src/tools/memory/node.ts (the same path rule and wording)
"""

from __future__ import annotations

import pytest

from pymemory.agent import memory_commands
from pymemory.agent.memory_tool import (
    MAX_FILE_BYTES,
    create_anthropic_memory_tool,
    create_memory_tool,
    normalize_memory_path,
)
from pymemory.agent.tools import ToolSet
from pymemory.errors import ValidationError
from pymemory.storage import MapKv

# (raw path, what the SDK helpers resolve it to; None: refused as an escape)
DOT_DOT_INSIDE = [
    ("/memories/a/../b.txt", "/memories/b.txt"),  # SDKs: resolved and accepted
    ("/memories/a/./b.txt", "/memories/a/b.txt"),
    ("/memories/../memories/x", "/memories/x"),
    ("/memories/a/b/../../c", "/memories/c"),
    ("/memories/a/..", "/memories"),
    ("/memories/..", None),  # SDKs: "would escape /memories directory"
    ("/memories/a/../../etc", None),
]


@pytest.mark.parametrize(("raw", "resolved"), DOT_DOT_INSIDE)
async def test_dot_dot_inside_memories_resolves_as_the_sdk_helpers_do(raw, resolved):
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)
    if resolved is None:
        with pytest.raises(ValidationError):
            normalize_memory_path(raw)
        result = await tool.call({"command": "create", "path": raw, "file_text": "x"})
        assert result.is_error and "would escape /memories directory" in result.content
        assert not result.content.startswith("Error: ")  # bare message, as the SDKs
        assert await kv.scan("") == []
        return
    assert normalize_memory_path(raw) == resolved


async def test_success_messages_echo_the_path_as_given_and_store_it_normalised():
    """Issue 30: both SDK helpers answer with ``command.path`` as the model wrote it (their
    filesystem resolves ``..``); the store holds the normalised path, and so does the
    artifact."""
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)

    async def ok(**args):
        result = await tool.call(args)
        assert not result.is_error, result.content
        return result

    created = await ok(command="create", path="/memories/a/../b.txt", file_text="one\ntwo")
    assert created.content == "File created successfully at: /memories/a/../b.txt"
    assert created.artifact["path"] == "/memories/b.txt"
    assert await kv.scan("") == [("fs:/memories/b.txt", b"one\ntwo")]

    viewed = await ok(command="view", path="/memories/./b.txt")
    assert viewed.content == (
        "Here's the content of /memories/./b.txt with line numbers:\n     1\tone\n     2\ttwo"
    )
    listed = await ok(command="view", path="/memories/x/..")
    assert listed.content.split("\n") == [
        "Here're the files and directories up to 2 levels deep in /memories/x/.., "
        "excluding hidden items and node_modules:",
        "7B\t/memories",  # rows are normalised: each can be passed back as a path
        "7B\t/memories/b.txt",
    ]

    edited = await ok(
        command="str_replace", path="/memories/x/../b.txt", old_str="two", new_str="2"
    )
    assert edited.content.startswith("The memory file has been edited.")  # names no path
    inserted = await ok(
        command="insert", path="/memories/x/../b.txt", insert_line=0, insert_text="0"
    )
    assert inserted.content == "The file /memories/x/../b.txt has been edited."
    assert await kv.get("fs:/memories/b.txt") == b"0\none\n2"

    renamed = await ok(
        command="rename", old_path="/memories/a/../b.txt", new_path="/memories/n/./c.txt"
    )
    assert renamed.content == "Successfully renamed /memories/a/../b.txt to /memories/n/./c.txt"
    assert (renamed.artifact["path"], renamed.artifact["new_path"]) == (
        "/memories/b.txt",
        "/memories/n/c.txt",
    )
    assert [k for k, _ in await kv.scan("")] == ["fs:/memories/n/c.txt"]

    deleted = await ok(command="delete", path="/memories/n/../n/")
    assert deleted.content == "Successfully deleted /memories/n/../n/"
    assert deleted.artifact["path"] == "/memories/n"
    assert await kv.scan("") == []


LOOKALIKES = [
    "/memories/\u2025/x",  # two-dot leader: NFKC ".."
    "/memories/\uff0e\uff0e/x",  # fullwidth full stops
    "/memories/\uff0e/x",
    "/memories/.\u200b./x",  # a zero-width space between two dots
    "/memories/a\uff0fb",  # fullwidth solidus
    "/memories/\u2024\u2024/x",  # one-dot leaders
]


@pytest.mark.parametrize("raw", LOOKALIKES)
async def test_lookalike_dot_segments_are_refused_in_both_tools(raw):
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)
    with pytest.raises(ValidationError):
        normalize_memory_path(raw)
    result = await tool.call({"command": "create", "path": raw, "file_text": "x"})
    assert result.is_error and result.artifact["error"] == "invalid_path", result.content
    crud = create_memory_tool(kv)
    segment = raw.removeprefix("/memories/").split("/")[0]
    written = await crud.call({"operation": "write", "key": f"a/{segment}/b", "text": "x"})
    assert written.is_error, written.content
    assert await kv.scan("") == []


class CountingStr(str):
    """A str that counts the scans (find/count) made over it."""

    calls = 0

    def find(self, *args):  # type: ignore[override]
        CountingStr.calls += 1
        return super().find(*args)

    def count(self, *args):  # type: ignore[override]
        CountingStr.calls += 1
        return super().count(*args)


@pytest.mark.parametrize(
    "text",
    ["a" * MAX_FILE_BYTES, "a\n" * (MAX_FILE_BYTES // 2), ("ab" * 49 + "\n") * 1000],
    ids=["one-line", "one-letter-lines", "many-per-line"],
)
def test_str_replace_one_letter_on_the_largest_file_is_one_bounded_pass(text):
    # The finding: str_replace(old_str="a") on a 100 KB file of "a" took 3.5-21 s (one scan
    # per occurrence). Now the scans are bounded by the lines it names, not the occurrences.
    CountingStr.calls = 0
    count, lines = memory_commands._matches(CountingStr(text), "a")
    assert count == 2
    assert len(lines) == min(memory_commands.MAX_LISTED_LINES + 1, text.count("\n") + 1)
    assert CountingStr.calls <= 3 * memory_commands.MAX_LISTED_LINES + 5


async def test_str_replace_one_letter_on_a_100kb_file_is_an_error_result():
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)
    await kv.put_many([("fs:/memories/a.md", b"a" * MAX_FILE_BYTES)])
    result = await tool.call(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": "b"}
    )
    assert result.is_error and result.artifact["error"] == "multiple_matches"
    assert await kv.get("fs:/memories/a.md") == b"a" * MAX_FILE_BYTES


@pytest.mark.parametrize(
    "view_range", [[10**5000, 1], [1, 10**5000], [-(10**5000), -1], [2, 10**5000]]
)
async def test_view_range_with_a_5000_digit_int_is_an_error_result(view_range):
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)
    await kv.put_many([("fs:/memories/p.md", b"one\ntwo\nthree")])
    result = await tool.call(
        {"command": "view", "path": "/memories/p.md", "view_range": view_range}
    )
    assert result.is_error and result.artifact["error"] == "invalid_input"
    assert len(result.content) < 500


async def test_insert_line_with_a_5000_digit_int_is_an_error_result():
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)
    await kv.put_many([("fs:/memories/p.md", b"one")])
    result = await tool.call(
        {"command": "insert", "path": "/memories/p.md", "insert_line": 10**5000, "insert_text": "x"}
    )
    assert result.is_error and result.artifact["error"] == "invalid_input"
    assert await kv.get("fs:/memories/p.md") == b"one"


async def test_view_of_a_file_over_999999_lines_is_refused_as_the_sdks_do():
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)
    await kv.put_many([("fs:/memories/big.md", b"\n" * 999_999)])  # 1,000,000 lines
    result = await tool.call({"command": "view", "path": "/memories/big.md"})
    assert result.is_error and result.artifact["error"] == "too_many_lines"
    assert "exceeds maximum line limit of 999,999 lines" in result.content
    await kv.put_many([("fs:/memories/big.md", b"\n" * 999_998)])
    assert not (await tool.call({"command": "view", "path": "/memories/big.md",
                                 "view_range": [1, 2]})).is_error  # fmt: skip


async def test_a_corrupt_record_makes_the_4_op_tool_return_an_error_result():
    kv = MapKv()
    tool = create_memory_tool(kv)
    await tool.call({"operation": "write", "key": "k", "text": "fine"})
    ((key, _),) = await kv.scan("mt:")
    await kv.put_many([(key, b"\xff{not json")])
    read = await tool.call({"operation": "read", "key": "k"})
    assert read.is_error and read.artifact["error"] == "corrupt_record"
    listing = await tool.call({"operation": "list"})
    assert not listing.is_error and "unreadable" in listing.content
    rewritten = await tool.call({"operation": "write", "key": "k", "text": "again"})
    assert not rewritten.is_error
    assert (await tool.call({"operation": "read", "key": "k"})).content == "again"


async def test_a_corrupt_utf8_file_is_an_error_result_not_rewritten():
    kv = MapKv()
    tool = create_anthropic_memory_tool(kv)
    await kv.put_many([("fs:/memories/bad.md", b"ok \xff\xfe")])
    for args in ({"command": "view", "path": "/memories/bad.md"},
                 {"command": "str_replace", "path": "/memories/bad.md", "old_str": "ok",
                  "new_str": "no"}):  # fmt: skip
        result = await tool.call(args)
        assert result.is_error and result.artifact["error"] == "corrupt_record", result.content
    assert await kv.get("fs:/memories/bad.md") == b"ok \xff\xfe"


async def test_an_unknown_tool_name_is_an_error_result_not_raised():
    tools = ToolSet([create_memory_tool(MapKv())])
    result = await tools.call("memory_rethink", {"new_memory": "x"})
    assert result.is_error and result.artifact["error"] == "unknown_tool"
    assert "memory_kv" in result.content


async def test_a_failing_store_is_an_error_result_not_raised():
    class Broken(MapKv):
        async def get(self, key):
            raise OSError("disk gone")

    tool = create_anthropic_memory_tool(Broken())
    result = await tool.call({"command": "view", "path": "/memories/x.md"})
    assert result.is_error and result.artifact["exception"] == "OSError"


class CountingKv(MapKv):
    """MapKv that counts the calls a command makes and the bytes it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.read = 0

    def _got(self, values):
        self.read += sum(len(v) for v in values if v is not None)
        return values

    async def get(self, key):
        self.calls += 1
        return self._got([await super().get(key)])[0]

    async def get_many(self, keys):
        self.calls += 1
        return self._got(await super().get_many(keys))

    async def scan(self, prefix, *, start_after=None, limit=None):
        self.calls += 1
        pairs = await super().scan(prefix, start_after=start_after, limit=limit)
        self._got([v for _, v in pairs])
        return pairs

    async def transact(self, keys, fn, *, list_prefixes=()):
        self.calls += 1

        def counted(values, listed):
            self._got(values)
            return fn(values, listed)

        return await super().transact(keys, counted, list_prefixes=list_prefixes)

    async def put_many(self, items, **kwargs):
        self.calls += 1
        await super().put_many(items, **kwargs)

    async def delete_many(self, keys):
        self.calls += 1
        await super().delete_many(keys)


# The worst case for each command: a file at the size limit (room for one small insert),
# one short line per byte pair, one unique line at the end.
LARGEST = "a\n" * (MAX_FILE_BYTES // 2 - 8) + "END\n"
COMMANDS = [
    {"command": "view", "path": "/memories/big.md"},
    {"command": "view", "path": "/memories/big.md", "view_range": [49_000, -1]},
    {"command": "view", "path": "/memories"},
    {"command": "str_replace", "path": "/memories/big.md", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/big.md", "old_str": "a\n" * 10, "new_str": ""},
    {"command": "str_replace", "path": "/memories/big.md", "old_str": "zz", "new_str": "y"},
    {"command": "str_replace", "path": "/memories/big.md", "old_str": "END", "new_str": "FIN"},
    {"command": "insert", "path": "/memories/big.md", "insert_line": 25_000, "insert_text": "x\n"},
    {"command": "create", "path": "/memories/big.md", "file_text": LARGEST},
    {"command": "create", "path": "/memories/other.md", "file_text": LARGEST},
    {"command": "rename", "old_path": "/memories/big.md", "new_path": "/memories/moved.md"},
    {"command": "delete", "path": "/memories/big.md"},
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a["command"] + str(len(a)))
async def test_each_tool_command_on_the_largest_file_is_one_bounded_pass(args):
    """Issue #17: every command finishes on the largest allowed file, with a bounded
    number of store calls and reading the file a bounded number of times (structure,
    not wall time)."""
    kv = CountingKv()
    await kv.put_many([("fs:/memories/big.md", LARGEST.encode())])
    kv.calls = kv.read = 0
    result = await create_anthropic_memory_tool(kv).call(args)
    assert isinstance(result.content, str)  # an answer or an error result, never a raise
    assert kv.calls <= 6, kv.calls
    assert kv.read <= 2 * MAX_FILE_BYTES, kv.read


@pytest.mark.parametrize(
    "args",
    [
        {"operation": "write", "key": "big", "text": "a" * (MAX_FILE_BYTES - 10)},
        {"operation": "read", "key": "big"},
        {"operation": "list"},
        {"operation": "delete", "key": "big"},
    ],
    ids=lambda a: a["operation"],
)
async def test_each_crud_operation_on_the_largest_record_is_one_bounded_pass(args):
    kv = CountingKv()
    tool = create_memory_tool(kv)
    await tool.call({"operation": "write", "key": "big", "text": "a" * (MAX_FILE_BYTES - 10)})
    kv.calls = kv.read = 0
    result = await tool.call(args)
    assert not result.is_error, result.content
    assert kv.calls <= 6, kv.calls
    assert kv.read <= 3 * MAX_FILE_BYTES, kv.read
