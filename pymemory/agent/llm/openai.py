"""OpenAI Chat Completions (and compatible providers) as a :class:`~.base.ChatModel`.

Quirks handled here:

- Bedrock-style providers (``provider`` in :data:`USER_FIRST_PROVIDERS`): no system
  message; the system prompt goes in front of the first user message.
- GPT-5+ and o-series models (:func:`is_reasoning_model`): no ``temperature``, and
  ``max_completion_tokens`` instead of ``max_tokens``.
- ``thinking=True`` (a reasoning mode of a compatible provider): no ``temperature``.
"""

from __future__ import annotations

import json
import re
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
    user_first,
)
from .transport import HttpChatModel, HttpTransport, default_transport

USER_FIRST_PROVIDERS = frozenset({"bedrock"})
_GPT_MAJOR = re.compile(r"(?:^|[/.:])gpt-(\d+)", re.IGNORECASE)
_O_SERIES = re.compile(r"(?:^|[/.:])o\d+(?:-|$)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """GPT-5 and later (``gpt-5``, ``gpt-5-mini``, ``openai/gpt-5.1``) and the o-series
    (``o1``, ``o3-mini``, ``o4-mini``): models that refuse ``temperature`` and
    ``max_tokens``."""
    match = _GPT_MAJOR.search(model)
    if match and int(match.group(1)) >= 5:
        return True
    return _O_SERIES.search(model) is not None


class OpenAIChatModel(HttpChatModel):
    """``await model(ChatRequest(...))`` against ``{base_url}/chat/completions``.

    ``base_url`` is the API root, as in the OpenAI SDK (``https://api.openai.com/v1``).
    Without a ``transport`` the model makes its own (httpx in CPython, fetch in Pyodide)
    and closes it in :meth:`close`.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        transport: HttpTransport | None = None,
        provider: str = "openai",
        thinking: bool = False,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.provider = provider
        self.thinking = thinking
        self.timeout = timeout
        self._headers = {**({"authorization": f"Bearer {api_key}"} if api_key else {})}
        self._headers.update(headers or {})
        self._owns_transport = transport is None
        self._transport = transport or default_transport()

    @property
    def reasoning(self) -> bool:
        return is_reasoning_model(self.model)

    def build_payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        system = request.system_text()
        turns = request.turns()
        if self.provider in USER_FIRST_PROVIDERS:
            messages = [_to_openai(m) for m in user_first(system, turns)]
        else:
            head = [{"role": "system", "content": system}] if system else []
            messages = head + [_to_openai(m) for m in turns]
        payload: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            payload["tools"] = [_tool_schema(t) for t in request.tools]
        if request.temperature is not None and not (self.reasoning or self.thinking):
            payload["temperature"] = request.temperature
        if request.max_tokens is not None:
            key = "max_completion_tokens" if self.reasoning else "max_tokens"
            payload[key] = request.max_tokens
        return payload

    def _parse(self, data: Any) -> ChatResponse:
        return parse_response(data, provider=self.provider)


def _tool_schema(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def _to_openai(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.invalid_arguments
                        if call.invalid_arguments is not None
                        else json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def parse_response(data: Any, *, provider: str = "openai") -> ChatResponse:
    """A Chat Completions reply as a :class:`ChatResponse`."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise LlmError(
            f"{provider} reply has no choices[0].message",
            status=200,
            body=excerpt(json.dumps(data)),
            provider=provider,
        ) from None
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        arguments, invalid = parse_arguments(function.get("arguments"))
        name = str(function.get("name", ""))
        calls.append(ToolCall(str(raw.get("id", "")), name, arguments, invalid))
    return ChatResponse(
        text=content or "",
        tool_calls=calls,
        raw=data,
        stop_reason=choice.get("finish_reason"),
    )


__all__ = ["USER_FIRST_PROVIDERS", "OpenAIChatModel", "is_reasoning_model", "parse_response"]
