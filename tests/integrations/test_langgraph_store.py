"""pymemory's LangGraph store where LangGraph leaves the choice to the store: bad input,
configuration, TTL sweeps, scores, the sync API, two instances over one SQLite file and
semantic search with the real MiniLM. (LangGraph's published behaviours:
test_langgraph_published.py; a LangGraph agent on the store: test_langgraph_agent.py.)
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from helpers import Clock
from langgraph.store.base import InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

from pymemory.errors import ValidationError
from pymemory.integrations.langgraph import PymemoryStore
from pymemory.storage import MapKv, SqliteKv

# --- bad input: typed errors, store unchanged ----------------------------------------------


@pytest.fixture
async def store():
    kv = MapKv()
    yield PymemoryStore(kv, clock=Clock())
    await kv.close()


@pytest.mark.parametrize(
    ("op", "error"),
    [
        (PutOp(("t",), "k", {"x": float("nan")}), ValidationError),
        (PutOp(("t",), "k", ["not", "a", "dict"]), ValidationError),  # type: ignore[arg-type]
        (PutOp(("t",), "k", {"x": 1}, ttl=-1), ValidationError),
        (PutOp(("t",), "k", {"x": 1}, ttl=1e300), ValidationError),
        (PutOp(("t",), "k", {"x": 1}, index="text"), ValidationError),  # type: ignore[arg-type]
        (PutOp(("t",), "a\x00b", {"x": 1}), ValidationError),
        (PutOp(("t",), "k" * 2000, {"x": 1}), ValidationError),
        (PutOp(("t",), 7, {"x": 1}), ValidationError),  # type: ignore[arg-type]
        (PutOp(("t\ud800",), "k", {"x": 1}), InvalidNamespaceError),
        (PutOp(("a.b",), "k", {"x": 1}), InvalidNamespaceError),
        (SearchOp(("t",), limit=-1), ValidationError),
        (SearchOp(("t",), offset=True), ValidationError),  # type: ignore[arg-type]
        (SearchOp(("t",), filter={"x": {"$gt": 1, "y": 2}}), ValidationError),
        (SearchOp(("t",), query=5), ValidationError),  # type: ignore[arg-type]
        (ListNamespacesOp(max_depth=0), ValidationError),
        ("not an op", ValidationError),
    ],
)
async def test_bad_input_raises_and_changes_nothing(store, op, error):
    await store.aput(("t",), "keep", {"v": 1})
    before = dict(store.kv._data)
    good = PutOp(("t",), "new", {"v": 2})
    with pytest.raises(error):
        await store.abatch([good, op])  # the good op in the same batch is not applied either
    assert store.kv._data == before
    assert issubclass(error, ValueError)  # both are ValueErrors, as LangGraph's stores raise


async def test_value_depth_limit(store):
    def nest(depth: int) -> Any:
        value: Any = "x"
        for _ in range(depth):
            value = {"a": value}
        return value

    await store.aput(("t",), "deep", nest(64))
    assert (await store.aget(("t",), "deep")).value == nest(64)
    with pytest.raises(ValidationError, match="nests deeper"):
        await store.aput(("t",), "deeper", nest(65))


def test_imports_without_sqlite3():
    """Pyodide may lack sqlite3: the module must not need it (SqliteKv is imported lazily)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['sqlite3'] = None; sys.modules['_sqlite3'] = None\n"
        "from pymemory.integrations.langgraph import PymemoryStore\n"
        "from pymemory.storage import MapKv\n"
        "s = PymemoryStore(MapKv()); s.put(('a',), 'k', {'v': 1})\n"
        "print(s.get(('a',), 'k').value)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "{'v': 1}"


async def test_store_rejects_bad_configuration():
    with pytest.raises(ValidationError):
        PymemoryStore({})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), ttl={"omit_expired": False})
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), ttl={"default_ttl": 0})
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), ttl={"sweep": 1})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), fields="text")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), embedder=object())  # type: ignore[arg-type]


# --- what LangGraph leaves to the store: our choices, checked ------------------------------


async def test_default_ttl_refresh_and_sweep():
    clock = Clock()
    kv = MapKv()
    store = PymemoryStore(kv, ttl={"default_ttl": 1, "refresh_on_read": False}, clock=clock)
    await store.aput(("t",), "short", {"v": 1})  # default_ttl applies
    await store.aput(("t",), "long", {"v": 2}, ttl=None)  # no expiry
    clock.advance(30_000)
    assert (await store.aget(("t",), "short")).value == {"v": 1}  # no refresh: config says so
    clock.advance(40_000)
    assert await store.aget(("t",), "short") is None
    assert await store.alist_namespaces() == [("t",)]  # "long" still lives there
    await store.aput(("x",), "gone", {"v": 3}, ttl=0.5)
    clock.advance(60_000)
    assert await store.alist_namespaces() == [("t",)]  # an expired-only namespace is not listed
    assert await store.asweep_ttl() == 1  # "short" was deleted by the read that saw it expired
    assert [k for k in kv._data if k.startswith("lg:i:")] == ["lg:i:t..long"]


async def test_search_scores_and_sort_keys():
    store = PymemoryStore(MapKv(), clock=Clock())
    await store.aput(("u",), "a", {"text": "the cat sat on the mat"})
    await store.aput(("u",), "b", {"text": "a cat and a hat"})
    await store.aput(("u",), "c", {"text": "dogs bark"})
    found = await store.asearch(("u",), query="cat hat")
    assert [r.key for r in found] == ["b", "a", "c"]
    assert found[0].score > found[1].score > 0 == found[2].score
    assert all(0 <= r.score <= 1 for r in found)
    assert found[0].value == {"text": "a cat and a hat"}
    assert found[0].created_at.tzinfo is not None


async def test_value_keeps_key_order_and_fields_index():
    store = PymemoryStore(MapKv(), fields=["title"], clock=Clock())
    await store.aput(("d",), "1", {"z": "last", "title": "garden tools", "body": "hammer"})
    await store.aput(("d",), "2", {"title": "kitchen", "body": "garden hose"})
    assert list((await store.aget(("d",), "1")).value) == ["z", "title", "body"]
    found = await store.asearch(("d",), query="garden")
    assert [(r.key, r.score > 0) for r in found] == [("1", True), ("2", False)]  # title only
    await store.aput(("d",), "3", {"title": "x", "body": "garden"}, index=["body"])
    found = await store.asearch(("d",), query="garden", limit=2)
    assert {r.key for r in found} == {"1", "3"}


def test_sync_methods_work_outside_and_refuse_inside_a_loop():
    store = PymemoryStore(MapKv(), clock=Clock())
    store.put(("s",), "k", {"v": 1})
    assert store.get(("s",), "k").value == {"v": 1}
    assert [i.key for i in store.search(("s",))] == ["k"]
    assert store.list_namespaces() == [("s",)]
    assert store.sweep_ttl() == 0

    async def inside() -> None:
        with pytest.raises(asyncio.InvalidStateError):
            store.get(("s",), "k")
        await store.aget(("s",), "k")  # the store now knows this loop
        # From a worker thread, the sync API runs its coroutine on this loop.
        item = await asyncio.to_thread(store.get, ("s",), "k")
        assert item.value == {"v": 1}

    asyncio.run(inside())


async def test_keys_do_not_clash_and_a_memory_opens_the_same_kv():
    from pymemory import Memory

    kv = MapKv()
    store = PymemoryStore(kv, clock=Clock())
    await store.aput(("users", "1"), "k.with..dots", {"v": 1})
    await store.aput(("users",), "1", {"v": 2})
    assert (await store.aget(("users", "1"), "k.with..dots")).value == {"v": 1}
    assert [i.key for i in await store.asearch(("users", "1"))] == ["k.with..dots"]
    assert {i.key for i in await store.asearch(("users",))} == {"k.with..dots", "1"}
    assert all(k.startswith(("lg:", "meta:")) for k in kv._data)
    memory = await Memory.open(kv)  # one KV: the store and a Memory side by side
    assert (await store.aget(("users",), "1")).value == {"v": 2}
    await memory.close()


# --- two instances over one SQLite file -----------------------------------------------


async def test_two_instances_over_one_sqlite_file_see_each_other(tmp_path):
    path = tmp_path / "shared.db"
    kv_a, kv_b = await SqliteKv.open(path), await SqliteKv.open(path)
    clock = Clock()
    a, b = PymemoryStore(kv_a, clock=clock), PymemoryStore(kv_b, clock=clock)
    try:
        await a.aput(("u", "1"), "pref", {"theme": "dark"})
        item = await b.aget(("u", "1"), "pref")
        assert item.value == {"theme": "dark"}
        clock.advance(1000)
        await b.aput(("u", "1"), "pref", {"theme": "light"})  # an update from the other side
        again = await a.aget(("u", "1"), "pref")
        assert again.value == {"theme": "light"}
        assert again.created_at == item.created_at and again.updated_at > item.updated_at
        await b.adelete(("u", "1"), "pref")
        assert await a.aget(("u", "1"), "pref") is None
        assert await a.alist_namespaces() == []

        # Many writes at once from both: nothing lost, every key created exactly once.
        await asyncio.gather(
            *(a.aput(("n",), f"a{i}", {"i": i}) for i in range(20)),
            *(b.aput(("n",), f"b{i}", {"i": i}) for i in range(20)),
            *(b.aput(("n",), "both", {"from": "b", "i": i}) for i in range(5)),
            *(a.aput(("n",), "both", {"from": "a", "i": i}) for i in range(5)),
        )
        seen_a = await a.asearch(("n",), limit=100)
        seen_b = await b.asearch(("n",), limit=100)
        assert len(seen_a) == 41 and [i.key for i in seen_a] == [i.key for i in seen_b]
        seqs = [json.loads(await kv_a.get("lg:i:n.." + i.key))["seq"] for i in seen_a]
        assert sorted(seqs) == list(range(seqs[0], seqs[0] + 41))
    finally:
        await kv_a.close()
        await kv_b.close()


# --- semantic search with the real MiniLM ---------------------------------------------


async def test_minilm_finds_a_paraphrase():
    from pymemory.models import load_minilm
    from pymemory.models.ort import OrtRuntime

    embedder = await load_minilm(OrtRuntime(intra_op_threads=1))
    memories = [
        ("m1", {"memory": "The user prefers dark mode in every editor."}),
        ("m2", {"memory": "The user lives in Lisbon and works remotely."}),
        ("m3", {"memory": "The user's dog is called Biscuit."}),
        ("m4", {"memory": "Quarterly reports are due on the first Monday."}),
    ]
    semantic = PymemoryStore(MapKv(), embedder=embedder, clock=Clock())
    lexical = PymemoryStore(MapKv(), clock=Clock())
    for key, value in memories:
        await semantic.aput(("u", "memories"), key, value)
        await lexical.aput(("u", "memories"), key, value)
    query = "What is the name of my pet?"  # shares no word with the answer
    found = await semantic.asearch(("u", "memories"), query=query, limit=2)
    assert found[0].key == "m3" and found[0].score > found[1].score
    assert [r.score for r in await lexical.asearch(("u", "memories"), query=query)] == [0.0] * 4
    assert (await semantic.asearch(("u",), query="Which city is home?", limit=1))[0].key == "m2"
