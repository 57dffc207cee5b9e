"""Agent primitives from seeds 000, 001 and 004, all on the core KvBackend."""

from .assembler import MessageAssembler
from .block_tools import core_memory_tools, letta_memory_tools
from .blocks import MemoryBlock, MemoryBlockSet
from .checkpoint import Checkpoint, Checkpointer, InMemoryCheckpointer, KvCheckpointer
from .memory_agent import (
    BudgetAlreadyExceededError,
    BudgetWouldExceedError,
    MemoryAgent,
    MemoryBudgetError,
)
from .memory_tool import (
    MEMORY_TOOL_SYSTEM_PROMPT,
    create_anthropic_memory_tool,
    create_memory_tool,
    normalize_memory_path,
)
from .observational import Observation, ObservationalMemory
from .structured import StructuredMemory
from .tools import Tool, ToolResult, ToolSet

__all__ = [
    "MEMORY_TOOL_SYSTEM_PROMPT",
    "BudgetAlreadyExceededError",
    "BudgetWouldExceedError",
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "KvCheckpointer",
    "MemoryAgent",
    "MemoryBlock",
    "MemoryBlockSet",
    "MemoryBudgetError",
    "MessageAssembler",
    "Observation",
    "ObservationalMemory",
    "StructuredMemory",
    "Tool",
    "ToolResult",
    "ToolSet",
    "core_memory_tools",
    "create_anthropic_memory_tool",
    "create_memory_tool",
    "letta_memory_tools",
    "normalize_memory_path",
]
