"""Letta's current memory tools and block rendering, restated from Letta's own source,
tests and docs as data (input -> expected output), run against pymemory's
``letta_memory_tools`` and ``MemoryBlockSet.render(letta_compat=True)``.

Where Letta's behaviour is read from (letta-ai/letta; the stored copies were read, never
copied; the newest stored version of each file is the one restated):

- EXEC: ``letta/services/tool_executor/core_tool_executor.py``, ``LettaCoreToolExecutor``
  (``memory_replace`` / ``memory_insert`` / ``memory_rethink``: what runs, and what they
  return: the block's new value; an exception becomes an error result, ``status="error"``).
- BASE: ``letta/functions/function_sets/base.py`` (the signatures and docstrings the tool
  schemas are generated from).
- RENAME: letta-ai/letta #9552 "fix(memory): standardize tool parameter names"
  (2026-02-20): ``old_str``/``new_str`` became ``old_string``/``new_string`` in base.py, the
  executor and the docs; earlier releases (and agent files exported then) use the old names.
- DOCS: https://docs.letta.com/guides/agents/base-tools
- CONST: ``letta/constants.py`` (``MEMORY_TOOLS_LINE_NUMBER_PREFIX_REGEX``,
  ``CORE_MEMORY_LINE_NUMBER_WARNING``, ``READ_ONLY_BLOCK_EDIT_ERROR``,
  ``BASE_MEMORY_TOOLS_V2`` = memory_replace + memory_insert, ``BASE_SLEEPTIME_TOOLS`` adds
  memory_rethink).
- LIMIT: ``letta/schemas/block.py``, ``BaseBlock.verify_char_limit`` ("Edit failed: Exceeds
  N character limit").
- RENDER: ``letta/schemas/memory.py``, ``Memory._render_memory_blocks_standard`` (returns ""
  when there are no blocks) and ``tests/facade/test_memory.py``
  (``test_compile_standard_blocks_metadata_and_values``,
  ``test_compile_empty_returns_empty_string``).

A case whose ``ours`` is set is a deliberate difference; its name says which, and
docs/agent-primitives.md ("Letta's tools") explains it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pymemory.agent import MemoryBlockSet, ToolSet, core_memory_tools, letta_memory_tools
from pymemory.browser.rpc import RpcApi, close_agents
from pymemory.storage import MapKv, SqliteKv

NOTE = (  # CONST: CORE_MEMORY_LINE_NUMBER_WARNING, shown above line-numbered blocks
    "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing. "
    "Do NOT include line number prefixes in your memory edit tool calls."
)


@dataclass(frozen=True)
class Err:
    """An error result; ``says``: a phrase of the message (Letta's own, where we match it)."""

    says: str


@dataclass(frozen=True)
class Case:
    name: str
    tool: str
    before: str  # the value of block "human" (limit 40) before the call
    args: dict[str, Any]
    letta: str | Err  # Letta's result: the block's new value, or an error
    ours: str | Err | None = None  # only for a deliberate difference


# fmt: off
CASES = [
    # --- memory_replace(label, old_string, new_string) ------------------------------------
    # EXEC memory_replace returns new_value; DOCS: "Replace specific text in a memory block".
    Case("replace-unique", "memory_replace", "Name: Ana\nCity: Porto",
         {"label": "human", "old_string": "Porto", "new_string": "Lisbon"}, "Name: Ana\nCity: Lisbon"),
    # DOCS "Delete text (by replacing with empty string)"; BASE example with new_string="".
    Case("replace-empty-deletes", "memory_replace", "Ana, from Porto",
         {"label": "human", "old_string": ", from Porto", "new_string": ""}, "Ana"),
    # EXEC: a plain substring count/replace, so old_string may span lines.
    Case("replace-across-lines", "memory_replace", "a\nb\nc",
         {"label": "human", "old_string": "a\nb", "new_string": "ab"}, "ab\nc"),
    # EXEC: 0 occurrences -> "No replacement was performed, old_string `...` did not appear
    # verbatim in memory block with label `...`"; DOCS "must match exactly, including whitespace".
    Case("replace-no-match", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "name: ana", "new_string": "x"},
         Err("did not appear verbatim in memory block with label `human`")),
    Case("replace-whitespace-matters", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "Name:  Ana", "new_string": "x"},
         Err("did not appear verbatim")),
    # EXEC: >1 occurrences -> "Multiple occurrences of old_string `a` in lines [1, 3]. Please
    # ensure it is unique." (lines: 1-based, those containing old_string); DOCS: "If it
    # appears multiple times, the tool will error".
    Case("replace-not-unique", "memory_replace", "a\nb\na",
         {"label": "human", "old_string": "a", "new_string": "x"},
         Err("Multiple occurrences of old_string `a` in lines [1, 3]. Please ensure it is unique")),
    # EXEC: an empty old_string counts len(value)+1 times -> the "Multiple occurrences" error.
    Case("replace-empty-old-string", "memory_replace", "abc",
         {"label": "human", "old_string": "", "new_string": "x"},
         Err("Multiple occurrences"), ours=Err("old_string must not be empty")),
    # EXEC + CONST: READ_ONLY_BLOCK_EDIT_ERROR "... This block is read-only and cannot be edited."
    Case("replace-read-only", "memory_replace", "",
         {"label": "persona", "old_string": "I", "new_string": "x"}, Err("read-only and cannot be edited")),
    # EXEC: Memory.get_block raises KeyError ("Block field nope does not exist") -> error.
    Case("replace-unknown-label", "memory_replace", "x",
         {"label": "nope", "old_string": "x", "new_string": "y"},
         Err("Block field nope does not exist"), ours=Err("no memory block labelled 'nope'")),
    # EXEC + CONST: old_string with a view-only line number ("1→ ...") or the NOTE is refused;
    # new_string with a line number too.
    Case("replace-line-number-in-old", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "1→ Name: Ana", "new_string": "x"},
         Err("old_string contains a line number prefix, which is not allowed")),
    Case("replace-note-in-old", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": NOTE + "\nName", "new_string": "x"},
         Err("old_string contains a line number warning, which is not allowed")),
    Case("replace-line-number-in-new", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "Ana", "new_string": "Ana\n2→ Lisbon"},
         Err("new_string contains a line number prefix, which is not allowed")),
    # LIMIT: a value over the block's limit is refused ("Edit failed: Exceeds 40 character limit").
    Case("replace-over-limit", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "Ana", "new_string": "A" * 40},
         Err("Exceeds 40 character limit"), ours=Err("over its limit of 40")),
    # RENAME: old_str/new_str are the names before #9552 (still in older agent files).
    Case("replace-old-names-accepted", "memory_replace", "Name: Ana",
         {"label": "human", "old_str": "Ana", "new_str": "Bo"}, "Name: Bo"),
    # EXEC is called with **args: an unexpected keyword is a TypeError -> error result.
    Case("replace-both-names", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "Ana", "old_str": "Ana", "new_string": "Bo"},
         Err("pass it once")),
    Case("replace-unknown-argument", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "Ana", "new_string": "Bo", "count": 2}, Err("unexpected: count")),
    Case("replace-missing-argument", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "Ana"}, Err("missing or not a string: new_string")),
    # CONST REQUEST_HEARTBEAT_PARAM: Letta strips request_heartbeat before the tool runs.
    Case("replace-request-heartbeat", "memory_replace", "Name: Ana",
         {"label": "human", "old_string": "Ana", "new_string": "Bo", "request_heartbeat": True}, "Name: Bo"),
    # EXEC expands tabs (str.expandtabs) in old_string, new_string and the whole block before
    # replacing, so every tab in the block becomes spaces. We keep the block's text as written.
    Case("replace-tabs-kept", "memory_replace", "k:\tv\nz",
         {"label": "human", "old_string": "z", "new_string": "w"}, "k:      v\nw", ours="k:\tv\nw"),

    # --- memory_insert(label, new_string, insert_line=-1) ---------------------------------
    # EXEC: lines = value.split("\n"); insert_line -1 (the default) = after the last line;
    # BASE examples: no insert_line appends at the end, insert_line=0 inserts at the start.
    Case("insert-default-end", "memory_insert", "a\nb", {"label": "human", "new_string": "c"}, "a\nb\nc"),
    Case("insert-minus-one", "memory_insert", "a\nb",
         {"label": "human", "new_string": "c", "insert_line": -1}, "a\nb\nc"),
    Case("insert-start", "memory_insert", "a\nb", {"label": "human", "new_string": "c", "insert_line": 0}, "c\na\nb"),
    Case("insert-after-line-1", "memory_insert", "a\nb",
         {"label": "human", "new_string": "c", "insert_line": 1}, "a\nc\nb"),
    Case("insert-after-last-line", "memory_insert", "a\nb",
         {"label": "human", "new_string": "c", "insert_line": 2}, "a\nb\nc"),
    # EXEC: new_string is split into lines and spliced in.
    Case("insert-several-lines", "memory_insert", "a\nb",
         {"label": "human", "new_string": "x\ny", "insert_line": 1}, "a\nx\ny\nb"),
    # EXEC: outside [0, n_lines] (and not -1) -> "Invalid `insert_line` parameter: 3. It should
    # be within the range of lines of the memory block: [0, 2], or -1 to append ..."
    Case("insert-past-end", "memory_insert", "a\nb", {"label": "human", "new_string": "c", "insert_line": 3},
         Err("Invalid `insert_line` parameter: 3. It should be within the range of lines of the "
             "memory block: [0, 2]")),
    Case("insert-negative", "memory_insert", "a\nb", {"label": "human", "new_string": "c", "insert_line": -2},
         Err("Invalid `insert_line` parameter: -2")),
    # BASE: insert_line is an int; "1" fails Letta's comparison (TypeError) -> error.
    Case("insert-line-not-int", "memory_insert", "a\nb",
         {"label": "human", "new_string": "c", "insert_line": "1"}, Err("insert_line must be an integer")),
    # EXEC: an empty block is one empty line (n_lines = 1): Letta inserts next to it and keeps
    # it ("\nc" at the end, "c\n" at the start). We insert into an empty block as its whole
    # value, as core_memory_append does (no stray blank line); the range check is Letta's.
    Case("insert-empty-block-no-blank-line", "memory_insert", "",
         {"label": "human", "new_string": "c"}, "\nc", ours="c"),
    Case("insert-empty-block-start-no-blank-line", "memory_insert", "",
         {"label": "human", "new_string": "c", "insert_line": 0}, "c\n", ours="c"),
    Case("insert-empty-block-past-end", "memory_insert", "",
         {"label": "human", "new_string": "c", "insert_line": 2}, Err("memory block: [0, 1]")),
    Case("insert-read-only", "memory_insert", "", {"label": "persona", "new_string": "c"},
         Err("read-only and cannot be edited")),
    # EXEC + CONST: new_string with a line number or the NOTE is refused.
    Case("insert-line-number", "memory_insert", "a", {"label": "human", "new_string": "2→ c"},
         Err("new_string contains a line number prefix, which is not allowed")),
    Case("insert-note", "memory_insert", "a", {"label": "human", "new_string": NOTE},
         Err("new_string contains a line number warning, which is not allowed")),
    Case("insert-over-limit", "memory_insert", "a", {"label": "human", "new_string": "b" * 40},
         Err("Exceeds 40 character limit"), ours=Err("over its limit of 40")),
    # RENAME: new_str is the name before #9552.
    Case("insert-old-name-accepted", "memory_insert", "a", {"label": "human", "new_str": "b"}, "a\nb"),

    # --- memory_rethink(label, new_memory) -------------------------------------------------
    # EXEC: sets the value and returns new_memory; DOCS "Completely rewrite a memory block".
    Case("rethink-rewrites", "memory_rethink", "Ana\nPorto\nPorto again",
         {"label": "human", "new_memory": "Ana, Porto"}, "Ana, Porto"),
    Case("rethink-to-empty", "memory_rethink", "Ana", {"label": "human", "new_memory": ""}, ""),
    Case("rethink-read-only", "memory_rethink", "", {"label": "persona", "new_memory": "x"},
         Err("read-only and cannot be edited")),
    # EXEC reads get_block(label).read_only first, which raises KeyError for an unknown label
    # (its create-the-block branch after it is never reached) -> error.
    Case("rethink-unknown-label", "memory_rethink", "", {"label": "notes", "new_memory": "x"},
         Err("Block field notes does not exist"), ours=Err("no memory block labelled 'notes'")),
    Case("rethink-line-number", "memory_rethink", "a", {"label": "human", "new_memory": "1→ a"},
         Err("new_memory contains a line number prefix, which is not allowed")),
    Case("rethink-note", "memory_rethink", "a", {"label": "human", "new_memory": NOTE + "\na"},
         Err("new_memory contains a line number warning, which is not allowed")),
    Case("rethink-over-limit", "memory_rethink", "a", {"label": "human", "new_memory": "x" * 41},
         Err("Exceeds 40 character limit"), ours=Err("over its limit of 40")),
]
# fmt: on


def make_set(before: str = "", **kw: Any) -> MemoryBlockSet:
    return MemoryBlockSet(
        [
            {"label": "human", "value": before, "limit": 40, "description": "The user."},
            {"label": "persona", "value": "I am careful.", "read_only": True},
        ],
        **kw,
    )


def case_id(case: Case) -> str:
    return f"{case.name}[DIFFERS]" if case.ours is not None else case.name


@pytest.mark.parametrize("case", CASES, ids=case_id)
async def test_letta_tool_behaviour(case: Case):
    blocks = make_set(case.before)
    tools = ToolSet(letta_memory_tools(blocks))
    expected = case.letta if case.ours is None else case.ours
    result = await tools.call(case.tool, case.args)
    if isinstance(expected, Err):
        assert result.is_error, result
        assert expected.says in result.content, result.content
        assert result.content.startswith("Error: ")
        assert result.artifact["tool"] == case.tool and result.artifact["outcome"] == "error"
        # An error changes nothing.
        assert blocks.revision == 0 and blocks.get("human").value == case.before
    else:
        # Letta's return: the block's new value, which is what the block now holds.
        assert not result.is_error, result.content
        assert result.content == expected == blocks.get("human").value
        assert result.artifact["value"] == expected and result.artifact["label"] == "human"
    if case.ours is not None:
        assert case.ours != case.letta  # a named difference really is one


def test_every_difference_is_named_in_the_docs():
    page = Path(__file__).resolve().parents[2] / "docs" / "agent-primitives.md"
    section = page.read_text().split("\n## Letta's tools\n", 1)[1].split("\n## ", 1)[0]
    for phrase in ("tabs", "empty block", "wording", "line numbers", "letta_compat"):
        assert phrase in section, phrase


# --- the tools' schemas --------------------------------------------------------------------


def test_schemas_declare_lettas_argument_names():
    # BASE + RENAME + DOCS: memory_replace(label, old_string, new_string), memory_insert(label,
    # new_string, insert_line=-1), memory_rethink(label, new_memory); all but insert_line required.
    schemas = {t.name: t.parameters for t in letta_memory_tools(make_set())}
    assert list(schemas) == ["memory_replace", "memory_insert", "memory_rethink"]
    expected = {
        "memory_replace": (["label", "old_string", "new_string"], ["label", "old_string", "new_string"]),
        "memory_insert": (["label", "new_string", "insert_line"], ["label", "new_string"]),
        "memory_rethink": (["label", "new_memory"], ["label", "new_memory"]),
    }  # fmt: skip
    for name, (props, required) in expected.items():
        assert list(schemas[name]["properties"]) == props
        assert schemas[name]["required"] == required
    assert schemas["memory_insert"]["properties"]["insert_line"]["type"] == "integer"
    assert schemas["memory_insert"]["properties"]["insert_line"]["default"] == -1


async def test_unknown_tool_and_bad_arguments_are_results_not_exceptions():
    blocks = make_set("Ana")
    tools = ToolSet([*core_memory_tools(blocks), *letta_memory_tools(blocks)])
    # Letta's memory_finish_edits and memory_apply_patch are not offered: an error result.
    for name in ("memory_finish_edits", "memory_apply_patch"):
        result = await tools.call(name, {"label": "human"})
        assert result.is_error and result.artifact["error"] == "unknown_tool"
    for args in (
        None,
        [1],
        "text",
        {"label": 5, "new_memory": "x"},
        {"label": "human", "new_memory": 5},
    ):
        result = await tools.call("memory_rethink", args)  # type: ignore[arg-type]
        assert result.is_error and result.content.startswith("Error"), args
    assert (await tools.call("memory_rethink", {"label": "human", "new_memory": "\ud800"})).is_error
    assert blocks.revision == 0 and blocks.get("human").value == "Ana"


async def test_a_failing_store_is_an_error_result_and_changes_nothing():
    class FailingKv(MapKv):
        fail = False

        async def put_many(self, items, *, deletes=()):
            if self.fail:
                raise OSError("disk full")
            await super().put_many(items, deletes=deletes)

    kv = FailingKv()
    blocks = await MemoryBlockSet.open(kv, "s", [{"label": "human", "value": "Ana"}])
    stored = await kv.get("blk:s")
    kv.fail = True
    tools = ToolSet(letta_memory_tools(blocks))
    calls = [
        ("memory_insert", {"label": "human", "new_string": "Porto"}),
        ("memory_replace", {"label": "human", "old_string": "Ana", "new_string": "Bo"}),
        ("memory_rethink", {"label": "human", "new_memory": "Bo"}),
    ]
    for name, args in calls:
        result = await tools.call(name, args)
        assert result.is_error and result.artifact["exception"] == "OSError", result
    assert blocks.get("human").value == "Ana" and blocks.revision == 0
    assert await kv.get("blk:s") == stored


async def test_errors_write_nothing_to_a_bound_set():
    kv = MapKv()
    blocks = await MemoryBlockSet.open(kv, "s", [{"label": "human", "value": "a\na", "limit": 10}])
    stored = await kv.get("blk:s")
    tools = ToolSet(letta_memory_tools(blocks))
    for name, args in [
        ("memory_replace", {"label": "human", "old_string": "a", "new_string": "b"}),
        ("memory_insert", {"label": "human", "new_string": "c", "insert_line": 9}),
        ("memory_rethink", {"label": "human", "new_memory": "x" * 11}),
    ]:
        assert (await tools.call(name, args)).is_error
    assert await kv.get("blk:s") == stored


# --- many writers --------------------------------------------------------------------------


async def test_two_writers_on_one_sqlite_key_keep_both_inserts(tmp_path):
    # Two instances (two processes, say) bound to one key of one SQLite file: each insert is
    # a read-modify-write of the stored set in one transaction, so neither loses the other's.
    path = tmp_path / "blocks.db"
    kv_a, kv_b = await SqliteKv.open(path), await SqliteKv.open(path)
    try:
        seed = [{"label": "human", "value": "Name: Ana", "limit": 2000}]
        a = await MemoryBlockSet.open(kv_a, "agent-1", seed)
        b = await MemoryBlockSet.open(kv_b, "agent-1", seed)
        tools_a, tools_b = ToolSet(letta_memory_tools(a)), ToolSet(letta_memory_tools(b))
        first = await tools_a.call("memory_insert", {"label": "human", "new_string": "From A"})
        assert first.content == "Name: Ana\nFrom A"
        # b has not seen a's insert; its insert applies to the stored block all the same.
        second = await tools_b.call("memory_insert", {"label": "human", "new_string": "From B"})
        assert second.content == "Name: Ana\nFrom A\nFrom B"
        # And concurrently, from both at once.
        await asyncio.gather(
            *(
                tools.call("memory_insert", {"label": "human", "new_string": f"{who} {i}"})
                for i in range(5)
                for who, tools in (("a", tools_a), ("b", tools_b))
            )
        )
        await a.refresh()
        value = a.get("human").value
        assert value.startswith("Name: Ana\nFrom A\nFrom B\n")
        assert sorted(value.split("\n")[3:]) == sorted(f"{w} {i}" for w in "ab" for i in range(5))
        await b.refresh()
        assert b.get("human").value == value and a.revision == b.revision == 12
        reopened = await MemoryBlockSet.restore(kv_a, "agent-1")
        assert reopened.get("human").value == value
    finally:
        await kv_a.close()
        await kv_b.close()


# --- rendering -----------------------------------------------------------------------------

# RENDER: "<memory_blocks>", the header line, then per block <label>, an always-present
# <description> (its text on its own line), <metadata> with "- read_only=true" only for
# read-only blocks, "- chars_current=" (characters) and "- chars_limit=", the <value>, and a
# blank line between blocks; "\n</memory_blocks>" at the end.
HEADER = "The following memory blocks are currently engaged in your core memory unit:"
# fmt: off
RENDER_CASES = [
    ("no-blocks-nothing", [], ""),
    ("one-block", [{"label": "human", "value": "Name: Ana", "limit": 100, "description": "The user."}],
     f"<memory_blocks>\n{HEADER}\n\n<human>\n<description>\nThe user.\n</description>\n"
     "<metadata>\n- chars_current=9\n- chars_limit=100\n</metadata>\n"
     "<value>\nName: Ana\n</value>\n</human>\n\n</memory_blocks>"),
    ("read-only-and-empty-description",
     [{"label": "persona", "value": "I help.", "read_only": True},
      {"label": "notes", "value": "", "limit": 50}],
     f"<memory_blocks>\n{HEADER}\n\n<persona>\n<description>\n\n</description>\n"
     "<metadata>\n- read_only=true\n- chars_current=7\n- chars_limit=2000\n</metadata>\n"
     "<value>\nI help.\n</value>\n</persona>\n\n"
     "<notes>\n<description>\n\n</description>\n"
     "<metadata>\n- chars_current=0\n- chars_limit=50\n</metadata>\n"
     "<value>\n\n</value>\n</notes>\n\n</memory_blocks>"),
    # Python's len(): code points, as our limits count them.
    ("chars-are-code-points", [{"label": "human", "value": "olá 👋", "limit": 10}],
     f"<memory_blocks>\n{HEADER}\n\n<human>\n<description>\n\n</description>\n"
     "<metadata>\n- chars_current=5\n- chars_limit=10\n</metadata>\n"
     "<value>\nolá 👋\n</value>\n</human>\n\n</memory_blocks>"),
]
# fmt: on


@pytest.mark.parametrize(
    "blocks, expected", [c[1:] for c in RENDER_CASES], ids=[c[0] for c in RENDER_CASES]
)
def test_letta_rendering(blocks, expected):
    s = MemoryBlockSet(blocks)
    assert s.render(letta_compat=True) == expected
    assert s.message(letta_compat=True) == {"role": "user", "content": expected}
    assert MemoryBlockSet(blocks, letta_compat=True).render() == expected  # the set's default


def test_default_rendering_is_ours_and_differs():
    # Deliberate: by default the blocks render as ONE user message after the cached system
    # prefix (MessageAssembler), with our header, even with no blocks; Letta compiles them
    # into the system prompt (RENDER) and renders nothing for no blocks.
    s = make_set("Name: Ana")
    ours, letta = s.render(), s.render(letta_compat=True)
    assert ours != letta and ours.startswith("<memory_blocks>\nThese memory blocks")
    assert "<metadata>chars_used=9 chars_limit=40 read_only=false</metadata>" in ours
    assert MemoryBlockSet().render().startswith("<memory_blocks>")
    assert MemoryBlockSet().render(letta_compat=True) == ""
    assert s.render(letta_compat=False) == ours and s.message() == {"role": "user", "content": ours}


async def test_open_with_letta_compat_renders_lettas_way():
    kv = MapKv()
    s = await MemoryBlockSet.open(kv, "s", [{"label": "human", "value": "x"}], letta_compat=True)
    assert s.render().startswith(f"<memory_blocks>\n{HEADER}")
    again = await MemoryBlockSet.open(kv, "s")  # how to render is the instance's choice
    assert again.letta_compat is False and "chars_used=1" in again.render()


# --- through the worker's JSON API ---------------------------------------------------------


class Api:
    """One RpcApi over a MapKv per database, as tests/rpc/test_rpc_agent.py's harness."""

    def __init__(self) -> None:
        self.stores: dict[str, MapKv] = {}

        async def factory(name: str) -> MapKv:
            return self.stores.setdefault(name, MapKv())

        self.api = RpcApi(factory, feedback_flush_s=3600)

    async def call(self, method: str, params: object) -> dict:
        return json.loads(await self.api.call("db", method, json.dumps(params)))

    async def ok(self, method: str, params: object):
        answer = await self.call(method, params)
        assert answer["ok"], (method, answer)
        return answer["result"]

    async def err(self, method: str, params: object) -> str:
        answer = await self.call(method, params)
        assert not answer["ok"], (method, answer)
        return answer["error"]["code"]


@pytest.fixture
async def api():
    harness = Api()
    yield harness
    await close_agents(harness.api)
    await harness.api.close_all()


async def test_rpc_letta_tools_render_and_schemas(api):
    await api.ok("blocks.open", {"setId": "a1", "blocks": [
        {"label": "human", "value": "Name: Ana", "limit": 100, "description": "The user."},
        {"label": "persona", "value": "I help.", "readOnly": True}]})  # fmt: skip
    call = {
        "name": "memory_insert",
        "setId": "a1",
        "args": {"label": "human", "new_string": "Porto"},
    }
    inserted = await api.ok("tools.call", call)
    assert inserted == {
        "content": "Name: Ana\nPorto",
        "artifact": {"tool": "memory_insert", "outcome": "edited", "label": "human",
                     "value": "Name: Ana\nPorto", "chars": 15, "limit": 100},
        "isError": False,
    }  # fmt: skip
    raw = json.dumps({"label": "human", "old_string": "Porto", "new_string": "Lisbon"})
    replaced = await api.ok("tools.call", {"name": "memory_replace", "setId": "a1", "args": raw})
    assert replaced["content"] == "Name: Ana\nLisbon" and replaced["isError"] is False
    rethink = {"label": "persona", "new_memory": "x"}
    refused = await api.ok("tools.call", {"name": "memory_rethink", "setId": "a1", "args": rethink})
    assert refused["isError"] is True and "read-only" in refused["content"]
    assert (await api.ok("blocks.get", {"setId": "a1", "label": "persona"}))["value"] == "I help."

    letta = await api.ok("blocks.render", {"setId": "a1", "lettaCompat": True})
    assert letta.startswith(f"<memory_blocks>\n{HEADER}") and "- chars_current=16" in letta
    assert "- read_only=true" in letta
    message = await api.ok("blocks.message", {"setId": "a1", "lettaCompat": True})
    assert message == {"role": "user", "content": letta}
    ours = await api.ok("blocks.render", {"setId": "a1"})
    assert ours != letta and "chars_used=16" in ours
    assert await api.err("blocks.render", {"setId": "a1", "lettaCompat": "yes"}) == "invalid_input"

    default = await api.ok("tools.schemas", {"setId": "a1"})
    assert [t["function"]["name"] for t in default] == [
        "core_memory_append", "core_memory_replace", "memory", "memory_kv"]  # fmt: skip
    schemas = await api.ok("tools.schemas", {"setId": "a1", "letta": True})
    assert [t["function"]["name"] for t in schemas] == [
        "memory_replace", "memory_insert", "memory_rethink", "memory", "memory_kv"]  # fmt: skip
    params = schemas[0]["function"]["parameters"]
    assert params["required"] == ["label", "old_string", "new_string"]
    anthropic = await api.ok("tools.schemas", {"setId": "a1", "letta": True, "format": "anthropic"})
    assert [t["name"] for t in anthropic][:3] == [
        "memory_replace",
        "memory_insert",
        "memory_rethink",
    ]
    assert await api.err("tools.schemas", {"letta": True}) == "invalid_input"
    # Without a set there is nothing to edit: invalid_input, as for core_memory_*.
    no_set = {"name": "memory_rethink", "args": {"label": "human", "new_memory": "x"}}
    assert await api.err("tools.call", no_set) == "invalid_input"
