"""A store records whose vectors it holds (meta:embedder); another embedder re-embeds it
in the background while BM25 ranks what is not embedded yet."""

import asyncio
import json

import numpy as np
from helpers import close, open_on

import pymemory.retrieval.dense as dense
from pymemory import Memory
from pymemory.models.embedding import HashingEmbedder
from pymemory.retrieval.catalog import dense_text
from pymemory.retrieval.vectors_kv import decode_vector
from pymemory.storage import SqliteKv, schema
from pymemory.sync.records import travels

A = HashingEmbedder()  # seed 0
B = HashingEmbedder(seed=7)  # same dim, another space: its own name
TARGET = (
    "the bike storage code at the office is 7291, written on the whiteboard next to the "
    "kitchen after the facilities team changed it last spring"
)


class SteppedEmbedder:
    """B, but each background batch (item texts) waits for a ``step()``; queries pass."""

    def __init__(self, inner: HashingEmbedder, held: set[str]) -> None:
        self.inner, self.held = inner, held
        self.name, self.dim = inner.name, inner.dim
        self.tokens: asyncio.Queue[None] = asyncio.Queue()
        self.opened = False

    def step(self) -> None:
        self.tokens.put_nowait(None)

    def open_all(self) -> None:
        self.opened = True
        self.step()

    async def embed(self, texts):
        if not self.opened and any(t in self.held for t in texts):
            await self.tokens.get()
        return await self.inner.embed(texts)


async def stored_vectors(kv) -> dict[str, np.ndarray]:
    out = {}
    for key, raw in await kv.scan(schema.VEC):
        dtype, row, scale = decode_vector(raw)
        vec = row.astype(np.float32) * (scale if dtype == "int8" else 1.0)
        out[key[len(schema.VEC) :]] = vec / np.linalg.norm(vec)
    return out


async def recorded(kv) -> dict:
    return json.loads(await kv.get(schema.META_EMBEDDER))


async def assert_vectors_of(embedder, mem: Memory) -> None:
    """Every stored vector is ``embedder``'s embedding of its item (int8 storage)."""
    vectors = await stored_vectors(mem.kv)
    items = {i.id: i for i in await mem.list()}
    assert set(vectors) == set(items)
    ids = sorted(vectors)
    want = await embedder.embed([dense_text(items[i]) for i in ids])
    cosines = np.einsum("ij,ij->i", np.stack([vectors[i] for i in ids]), want)
    assert cosines.min() > 0.99


async def fill(path, embedder, n=60):
    mem = await open_on(path, embedder=embedder)
    await mem.add_many([{"text": f"note {i} about topic {i}"} for i in range(n)])
    target = await mem.add(TARGET)
    await mem.embed_idle()
    await close(mem)
    return target


async def test_another_embedder_re_embeds_in_the_background_retrieval_correct_throughout(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(dense, "EMBED_CALL", 8)
    path = tmp_path / "m.db"
    target = await fill(path, A)

    mem = await open_on(path)
    texts = {dense_text(i) for i in await mem.list()}
    await close(mem)
    b = SteppedEmbedder(B, texts)
    mem = await open_on(path, embedder=b)
    assert await recorded(mem.kv) == {"name": B.name, "dim": 384}
    assert await stored_vectors(mem.kv) == {}  # A's vectors dropped at attach
    seen = []
    while True:
        stats = (await mem.stats())["embedding"]
        seen.append(stats["embedded"])
        assert stats["model"] == B.name and stats["items"] == 61
        # The long target is embedded last: until then only BM25 can find it.
        r = await mem.retrieve("office bike storage code", trace=True)
        assert r.items[0].id == target.id
        missing = 61 - stats["embedded"]
        notes = [f"{missing} item(s) not embedded yet: ranked by BM25 only"] if missing else []
        assert list(r.notes) == notes
        r = await mem.retrieve("42")
        assert r.items[0].text == "note 42 about topic 42"
        # Dense scores come from B's vectors only (A's are gone), for the items B embedded.
        query = (await B.embed(["office bike storage code"]))[0]
        stored = await stored_vectors(mem.kv)
        for c in (await mem.retrieve("office bike storage code", trace=True)).trace:
            if c.id in stored and c.dense is not None:
                assert abs(c.dense - float(query @ stored[c.id])) < 0.02
        if not missing:
            break
        b.step()
        for _ in range(200):  # the batch lands in the background
            await asyncio.sleep(0.01)
            if (await mem.stats())["embedding"]["embedded"] > stats["embedded"]:
                break
    assert seen[0] == 0 and seen == sorted(seen) and len(seen) > 3
    await mem.embed_idle()
    await assert_vectors_of(B, mem)
    assert await recorded(mem.kv) == {"name": B.name, "dim": 384}
    await close(mem)


async def test_a_restart_in_the_middle_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(dense, "EMBED_CALL", 8)
    path = tmp_path / "m.db"
    await fill(path, A, n=30)
    mem = await open_on(path)
    texts = {dense_text(i) for i in await mem.list()}
    await close(mem)
    b = SteppedEmbedder(B, texts)
    mem = await open_on(path, embedder=b)
    b.step()
    for _ in range(200):
        await asyncio.sleep(0.01)
        if (await mem.stats())["embedding"]["embedded"]:
            break
    await close(mem)
    kv = await SqliteKv.open(path)
    assert 0 < len(await kv.scan(schema.VEC)) < 31
    await kv.close()

    mem = await open_on(path, embedder=B)  # the record says B: nothing dropped, the rest queued
    await mem.embed_idle()
    await assert_vectors_of(B, mem)
    await close(mem)


async def test_a_switch_interrupted_while_dropping_resumes_the_drop(tmp_path):
    path = tmp_path / "m.db"
    await fill(path, A, n=20)
    kv = await SqliteKv.open(path)
    dropping = {"name": B.name, "dim": 384, "dropping": True}
    await kv.put_many([(schema.META_EMBEDDER, json.dumps(dropping).encode())])
    await kv.close()
    mem = await open_on(path, embedder=B)
    assert await recorded(mem.kv) == {"name": B.name, "dim": 384}
    await mem.embed_idle()
    await assert_vectors_of(B, mem)
    await close(mem)


async def test_an_instance_left_on_the_old_embedder_writes_no_vectors(tmp_path):
    path = tmp_path / "m.db"
    await fill(path, A, n=10)
    old = await open_on(path, embedder=A)
    new = await open_on(path, embedder=B)  # switches the store while `old` runs
    await new.embed_idle()
    item = await old.add("written by the instance still on the old embedder")
    await old.embed_idle()  # its vector write sees the record say B: skipped
    assert await old.kv.get(schema.vec_key(item.id)) is None
    assert old.vectors is None
    assert (await old.stats())["embedding"]["embedded"] == 0
    r = await old.retrieve("old embedder instance")
    assert r.mode == "bm25" and r.items[0].id == item.id
    assert any("another embedder" in n for n in r.notes)
    await old.add("and another one")
    await old.embed_idle()
    vectors = await stored_vectors(new.kv)
    assert len(vectors) == 11 and item.id not in vectors
    await close(old, new)
    mem = await open_on(path, embedder=B)  # the next open embeds what `old` wrote, with B
    await mem.embed_idle()
    await assert_vectors_of(B, mem)
    await close(mem)


async def test_an_instance_sees_the_switch_before_it_writes(tmp_path):
    path = tmp_path / "m.db"
    await fill(path, A, n=10)
    old = await open_on(path, embedder=A)
    new = await open_on(path, embedder=B)
    await new.embed_idle()
    r = await old.retrieve("topic 3")  # catches up: the record changed, A's vectors are gone
    assert r.mode == "bm25" and r.items[0].text == "note 3 about topic 3"
    assert old.vectors is None
    await close(old, new)


async def test_a_store_from_before_the_record_adopts_the_embedder(tmp_path):
    path = tmp_path / "m.db"
    await fill(path, A, n=10)
    kv = await SqliteKv.open(path)
    await kv.delete_many([schema.META_EMBEDDER])  # as an older pymemory left it
    await kv.close()

    calls = []

    class Counting(HashingEmbedder):
        async def embed(self, texts):
            calls.append(texts)
            return await super().embed(texts)

    mem = await open_on(path, embedder=Counting())
    await mem.embed_idle()
    assert calls == []  # its vectors kept: they are taken to be this embedder's
    assert await recorded(mem.kv) == {"name": A.name, "dim": 384}
    assert len(await stored_vectors(mem.kv)) == 11
    await close(mem)


async def test_a_store_from_before_the_record_with_vectors_of_another_dim_switches(tmp_path):
    path = tmp_path / "m.db"
    await fill(path, A, n=10)
    kv = await SqliteKv.open(path)
    await kv.delete_many([schema.META_EMBEDDER])
    await kv.close()
    small = HashingEmbedder(dim=128)
    mem = await open_on(path, embedder=small)  # was a ValidationError telling to delete
    await mem.embed_idle()
    assert await recorded(mem.kv) == {"name": small.name, "dim": 128}
    await assert_vectors_of(small, mem)
    await close(mem)


async def test_the_record_is_neither_synced_nor_exported(tmp_path):
    path = tmp_path / "m.db"
    await fill(path, A, n=3)
    mem = await open_on(path, embedder=A)
    assert await mem.kv.get(schema.META_EMBEDDER) is not None
    exported = "".join([line async for line in mem.export()])
    assert "meta:embedder" not in exported and A.name not in exported
    assert not travels(schema.META_EMBEDDER) and not travels(schema.vec_key("x"))
    await close(mem)


async def test_stats_without_an_embedder():
    mem = await Memory.open()
    await mem.add("one")
    assert (await mem.stats())["embedding"] == {"model": None, "embedded": 0, "items": 1}
    await mem.close()
