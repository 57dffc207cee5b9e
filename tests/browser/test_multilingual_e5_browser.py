"""multilingual-e5-small in Chromium (issue 38): named by the client's `models` option,
the same token ids and vectors as CPython, and a store embedded with MiniLM re-embedded
in the background with retrieval correct throughout, ending with CPython's first memory
for the same store and questions."""

import asyncio
import concurrent.futures

import numpy as np
from browserkit import js

from pymemory import Memory
from pymemory.models import find_model_dir, load_multilingual_e5
from pymemory.models.ort import OrtRuntime
from pymemory.storage import MapKv

SENTENCES = [
    "上周五和小王在海底捞吃了火锅。",
    "今天在星巴克买了一杯拿铁，38元。",
    "The bike storage code at the office is 7291.",
    "東京の天気は晴れです。",
    "Café crème, naïve façade: résumé.",
    "word " * 300,  # longer than 256 tokens: truncated
]
NOTES = [
    "今天在星巴克买了一杯拿铁，38元。",
    "女儿的钢琴老师姓赵，电话 139 1024 7788。",
    "手机换成了华为 Mate 70，旧手机给我妈用。",
    "周末去爬了香山，人特别多。",
    "the bike storage code at the office is 7291",
]
QUESTIONS = ["喝咖啡花了多少", "钢琴老师的联系方式", "office bike storage code"]


def _sync(coro):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _cpython():
    return _sync(load_multilingual_e5(OrtRuntime(intra_op_threads=1), find_model_dir(
        "multilingual-e5-small")))


def test_same_ids_and_vectors_as_cpython(harness):
    e5 = _cpython()
    got = js(
        harness,
        """const c = pm.connection(); await c.ready;
        return await c.call("inference", "embed", { texts: args[0], model: "multilingual-e5-small" });""",
        SENTENCES,
    )
    assert got["model"] == e5.name and got["runtime"] == "onnxruntime-web"
    ids = e5.tokenize(SENTENCES)  # the diagnostic embeds the texts as given (no prefix)
    assert got["inputIds"] == ids
    browser = np.array(got["vectors"], dtype=np.float32)
    cpython = _sync(e5.embed_ids(ids))
    cosines = np.einsum("ij,ij->i", browser, cpython)
    print(f"\nbrowser vs CPython cosine min {cosines.min():.5f}")
    assert cosines.min() > 0.995  # int8 activations are quantized per batch on each runtime


def test_a_minilm_store_switches_to_e5_by_the_models_option(harness):
    result = js(
        harness,
        """
        const [db, notes, questions] = args;
        const first = pm.createAgentMemory({ dbName: db, models: ["embedder"] });
        await first.ready;
        const before = await first.modelsReady;
        const t0 = Date.now();
        for (const [i, text] of notes.entries()) {
          await first.addMemory({ text, timestamp: t0 - (i + 1) * 86400000 });
        }
        const conn = pm.connection();
        await conn.call(db, "modelsIdle", {});
        await first.close();
        await conn.call(db, "close", {});
        const m = pm.createAgentMemory({ dbName: db, models: { embedder: "multilingual-e5-small" } });
        await m.ready;
        const loaded = await m.modelsReady;
        const during = await m.retrieve("office bike storage code");
        await conn.call(db, "modelsIdle", {});
        const after = [];
        for (const q of questions) after.push(await m.retrieve(q, { trace: true }));
        return { t0, before, loaded, during, after, stats: await m.stats() };
        """,
        "e5switch",
        NOTES,
        QUESTIONS,
    )
    assert result["before"]["embedder"]["name"].startswith("all-MiniLM-L6-v2")
    e5 = _cpython()
    loaded = result["loaded"]
    assert loaded["embedder"]["name"] == e5.name
    assert loaded["embedding"]["model"] == e5.name and loaded["embedding"]["items"] == len(NOTES)
    assert "7291" in result["during"]["memories"][0]["item"]["text"]  # BM25 while it re-embeds
    assert result["stats"]["embedding"] == {
        "model": e5.name, "embedded": len(NOTES), "items": len(NOTES),
    }  # fmt: skip

    # CPython, same notes, same embedder: the same memories in the same order, same text.
    async def cpython_run():
        mem = await Memory.open(MapKv(), clock=lambda: result["t0"])
        await mem.attach_embedder(e5)
        for i, note in enumerate(NOTES):
            await mem.add(note, timestamp=result["t0"] - (i + 1) * 86_400_000)
        await mem.embed_idle()
        out = [await mem.retrieve(q) for q in QUESTIONS]
        await mem.close()
        return out

    here = _sync(cpython_run())
    for q, browser, cpython in zip(QUESTIONS, result["after"], here, strict=True):
        assert browser["mode"] == "hybrid", q
        got = [m["item"]["text"] for m in browser["memories"]]
        want = [m.item.text for m in cpython.memories]
        # The same first memory. Near ties, and memories right at the floor, may differ:
        # this int8 model quantizes activations per batch, so a vector moves a little
        # (cosine >= 0.995) with the texts it was embedded beside, and the two runtimes
        # batch differently.
        assert got[0] == want[0], q
