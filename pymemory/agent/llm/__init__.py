"""Language models as async callables: ``await model(ChatRequest(...)) -> ChatResponse``.

Adapters for OpenAI-compatible and Anthropic HTTP APIs over a small transport protocol
(httpx in CPython, the browser's fetch in Pyodide), and an offline rule-based observer.
"""

from __future__ import annotations

from .anthropic import AnthropicModel
from .base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LlmError,
    Message,
    ToolCall,
    ToolSpec,
    render_transcript,
)
from .offline import RuleObserver
from .openai import OpenAIChatModel, is_reasoning_model
from .transport import (
    FetchTransport,
    HttpResponse,
    HttpTransport,
    HttpxTransport,
    default_transport,
)

__all__ = [
    "AnthropicModel",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FetchTransport",
    "HttpResponse",
    "HttpTransport",
    "HttpxTransport",
    "LlmError",
    "Message",
    "OpenAIChatModel",
    "RuleObserver",
    "ToolCall",
    "ToolSpec",
    "default_transport",
    "is_reasoning_model",
    "render_transcript",
]
