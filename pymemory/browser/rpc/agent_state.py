"""The agent primitives of one database, as the worker keeps them (:mod:`.agent_api`):
one instance of each per database, and an observer per session."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...agent.blocks import MemoryBlockSet
from ...agent.checkpoint import KvCheckpointer
from ...agent.memory_tool import (
    AnthropicMemoryTool,
    create_anthropic_memory_tool,
    create_memory_tool,
)
from ...agent.observational import ObservationalMemory
from ...agent.structured import StructuredMemory
from ...agent.tools import ToolSet

if TYPE_CHECKING:
    from ...memory import Memory

log = logging.getLogger("pymemory")


async def close_model(model: Any) -> None:
    """Close an observer model that has a ``close()`` (its HTTP transport); never raises."""
    close = getattr(model, "close", None)
    if close is not None:
        try:
            await close()
        except Exception:  # best effort: a transport that will not close is not fatal
            log.warning("could not close an observer model", exc_info=True)


# --- per-database state ---------------------------------------------------------------------


@dataclass
class SessionObserver:
    """The observational memory of one session, its model and the model's description."""

    memory: ObservationalMemory
    model: Any
    info: dict[str, Any]
    reported: BaseException | None = None  # the last error a flush already reported


class DbAgents:
    """The primitives of one database, over its Memory's KV store."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.kv = memory.kv
        self.clock = memory.clock  # share the Memory's notion of now (injected in tests)
        timed = {"clock": self.clock}
        self.lock = asyncio.Lock()  # serialises opening block sets
        self.blocksets: dict[str, MemoryBlockSet] = {}
        self.toolsets: dict[str | None, ToolSet] = {}
        self.observers: dict[str, SessionObserver] = {}
        self.structured = StructuredMemory(self.kv, **timed)
        self.checkpoints = KvCheckpointer(self.kv, **timed)
        self.memory_tool: AnthropicMemoryTool = create_anthropic_memory_tool(self.kv)
        self.kv_tool = create_memory_tool(self.kv, clock=self.clock)

    async def close(self) -> None:
        for observer in list(self.observers.values()):
            with contextlib.suppress(Exception):
                await observer.memory.flush()
            await close_model(observer.model)
        self.observers.clear()
