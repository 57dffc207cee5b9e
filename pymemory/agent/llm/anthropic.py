"""Anthropic Messages API as a :class:`~.base.ChatModel`.

The system prompt is the top-level ``system`` field; tool calls are ``tool_use`` blocks and
their results ``tool_result`` blocks in the next user turn (consecutive turns of one role are
merged, as the API wants roles to alternate). With ``thinking=True`` no ``temperature`` is
sent (the API rejects the pair), ``max_tokens`` is the thinking budget plus the answer's
budget, and the thinking blocks of an assistant turn are sent back verbatim. Under Pyodide
the ``anthropic-dangerous-direct-browser-access`` header opts in to calls from a browser.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .base import (
    ChatRequest,
    ChatResponse,
    LlmError,
    Message,
    ToolCall,
    ToolSpec,
    excerpt,
    parse_arguments,
)
from .transport import HttpChatModel, HttpTransport, default_transport, in_browser

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
MIN_THINKING_BUDGET = 1024


class AnthropicModel(HttpChatModel):
    """``await model(ChatRequest(...))`` against ``{base_url}/v1/messages``.

    ``base_url`` is the API host, as in the Anthropic SDK (:data:`DEFAULT_BASE_URL`).
    ``max_tokens`` is required by the API: requests without one get ``default_max_tokens``.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        transport: HttpTransport | None = None,
        thinking: bool = False,
        thinking_budget: int = MIN_THINKING_BUDGET,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        anthropic_version: str = ANTHROPIC_VERSION,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        provider: str = "anthropic",
    ) -> None:
        self.url = base_url.rstrip("/") + "/v1/messages"
        self.model = model
        self.thinking = thinking
        self.thinking_budget = thinking_budget
        self.default_max_tokens = default_max_tokens
        self.provider = provider
        self.timeout = timeout
        self._headers = {"anthropic-version": anthropic_version}
        if api_key:
            self._headers["x-api-key"] = api_key
        if in_browser():  # the API refuses browser (CORS) requests without this opt-in
            self._headers["anthropic-dangerous-direct-browser-access"] = "true"
        self._headers.update(headers or {})
        self._owns_transport = transport is None
        self._transport = transport or default_transport()

    def build_payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        answer_tokens = request.max_tokens or self.default_max_tokens
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": answer_tokens + (self.thinking_budget if self.thinking else 0),
            "messages": _to_anthropic(request.turns()),
        }
        system = request.system_text()
        if system:
            payload["system"] = system
        if request.tools:
            payload["tools"] = [_tool_schema(t) for t in request.tools]
        if self.thinking:
            payload["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        elif request.temperature is not None:
            payload["temperature"] = request.temperature
        return payload

    def _parse(self, data: Any) -> ChatResponse:
        return parse_response(data, provider=self.provider)


def _tool_schema(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _to_anthropic(turns: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in turns:
        role, content = _turn(message)
        if out and out[-1]["role"] == role:
            out[-1]["content"] = _blocks(out[-1]["content"]) + _blocks(content)
        else:
            out.append({"role": role, "content": content})
    return out


def _turn(message: Message) -> tuple[str, str | list[dict[str, Any]]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    if message.role == "assistant":
        native = (message.native or {}).get("anthropic")
        if isinstance(native, list):
            return "assistant", list(native)
        if message.tool_calls:
            blocks = [{"type": "text", "text": message.content}] if message.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in message.tool_calls
            ]
            return "assistant", blocks
    return message.role, message.content


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []


def parse_response(data: Any, *, provider: str = "anthropic") -> ChatResponse:
    """A Messages API reply as a :class:`ChatResponse`."""
    blocks = data.get("content") if isinstance(data, dict) else None
    if not isinstance(blocks, list):
        raise LlmError(
            f"{provider} reply has no content list",
            status=200,
            body=excerpt(json.dumps(data)),
            provider=provider,
        )
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            arguments, invalid = parse_arguments(block.get("input"))
            name = str(block.get("name", ""))
            calls.append(ToolCall(str(block.get("id", "")), name, arguments, invalid))
    return ChatResponse(
        text="".join(texts),
        tool_calls=calls,
        raw=data,
        stop_reason=data.get("stop_reason"),
        native={"anthropic": blocks},
    )


__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicModel", "parse_response"]
