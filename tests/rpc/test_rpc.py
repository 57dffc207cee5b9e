"""The JSON API the worker serves, exercised in CPython over MapKv."""

import json

import pytest

from pymemory.browser.rpc import RpcApi
from pymemory.storage import MapKv, SqliteKv


@pytest.fixture
async def api():
    stores: dict[str, MapKv] = {}

    async def factory(name):
        return stores.setdefault(name, MapKv())

    api = RpcApi(factory, feedback_flush_s=3600)
    yield api
    await api.close_all()


async def call(api, method, params=None, db="db", progress=None):
    return json.loads(await api.call(db, method, json.dumps(params or {}), progress))


async def ok(api, method, params=None, **kw):
    answer = await call(api, method, params, **kw)
    assert answer["ok"], answer
    return answer["result"]


async def test_round_trip_in_js_naming(api):
    item = await ok(api, "addMemory", {"text": "I like green tea", "type": "user_preference",
                                       "ttlMs": 60_000, "metadata": {"source": "chat-input"}})  # fmt: skip
    assert item["ttlMs"] == 60_000 and item["contentMethod"] == "verbatim"
    assert item["metadata"]["source"] == "chat-input"
    got = await ok(api, "retrieve", {"query": "green tea", "trace": True, "maxItems": 3})
    assert got["memories"][0]["item"]["id"] == item["id"]
    assert {"feedbackWeight", "bm25", "decay", "score", "tokens", "line"} <= set(got["memories"][0])
    assert got["trace"][0]["status"] == "included"
    assert got["tokensUsed"] > 0
    stats = await ok(api, "stats")
    assert stats["items"] == 1 and stats["byType"] == {"user_preference": 1}


async def test_history_in_js_naming(api):
    added = (await call(api, "addMemory", {"text": "The office is on floor 3."}))["result"]
    await call(api, "update", {"id": added["id"], "text": "The office is on floor 5."})
    answer = await call(api, "history", {"id": added["id"]})
    assert answer["ok"], answer
    first, current = answer["result"]
    assert first["item"]["content"] == "The office is on floor 3." and first["item"]["version"] == 1
    assert current["item"]["content"] == "The office is on floor 5." and current["validTo"] is None
    assert first["validTo"] == current["validFrom"] and first["validFrom"] == added["timestamp"]
    assert first["conflict"] is False and current["conflict"] is False


async def test_errors_carry_codes(api):
    cases = [
        ("addMemory", {"text": 5}, "invalid_input"),
        ("addMemory", {"txt": "typo"}, "invalid_input"),
        ("get", {}, "invalid_input"),
        ("get", {"id": "nope"}, "not_found"),
        ("history", {}, "invalid_input"),
        ("history", {"id": "nope"}, "not_found"),
        ("retrieve", {"query": "x", "strategy": {"kind": "?"}}, "invalid_strategy"),
        ("importJsonl", {"text": "junk"}, "invalid_import"),
        ("nonsense", {}, "unknown_method"),
        ("clear", {"all": "yes"}, "invalid_input"),
    ]
    for method, params, code in cases:
        answer = await call(api, method, params)
        assert not answer["ok"] and answer["error"]["code"] == code, (method, answer)
    answer = json.loads(await api.call("db", "stats", "{not json"))
    assert answer["error"]["code"] == "invalid_input"
    answer = json.loads(await api.call("", "stats", "{}"))
    assert answer["error"]["code"] == "invalid_input"


async def test_databases_are_separate_and_import_reports_progress(api):
    await ok(api, "addMany", {"entries": [{"text": f"n{i}"} for i in range(5)]}, db="a")
    text = await ok(api, "exportJsonl", db="a")
    seen = []
    result = await ok(api, "importJsonl", {"text": text, "chunkSize": 2}, db="b",
                      progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert result == {"added": 5, "replaced": 0, "skipped": 0, "archived": 0}
    assert seen == [(2, 5), (4, 5), (5, 5)]
    assert await ok(api, "exportJsonl", db="b") == text
    assert (await ok(api, "clear", {"all": True}, db="a")) == 5
    assert (await ok(api, "stats", db="b"))["items"] == 5


async def test_kv_conformance_through_rpc(api):
    results = await ok(api, "runKvConformance")
    assert results and all(r["ok"] for r in results)


async def test_load_models_hashing_embedder_turns_on_hybrid(api):
    await ok(api, "addMemory", {"text": "the bike shed code is 4471"})
    assert (await ok(api, "retrieve", {"query": "bike shed"}))["mode"] == "bm25"
    loaded = await ok(api, "loadModels", {"embedder": "hashing"})
    assert loaded["embedder"]["name"].startswith("hashing-384")
    assert (await ok(api, "modelsIdle"))["embedded"] == 1
    got = await ok(api, "retrieve", {"query": "bike shed", "trace": True})
    assert got["mode"] == "hybrid" and got["memories"][0]["dense"] > 0
    await ok(api, "loadModels", {"embedder": "hashing"})  # idempotent
    bad_hashing = ({"seed": "7"}, {"seed": True}, {"depth": 2}, [7])
    for bad in ({"embedder": "bert"}, {"embedder": 1}, *({"embedder": "hashing", "hashing": h}
                                                          for h in bad_hashing)):  # fmt: skip
        answer = await call(api, "loadModels", bad)
        assert answer["error"]["code"] == "invalid_input"


async def test_load_models_with_other_hashing_options_re_embeds_the_store(tmp_path):
    api = RpcApi(lambda name: SqliteKv.open(tmp_path / f"{name}.db"), feedback_flush_s=3600)
    await ok(api, "addMany", {"entries": [{"text": f"note {i}"} for i in range(5)]})
    first = await ok(api, "loadModels", {"embedder": "hashing"})
    assert first["embedding"]["items"] == 5
    await ok(api, "modelsIdle")
    await ok(api, "close")
    await ok(api, "open")
    loaded = await ok(api, "loadModels", {"embedder": "hashing", "hashing": {"seed": 7}})
    assert loaded["embedder"]["name"].endswith("-s7")
    assert loaded["embedding"] == {"model": loaded["embedder"]["name"], "embedded": 0, "items": 5}
    assert (await ok(api, "modelsIdle"))["embedded"] == 5
    stats = await ok(api, "stats")
    assert stats["embedding"] == {"model": loaded["embedder"]["name"], "embedded": 5, "items": 5}
    await api.close_all()


async def test_retrieve_condenses_to_fit_unless_told_not_to(api):
    text = ("The quarterly garden budget review covered three points. We agreed to replace the "
            "old hoses before May. The compost bins move behind the shed next weekend.")  # fmt: skip
    await ok(api, "addMemory", {"text": text})
    full = await ok(api, "retrieve", {"query": "garden budget review"})
    budget = full["memories"][0]["tokens"] - 8
    tight = await ok(api, "retrieve", {"query": "garden budget review", "maxTokens": budget})
    assert tight["memories"][0]["condensed"] and tight["tokensUsed"] <= budget
    strict = await ok(api, "retrieve", {"query": "garden budget review", "maxTokens": budget,
                                        "condense": False})  # fmt: skip
    assert strict["memories"] == []
    answer = await call(api, "retrieve", {"query": "x", "condense": "no"})
    assert answer["error"]["code"] == "invalid_input"
