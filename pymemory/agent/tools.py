"""The tool shape shared by every agent-callable primitive (blocks, memory tools, the
memory agent): a JSON Schema for the model, an async handler, and a result that carries
text for the model plus an optional structured artifact for the app (seed 004)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError, shown


@dataclass(frozen=True)
class ToolResult:
    content: str  # what the model reads
    artifact: dict[str, Any] | None = None  # structured outcome for the app / UI
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "artifact": self.artifact, "is_error": self.is_error}


Handler = Callable[[dict[str, Any]], Awaitable[ToolResult]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object
    handler: Handler = field(repr=False)

    def openai_schema(self) -> dict[str, Any]:
        """Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def anthropic_schema(self) -> dict[str, Any]:
        """Messages API ``tools`` entry."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        """Run the tool; never raises. Malformed model input, and any failure of the
        handler (a bug, the store failing), comes back as an error result whose artifact
        names the error; the handler wrote nothing then (its writes are one batch)."""
        if not isinstance(args, Mapping):
            return ToolResult(
                f"Error: {self.name} takes a JSON object of arguments, got {type(args).__name__}",
                {"tool": self.name, "outcome": "error", "error": "invalid_arguments"},
                is_error=True,
            )
        try:
            return await self.handler(dict(args))
        except Exception as exc:  # the agent loop must get a result, not an exception
            code = getattr(exc, "code", None)
            return ToolResult(
                f"Error: {self.name} failed ({type(exc).__name__}); nothing was changed. "
                "Tell the user; retrying the same call will likely fail again.",
                {
                    "tool": self.name,
                    "outcome": "error",
                    "error": code if isinstance(code, str) else "internal_error",
                    "exception": type(exc).__name__,
                    "message": str(exc)[:500],
                },
                is_error=True,
            )


class ToolSet:
    """Tools by name, so an agent loop can dispatch a model's tool call."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValidationError(f"duplicate tool name {shown(tool.name)}")
        self._tools[tool.name] = tool

    def __iter__(self):
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return list(self._tools)

    def openai_schemas(self) -> list[dict[str, Any]]:
        return [t.openai_schema() for t in self._tools.values()]

    def anthropic_schemas(self) -> list[dict[str, Any]]:
        return [t.anthropic_schema() for t in self._tools.values()]

    async def call(self, name: str, args: Mapping[str, Any]) -> ToolResult:
        """Dispatch a model's tool call; never raises: an unknown name (a model calling a
        tool it was not given) is an error result listing the tools it has."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(
                f"Error: no tool named {shown(name)}; use one of: {', '.join(self._tools)}.",
                {"tool": shown(name), "outcome": "error", "error": "unknown_tool"},
                is_error=True,
            )
        return await tool.call(args)
