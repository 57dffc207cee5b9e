"""The agent's tools over a :class:`~pymemory.agent.blocks.MemoryBlockSet`: Letta's two
edit tools with Letta's argument names, ``core_memory_append(label, content)`` and
``core_memory_replace(label, old_content, new_content)``. Their errors come back as
``ToolResult(is_error=True)`` with a message that says what to do; nothing is changed then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import NotFoundError, ValidationError
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
