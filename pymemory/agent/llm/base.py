"""The chat model protocol: one request shape, one response shape, any provider.

A model is an async callable ``await model(ChatRequest(...)) -> ChatResponse``. The HTTP
adapters (:mod:`.openai`, :mod:`.anthropic`) and the offline :class:`.offline.RuleObserver`
implement it; so does any plain ``async def`` with that signature.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ...errors import PymemoryError, ValidationError
from ...item import check_json_depth

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
BODY_EXCERPT_CHARS = 300


class LlmError(PymemoryError):
    """A model call failed: an HTTP error status, a network failure or a malformed reply.

    ``status`` is the HTTP status (None when no response arrived); ``body`` is a short
    excerpt of the response body, for logs.
    """

    code = "llm_error"

    def __init__(
        self, message: str, *, status: int | None = None, body: str = "", provider: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.provider = provider


def excerpt(text: str | bytes, limit: int = BODY_EXCERPT_CHARS) -> str:
    """The start of a response body, one line, at most ``limit`` characters."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for. ``arguments`` is the decoded JSON object;
    ``invalid_arguments`` holds the raw text when the model sent something else."""

    id: str
    name: str
    arguments: dict[str, Any]
    invalid_arguments: str | None = None


@dataclass(frozen=True)
class Message:
    """One conversation turn.

    ``tool_calls`` only on assistant turns; ``tool_call_id`` (and ``is_error``) only on
    tool results. ``native`` keeps a provider's own form of an assistant turn (for example
    Anthropic thinking blocks), sent back verbatim by the adapter of that provider.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    native: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValidationError(f"message role must be one of {', '.join(ROLES)}")
        if not isinstance(self.content, str):
            raise ValidationError("message content must be a string")
        if self.role == "tool" and not self.tool_call_id:
            raise ValidationError("a tool message needs the tool_call_id it answers")
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls("assistant", content, tuple(tool_calls))

    @classmethod
    def tool_result(
        cls, tool_call_id: str, content: str, *, name: str | None = None, is_error: bool = False
    ) -> Message:
        return cls("tool", content, tool_call_id=tool_call_id, name=name, is_error=is_error)

    @classmethod
    def coerce(cls, value: Message | Mapping[str, Any] | str) -> Message:
        """A Message from a Message, a ``{"role", "content"}`` dict or a user string."""
        if isinstance(value, Message):
            return value
        if isinstance(value, str):
            return cls.user(value)
        if isinstance(value, Mapping):
            role = value.get("role", "user")
            content = value.get("content", "")
            if content is None:
                content = ""
            if not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False)
            return cls(
                role,
                content,
                tool_call_id=value.get("tool_call_id"),
                name=value.get("name"),
            )
        raise ValidationError(
            f"a message must be a Message, a dict or a string, got {type(value).__name__}"
        )


class ToolSpec(Protocol):
    """What an adapter needs of a tool: ``agent.tools.Tool`` fits."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ChatRequest:
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    system: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(Message.coerce(m) for m in self.messages))
        if self.tools is not None:
            object.__setattr__(self, "tools", tuple(self.tools))
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool)
            or not isinstance(self.max_tokens, int)
            or self.max_tokens < 1
        ):
            raise ValidationError("max_tokens must be a positive int")

    def system_text(self) -> str:
        """``system`` and any system messages, joined by blank lines."""
        parts = [self.system] if self.system else []
        parts += [m.content for m in self.messages if m.role == "system" and m.content]
        return "\n\n".join(parts)

    def turns(self) -> list[Message]:
        """The messages that are not system messages."""
        return [m for m in self.messages if m.role != "system"]


@dataclass(frozen=True)
class ChatResponse:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    raw: Any = field(default=None, compare=False, repr=False)
    stop_reason: str | None = None
    native: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def to_message(self) -> Message:
        """This reply as an assistant turn, to append to the conversation."""
        return Message("assistant", self.text, tuple(self.tool_calls), native=self.native)


@runtime_checkable
class ChatModel(Protocol):
    async def __call__(self, request: ChatRequest) -> ChatResponse:
        """One non-streaming completion."""
        ...


def user_first(system: str, turns: Sequence[Message]) -> list[Message]:
    """The Bedrock rule: the conversation starts with a user message, and there is no
    separate system prompt. ``system`` goes in front of the first user message (a user
    message holding only ``system`` is inserted when the conversation opens otherwise)."""
    out = list(turns)
    if out and out[0].role == "user":
        if system:
            first = out[0]
            out[0] = Message.user(f"{system}\n\n{first.content}" if first.content else system)
    else:
        out.insert(0, Message.user(system or "(conversation start)"))
    return out


def render_transcript(messages: Sequence[Message | Mapping[str, Any] | str]) -> str:
    """Messages as plain ``role: text`` lines, tool calls and results included."""
    lines = []
    for value in messages:
        message = Message.coerce(value)
        if message.role == "tool":
            label = f"tool result ({message.name})" if message.name else "tool result"
            lines.append(f"{label}: {message.content}")
            continue
        if message.content:
            lines.append(f"{message.role}: {message.content}")
        for call in message.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
            lines.append(f"{message.role} called {call.name}({args})")
    return "\n".join(lines)


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments: the decoded object, or ``({}, raw text)`` when invalid."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, str):
        try:
            check_json_depth(raw)  # deeper input would exhaust the parser's stack
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return {}, raw
        if isinstance(value, dict):
            return value, None
    return {}, raw if isinstance(raw, str) else json.dumps(raw)


__all__ = [
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "LlmError",
    "Message",
    "Role",
    "ToolCall",
    "ToolSpec",
    "parse_arguments",
    "render_transcript",
    "user_first",
]
