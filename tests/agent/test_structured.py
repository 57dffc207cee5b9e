import json

import pytest
from helpers import DAY, HOUR, T0, Clock
from hypothesis import given, settings
from hypothesis import strategies as st

from pymemory import Memory
from pymemory.agent.structured import (
    DEFAULT_TTL_MS,
    StructuredMemory,
    canonical_json,
    cur_key,
    hist_key,
)
from pymemory.errors import ValidationError
from pymemory.storage import MapKv, SqliteKv


@pytest.fixture
def kv():
    return MapKv()


@pytest.fixture
def sm(kv, clock):
    return StructuredMemory(kv, clock=clock)


async def keys(kv, prefix="ns:"):
    return [k for k, _ in await kv.scan(prefix)]


def test_default_ttls():
    assert DEFAULT_TTL_MS == {"episodic": 7 * DAY, "semantic": None, "procedural": None}
    sm = StructuredMemory(MapKv(), ttl_ms={"semantic": 30 * DAY, "episodic": None})
    assert sm.ttl_for("semantic") == 30 * DAY
    assert sm.ttl_for("episodic") is None
    assert sm.ttl_for("procedural") is None
    with pytest.raises(ValidationError):
        StructuredMemory(MapKv(), ttl_ms={"working": DAY})
    with pytest.raises(ValidationError):
        StructuredMemory(MapKv(), ttl_ms={"semantic": 0})


async def test_put_get_and_layout(sm, kv):
    e = await sm.put("semantic", "user:42:profile", {"name": "Ana", "langs": ["pt", "en"]})
    assert (e.namespace, e.key, e.version, e.valid_from, e.valid_to) == (
        "semantic",
        "user:42:profile",
        1,
        T0,
        None,
    )
    assert e.expires_at is None and e.is_current
    got = await sm.get("semantic", "user:42:profile")
    assert got == e
    assert await sm.get("episodic", "user:42:profile") is None  # namespaces are separate
    assert await sm.get("semantic", "nope") is None
    assert await keys(kv) == ["ns:semantic:cur:user:42:profile"]
    assert await kv.get("meta:schema") is not None  # the store is versioned like Memory's


async def test_overwrite_keeps_history(sm, kv, clock):
    await sm.put("semantic", "city", "Porto", metadata={"source": "chat"})
    clock.advance(HOUR)
    e2 = await sm.put("semantic", "city", "Lisbon")
    assert e2.version == 2 and e2.valid_from == T0 + HOUR
    assert (await sm.get("semantic", "city")).value == "Lisbon"
    hist = await sm.history("semantic", "city")
    assert [(h.version, h.value, h.valid_from, h.valid_to) for h in hist] == [
        (1, "Porto", T0, T0 + HOUR),
        (2, "Lisbon", T0 + HOUR, None),
    ]
    assert hist[0].metadata == {"source": "chat"} and hist[1].metadata == {}
    assert await keys(kv) == [
        "ns:semantic:cur:city",
        "ns:semantic:hist:city#0000000001",
    ]


async def test_delete_closes_and_purge_erases(sm, kv, clock):
    await sm.put("semantic", "pet", "cat")
    clock.advance(1000)
    assert await sm.delete("semantic", "pet") is True
    assert await sm.get("semantic", "pet") is None
    assert await sm.delete("semantic", "pet") is False
    [old] = await sm.history("semantic", "pet")
    assert old.value == "cat" and old.valid_to == T0 + 1000
    clock.advance(1000)
    again = await sm.put("semantic", "pet", "dog")
    assert again.version == 2  # numbering continues after a delete
    assert [h.value for h in await sm.history("semantic", "pet")] == ["cat", "dog"]
    assert await sm.delete("semantic", "pet", purge=True) is True
    assert await sm.history("semantic", "pet") == []
    assert await keys(kv) == []


async def test_episodic_ttl_gate_before_decay(sm, kv, clock):
    await sm.put("episodic", "meeting", "Talked about the Q3 plan")
    await sm.put("semantic", "fact", "Sky is blue")
    clock.advance(7 * DAY - 1)
    assert (await sm.get("episodic", "meeting")).value == "Talked about the Q3 plan"
    clock.advance(1)
    # Expired: never returned, although decay() has not run and the record is still stored.
    assert await sm.get("episodic", "meeting") is None
    assert await sm.list("episodic") == []
    assert await sm.search("episodic", "Q3 plan") == []
    assert await sm.history("episodic", "meeting") == []
    assert "ns:episodic:cur:meeting" in await keys(kv)
    assert await sm.decay() == 1
    assert await keys(kv) == ["ns:semantic:cur:fact"]
    assert (await sm.get("semantic", "fact")).value == "Sky is blue"
    assert await sm.decay() == 0


async def test_decay_one_namespace_and_history_records(kv, clock):
    sm = StructuredMemory(kv, clock=clock, ttl_ms={"semantic": 10 * DAY})
    await sm.put("semantic", "k", "v1")
    clock.advance(5 * DAY)
    await sm.put("semantic", "k", "v2")
    await sm.put("episodic", "e", "x")
    clock.advance(6 * DAY)  # v1 (expires day 10) is gone, v2 (day 15) lives, e (day 12) lives
    assert [h.value for h in await sm.history("semantic", "k")] == ["v2"]
    assert await sm.decay("semantic") == 1
    assert await keys(kv) == ["ns:episodic:cur:e", "ns:semantic:cur:k"]
    clock.advance(DAY)
    assert await sm.decay("semantic") == 0
    assert await sm.decay("episodic") == 1


async def test_per_entry_ttl_override(sm, clock):
    forever = await sm.put("episodic", "keep", "forever", ttl_ms=None)
    short = await sm.put("semantic", "brief", "x", ttl_ms=1000)
    assert forever.expires_at is None and short.expires_at == T0 + 1000
    clock.advance(30 * DAY)
    assert await sm.get("episodic", "keep") is not None
    assert await sm.get("semantic", "brief") is None


async def test_overwriting_an_expired_entry(sm, clock):
    await sm.put("episodic", "k", "old")
    clock.advance(8 * DAY)
    e = await sm.put("episodic", "k", "new")
    assert e.version == 2
    assert [h.value for h in await sm.history("episodic", "k")] == ["new"]


async def test_list_order_prefix_limit(sm):
    for key in ["user:2:name", "user:1:name", "note:rust", "user:10:name"]:
        await sm.put("semantic", key, key.upper())
    assert [e.key for e in await sm.list("semantic")] == [
        "note:rust",
        "user:10:name",
        "user:1:name",
        "user:2:name",
    ]
    assert [e.key for e in await sm.list("semantic", prefix="user:1")] == [
        "user:10:name",
        "user:1:name",
    ]
    assert len(await sm.list("semantic", limit=2)) == 2
    with pytest.raises(ValidationError):
        await sm.list("semantic", limit=0)


async def test_keys_with_separator_characters_do_not_collide(sm, kv):
    await sm.put("semantic", "a", 1)
    await sm.put("semantic", "a", 2)
    await sm.put("semantic", "a#0000000001", "tricky")
    await sm.put("semantic", "a#0000000001", "tricky2")
    await sm.put("semantic", "100%", "pct")
    assert [h.value for h in await sm.history("semantic", "a")] == [1, 2]
    assert [h.value for h in await sm.history("semantic", "a#0000000001")] == ["tricky", "tricky2"]
    assert cur_key("semantic", "a#1%") == "ns:semantic:cur:a%231%25"
    assert hist_key("semantic", "a", 3) == "ns:semantic:hist:a#0000000003"
    assert sorted(e.key for e in await sm.list("semantic")) == ["100%", "a", "a#0000000001"]


async def test_search_ranks_by_terms(sm, clock):
    await sm.put(
        "procedural", "deploy", {"steps": "run the tests, then push to the release branch"}
    )
    await sm.put("procedural", "rollback", "revert the release tag and redeploy")
    await sm.put("procedural", "coffee", "grind beans, brew for four minutes")
    hits = await sm.search("procedural", "how do I push a release")
    assert [h.entry.key for h in hits] == ["deploy", "rollback"]
    assert hits[0].score > hits[1].score > 0
    both = await sm.search("procedural", "release")
    assert [h.entry.key for h in both] == ["rollback", "deploy"]  # BM25: the shorter text wins
    assert await sm.search("procedural", "release", limit=1) == both[:1]
    # The key itself is searchable.
    assert [h.entry.key for h in await sm.search("procedural", "coffee")] == ["coffee"]
    assert await sm.search("procedural", "unrelated words") == []
    assert await sm.search("procedural", "") == []
    assert await sm.search("semantic", "release") == []


async def test_search_cjk(sm):
    await sm.put("semantic", "pref", "用户喜欢喝绿茶")
    await sm.put("semantic", "other", "用户住在上海")
    hits = await sm.search("semantic", "绿茶")
    assert hits[0].entry.key == "pref" and len(hits) == 1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda sm: sm.put("working", "k", 1), "namespace must be one of"),
        (lambda sm: sm.put("semantic", "", 1), "key must be"),
        (lambda sm: sm.put("semantic", "a\nb", 1), "control characters"),
        (lambda sm: sm.put("semantic", "k" * 257, 1), "key must be"),
        (lambda sm: sm.put("semantic", 5, 1), "key must be a string"),
        (lambda sm: sm.put("semantic", "k", float("nan")), "finite"),
        (lambda sm: sm.put("semantic", "k", {1: "x"}), "non-string key"),
        (lambda sm: sm.put("semantic", "k", {"s": {1, 2}}), "not JSON"),
        (lambda sm: sm.put("semantic", "k", "\udc00"), "surrogate"),
        (lambda sm: sm.put("semantic", "k", "x" * 70_000), "over the limit"),
        (lambda sm: sm.put("semantic", "k", 1, metadata=[1]), "metadata"),
        (lambda sm: sm.put("semantic", "k", 1, ttl_ms=-5), "ttl_ms"),
        (lambda sm: sm.put("semantic", "k", 1, ttl_ms=True), "ttl_ms"),
        (lambda sm: sm.search("semantic", 5), "query"),
        (lambda sm: sm.search("semantic", "q", limit=0), "limit"),
        (lambda sm: sm.get("semantics", "k"), "namespace"),
    ],
)
async def test_bad_input_leaves_store_unchanged(sm, kv, call, match):
    await sm.put("semantic", "k", "original")
    before = await kv.scan("")
    with pytest.raises(ValidationError, match=match):
        await call(sm)
    assert await kv.scan("") == before


async def test_values_are_copies(sm):
    value = {"tags": ["a"]}
    e = await sm.put("semantic", "k", value)
    value["tags"].append("b")
    e.value["tags"].append("c")
    assert (await sm.get("semantic", "k")).value == {"tags": ["a"]}


async def test_tuples_become_lists(sm):
    e = await sm.put("semantic", "k", {"pair": (1, 2)})
    assert e.value == {"pair": [1, 2]} == (await sm.get("semantic", "k")).value


async def test_each_write_is_one_atomic_batch(clock):
    class CountingKv(MapKv):
        def __init__(self):
            super().__init__()
            self.batches = []

        async def put_many(self, items, *, deletes=()):
            self.batches.append((sorted(k for k, _ in items), list(deletes)))
            await super().put_many(items, deletes=deletes)

    kv = CountingKv()
    sm = StructuredMemory(kv, clock=clock)
    await sm.put("semantic", "k", 1)
    kv.batches.clear()
    await sm.put("semantic", "k", 2)
    await sm.delete("semantic", "k")
    assert kv.batches == [
        (["ns:semantic:cur:k", "ns:semantic:hist:k#0000000001"], []),
        (["ns:semantic:hist:k#0000000002"], ["ns:semantic:cur:k"]),
    ]


async def test_concurrent_puts_keep_every_version(sm):
    import asyncio

    await asyncio.gather(*(sm.put("semantic", "counter", i) for i in range(10)))
    hist = await sm.history("semantic", "counter")
    assert [h.version for h in hist] == list(range(1, 11))
    assert sum(h.is_current for h in hist) == 1


async def test_persists_in_sqlite_and_memory_can_share_the_store(tmp_path, clock):
    path = tmp_path / "s.db"
    kv = await SqliteKv.open(path)
    sm = StructuredMemory(kv, clock=clock)
    await sm.put("semantic", "lang", "Python")
    await sm.put("semantic", "lang", "Rust")
    await kv.close()

    kv = await SqliteKv.open(path)
    mem = await Memory.open(kv, clock=clock)  # the schema record was written: no SchemaError
    sm = StructuredMemory(kv, clock=clock)
    assert [h.value for h in await sm.history("semantic", "lang")] == ["Python", "Rust"]
    await mem.close()
    await kv.close()


async def test_corrupt_record_is_reported(sm, kv):
    await sm.put("semantic", "good", 1)
    await kv.put_many([("ns:semantic:cur:bad", b"{oops")])
    with pytest.raises(ValidationError, match="unreadable"):
        await sm.get("semantic", "bad")


def test_canonical_json():
    assert (
        canonical_json({"b": 1, "a": [1.5, None]}, "v", max_bytes=100) == '{"a":[1.5,null],"b":1}'
    )
    deep: list = []
    for _ in range(40):
        deep = [deep]
    with pytest.raises(ValidationError, match="deeper"):
        canonical_json(deep, "v", max_bytes=10_000)


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.text(max_size=20),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(json_values, min_size=1, max_size=4), key=st.text(min_size=1, max_size=20))
async def test_history_round_trips_any_json(values, key):
    key = "".join(c for c in key if ord(c) >= 0x20 and ord(c) != 0x7F) or "k"
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        key = "k"
    clock = Clock()
    sm = StructuredMemory(MapKv(), clock=clock)
    for v in values:
        await sm.put("semantic", key, v)
        clock.advance(1)
    hist = await sm.history("semantic", key)
    assert [h.value for h in hist] == [json.loads(json.dumps(v)) for v in values]
    assert [h.valid_to for h in hist] == [T0 + i + 1 for i in range(len(values) - 1)] + [None]
    assert (await sm.list("semantic"))[0].key == key
