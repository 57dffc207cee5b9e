"""stats()["sync"]["round"]: None between rounds; while one runs, its phase and the
records pushed and pulled so far (docs/sync.md). The hub is the real pouchdb-server; a
gate in the transport holds one request so that the test reads stats mid-round."""

from __future__ import annotations

import asyncio
import time

import pytest
from gate import Gate, held

import pymemory.sync.replicator as replicator
from pymemory import Memory
from pymemory.errors import SyncError
from pymemory.storage import MapKv

N = 7


async def round_now(memory: Memory) -> object:
    return (await memory.stats())["sync"]["round"]


async def test_round_shows_push_then_pull_progress(
    hub: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replicator, "PUSH_BATCH", 2)  # several batches from a few records
    monkeypatch.setattr(replicator, "PULL_BATCH", 3)
    a, b = await Memory.open(MapKv()), await Memory.open(MapKv())
    for n in range(N):
        await a.add(f"note number {n}", scope="s")
    assert await round_now(a) is None  # never synced

    before = time.time_ns() // 1_000_000
    gate = Gate("_bulk_docs", nth=2)  # the second batch of the push
    a.syncs.transport = lambda: gate
    task = asyncio.create_task(a.sync(hub))
    await held(gate, task)
    mid = await round_now(a)
    assert isinstance(mid, dict) and set(mid) == {"phase", "pushed", "pulled", "startedMs"}
    assert (mid["phase"], mid["pushed"], mid["pulled"]) == ("push", 2, 0)
    assert before <= mid["startedMs"] <= time.time_ns() // 1_000_000
    gate.open()
    done = await task
    assert done.pushed == N + 1  # the items and the schema record
    assert await round_now(a) is None

    gate = Gate("_changes", nth=2)  # b's second page of the feed
    b.syncs.transport = lambda: gate
    task = asyncio.create_task(b.sync(hub))
    await held(gate, task)
    mid = await round_now(b)
    assert isinstance(mid, dict) and mid["phase"] == "pull" and mid["pushed"] == 0
    assert 0 < mid["pulled"] < N
    gate.open()
    assert (await task).pulled == N  # its own schema record was the same already
    assert await round_now(b) is None
    for m in (a, b):
        await m.close()


async def test_round_is_cleared_after_a_failed_round(hub: str) -> None:
    memory = await Memory.open(MapKv())
    await memory.add("one note", scope="s")
    with pytest.raises(SyncError):
        await memory.sync("http://127.0.0.1:9/nothing-listens-here")
    assert await round_now(memory) is None
    await memory.sync(hub)
    assert await round_now(memory) is None
    await memory.close()
