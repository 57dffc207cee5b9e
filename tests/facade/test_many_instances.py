"""Several Memory instances on one store, in one process (each on its own SQLite
connection, as two workers or processes would be): refresh, vectors, forget, the change
log's limits, and the concurrency that held before issue 12 (400 tasks on one instance).
"""

from __future__ import annotations

import asyncio
import random

import pytest
from helpers import close, open_on

from pymemory import Memory, NotFoundError
from pymemory.models.embedding import HashingEmbedder
from pymemory.storage import SqliteKv, changes

DAY = 86_400_000


async def test_delete_drops_item_vector_and_cached_copies_everywhere(tmp_path, clock):
    path = tmp_path / "s.db"
    a = await open_on(path, embedder=HashingEmbedder(), clock=clock)
    b = await open_on(path, embedder=HashingEmbedder(), clock=clock)
    item = await a.add("the vault combination is zanzibar")
    await a.embed_idle()
    assert [m.item.id for m in (await b.retrieve("vault combination")).memories] == [item.id]
    assert item.id in b.vectors  # B loaded A's vector from the change log
    clock.advance(DAY)
    assert await b.archive_older_than(0.5) == 1  # B archives it: its vector goes,
    assert await a.kv.scan("vec:") == []
    assert [x.id for x in await a.search_archive("vault")] == [item.id]
    assert (await a.stats())["archived"] == 1  # A's next call applies it:
    assert item.id not in a.vectors and item.id not in a._catalog
    await a.delete(item.id)  # ... and a delete forgets the archived copy too
    assert (await b.retrieve("vault combination zanzibar")).memories == []
    assert item.id not in b.vectors and item.id not in a.vectors
    assert await b.search_archive("vault") == []
    assert await a.kv.scan("vec:") == [] and await a.kv.scan("arc:") == []
    with pytest.raises(NotFoundError):
        await b.get(item.id)
    await close(a, b)


async def test_a_vector_is_not_stored_for_an_item_another_writer_deleted(tmp_path):
    path = tmp_path / "s.db"
    gate = asyncio.Event()

    class SlowEmbedder(HashingEmbedder):
        async def embed(self, texts):
            await gate.wait()
            return await super().embed(texts)

    a = await open_on(path, embedder=SlowEmbedder())
    b = await open_on(path)
    item = await a.add("embedding in progress")
    await b.delete(item.id)  # while A's model works
    gate.set()
    await a.embed_idle()
    assert await a.kv.scan("vec:") == []  # checked against the store in the write's transaction
    await close(a, b)


async def test_an_idle_instance_drops_forgotten_items_in_the_background(tmp_path):
    path = tmp_path / "s.db"
    a = await open_on(path)
    b = await Memory.open(await SqliteKv.open(path), feedback_flush_s=0.05)
    item = await a.add("forget me everywhere")
    await b.get(item.id)
    await a.clear(all=True)
    for _ in range(200):  # B makes no call: its background sync drops the copy
        if item.id not in b._catalog:
            break
        await asyncio.sleep(0.05)
    assert item.id not in b._catalog
    await close(a, b)


async def test_an_instance_behind_the_change_log_reloads(tmp_path, monkeypatch):
    monkeypatch.setattr(changes, "RETAIN", 5)
    path = tmp_path / "s.db"
    a = await open_on(path)
    b = await open_on(path)
    first = await a.add("first")
    await b.list()
    for i in range(8):  # more commits than the log keeps
        await a.add(f"note {i}")
    await a.delete(first.id)
    assert len(await a.kv.scan("chg:")) == 5
    found = await changes.changes_since(b.kv, b._view.seq)
    assert found.keys is None  # too far behind: B reloads everything
    assert sorted(i.content for i in await b.list()) == sorted(f"note {i}" for i in range(8))
    await close(a, b)


async def test_refresh_reads_only_what_changed(tmp_path):
    path = tmp_path / "s.db"
    a = await open_on(path)
    b = await open_on(path)
    await a.add_many([{"text": f"bulk {i}"} for i in range(300)])
    await b.list()
    reads: list[int] = []
    get_many = b.kv.get_many

    async def counting(keys):
        reads.append(len(keys))
        return await get_many(keys)

    b.kv.get_many = counting  # type: ignore[method-assign]
    one = await a.add("one more")
    assert (await b.get(one.id)).content == "one more"
    assert reads == [1]  # one changed record re-read, not 301
    await close(a, b)


async def test_400_concurrent_tasks_on_one_instance_stay_consistent_for_20_rounds(tmp_path):
    """What held before issue 12, kept: every round runs 400 tasks at once on one instance
    (adds, likes, updates, deletes, reads); its view then equals the store's."""
    path = tmp_path / "c.db"
    memory = await open_on(path)
    rng = random.Random(12)
    expected_likes: dict[str, int] = {}
    for round_no in range(20):
        live = list(expected_likes)
        tasks = []
        for i in range(400):
            op = rng.choice("aaflud r")
            if op == "a" or not live:
                tasks.append(memory.add(f"round {round_no} task {i}", tags=[f"r{round_no}"]))
            elif op == "l":
                target = rng.choice(live)
                expected_likes[target] += 1
                tasks.append(memory.feedback(target, "liked", durable=rng.random() < 0.5))
            elif op == "u":
                tasks.append(memory.update(rng.choice(live), tags=[f"u{round_no}"]))
            elif op == "d":
                tasks.append(memory.delete(live.pop(rng.randrange(len(live)))))
            else:
                tasks.append(memory.retrieve(f"round {round_no}"))
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                assert isinstance(result, NotFoundError), result  # liked/updated, then deleted
            elif hasattr(result, "id") and result.id not in expected_likes and result.version == 1:
                expected_likes[result.id] = 0
        stored = {i.id for i in await memory.list()}
        expected_likes = {k: v for k, v in expected_likes.items() if k in stored}
        await memory.flush()
        fresh = await open_on(path)
        assert {i.id: i for i in await fresh.list()} == {i.id: i for i in await memory.list()}
        for item in await fresh.list():
            assert item.feedback.liked == expected_likes[item.id]
        await close(fresh)
    await close(memory)


async def test_durable_feedback_on_an_item_deleted_meanwhile_is_not_found(tmp_path):
    path = tmp_path / "s.db"
    a = await open_on(path)
    b = await open_on(path)
    item = await a.add("about to go")
    await b.get(item.id)
    await a.delete(item.id)

    async def stale() -> None:  # B has not looked at the log yet when it flushes
        return None

    b._sync = stale  # type: ignore[method-assign]
    with pytest.raises(NotFoundError, match="not stored"):
        await b.feedback(item.id, "liked", durable=True)
    assert await a.kv.get("mem:" + item.id) is None  # nothing written back
    assert item.id not in b._catalog
    await close(a, b)
