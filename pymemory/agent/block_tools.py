"""The agent's tools over a :class:`~pymemory.agent.blocks.MemoryBlockSet`, with Letta's
names and argument names. Their errors come back as ``ToolResult(is_error=True)`` with a
message that says what to do; nothing is changed then.

- :func:`core_memory_tools`: Letta's classic two, ``core_memory_append(label, content)`` and
  ``core_memory_replace(label, old_content, new_content)``; they return a status line.
- :func:`letta_memory_tools`: the ones Letta's current default agents use (letta/constants.py:
  ``BASE_MEMORY_TOOLS_V2``, and ``BASE_SLEEPTIME_TOOLS`` for ``memory_rethink``):
  ``memory_replace(label, old_string, new_string)``, ``memory_insert(label, new_string,
  insert_line=-1)`` and ``memory_rethink(label, new_memory)``. Like Letta's, they return the
  block's new value. Letta renamed ``old_str``/``new_str`` to ``old_string``/``new_string``
  (letta-ai/letta #9552, 2026-02-20); the old names are still accepted, as aliases.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Mapping
from typing import Any

from ..errors import ConflictError, NotFoundError, ValidationError
from .blocks import MemoryBlock, MemoryBlockSet
from .tools import Tool, ToolResult

_APPEND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "description": "Label of the memory block to edit."},
        "content": {
            "type": "string",
            "description": "Text to add at the end of the block, on a new line. "
            "Any Unicode, including emoji, is fine.",
        },
    },
    "required": ["label", "content"],
    "additionalProperties": False,
}

_REPLACE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "description": "Label of the memory block to edit."},
        "old_content": {
            "type": "string",
            "description": "Text to replace; must match the block's text exactly.",
        },
        "new_content": {
            "type": "string",
            "description": "Replacement text. Use an empty string to delete old_content.",
        },
    },
    "required": ["label", "old_content", "new_content"],
    "additionalProperties": False,
}


def _args(tool: str, args: Mapping[str, Any], names: tuple[str, ...]) -> list[str] | ToolResult:
    missing = [n for n in names if not isinstance(args.get(n), str)]
    # Letta adds ``request_heartbeat`` to every tool; agents trained on it may still send it.
    extra = sorted(set(args) - set(names) - {"request_heartbeat"})
    if missing or extra:
        wanted = ", ".join(f"{n} (string)" for n in names)
        detail = f"missing or not a string: {', '.join(missing)}" if missing else ""
        if extra:
            detail += ("; " if detail else "") + f"unexpected: {', '.join(map(str, extra))}"
        return ToolResult(f"Error: {tool} takes {wanted}; {detail}.", is_error=True)
    return [args[n] for n in names]


def _done(op: str, block: MemoryBlock, text: str, **extra: Any) -> ToolResult:
    artifact = {
        "op": op,
        "label": block.label,
        "value": block.value,
        "chars": block.chars,
        "limit": block.limit,
        **extra,
    }
    return ToolResult(f"{text} ({block.chars}/{block.limit} characters used).", artifact)


def core_memory_tools(blocks: MemoryBlockSet) -> list[Tool]:
    """``core_memory_append`` and ``core_memory_replace`` over ``blocks`` (Letta's names and
    arguments). Bad calls return ``ToolResult(is_error=True)`` and change nothing."""

    async def append(args: dict[str, Any]) -> ToolResult:
        parsed = _args("core_memory_append", args, ("label", "content"))
        if isinstance(parsed, ToolResult):
            return parsed
        label, content = parsed
        try:
            block = await blocks.append(label, content)
        except (ValidationError, NotFoundError) as exc:
            return ToolResult(f"Error: {exc}.", is_error=True)
        return _done("append", block, f"Appended to memory block {label!r}")

    async def replace_(args: dict[str, Any]) -> ToolResult:
        parsed = _args("core_memory_replace", args, ("label", "old_content", "new_content"))
        if isinstance(parsed, ToolResult):
            return parsed
        label, old, new = parsed
        try:
            block, count = await blocks._replace(label, old, new)
        except (ValidationError, NotFoundError) as exc:
            return ToolResult(f"Error: {exc}.", is_error=True)
        times = "1 occurrence" if count == 1 else f"{count} occurrences"
        text = f"Replaced {times} in memory block {label!r}"
        return _done("replace", block, text, replacements=count)

    return [
        Tool(
            name="core_memory_append",
            description="Append text to one of your core memory blocks (shown to you every "
            "turn). The text goes on a new line after the block's current value.",
            parameters=_APPEND_SCHEMA,
            handler=append,
        ),
        Tool(
            name="core_memory_replace",
            description="Replace text in one of your core memory blocks. old_content must "
            "match exactly; every occurrence is replaced. To delete text, pass an empty "
            "string as new_content.",
            parameters=_REPLACE_SCHEMA,
            handler=replace_,
        ),
    ]


# --- Letta's current tools ----------------------------------------------------------------

LETTA_TOOL_NAMES = ("memory_replace", "memory_insert", "memory_rethink")

# letta/constants.py: the line-number prefix Letta shows Anthropic models ("3→ text") and the
# note above such a listing; Letta refuses both in the text of an edit, and so do these tools.
_LINE_NUMBER = re.compile(r"^[ \t]*\d+→[ \t]*", re.MULTILINE)
_LINE_NUMBER_NOTE = (
    "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing. "
    "Do NOT include line number prefixes in your memory edit tool calls."
)

_LABEL = {"type": "string", "description": "The label of the memory block to edit."}

_MEMORY_REPLACE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": dict(_LABEL),
        "old_string": {
            "type": "string",
            "description": "The text to replace. It must appear exactly once in the block, "
            "character for character (whitespace too). No line-number prefixes.",
        },
        "new_string": {
            "type": "string",
            "description": "The text to put in its place; an empty string deletes it.",
        },
    },
    "required": ["label", "old_string", "new_string"],
    "additionalProperties": False,
}

_MEMORY_INSERT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": dict(_LABEL),
        "new_string": {
            "type": "string",
            "description": "The text to insert, as one or more lines. No line-number prefixes.",
        },
        "insert_line": {
            "type": "integer",
            "description": "Insert after this line: 0 for the start of the block, -1 (the "
            "default) for the end.",
            "default": -1,
        },
    },
    "required": ["label", "new_string"],
    "additionalProperties": False,
}

_MEMORY_RETHINK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": dict(_LABEL),
        "new_memory": {
            "type": "string",
            "description": "The block's complete new contents: what is still true of the old "
            "contents, merged with what is new, well organised.",
        },
    },
    "required": ["label", "new_memory"],
    "additionalProperties": False,
}


def _letta_args(
    tool: str,
    args: Mapping[str, Any],
    strings: tuple[str, ...],
    aliases: Mapping[str, str] | None = None,
) -> dict[str, Any] | ToolResult:
    """The string arguments ``strings`` (plus ``insert_line`` for memory_insert), with
    ``aliases`` (an old name -> its current name) renamed; an error result if they do not fit."""
    args = dict(args)
    for old, new in (aliases or {}).items():
        if old in args:
            if new in args:
                return _error(tool, f"{tool} takes {new}; pass it once, not also as {old}")
            args[new] = args.pop(old)
    known = set(strings) | ({"insert_line"} if tool == "memory_insert" else set())
    missing = [n for n in strings if not isinstance(args.get(n), str)]
    # Letta adds ``request_heartbeat`` to every tool; agents trained on it may still send it.
    extra = sorted(map(str, set(args) - known - {"request_heartbeat"}))
    if missing or extra:
        wanted = ", ".join(f"{n} (string)" for n in strings)
        if tool == "memory_insert":
            wanted += ", insert_line (integer, optional)"
        detail = f"missing or not a string: {', '.join(missing)}" if missing else ""
        if extra:
            detail += ("; " if detail else "") + f"unexpected: {', '.join(extra)}"
        return _error(tool, f"{tool} takes {wanted}; {detail}")
    return {n: args[n] for n in known if n in args}


def _error(tool: str, message: str, code: str = "invalid_input") -> ToolResult:
    return ToolResult(
        f"Error: {message.rstrip('.')}.",
        {"tool": tool, "outcome": "error", "error": code},
        is_error=True,
    )


def _line_numbers(name: str, text: str, *, note: bool = True) -> str | None:
    """Letta's refusal of view-only line numbers in an edit's text, or None."""
    if _LINE_NUMBER.search(text):
        what = "a line number prefix"
    elif note and _LINE_NUMBER_NOTE in text:
        what = "a line number warning"
    else:
        return None
    return (
        f"{name} contains {what}, which is not allowed. Do not include line numbers when "
        "calling memory tools (line numbers are for display purposes only)"
    )


def _value(tool: str, block: MemoryBlock) -> ToolResult:
    """Letta's return: the block's new value (and, for the app, the block in the artifact)."""
    artifact = {
        "tool": tool,
        "outcome": "edited",
        "label": block.label,
        "value": block.value,
        "chars": block.chars,
        "limit": block.limit,
    }
    return ToolResult(block.value, artifact)


def letta_memory_tools(blocks: MemoryBlockSet) -> list[Tool]:
    """``memory_replace``, ``memory_insert`` and ``memory_rethink`` over ``blocks``, with
    Letta's names, arguments and returns (the block's new value). Bad calls return
    ``ToolResult(is_error=True)`` and change nothing."""

    async def edit(tool: str, run: Awaitable[MemoryBlock]) -> ToolResult:
        try:
            return _value(tool, await run)
        except (ValidationError, NotFoundError, ConflictError) as exc:
            return _error(tool, str(exc), exc.code)

    async def memory_replace(args: dict[str, Any]) -> ToolResult:
        parsed = _letta_args(
            "memory_replace",
            args,
            ("label", "old_string", "new_string"),
            {"old_str": "old_string", "new_str": "new_string"},
        )
        if isinstance(parsed, ToolResult):
            return parsed
        refused = _line_numbers("old_string", parsed["old_string"]) or _line_numbers(
            "new_string", parsed["new_string"], note=False
        )
        if refused:
            return _error("memory_replace", refused)
        return await edit(
            "memory_replace",
            blocks.replace_once(parsed["label"], parsed["old_string"], parsed["new_string"]),
        )

    async def memory_insert(args: dict[str, Any]) -> ToolResult:
        parsed = _letta_args(
            "memory_insert", args, ("label", "new_string"), {"new_str": "new_string"}
        )
        if isinstance(parsed, ToolResult):
            return parsed
        refused = _line_numbers("new_string", parsed["new_string"])
        if refused:
            return _error("memory_insert", refused)
        return await edit(
            "memory_insert",
            blocks.insert(parsed["label"], parsed["new_string"], parsed.get("insert_line", -1)),
        )

    async def memory_rethink(args: dict[str, Any]) -> ToolResult:
        parsed = _letta_args("memory_rethink", args, ("label", "new_memory"))
        if isinstance(parsed, ToolResult):
            return parsed
        refused = _line_numbers("new_memory", parsed["new_memory"])
        if refused:
            return _error("memory_rethink", refused)
        return await edit("memory_rethink", blocks.rethink(parsed["label"], parsed["new_memory"]))

    return [
        Tool(
            name="memory_replace",
            description="Replace a specific piece of text in one of your memory blocks, for "
            "precise edits. old_string must appear exactly once in the block; to delete it, "
            "pass an empty new_string. Do not replace a whole block this way (use "
            "memory_rethink). Returns the block's new value.",
            parameters=_MEMORY_REPLACE_SCHEMA,
            handler=memory_replace,
        ),
        Tool(
            name="memory_insert",
            description="Insert text into one of your memory blocks at a given line (after "
            "line insert_line; 0 for the start, -1 for the end). Returns the block's new value.",
            parameters=_MEMORY_INSERT_SCHEMA,
            handler=memory_insert,
        ),
        Tool(
            name="memory_rethink",
            description="Rewrite one of your memory blocks completely, for large changes "
            "such as condensing or reorganising it; not for small edits (use memory_replace "
            "or memory_insert). Returns the block's new value.",
            parameters=_MEMORY_RETHINK_SCHEMA,
            handler=memory_rethink,
        ),
    ]
