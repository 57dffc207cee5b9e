"""What the agent primitives' methods need from the API that serves them.

:class:`~.agent_api.AgentRpc` depends on this protocol, not on :class:`~.api.RpcApi`, so
the two modules do not import each other: the API imports the agent methods (on the first
dotted call) and satisfies the protocol by its shape.
"""

from __future__ import annotations

from typing import Protocol

from ...memory import Memory


class MemoryHost(Protocol):
    """Opens a database's :class:`~pymemory.Memory` for the call being served."""

    async def memory(self, db: str) -> Memory:
        """The Memory of database ``db`` (opened, or its key checked, on first use)."""
        ...
