"""Attaching an embedder while another writer changes vectors (each instance on its own
SQLite connection, as in test_many_instances.py): a sync of the view during the vector
load must not make the instance lose a vector change for good."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
from helpers import close, open_on

from pymemory import Memory
from pymemory.models.embedding import HashingEmbedder
from pymemory.storage import SqliteKv, changes


class Pause:
    """Holds ``kv``'s first ``scan`` or ``get_many`` that ``matches`` (after it read)
    until ``resume`` is set; ``paused`` is set once it holds."""

    def __init__(self, kv: SqliteKv, matches: Callable[[str, Any], bool]) -> None:
        self.paused, self.resume = asyncio.Event(), asyncio.Event()
        self._matches = matches
        scan, get_many = kv.scan, kv.get_many

        async def paused_scan(prefix: str, **kw: Any) -> Any:
            return await self._hold("scan", prefix, await scan(prefix, **kw))

        async def paused_get_many(keys: Any) -> Any:
            return await self._hold("get_many", keys, await get_many(keys))

        kv.scan = paused_scan  # type: ignore[method-assign]
        kv.get_many = paused_get_many  # type: ignore[method-assign]

    async def _hold(self, call: str, arg: Any, result: Any) -> Any:
        if not self.paused.is_set() and self._matches(call, arg):
            self.paused.set()
            await self.resume.wait()
        return result


def vector_scan(call: str, arg: Any) -> bool:
    return call == "scan" and arg == "vec:"


def vector_reread(call: str, arg: Any) -> bool:
    return call == "get_many" and all(k.startswith("vec:") for k in arg)


async def assert_vectors_match_store(a: Memory, path) -> None:
    """A's vectors are exactly those a fresh instance loads from the store."""
    fresh = await open_on(path, embedder=HashingEmbedder())
    assert a.vectors is not None and fresh.vectors is not None
    assert sorted(a.vectors.ids()) == sorted(fresh.vectors.ids())
    for item_id in fresh.vectors.ids():
        assert np.array_equal(a.vectors.get(item_id), fresh.vectors.get(item_id)), item_id
    await close(fresh)


async def seeded(path, n: int = 20) -> tuple[Memory, list[str]]:
    """B, with an embedder, and the ids of ``n`` items it stored with their vectors."""
    b = await open_on(path, embedder=HashingEmbedder())
    items = await b.add_many([{"text": f"note {i} about the garden shed"} for i in range(n)])
    await b.embed_idle()
    assert len(await b.kv.scan("vec:")) == n
    return b, [i.id for i in items]


async def change_during_attach(a: Memory, b: Memory, pause: Pause, changed: str, deleted: str):
    """A attaches an embedder; while its vectors load, B re-embeds ``changed`` and
    deletes ``deleted``, and a retrieve on A syncs its view."""
    attach = asyncio.ensure_future(a.attach_embedder(HashingEmbedder()))
    await asyncio.wait_for(pause.paused.wait(), 10)
    await b.update(changed, text="the boat keys hang by the door")
    await b.embed_idle()
    await b.delete(deleted)
    await a.retrieve("boat keys")  # syncs A's view while its vectors are not attached
    pause.resume.set()
    await asyncio.wait_for(attach, 10)


async def test_vector_changes_during_the_vector_scan_are_applied(tmp_path):
    path = tmp_path / "s.db"
    b, ids = await seeded(path)
    a = await open_on(path)
    changed, deleted = ids[3], ids[7]
    stale = await b.kv.get(f"vec:{changed}")
    await change_during_attach(a, b, Pause(a.kv, vector_scan), changed, deleted)
    assert await a.kv.get(f"vec:{changed}") not in (None, stale)  # B re-embedded it
    assert deleted not in a.vectors and deleted not in a._catalog
    await assert_vectors_match_store(a, path)
    assert [m.item.id for m in (await a.retrieve("boat keys door")).memories][:1] == [changed]
    await close(a, b)


async def test_vector_changes_during_a_snapshot_load_are_applied(tmp_path):
    path = tmp_path / "s.db"
    b, ids = await seeded(path)
    assert await b._snapshots.save(force=True)  # A's vectors load from the snapshot,
    await b.add("one more note after the snapshot")  # then re-read what changed since it
    await b.embed_idle()
    a = await open_on(path)
    pause = Pause(a.kv, vector_reread)  # held after that re-read
    await change_during_attach(a, b, pause, ids[2], ids[5])
    assert ids[5] not in a.vectors
    await assert_vectors_match_store(a, path)
    await close(a, b)


async def test_attach_reloads_all_vectors_when_the_log_was_pruned_during_the_load(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(changes, "RETAIN", 5)
    path = tmp_path / "s.db"
    b, ids = await seeded(path)
    a = await open_on(path)
    pause = Pause(a.kv, vector_scan)
    attach = asyncio.ensure_future(a.attach_embedder(HashingEmbedder()))
    await asyncio.wait_for(pause.paused.wait(), 10)
    await b.update(ids[4], text="the boat keys hang by the door")
    await b.embed_idle()
    for i in range(8):  # more commits than the log keeps
        await b.add(f"filler {i}")
    await b.embed_idle()
    await a.retrieve("boat keys")  # A's view reloads everything, without vectors
    assert (await changes.changes_since(a.kv, 0)).keys is None
    pause.resume.set()
    await asyncio.wait_for(attach, 10)
    await a.embed_idle()
    await assert_vectors_match_store(a, path)
    await close(a, b)
