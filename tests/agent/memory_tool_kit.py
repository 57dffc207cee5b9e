"""What the memory tool tests share: a fixed clock, a KV that records its write batches,
and calls that assert success or a refusal code."""

from pymemory.agent.tools import Tool, ToolResult
from pymemory.storage import MapKv

T0 = 1_780_000_000_000  # a fixed "now" in epoch ms


class Clock:
    """A settable epoch-ms clock (kept local: ``conftest`` is ambiguous with tests/browser/)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


# A path 16 levels below /memories: the deepest one accepted.
DEEP_16 = "/memories/" + "/".join(f"d{i}" for i in range(16))

LISTING = (
    "Here're the files and directories up to 2 levels deep in {}, "
    "excluding hidden items and node_modules:"
)


class SpyKv(MapKv):
    """MapKv that records every write batch."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[list[str], list[str]]] = []

    async def put_many(self, items, *, deletes=()):
        self.batches.append(([k for k, _ in items], list(deletes)))
        await super().put_many(items, deletes=deletes)


async def dump(kv) -> dict[str, bytes]:
    return dict(await kv.scan(""))


async def call(tool: Tool, **args) -> ToolResult:
    return await tool.call(args)


async def ok(tool: Tool, **args) -> ToolResult:
    result = await tool.call(args)
    assert not result.is_error, result.content
    return result


async def fail(tool: Tool, code: str, **args) -> ToolResult:
    result = await tool.call(args)
    assert result.is_error, result.content
    # The memory_20250818 tool returns the bare message with is_error, as the SDK helpers
    # do; the 4-operation tool keeps our "Error: " prefix.
    assert result.content.startswith("Error: ") == (tool.name != "memory"), result.content
    assert result.artifact["outcome"] == "error"
    assert result.artifact["error"] == code, result.content
    return result


async def put(kv, path: str, text: str) -> None:
    await kv.put_many([("fs:" + path, text.encode())])
