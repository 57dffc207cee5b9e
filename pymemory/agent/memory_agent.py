"""The independent memory agent (seed 004): a small agent, apart from the main one, that
reads a conversation and keeps a key-value memory up to date with two tools.

- Its own model and a low temperature; no streaming; tools ``set_memory(key, value)`` and
  ``delete_memory(key)``, whose results carry text for the model and a structured
  ``artifact`` for the app.
- A token budget over every stored memory, counted with one :class:`TokenCounter` (a
  memory costs the tokens of its prompt line ``key: value``). When nothing remains
  (``remaining <= 0``) every write is rejected (``already_exceeded``); a write that would
  overflow is rejected alone (``would_exceed``). Deletes are always allowed.
- Near the limit (usage >= ``status_threshold`` x limit) a ``# Memory Status:`` block goes
  into its system prompt.
- :meth:`MemoryAgent.schedule` runs it in the background: failures are logged and kept in
  ``errors`` / ``last_error``, never raised into the caller.

Memories live in the KV store under ``ns:memory_agent:<scope>:<key>`` as JSON
``{"key", "value", "updated_at_ms"}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import PymemoryError, ValidationError, shown
from ..item import dumps
from ..retrieval.tokens import HeuristicTokenCounter, TokenCounter
from ..storage import KvBackend, iter_prefix
from .llm.base import ChatModel, ChatRequest, Message, ToolCall, render_transcript
from .tools import Tool, ToolResult, ToolSet

log = logging.getLogger("pymemory.memory_agent")

KEY_PREFIX = "ns:memory_agent:"
MAX_KEY_CHARS = 128
MAX_ERRORS = 20

MEMORY_AGENT_PROMPT = """\
You maintain the long-term memory of an AI assistant about its user. You never talk to
the user. Read the conversation you are given and keep the memory useful:
- save durable facts, preferences, goals and decisions with set_memory(key, value);
  use short snake_case keys and one concise fact per key;
- update a memory by calling set_memory with its existing key;
- remove memories that became wrong or obsolete with delete_memory(key);
- skip small talk, one-off requests and anything already stored.
Stay within the token budget: when it is tight, shorten or delete memories first.
When nothing (more) needs to change, answer with a one-line summary and no tool call."""


# -- errors --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """Tokens used by all memories, and the budget."""

    total: int
    limit: int

    @property
    def remaining(self) -> int:
        return self.limit - self.total

    def to_dict(self) -> dict[str, int]:
        return {"total": self.total, "limit": self.limit, "remaining": self.remaining}


class MemoryBudgetError(PymemoryError):
    """A write was rejected by the token budget; the store is unchanged."""

    code = "memory_budget"

    def __init__(self, message: str, *, key: str, tokens: int, usage: Usage) -> None:
        super().__init__(message)
        self.key = key
        self.tokens = tokens
        self.usage = usage


class BudgetAlreadyExceededError(MemoryBudgetError):
    """No capacity remains: every write is rejected until memories are deleted."""

    code = "already_exceeded"


class BudgetWouldExceedError(MemoryBudgetError):
    """This write would take usage past the limit."""

    code = "would_exceed"


# -- records -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryEntry:
    key: str
    value: str
    tokens: int  # with the agent's token counter, of the line "key: value"
    updated_at_ms: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "tokens": self.tokens,
            "updated_at_ms": self.updated_at_ms,
        }


@dataclass(frozen=True)
class ToolOutcome:
    call: ToolCall
    result: ToolResult


@dataclass(frozen=True)
class MemoryRun:
    """What one :meth:`MemoryAgent.process` did."""

    steps: int  # model calls
    outcomes: list[ToolOutcome] = field(default_factory=list)
    text: str = ""  # the model's last text
    stopped: Literal["done", "max_steps"] = "done"

    @property
    def artifacts(self) -> list[dict[str, Any]]:
        return [o.result.artifact for o in self.outcomes if o.result.artifact is not None]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise ValidationError(f"memory key must be a string, got {type(key).__name__}")
    key = key.strip()
    if not key or len(key) > MAX_KEY_CHARS:
        raise ValidationError(f"memory key must be 1..{MAX_KEY_CHARS} characters")
    if any(ord(ch) < 32 for ch in key):
        raise ValidationError("memory key must not contain control characters")
    return key


def _check_value(value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"memory value must be a string, got {type(value).__name__}")
    value = value.strip()
    if not value:
        raise ValidationError("memory value must not be empty (use delete_memory to remove)")
    return value


def _check_scope(scope: object) -> str:
    if not isinstance(scope, str) or not scope:
        raise ValidationError("scope must be a non-empty string")
    return scope.replace("%", "%25").replace(":", "%3A")


# -- the agent -----------------------------------------------------------------------------


class MemoryAgent:
    """A memory-keeping agent with its own model, tools, budget and storage."""

    def __init__(
        self,
        model: ChatModel | Callable[[ChatRequest], Any],
        kv: KvBackend,
        *,
        token_counter: TokenCounter | None = None,
        token_limit: int = 1000,
        temperature: float | None = 0.4,
        status_threshold: float = 0.8,
        max_steps: int = 4,
        max_tokens: int | None = 1024,
        scope: str = "default",
        prompt: str = MEMORY_AGENT_PROMPT,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if not callable(model):
            raise ValidationError("model must be an async callable")
        for name, value in (("token_limit", token_limit), ("max_steps", max_steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"{name} must be a positive int, got {shown(value)}")
        if not 0 <= status_threshold <= 1:
            raise ValidationError("status_threshold must be between 0 and 1")
        self.model = model
        self.kv = kv
        self.token_counter = token_counter or HeuristicTokenCounter()
        self.token_limit = token_limit
        self.temperature = temperature
        self.status_threshold = status_threshold
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.scope = scope
        self.prefix = f"{KEY_PREFIX}{_check_scope(scope)}:"
        self.prompt = prompt
        self.clock = clock or _now_ms
        self.errors: list[BaseException] = []
        self.last_run: MemoryRun | None = None
        self.tools = ToolSet([self._set_tool(), self._delete_tool()])
        self._write_lock = asyncio.Lock()
        self._run_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[MemoryRun | None]] = set()

    @property
    def last_error(self) -> BaseException | None:
        return self.errors[-1] if self.errors else None

    # -- storage and budget --------------------------------------------------------------

    def cost(self, key: str, value: str) -> int:
        """Budget tokens of one memory: its prompt line ``key: value``."""
        return self.token_counter.count(f"{key}: {value}")

    async def _entries(self) -> dict[str, MemoryEntry]:
        entries = {}
        async for kv_key, raw in iter_prefix(self.kv, self.prefix):
            try:
                data = json.loads(raw)
                key, value, updated = data["key"], data["value"], int(data["updated_at_ms"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValidationError(f"malformed memory record {kv_key!r}: {exc!r}") from None
            entries[key] = MemoryEntry(key, value, self.cost(key, value), updated)
        return entries

    async def memories(self) -> list[MemoryEntry]:
        """Every stored memory, by key."""
        return sorted((await self._entries()).values(), key=lambda e: e.key)

    async def usage(self) -> Usage:
        return Usage(sum(e.tokens for e in (await self._entries()).values()), self.token_limit)

    async def set_memory(self, key: str, value: str) -> MemoryEntry:
        """Store (or replace) one memory. Raises :class:`BudgetAlreadyExceededError`,
        :class:`BudgetWouldExceedError` or :class:`ValidationError`; nothing is written then."""
        entry, _, _ = await self._set(key, value)
        return entry

    async def delete_memory(self, key: str) -> bool:
        """Remove one memory; False when there was none."""
        deleted, _ = await self._delete(key)
        return deleted

    async def _set(self, key: str, value: str) -> tuple[MemoryEntry, MemoryEntry | None, Usage]:
        key, value = _check_key(key), _check_value(value)
        async with self._write_lock:
            entries = await self._entries()
            usage = Usage(sum(e.tokens for e in entries.values()), self.token_limit)
            tokens = self.cost(key, value)
            if usage.remaining <= 0:
                raise BudgetAlreadyExceededError(
                    f"memory budget already used up ({usage.total}/{usage.limit} tokens); "
                    "delete or shorten memories before saving new ones",
                    key=key,
                    tokens=tokens,
                    usage=usage,
                )
            previous = entries.get(key)
            total = usage.total - (previous.tokens if previous else 0) + tokens
            if total > self.token_limit:
                raise BudgetWouldExceedError(
                    f"memory {key!r} needs {tokens} tokens but only {usage.remaining} of "
                    f"{usage.limit} remain; shorten the value or delete other memories",
                    key=key,
                    tokens=tokens,
                    usage=usage,
                )
            entry = MemoryEntry(key, value, tokens, int(self.clock()))
            record = {"key": key, "value": value, "updated_at_ms": entry.updated_at_ms}
            await self.kv.put_many([(self.prefix + key, dumps(record).encode())])
            return entry, previous, Usage(total, self.token_limit)

    async def _delete(self, key: str) -> tuple[bool, Usage]:
        key = _check_key(key)
        async with self._write_lock:
            entries = await self._entries()
            deleted = entries.pop(key, None) is not None
            if deleted:
                await self.kv.delete_many([self.prefix + key])
            return deleted, Usage(sum(e.tokens for e in entries.values()), self.token_limit)

    # -- prompts -------------------------------------------------------------------------

    async def status_block(self) -> str:
        """The ``# Memory Status:`` block when usage has reached the threshold, else ""."""
        usage = await self.usage()
        if usage.total < self.status_threshold * usage.limit:
            return ""
        lines = [
            "# Memory Status:",
            f"Current memory usage: {usage.total} tokens",
            f"Token limit: {usage.limit} tokens",
            f"Remaining capacity: {max(usage.remaining, 0)} tokens",
        ]
        if usage.remaining <= 0:
            lines.append("Memory is full: delete or shorten memories before saving new ones.")
        return "\n".join(lines)

    async def system_prompt(self) -> str:
        """The agent's system prompt: instructions, current memories, status when near the
        limit."""
        memories = await self.memories()
        listing = "\n".join(f"- {e.key}: {e.value}" for e in memories) or "(none yet)"
        parts = [self.prompt, f"# Current memories\n{listing}"]
        status = await self.status_block()
        if status:
            parts.append(status)
        return "\n\n".join(parts)

    async def format_for_prompt(self) -> str:
        """The memories for the main agent's prompt ("" when there are none)."""
        memories = await self.memories()
        if not memories:
            return ""
        return "# Memories\n" + "\n".join(f"- {e.key}: {e.value}" for e in memories)

    # -- the agent loop ------------------------------------------------------------------

    async def process(
        self, conversation: str | Sequence[Message | Mapping[str, Any] | str]
    ) -> MemoryRun:
        """Review ``conversation`` and update the memories: up to ``max_steps`` model
        calls, each one's tool calls executed in order. Model errors propagate."""
        transcript = (
            conversation if isinstance(conversation, str) else render_transcript(list(conversation))
        )
        if not transcript.strip():
            raise ValidationError("conversation is empty")
        async with self._run_lock:
            system = await self.system_prompt()
            messages: list[Message] = [
                Message.user(
                    "Update the memory from this conversation.\n\n"
                    f"<conversation>\n{transcript}\n</conversation>"
                )
            ]
            outcomes: list[ToolOutcome] = []
            text = ""
            steps = self.max_steps
            stopped: Literal["done", "max_steps"] = "max_steps"
            for step in range(1, self.max_steps + 1):
                reply = await self.model(
                    ChatRequest(
                        messages,
                        tools=list(self.tools),
                        temperature=self.temperature,
                        max_tokens=self.max_tokens,
                        system=system,
                    )
                )
                text = reply.text
                if not reply.tool_calls:
                    steps, stopped = step, "done"
                    break
                messages.append(reply.to_message())
                for call in reply.tool_calls:
                    result = await self._dispatch(call)
                    outcomes.append(ToolOutcome(call, result))
                    messages.append(
                        Message.tool_result(
                            call.id, result.content, name=call.name, is_error=result.is_error
                        )
                    )
            run = MemoryRun(steps, outcomes, text, stopped)
            self.last_run = run
            return run

    async def _dispatch(self, call: ToolCall) -> ToolResult:
        if call.invalid_arguments is not None:
            return _error(call.name, "invalid_input", "arguments must be a JSON object")
        if call.name not in self.tools:
            known = ", ".join(self.tools.names())
            message = f"no tool named {shown(call.name)}; use {known}"
            return _error(call.name, "unknown_tool", message)
        return await self.tools.call(call.name, call.arguments)

    def schedule(
        self, conversation: str | Sequence[Message | Mapping[str, Any] | str]
    ) -> asyncio.Task[MemoryRun | None] | None:
        """Run :meth:`process` in the background. Never raises: failures are logged and
        kept in ``errors``; the task resolves to the run, or None when it failed."""
        try:
            snapshot = conversation if isinstance(conversation, str) else list(conversation)
            task = asyncio.get_running_loop().create_task(self._guarded(snapshot))
        except Exception as exc:
            self._record_error(exc)
            return None
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guarded(
        self, conversation: str | Sequence[Message | Mapping[str, Any] | str]
    ) -> MemoryRun | None:
        try:
            return await self.process(conversation)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._record_error(exc)
            return None

    def _record_error(self, exc: BaseException) -> None:
        log.warning("memory agent failed (scope %r): %s", self.scope, exc, exc_info=exc)
        self.errors.append(exc)
        del self.errors[:-MAX_ERRORS]

    async def flush(self) -> None:
        """Wait for every scheduled run."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- tools ---------------------------------------------------------------------------

    def _set_tool(self) -> Tool:
        async def handler(args: dict[str, Any]) -> ToolResult:
            op = "set_memory"
            try:
                entry, previous, usage = await self._set(args.get("key"), args.get("value"))
            except MemoryBudgetError as exc:
                artifact = {
                    "op": op,
                    "ok": False,
                    "error": exc.code,
                    "key": exc.key,
                    "tokens": exc.tokens,
                    "usage": exc.usage.to_dict(),
                }
                return ToolResult(f"Not saved: {exc}.", artifact, is_error=True)
            except ValidationError as exc:
                return _error(op, exc.code, str(exc))
            verb = "Updated" if previous else "Saved"
            artifact = {
                "op": op,
                "ok": True,
                "key": entry.key,
                "value": entry.value,
                "previous": previous.value if previous else None,
                "tokens": entry.tokens,
                "usage": usage.to_dict(),
            }
            return ToolResult(f"{verb} memory {entry.key!r}. {_usage_line(usage)}", artifact)

        return Tool(
            name="set_memory",
            description="Save or replace one memory: a short key and a concise value.",
            parameters={
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": "short snake_case name"},
                    "value": {"type": "string", "description": "the fact to remember"},
                },
                "required": ["key", "value"],
                "additionalProperties": False,
            },
            handler=handler,
        )

    def _delete_tool(self) -> Tool:
        async def handler(args: dict[str, Any]) -> ToolResult:
            op = "delete_memory"
            try:
                deleted, usage = await self._delete(args.get("key"))
            except ValidationError as exc:
                return _error(op, exc.code, str(exc))
            key = _check_key(args["key"])
            artifact = {"op": op, "ok": deleted, "key": key, "usage": usage.to_dict()}
            if not deleted:
                artifact["error"] = "not_found"
                return ToolResult(f"No memory named {key!r}; nothing deleted.", artifact, True)
            return ToolResult(f"Deleted memory {key!r}. {_usage_line(usage)}", artifact)

        return Tool(
            name="delete_memory",
            description="Delete one memory by its key.",
            parameters={
                "type": "object",
                "properties": {"key": {"type": "string", "description": "the memory's key"}},
                "required": ["key"],
                "additionalProperties": False,
            },
            handler=handler,
        )


def _usage_line(usage: Usage) -> str:
    return f"Usage {usage.total}/{usage.limit} tokens, {max(usage.remaining, 0)} remaining."


def _error(op: str, code: str, message: str) -> ToolResult:
    return ToolResult(f"Error: {message}", {"op": op, "ok": False, "error": code}, True)


__all__ = [
    "KEY_PREFIX",
    "MEMORY_AGENT_PROMPT",
    "BudgetAlreadyExceededError",
    "BudgetWouldExceedError",
    "MemoryAgent",
    "MemoryBudgetError",
    "MemoryEntry",
    "MemoryRun",
    "ToolOutcome",
    "Usage",
]
