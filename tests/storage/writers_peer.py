"""One writer process for the two-process tests (tests/storage/test_writers.py).

    python tests/storage/writers_peer.py STORE.db

opens a Memory on the SQLite file and the agent primitives over its KV store, then serves
one JSON command per stdin line and answers one JSON line on stdout (``{"reopen": path}``
switches to another store, so one process serves several tests)::

    {"call": "memory.add", "args": ["text"], "kwargs": {"tags": ["a"]}, "repeat": 1}
    -> {"ok": true, "result": ...} | {"ok": false, "error": "ConflictError", "code": "conflict"}

``repeat`` runs the call that many times in a row (a result list comes back), so two
peers given the same command at once race for real. ``spin_add_many`` writes batches
until the process is killed, printing one line per acknowledged batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pymemory import Memory, PymemoryError
from pymemory.agent.blocks import MemoryBlockSet
from pymemory.agent.checkpoint import KvCheckpointer
from pymemory.agent.llm import RuleObserver
from pymemory.agent.memory_tool import (
    create_anthropic_memory_tool,
    create_memory_tool,
)
from pymemory.agent.observational import ObservationalMemory
from pymemory.agent.structured import StructuredMemory
from pymemory.item import ArchivedItem, MemoryItem
from pymemory.retrieval.results import Retrieval


def jsonable(value: object) -> object:
    if isinstance(value, MemoryItem | ArchivedItem):
        return value.to_dict()
    if isinstance(value, Retrieval):
        return {"ids": [m.item.id for m in value.memories], "text": value.text}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


class Peer:
    def __init__(self, memory: Memory) -> None:
        kv = memory.kv
        self.memory = memory
        self.structured = StructuredMemory(kv)
        self.tool = create_anthropic_memory_tool(kv)
        self.kvtool = create_memory_tool(kv)
        self.checkpoints = KvCheckpointer(kv)
        self.observer = ObservationalMemory(
            RuleObserver(), "shared-session", kv, token_threshold=5, keep_recent_steps=0
        )
        self.blocks: MemoryBlockSet | None = None

    async def open_blocks(self) -> list[str]:
        self.blocks = await MemoryBlockSet.open(
            self.memory.kv, "core", [{"label": "log", "limit": 100_000}]
        )
        return self.blocks.labels()

    async def export(self) -> str:
        return "".join([line async for line in self.memory.export()])

    async def observe(self, text: str) -> list[int]:
        """Note one step and wait for the observation it triggers; the seq ids stored."""
        self.observer.note_step(text)
        await self.observer.flush()
        if self.observer.last_error is not None:
            raise self.observer.last_error
        return [o.seq_id for o in await self.observer.list()]

    async def spin_add_many(self, size: int) -> None:
        batch = 0
        while True:
            items = await self.memory.add_many(
                [{"text": f"batch {batch} item {i}", "tags": [f"b{batch}"]} for i in range(size)]
            )
            print(json.dumps({"ack": batch, "ids": [i.id for i in items]}), flush=True)
            batch += 1

    async def run(self, command: dict) -> object:
        target: object = self
        for part in command["call"].split("."):
            target = getattr(target, part)
        results = []
        for _ in range(command.get("repeat", 1)):
            result = target(*command.get("args", []), **command.get("kwargs", {}))  # type: ignore[operator]
            results.append(await result if inspect.isawaitable(result) else result)
        return results if "repeat" in command else results[0]


async def open_peer(path: str) -> Peer:
    return Peer(await Memory.open(path, feedback_flush_s=3600, sweep_interval_s=3600))


async def main(path: str) -> None:
    peer = await open_peer(path)
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": True}), flush=True)
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        command = json.loads(line)
        if "reopen" in command:  # the next test: close this store, open another
            await peer.memory.close()
            peer = await open_peer(command["reopen"])
            print(json.dumps({"ready": True}), flush=True)
            continue
        try:
            answer = {"ok": True, "result": jsonable(await peer.run(command))}
        except PymemoryError as exc:
            answer = {
                "ok": False,
                "error": type(exc).__name__,
                "code": exc.code,
                "message": str(exc),
            }
        print(json.dumps(answer), flush=True)
    await peer.memory.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
