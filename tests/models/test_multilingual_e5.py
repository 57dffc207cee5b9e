"""multilingual-e5-small, the named alternative to MiniLM (issue 38): loaded by name,
questions and stored texts embedded with their prefixes, cosines calibrated so the floor
lets in as much as with MiniLM, Chinese ranked by meaning as well as by characters, and a
store of MiniLM vectors re-embedded when it is attached."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from helpers import DAY, Clock, close, open_on

from pymemory import Memory
from pymemory.models import LOCAL_EMBEDDERS
from pymemory.models.embedding import calibrated, embed_queries, load_embedder, reads
from pymemory.retrieval.catalog import dense_text
from pymemory.storage import MapKv, schema

NOW = int(dt.datetime(2026, 12, 6, 20, tzinfo=dt.UTC).timestamp() * 1000)


async def test_loaded_by_name_with_its_facts(e5):
    named = await load_embedder("multilingual-e5-small")
    assert named.name == e5.name == "multilingual-e5-small-int8-mean-l2-256"
    assert named.dim == 384 and named.multilingual and reads(named, "上周我和谁吃过饭？")
    assert named.similarity_baseline == LOCAL_EMBEDDERS["multilingual-e5-small"][
        "similarity_baseline"
    ]
    assert named.pad_id == 1  # XLM-R's pad, not BERT's 0


async def test_questions_and_stored_texts_get_their_prefixes(e5):
    text = "上周五和小王在海底捞吃了火锅。"
    stored, asked = (await e5.embed([text]))[0], (await embed_queries(e5, [text]))[0]
    assert float(stored @ asked) < 0.999  # not the same input
    np.testing.assert_allclose(stored, (await e5.embed_ids(e5.tokenize(["passage: " + text])))[0])
    np.testing.assert_allclose(asked, (await e5.embed_ids(e5.tokenize(["query: " + text])))[0])


async def test_calibration_spreads_the_cosines_on_minilms_scale(e5):
    q = (await embed_queries(e5, ["上周我和谁吃过饭？"]))[0]
    docs = await e5.embed(["上周五和小王在海底捞吃了火锅。", "My wifi password is hunter2"])
    raw = docs @ q
    assert raw.min() > 0.6  # e5's cosines all sit high: every one would pass a 0.15 floor
    cal = calibrated(e5, raw.astype(np.float64))
    assert cal[0] > 0.4 and cal[1] < cal[0] - 0.3
    assert np.argsort(cal).tolist() == np.argsort(raw).tolist()


async def _diary(embedder) -> Memory:
    mem = await Memory.open(MapKv(), clock=Clock(NOW))
    if embedder is not None:
        await mem.attach_embedder(embedder)
    texts = [
        "今天在星巴克买了一杯拿铁，38元。",
        "女儿的钢琴老师姓赵，电话 139 1024 7788。",
        "手机换成了华为 Mate 70，旧手机给我妈用。",
        "周末去爬了香山，人特别多。",
    ]
    for i, t in enumerate(texts):
        await mem.add(t, timestamp=NOW - (i + 1) * DAY)
    await mem.embed_idle()
    return mem


async def test_chinese_question_found_by_meaning(e5):
    """No character of the answer is in the question: BM25 alone cannot find it."""
    mem, plain = await _diary(e5), await _diary(None)
    r = await mem.retrieve("喝咖啡花了多少", trace=True)
    assert r.mode == "hybrid"
    assert r.items and "拿铁" in r.items[0].content
    bm25 = await plain.retrieve("喝咖啡花了多少")
    assert bm25.mode == "bm25" and not any("拿铁" in i.content for i in bm25.items)
    await close(mem, plain)


async def test_a_store_of_minilm_vectors_is_re_embedded_with_e5(tmp_path, minilm, e5):
    path = tmp_path / "m.db"
    mem = await open_on(path, embedder=minilm)
    notes = await mem.add_many([{"text": f"note {i} about topic {i}"} for i in range(20)])
    target = await mem.add("the bike storage code at the office is 7291")
    await mem.embed_idle()
    await close(mem)

    mem = await open_on(path, embedder=e5)
    during = await mem.retrieve("office bike storage code")  # correct while re-embedding
    assert during.items[0].id == target.id
    await mem.embed_idle()
    stats = await mem.stats()
    assert stats["embedding"] == {"model": e5.name, "embedded": 21, "items": 21}
    raw = {k[len(schema.VEC) :]: v for k, v in await mem.kv.scan(schema.VEC)}
    assert set(raw) == {target.id, *(n.id for n in notes)}
    after = await mem.retrieve("office bike storage code", trace=True)
    assert after.mode == "hybrid" and after.items[0].id == target.id
    want = (await e5.embed([dense_text(target)]))[0]
    got = after.memories[0]
    q = (await embed_queries(e5, ["office bike storage code"]))[0]
    assert got.dense == pytest.approx(float(calibrated(e5, np.float64(q @ want))), abs=0.05)
    await close(mem)


async def test_a_store_from_before_the_record_is_re_embedded_with_e5(tmp_path, minilm, e5):
    """Without meta:embedder a store's vectors are MiniLM's: e5 does not adopt them."""
    path = tmp_path / "m.db"
    mem = await open_on(path, embedder=minilm)
    await mem.add("the bike storage code at the office is 7291")
    await mem.embed_idle()
    await mem.kv.delete_many([schema.META_EMBEDDER])  # as an older pymemory left it
    await close(mem)
    mem = await open_on(path, embedder=e5)
    await mem.embed_idle()
    assert (await mem.stats())["embedding"]["model"] == e5.name
    assert len(await mem.kv.scan(schema.VEC)) == 1
    await close(mem)
