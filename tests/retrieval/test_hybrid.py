"""Embeddings stored beside items, and BM25 + dense fused by RRF in retrieval."""

import asyncio

import numpy as np
import pytest
from helpers import DAY, Clock

from pymemory import Memory, by_scope
from pymemory.models.embedding import HashingEmbedder
from pymemory.retrieval.strategies import (
    compose,
    from_dict,
    fusion,
    relevance_floor,
    time_decay,
    to_dict,
)
from pymemory.storage import MapKv, SqliteKv, schema


class CountingEmbedder:
    """Wraps an embedder and counts the texts it embeds (a collaborator spy)."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.texts: list[str] = []
        self.gate: asyncio.Event | None = None

    async def embed(self, texts):
        if self.gate is not None:
            await self.gate.wait()
        self.texts.extend(texts)
        return await self.inner.embed(texts)


async def test_vectors_are_stored_and_a_reload_never_re_embeds(tmp_path):
    path = tmp_path / "m.db"
    embedder = CountingEmbedder(HashingEmbedder())
    mem = await Memory.open(path, embedder=embedder)
    items = await mem.add_many([{"text": f"note about topic {i}"} for i in range(40)])
    await mem.embed_idle()
    assert len(await mem.kv.scan("vec:")) == 40
    assert sorted(embedder.texts) == sorted(i.text for i in items)
    await mem.close()

    embedder = CountingEmbedder(HashingEmbedder())
    mem = await Memory.open(path, embedder=embedder)
    await mem.embed_idle()
    assert embedder.texts == []  # loaded from the store, not recomputed
    result = await mem.retrieve("topic 7")
    assert result.mode == "hybrid" and embedder.texts == ["topic 7"]
    assert result.items[0].text == "note about topic 7"
    await mem.close()


async def test_the_background_embedder_sends_similar_lengths_together(monkeypatch):
    import pymemory.retrieval.dense as dense

    monkeypatch.setattr(dense, "EMBED_CALL", 4)
    embedder = CountingEmbedder(HashingEmbedder())
    calls: list[list[str]] = []
    inner = embedder.embed

    async def spy(texts):
        calls.append(list(texts))
        return await inner(texts)

    embedder.embed = spy
    mem = await Memory.open(MapKv(), embedder=embedder)
    texts = ["x" * n for n in (40, 2, 33, 5, 17, 1, 26, 9, 12, 3)]  # arrival order: mixed
    await mem.add_many([{"text": t} for t in texts])
    await mem.embed_idle()
    assert len(mem.vectors) == len(texts)
    assert [len(c) for c in calls] == [4, 4, 2]
    sizes = [[len(t) for t in c] for c in calls]
    assert sizes == [[1, 2, 3, 5], [9, 12, 17, 26], [33, 40]]  # shortest first, by call
    await mem.close()


async def test_backfill_update_delete_and_archive_keep_vectors_in_step(tmp_path):
    kv = await SqliteKv.open(tmp_path / "b.db")
    mem = await Memory.open(kv)  # no embedder yet
    a = await mem.add("the quarterly report is due on Friday")
    b = await mem.add("lunch with Sam next week")
    await mem.close()
    mem = await Memory.open(kv, embedder=HashingEmbedder())
    await mem.embed_idle()  # items written before the embedder get embedded once
    assert {k for k, _ in await kv.scan("vec:")} == {"vec:" + a.id, "vec:" + b.id}
    before = mem.vectors.get(a.id).copy()
    await mem.update(a.id, text="the annual report is due in March")
    await mem.embed_idle()
    assert not np.allclose(mem.vectors.get(a.id), before)
    await mem.delete(b.id)
    assert await kv.get("vec:" + b.id) is None and b.id not in mem.vectors
    await mem.close()
    await kv.close()


async def test_orphan_vectors_are_dropped_when_the_embedder_attaches(tmp_path):
    path = tmp_path / "m.db"
    mem = await Memory.open(path, embedder=HashingEmbedder())
    kept, lost = await mem.add_many([{"text": "kept note"}, {"text": "lost note"}])
    await mem.embed_idle()
    await mem.kv.delete_many([schema.mem_key(lost.id)])  # a crash before its vector went
    await mem.close()

    mem = await Memory.open(path, embedder=HashingEmbedder())
    assert mem.vectors.ids() == [kept.id]
    assert await mem.kv.get("vec:" + lost.id) is None
    assert (await mem.retrieve("note")).notes == ()  # nothing counted as not embedded
    await mem.close()


async def test_dense_off_or_pending_is_said_in_the_result():
    mem = await Memory.open(MapKv())
    await mem.add("alpha beta")
    result = await mem.retrieve("alpha")
    assert result.mode == "bm25" and "no embedder" in result.notes[0]
    await mem.close()

    embedder = CountingEmbedder(HashingEmbedder())
    embedder.gate = asyncio.Event()  # hold the background embedding
    mem = await Memory.open(MapKv(), embedder=embedder)
    item = await mem.add("alpha beta gamma")
    embedder.gate.set()
    result = await mem.retrieve("alpha", trace=True)
    if item.id not in mem.vectors:
        assert any("not embedded yet" in n for n in result.notes)
    await mem.embed_idle()
    result = await mem.retrieve("alpha", trace=True)
    assert result.notes == ()
    row = result.trace[0]
    assert row.dense is not None and row.bm25 > 0 and row.status == "included"
    await mem.close()


async def test_rrf_fuses_both_rankings_with_weights():
    mem = await Memory.open(MapKv(), embedder=HashingEmbedder())
    exact = await mem.add("error code E4021 on the payment page")
    near = await mem.add("the payments page shows errors")
    await mem.embed_idle()
    k = 60.0
    off = relevance_floor(0, 0)
    rrf = lambda **kw: compose(fusion(method="rrf", context=(), **kw), off)  # noqa: E731
    result = await mem.retrieve("E4021", rrf(k=k, lexical=1, dense=1), trace=True)
    by_id = {c.id: c for c in result.trace}
    # exact is first in the BM25 ranking; its fused score includes that side's 1/(k+1).
    assert by_id[exact.id].lexical_part == pytest.approx(1 / (k + 1))
    assert by_id[exact.id].score >= 1 / (k + 1)
    lexical_only = await mem.retrieve("E4021", rrf(k=k, lexical=1, dense=0), trace=True)
    assert [c.id for c in lexical_only.trace if c.status == "included"] == [exact.id]
    assert {c.id: c.score for c in lexical_only.trace}[exact.id] == pytest.approx(1 / (k + 1))
    dense_only = await mem.retrieve("E4021", rrf(lexical=0, dense=1, k=10), trace=True)
    assert all(c.bm25 == 0 or c.score <= 1 / 11 for c in dense_only.trace)
    assert near.id in {c.id for c in result.trace}
    for c in result.trace:
        if c.status != "no_match":
            assert c.relevance == pytest.approx(c.dense_part + c.lexical_part)
            assert c.score == pytest.approx(c.relevance * c.decay * c.feedback_weight * c.time_match)
    await mem.close()


async def test_score_fusion_adds_cosine_and_the_squared_lexical_share():
    mem = await Memory.open(MapKv(), embedder=HashingEmbedder())
    exact = await mem.add("error code E4021 on the payment page")
    await mem.add("the payments page shows errors")
    await mem.embed_idle()
    score = compose(fusion(method="score", lexical=1, dense=1, context=()))
    result = await mem.retrieve("E4021 payment", score, trace=True)
    row = {c.id: c for c in result.trace}[exact.id]
    terms = ["e4021", "payment"]
    share = row.bm25 / mem._catalog.index.idf_mass(terms)
    assert 0 < share < 1
    assert row.lexical_part == pytest.approx(share**2)
    assert row.dense_part == pytest.approx(max(row.dense, 0))
    assert row.score == pytest.approx(row.relevance * row.decay * row.feedback_weight)
    await mem.close()


async def test_an_old_exact_match_still_wins_in_hybrid():
    clock = Clock()
    mem = await Memory.open(MapKv(), clock=clock, embedder=HashingEmbedder(dim=256))
    old = await mem.add(
        "Invoice INV-2291 was paid by bank transfer", timestamp=clock.now - 30 * DAY
    )
    await mem.add("The invoice for the office chairs is still open")
    await mem.add("Paid the electrician for the new sockets", timestamp=clock.now - DAY)
    await mem.embed_idle()
    result = await mem.retrieve("INV-2291 invoice paid", trace=True)
    assert result.mode == "hybrid" and result.memories[0].item.id == old.id
    top = result.trace[0]
    assert top.dense is not None and top.bm25 > 0 and top.lexical_part > 0  # every factor shown
    assert top.decay == 1.0  # messages do not fade by default
    decayed = await mem.retrieve("INV-2291 invoice paid", time_decay(24, floor=0.5))
    assert decayed.memories[0].item.id == old.id and decayed.memories[0].decay < 0.51
    await mem.close()


async def test_feedback_filters_and_deletes_apply_to_dense_candidates():
    mem = await Memory.open(MapKv(), embedder=HashingEmbedder(dim=128))
    a = await mem.add("alpha beta gamma")
    b = await mem.add("alpha beta delta", scope="work")
    await mem.embed_idle()
    await mem.feedback(b.id, "liked")
    await mem.flush()
    assert (await mem.retrieve("alpha beta")).memories[0].item.id == b.id
    assert (await mem.retrieve("alpha beta")).memories[0].feedback_weight > 1
    # "gamma" matches a lexically; the scope filter must also hold for dense candidates.
    scoped = await mem.retrieve("gamma", compose(by_scope("work"), relevance_floor(0, 0)), trace=True)
    assert [m.item.id for m in scoped.memories] == [b.id]
    assert {c.id: c.status for c in scoped.trace}[a.id] == "scope"
    await mem.delete(b.id)
    assert b.id not in [m.item.id for m in (await mem.retrieve("alpha beta delta")).memories]
    await mem.close()


def test_fusion_strategy_serialises():
    s = compose(fusion(k=20, lexical=0.5, dense=1.5, depth=50))
    assert from_dict(to_dict(s)) == s


class GatedKv(MapKv):
    """A MapKv whose reads can be held at a gate (a collaborator stub: the change log's
    read in a retrieve's sync waits there), recording what happened in ``events``."""

    def __init__(self, events: list[str]):
        super().__init__()
        self.events = events
        self.gate: asyncio.Event | None = None

    async def get(self, key):
        if self.gate is not None:
            self.events.append("store read")
            await self.gate.wait()
        return await super().get(key)


class RecordingEmbedder(CountingEmbedder):
    def __init__(self, inner, events: list[str]):
        super().__init__(inner)
        self.events = events

    async def embed(self, texts):
        self.events.append(f"embed {texts[0]}")
        return await super().embed(texts)


async def test_the_query_is_embedded_while_the_store_is_read():
    """A retrieve starts its query embedding (in the browser: another worker) before it
    reads the store and scores BM25, so the call costs the longer of the two, not the sum."""
    events: list[str] = []
    kv = GatedKv(events)
    mem = await Memory.open(kv, embedder=RecordingEmbedder(HashingEmbedder(), events))
    await mem.add_many([{"text": f"note about topic {i}"} for i in range(20)])
    await mem.embed_idle()
    events.clear()
    kv.gate = asyncio.Event()
    call = asyncio.ensure_future(mem.retrieve("topic 7"))
    for _ in range(20):
        await asyncio.sleep(0)
    assert events == ["store read", "embed topic 7"]  # embedding while the read waits
    kv.gate.set()
    kv.gate = None
    result = await call
    assert result.mode == "hybrid" and result.items[0].text == "note about topic 7"
    await mem.close()


async def test_writes_during_the_query_embedding_are_ranked_as_they_now_are(monkeypatch):
    """BM25 is scored ahead, while the query embeds; a write landing before the embedding
    returns (here: a forget whose slot a new item reuses) makes the ranking use the store
    as it is then, never the forgotten item's scores under the new item's slot."""
    import pymemory.retrieval.pipeline as memory_module

    scored = asyncio.Event()

    def spy(*args, **kwargs):
        scored.set()
        return lexical_side(*args, **kwargs)

    lexical_side = memory_module.lexical_side
    monkeypatch.setattr(memory_module, "lexical_side", spy)
    embedder = CountingEmbedder(HashingEmbedder())
    mem = await Memory.open(MapKv(), embedder=embedder)
    old = await mem.add("the deploy key rotates on fridays")
    await mem.add_many([{"text": f"unrelated note number {i}"} for i in range(10)])
    await mem.embed_idle()
    embedder.gate = asyncio.Event()
    call = asyncio.ensure_future(mem.retrieve("deploy key rotation", trace=True))
    await scored.wait()  # BM25 scored; the query embedding waits at the gate
    await mem.delete(old.id)
    new = await mem.add("lunch order for the team offsite")
    assert mem._catalog.slot_of[new.id] == 0  # the forgotten item's slot
    embedder.gate.set()
    result = await call
    rows = {c.id: c for c in result.trace}
    assert old.id not in rows
    assert new.id not in rows or rows[new.id].bm25 == 0.0  # not the old item's score
    await mem.close()
