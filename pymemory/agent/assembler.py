"""MessageAssembler (seed 000): the chat messages of one agent run, laid out for prompt caching.

``build()`` returns, in this order::

    0  {"role": "system", ...}      the system prompt: fixed at construction, byte-stable
    1  {"role": "user", ...}        memory blocks (if a MemoryBlockSet is attached)
    .  {"role": "user", ...}        summary of compacted steps (after ``compact()``)
    .  ...                          the steps' messages, oldest first
    n  {"role": "user", ...}        the scratchpad (if set)

The cached prefix is the system prompt plus the tool schemas. Both are frozen when the
assembler is made and serialised canonically (sorted keys, no spaces), so ``prefix_bytes()``
and ``prefix_hash()`` never change while blocks, the scratchpad or the steps do. Blocks go
in their own user message instead of the system prompt, so editing them leaves the prefix
cache intact (seed 000 pitfall 1: put changing facts in blocks, not in the system prompt).
The scratchpad goes last, so rewriting it leaves the cache of everything before it intact.

A step is the messages of one model turn (the assistant message and its tool results).
Steps are grouped into chunks of ``chunk_size_steps``; ``compact(summarizer)`` replaces
whole old chunks by one summary message (the summarizer also receives the previous
summary, so summaries fold), which keeps chunk boundaries, and so ``cache_breakpoints()``,
stable across compactions.

The state of a run (steps, summary, scratchpad) round-trips through ``export_state()`` /
``load_state()``, e.g. into a Checkpoint. Memory blocks persist on their own.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from ..errors import ConflictError, ValidationError, shown
from ..item import dumps
from ..retrieval.results import Retrieval
from ..retrieval.tokens import HeuristicTokenCounter, TokenCounter
from .blocks import MemoryBlockSet
from .structured import canonical_json
from .tools import Tool, ToolSet

__all__ = ["MessageAssembler", "Summarizer"]

Summarizer = Callable[[list[dict[str, Any]]], Awaitable[str]]

STEP_ROLES = ("user", "assistant", "tool")
MAX_STEP_BYTES = 1_048_576
MAX_SUMMARY_CHARS = 100_000
STATE_FORMAT = 1


def _check_int(name: str, value: object, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ValidationError(f"{name} must be an int >= {lo}, got {shown(value)}")
    return value


def _check_text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {type(value).__name__}")
    canonical_json(value, name, max_bytes=MAX_STEP_BYTES)  # rejects lone surrogates
    return value


def _step_json(step: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    messages = [step] if isinstance(step, Mapping) else step
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ValidationError("a step is a message dict or a non-empty list of message dicts")
    checked = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise ValidationError(f"step message {i} must be a dict, got {type(msg).__name__}")
        if msg.get("role") not in STEP_ROLES:
            raise ValidationError(
                f"step message {i} has role {shown(msg.get('role'))}; steps take "
                f"{', '.join(STEP_ROLES)} (the system prompt is fixed at construction)"
            )
        if "content" not in msg:
            raise ValidationError(f"step message {i} has no 'content'")
        checked.append(dict(msg))
    return canonical_json(checked, "step", max_bytes=MAX_STEP_BYTES)


def _tool_schema(tool: Tool | Mapping[str, Any], fmt: str) -> Any:
    if isinstance(tool, Tool):
        return tool.openai_schema() if fmt == "openai" else tool.anthropic_schema()
    if isinstance(tool, Mapping):
        return dict(tool)
    raise ValidationError(f"tools must be Tool objects or schema dicts, got {type(tool).__name__}")


class MessageAssembler:
    """Builds the message list of one agent run around a byte-stable system prefix."""

    def __init__(
        self,
        system_prompt: str,
        tools: ToolSet | Iterable[Tool | Mapping[str, Any]] = (),
        *,
        memory_blocks: MemoryBlockSet | None = None,
        chunk_size_steps: int = 4,
        tool_format: Literal["openai", "anthropic"] = "openai",
        scratchpad_limit: int = 4000,
    ) -> None:
        _check_text("system_prompt", system_prompt)
        if tool_format not in ("openai", "anthropic"):
            raise ValidationError(
                f"tool_format must be 'openai' or 'anthropic', got {shown(tool_format)}"
            )
        if memory_blocks is not None and not isinstance(memory_blocks, MemoryBlockSet):
            raise ValidationError("memory_blocks must be a MemoryBlockSet or None")
        if isinstance(tools, (str, bytes, Mapping)):
            raise ValidationError("tools must be a ToolSet or an iterable of tools")
        schemas = [_tool_schema(t, tool_format) for t in tools]
        self._system_json = dumps({"role": "system", "content": system_prompt})
        self._tools_json = canonical_json(schemas, "tools", max_bytes=MAX_STEP_BYTES)
        prefix = dumps({"system": system_prompt, "tools": json.loads(self._tools_json)})
        self._prefix = prefix.encode("utf-8")
        self._system_prompt = system_prompt
        self.tool_format = tool_format
        self.memory_blocks = memory_blocks
        self.chunk_size_steps = _check_int("chunk_size_steps", chunk_size_steps, 1)
        self.scratchpad_limit = _check_int("scratchpad_limit", scratchpad_limit, 1)
        self._steps: list[str] = []  # canonical JSON of each live step's message list
        self._compacted = 0  # steps folded into the summary so far
        self._summary: str | None = None
        self._scratchpad: str | None = None
        self._recalled: str | None = None
        self._lock = asyncio.Lock()

    # --- the stable prefix ------------------------------------------------------------

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    def system_message(self) -> dict[str, str]:
        return json.loads(self._system_json)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tool schemas for the API's ``tools`` parameter (a fresh copy each call)."""
        return json.loads(self._tools_json)

    def prefix_bytes(self) -> bytes:
        """Canonical JSON of ``{"system": prompt, "tools": schemas}``: what the cache keys on."""
        return self._prefix

    def prefix_hash(self) -> str:
        """SHA-256 (hex) of ``prefix_bytes()``."""
        return hashlib.sha256(self._prefix).hexdigest()

    # --- scratchpad -------------------------------------------------------------------

    @property
    def scratchpad(self) -> str | None:
        return self._scratchpad

    def set_scratchpad(self, text: str | None) -> None:
        """Set the scratchpad (None or "" clears it). Over ``scratchpad_limit`` characters
        is refused with ValidationError, never truncated."""
        self._scratchpad = self._checked_scratchpad(text)

    def _checked_scratchpad(self, text: object) -> str | None:
        if text is None:
            return None
        checked = _check_text("scratchpad", text)
        if len(checked) > self.scratchpad_limit:
            raise ValidationError(
                f"scratchpad has {len(checked)} characters, over scratchpad_limit="
                f"{self.scratchpad_limit}; shorten it"
            )
        return checked or None

    # --- recalled memories -------------------------------------------------------------

    @property
    def recalled(self) -> str | None:
        return self._recalled

    def set_recalled(self, retrieved: Retrieval | str | None) -> None:
        """What ``Memory.retrieve`` found for this turn: its ``text`` (the evidence
        passages, as the prompt should get them) goes in a user message at the end, after
        the steps, so the cached prefix and steps stay byte-stable. None or "" clears it.
        Not part of :meth:`export_state`: retrieve again for the next turn."""
        if isinstance(retrieved, Retrieval):
            retrieved = retrieved.text
        self._recalled = None if retrieved is None else _check_text("recalled", retrieved) or None

    # --- steps ------------------------------------------------------------------------

    def add_step(self, step: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> int:
        """Append one step (a message dict or a list of them); returns its 0-based number
        counted over the whole run, compacted steps included."""
        self._steps.append(_step_json(step))
        return self._compacted + len(self._steps) - 1

    @property
    def step_count(self) -> int:
        """Steps still present verbatim."""
        return len(self._steps)

    @property
    def compacted_steps(self) -> int:
        """Steps replaced by the summary so far."""
        return self._compacted

    @property
    def summary(self) -> str | None:
        return self._summary

    def steps(self) -> list[list[dict[str, Any]]]:
        """The live steps, each a list of messages (fresh copies)."""
        return [json.loads(s) for s in self._steps]

    def chunks(self) -> list[list[list[dict[str, Any]]]]:
        """The live steps grouped into chunks of ``chunk_size_steps``; the last chunk may be
        incomplete. Compaction removes whole chunks, so this grouping never shifts."""
        steps, size = self.steps(), self.chunk_size_steps
        return [steps[i : i + size] for i in range(0, len(steps), size)]

    async def compact(self, summarizer: Summarizer, *, keep_chunks: int = 1) -> int:
        """Replace every complete chunk except the newest ``keep_chunks`` complete ones by
        one summary message. The incomplete chunk is always kept.

        ``summarizer`` gets the messages to fold (the previous summary message first, if
        any) and returns the new summary text. Returns how many steps were folded (0: the
        summarizer is not called). If the summarizer fails, nothing changes.
        """
        _check_int("keep_chunks", keep_chunks, 0)
        if not callable(summarizer):
            raise ValidationError("summarizer must be an async callable(messages) -> str")
        async with self._lock:
            complete = len(self._steps) // self.chunk_size_steps
            n = max(0, complete - keep_chunks) * self.chunk_size_steps
            if n == 0:
                return 0
            folded = self._steps[:n]
            messages = [self._summary_message()] if self._summary is not None else []
            for step in folded:
                messages.extend(json.loads(step))
            text = await summarizer(messages)
            if not isinstance(text, str) or not text.strip():
                raise ValidationError("the summarizer must return a non-empty string")
            _check_text("summary", text)
            if len(text) > MAX_SUMMARY_CHARS:
                raise ValidationError(f"the summary is over {MAX_SUMMARY_CHARS} characters")
            # Steps added while the summarizer ran were appended after ``folded``.
            del self._steps[:n]
            self._compacted += n
            self._summary = text
        return n

    # --- output -----------------------------------------------------------------------

    def _summary_message(self) -> dict[str, str]:
        return {
            "role": "user",
            "content": f"<summary_of_earlier_steps count={self._compacted}>\n{self._summary}\n"
            "</summary_of_earlier_steps>",
        }

    def _head(self) -> list[dict[str, Any]]:
        head: list[dict[str, Any]] = [self.system_message()]
        if self.memory_blocks is not None:
            head.append(self.memory_blocks.message())
        if self._summary is not None:
            head.append(self._summary_message())
        return head

    def build(self) -> list[dict[str, Any]]:
        """The chat messages to send (fresh dicts; mutating them changes nothing here)."""
        out = self._head()
        for step in self._steps:
            out.extend(json.loads(step))
        if self._scratchpad is not None:
            content = f"<scratchpad>\n{self._scratchpad}\n</scratchpad>"
            out.append({"role": "user", "content": content})
        if self._recalled is not None:
            content = f"<recalled_memories>\n{self._recalled}\n</recalled_memories>"
            out.append({"role": "user", "content": content})
        return out

    def cache_breakpoints(self) -> list[int]:
        """Indexes into ``build()`` of messages that end a stable stretch: the system
        message, then the last message of every complete chunk. Mark these (e.g. with
        Anthropic ``cache_control``) to cache by whole chunks."""
        points = [0]
        i = len(self._head()) - 1
        for n, step in enumerate(self._steps, 1):
            i += len(json.loads(step))
            if n % self.chunk_size_steps == 0:
                points.append(i)
        return points

    def token_count(self, counter: TokenCounter | None = None) -> int:
        """Estimated prompt tokens of ``build()`` plus the tool schemas."""
        counter = counter or HeuristicTokenCounter()
        total = counter.count(self._tools_json) if self._tools_json != "[]" else 0
        for msg in self.build():
            content = msg.get("content")
            if content:
                total += counter.count(content if isinstance(content, str) else dumps(content))
        return total

    # --- state ------------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """The run's JSON state: steps, summary, scratchpad (not blocks, not the prefix)."""
        return {
            "format": STATE_FORMAT,
            "steps": self.steps(),
            "compacted_steps": self._compacted,
            "summary": self._summary,
            "scratchpad": self._scratchpad,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace the run's state by ``export_state()`` output; all checked before any change."""
        if self._lock.locked():
            raise ConflictError("a compaction is running; load the state after it finishes")
        if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
            raise ValidationError(f"expected an assembler state with format {STATE_FORMAT}")
        steps = state.get("steps")
        if not isinstance(steps, list):
            raise ValidationError("state['steps'] must be a list")
        encoded = [_step_json(s) for s in steps]
        compacted = _check_int("compacted_steps", state.get("compacted_steps"), 0)
        summary = state.get("summary")
        if summary is not None:
            _check_text("summary", summary)
        if (summary is None) != (compacted == 0):
            raise ValidationError("a summary is present exactly when compacted_steps > 0")
        scratchpad = self._checked_scratchpad(state.get("scratchpad"))
        self._steps, self._compacted, self._summary = encoded, compacted, summary
        self._scratchpad = scratchpad
