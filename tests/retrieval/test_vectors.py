"""Vector stores: exact search, quantisation, incremental updates, KV persistence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymemory.errors import PymemoryError, StorageError, ValidationError
from pymemory.retrieval import vectors, vectors_kv
from pymemory.retrieval.vectors import (
    DTYPES,
    InMemoryVectorStore,
    VectorStore,
)
from pymemory.retrieval.vectors_kv import KvVectorStore, decode_vector, encode_vector
from pymemory.storage import MapKv
from pymemory.storage.sqlite import SqliteKv

DIM = 16


def unit_rows(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_force(data: np.ndarray, ids: list[str], q: np.ndarray, k: int) -> list[str]:
    scores = data @ (q / np.linalg.norm(q))
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [ids[i] for i in order[:k]]


# --- the in-memory store ------------------------------------------------------------------


def test_protocol_is_satisfied():
    assert isinstance(InMemoryVectorStore(DIM), VectorStore)
    assert isinstance(KvVectorStore(MapKv(), DIM), VectorStore)


def test_float32_search_is_exact_cosine():
    data = unit_rows(300)
    ids = [f"m{i:03d}" for i in range(300)]
    store = InMemoryVectorStore(DIM, "float32")
    store.put(ids, data * 3.0)  # scaled input: the store normalises
    for seed in range(5):
        q = unit_rows(1, seed=100 + seed)[0] * 0.5
        hits = store.search(q, 10)
        assert [h[0] for h in hits] == brute_force(data, ids, q, 10)
        expected = data @ (q / np.linalg.norm(q))
        for id, score in hits:
            assert score == pytest.approx(float(expected[ids.index(id)]), abs=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_search_is_blocked_correctly(monkeypatch, dtype):
    """Several small blocks give the same scores as one big block."""
    data = unit_rows(50)
    ids = [f"m{i}" for i in range(50)]
    store = InMemoryVectorStore(DIM, dtype)
    store.put(ids, data)
    q = unit_rows(1, seed=9)[0]
    whole = store.search(q, 50)
    monkeypatch.setattr(vectors, "BLOCK_ROWS", 7)
    blocked = store.search(q, 50)
    assert [h[0] for h in whole] == [h[0] for h in blocked]
    np.testing.assert_allclose([h[1] for h in whole], [h[1] for h in blocked], atol=1e-6)
    np.testing.assert_allclose(store.scores(q, ids), [dict(whole)[i] for i in ids], atol=1e-6)


@pytest.mark.parametrize(("dtype", "min_overlap"), [("float16", 0.99), ("int8", 0.95)])
def test_quantised_top10_overlap_with_float32(dtype, min_overlap):
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(40, 64)).astype(np.float32)
    data = centers[rng.integers(0, 40, 2000)] + 0.6 * rng.normal(size=(2000, 64))
    ids = [f"m{i}" for i in range(2000)]
    exact = InMemoryVectorStore(64, "float32")
    exact.put(ids, data)
    store = InMemoryVectorStore(64, dtype)
    store.put(ids, data)
    overlaps = []
    for j in range(50):
        q = centers[j % 40] + 0.6 * rng.normal(size=64)
        a = {h[0] for h in exact.search(q, 10)}
        b = {h[0] for h in store.search(q, 10)}
        overlaps.append(len(a & b) / 10)
    assert np.mean(overlaps) >= min_overlap


@pytest.mark.parametrize("dtype", DTYPES)
def test_get_returns_the_stored_direction(dtype):
    store = InMemoryVectorStore(DIM, dtype)
    v = unit_rows(1)[0]
    store.put(["a"], [v * 7])
    got = store.get("a")
    assert got is not None and got.dtype == np.float32
    tolerance = {"float32": 1e-7, "float16": 1e-3, "int8": 1e-2}[dtype]
    np.testing.assert_allclose(got, v, atol=tolerance)
    assert store.get("missing") is None


def test_bytes_per_item():
    assert InMemoryVectorStore(384, "int8").bytes_per_item == 384 + 9
    assert InMemoryVectorStore(384, "float16").bytes_per_item == 768 + 9
    assert InMemoryVectorStore(384, "float32").bytes_per_item == 1536 + 9


def test_allowed_ids_restrict_the_search():
    data = unit_rows(20)
    ids = [f"m{i:02d}" for i in range(20)]
    store = InMemoryVectorStore(DIM, "float32")
    store.put(ids, data)
    q = data[3]
    assert store.search(q, 1)[0][0] == "m03"
    allowed = ["m05", "m07", "nope", "m05"]
    hits = store.search(q, 10, allowed_ids=allowed)
    assert {h[0] for h in hits} == {"m05", "m07"}
    assert hits == sorted(hits, key=lambda h: (-h[1], h[0]))
    assert store.search(q, 10, allowed_ids=[]) == []
    assert store.search(q, 10, allowed_ids=["unknown"]) == []


def test_scores_by_ids_and_slots():
    data = unit_rows(5)
    store = InMemoryVectorStore(DIM, "float32")
    store.put(["a", "b", "c", "d", "e"], data)
    q = data[1]
    by_id = store.scores(q, ["b", "zz", "a"])
    assert by_id[0] == pytest.approx(1.0, abs=1e-6)
    assert np.isnan(by_id[1])
    assert by_id[2] == pytest.approx(float(data[0] @ data[1]), abs=1e-6)
    slots = store.slots_of(["b", "zz", "a"])
    assert slots[1] == -1
    np.testing.assert_array_equal(store.scores(q, slots), by_id)
    assert np.isnan(store.scores(q, np.array([99]))[0])


def test_zero_vectors():
    store = InMemoryVectorStore(DIM, "int8")
    store.put(["zero", "one"], np.vstack([np.zeros(DIM), unit_rows(1)[0]]))
    assert store.search(np.zeros(DIM), 5) == []  # a zero query matches nothing
    hits = dict(store.search(unit_rows(1)[0], 5))
    assert hits["zero"] == 0.0
    assert hits["one"] == pytest.approx(1.0, abs=1e-2)
    np.testing.assert_array_equal(store.scores(np.zeros(DIM), ["one", "x"])[:1], [0.0])


def test_ties_come_out_in_id_order():
    store = InMemoryVectorStore(DIM, "float32")
    v = unit_rows(1)[0]
    store.put(["c", "a", "b"], np.vstack([v, v, v]))
    assert [h[0] for h in store.search(v, 3)] == ["a", "b", "c"]
    assert [h[0] for h in store.search(v, 2)] == ["a", "b"]


def test_delete_frees_the_lowest_slot_for_reuse():
    store = InMemoryVectorStore(DIM, "int8", capacity=4)
    store.put(["a", "b", "c", "d"], unit_rows(4))
    capacity = store._rows.shape[0]
    store.remove(["b", "c", "unknown"])
    assert len(store) == 2 and "b" not in store
    store.put(["e"], unit_rows(1, seed=5))
    assert store.slot_of("e") == 1
    store.put(["f"], unit_rows(1, seed=6))
    assert store.slot_of("f") == 2
    assert store._rows.shape[0] == capacity  # reused, not grown
    store.remove(["d", "f"])  # trailing slots are given back
    assert len(store._id_at) == 2


def test_upsert_replaces_in_place_and_later_duplicates_win():
    store = InMemoryVectorStore(DIM, "float32")
    a, b = unit_rows(2)
    store.put(["x"], [a])
    slot = store.slot_of("x")
    store.put(["x", "x"], np.vstack([a, b]))
    assert store.slot_of("x") == slot and len(store) == 1
    np.testing.assert_allclose(store.get("x"), b, atol=1e-7)


@pytest.mark.parametrize(
    ("ids", "vectors"),
    [
        ("abc", np.zeros((3, DIM))),
        (["a"], np.zeros((1, DIM + 1))),
        (["a", "b"], np.zeros((1, DIM))),
        ([""], np.zeros((1, DIM))),
        ([7], np.zeros((1, DIM))),
        (["a"], np.full((1, DIM), np.nan)),
        (["a"], [["x"] * DIM]),
    ],
)
def test_bad_input_is_rejected_and_changes_nothing(ids, vectors):
    store = InMemoryVectorStore(DIM)
    store.put(["keep"], unit_rows(1))
    with pytest.raises(ValidationError):
        store.put(ids, vectors)
    assert store.ids() == ["keep"]


@pytest.mark.parametrize(
    "query", [np.zeros(DIM + 1), np.full(DIM, np.inf), "text", np.zeros((2, DIM))]
)
def test_bad_queries(query):
    store = InMemoryVectorStore(DIM)
    with pytest.raises(ValidationError):
        store.search(query, 3)


def test_constructor_validation():
    with pytest.raises(ValidationError):
        InMemoryVectorStore(0)
    with pytest.raises(ValidationError):
        InMemoryVectorStore(DIM, "bfloat16")  # type: ignore[arg-type]


# --- incremental updates equal a rebuild ---------------------------------------------------

ID_POOL = [f"id{i}" for i in range(12)]
op = st.one_of(
    st.tuples(
        st.just("put"),
        st.lists(st.sampled_from(ID_POOL), min_size=1, max_size=5),
        st.integers(0, 10_000),
    ),
    st.tuples(st.just("remove"), st.lists(st.sampled_from(ID_POOL), max_size=4), st.just(0)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from(DTYPES), ops=st.lists(op, max_size=25), q_seed=st.integers(0, 99))
def test_incremental_updates_equal_a_rebuild(dtype, ops, q_seed):
    store = InMemoryVectorStore(DIM, dtype, capacity=2)
    truth: dict[str, np.ndarray] = {}
    for kind, ids, seed in ops:
        if kind == "put":
            rows = unit_rows(len(ids), seed=seed) * (1 + seed % 3)
            store.put(ids, rows)
            for id, row in zip(ids, rows, strict=True):
                truth[id] = row
        else:
            store.remove(ids)
            for id in ids:
                truth.pop(id, None)
    fresh = InMemoryVectorStore(DIM, dtype)
    if truth:
        fresh.put(sorted(truth), np.vstack([truth[i] for i in sorted(truth)]))
    assert store.ids() == fresh.ids() == sorted(truth)
    for id in truth:
        row_a, scale_a = store.stored(id)  # type: ignore[misc]
        row_b, scale_b = fresh.stored(id)  # type: ignore[misc]
        np.testing.assert_array_equal(row_a, row_b)
        assert scale_a == scale_b
    q = unit_rows(1, seed=1000 + q_seed)[0]
    got, want = store.search(q, 20), fresh.search(q, 20)
    assert [h[0] for h in got] == [h[0] for h in want]
    np.testing.assert_allclose([h[1] for h in got], [h[1] for h in want], atol=1e-6)
    ids = sorted(truth)
    np.testing.assert_allclose(store.scores(q, ids), fresh.scores(q, ids), atol=1e-6)


# --- codec and KV persistence --------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_codec_round_trip_and_size(dtype):
    store = InMemoryVectorStore(384, dtype)
    store.put(["a"], unit_rows(1, dim=384))
    row, scale = store.stored("a")  # type: ignore[misc]
    raw = encode_vector(row, scale, dtype)
    assert len(raw) == {"int8": 394, "float16": 774, "float32": 1542}[dtype]
    got_dtype, got_row, got_scale = decode_vector(raw)
    assert got_dtype == dtype and got_scale == scale
    np.testing.assert_array_equal(got_row, row)


@pytest.mark.parametrize("raw", [b"", b"PV\x01\x00\x10\x00", b"XX\x01\x00\x01\x00\x00\x00\x00\x00"])
def test_codec_rejects_bad_records(raw):
    with pytest.raises(ValidationError):
        decode_vector(raw)


@pytest.fixture(params=["map", "sqlite"])
async def kv(request, tmp_path):
    if request.param == "map":
        store = MapKv()
    else:
        store = await SqliteKv.open(tmp_path / "vectors.db")
    yield store
    await store.close()


@pytest.mark.parametrize("dtype", DTYPES)
async def test_kv_store_round_trip(kv, dtype):
    data = unit_rows(30)
    ids = [f"mem-{i}" for i in range(30)]
    store = await KvVectorStore.open(kv, DIM, dtype)
    await store.upsert(ids, data)
    await store.delete(["mem-3", "mem-4", "unknown"])
    await store.upsert(["mem-3", "mem-30"], unit_rows(2, seed=7))
    assert len(await kv.scan("vec:")) == 30
    reopened = await KvVectorStore.open(kv, DIM, dtype)
    assert reopened.ids() == store.ids()
    for id in store.ids():
        a, b = store.stored(id), reopened.stored(id)
        np.testing.assert_array_equal(a[0], b[0])  # type: ignore[index]
        assert a[1] == b[1]  # type: ignore[index]
    q = unit_rows(1, seed=42)[0]
    assert reopened.search(q, 10) == store.search(q, 10)


async def test_kv_store_apply_is_one_batch_and_put_wins(kv):
    store = await KvVectorStore.open(kv, DIM, "float32", prefix="v1:")
    await store.upsert(["a", "b"], unit_rows(2))
    await store.apply(upserts=(["b", "c"], unit_rows(2, seed=3)), deletes=["a", "b"])
    assert store.ids() == ["b", "c"]
    assert [k for k, _ in await kv.scan("v1:")] == ["v1:b", "v1:c"]


async def test_kv_store_converts_dtype_on_load():
    kv = MapKv()
    data = unit_rows(10)
    ids = [f"m{i}" for i in range(10)]
    store = await KvVectorStore.open(kv, DIM, "float32")
    await store.upsert(ids, data)
    as_int8 = await KvVectorStore.open(kv, DIM, "int8")
    assert as_int8.ids() == ids
    for i, id in enumerate(ids):
        np.testing.assert_allclose(as_int8.get(id), data[i], atol=1e-2)


async def test_kv_store_dimension_mismatch_is_an_error():
    kv = MapKv()
    store = await KvVectorStore.open(kv, DIM, "int8")
    await store.upsert(["a"], unit_rows(1))
    with pytest.raises(ValidationError, match="embedder changed"):
        await KvVectorStore.open(kv, DIM * 2, "int8")


async def test_kv_store_skips_unreadable_records():
    kv = MapKv()
    store = await KvVectorStore.open(kv, DIM, "int8")
    await store.upsert(["good"], unit_rows(1))
    await kv.put_many([("vec:bad", b"garbage")])
    reopened = await KvVectorStore.open(kv, DIM, "int8")
    assert reopened.ids() == ["good"]
    assert reopened.corrupt_keys == ["vec:bad"]


async def test_kv_store_loads_in_chunks_like_in_one_go(monkeypatch):
    kv = MapKv()
    store = await KvVectorStore.open(kv, DIM, "int8")
    ids = [f"m{i:02d}" for i in range(11)]
    await store.upsert(ids, unit_rows(11))
    await kv.put_many([("vec:m05x", b"garbage")])
    whole = await KvVectorStore.open(kv, DIM, "int8")
    monkeypatch.setattr(vectors_kv, "LOAD_CHUNK", 3)  # 12 records: four chunks, one corrupt
    chunked = await KvVectorStore.open(kv, DIM, "int8")
    assert chunked.ids() == whole.ids() == ids
    assert chunked.corrupt_keys == whole.corrupt_keys == ["vec:m05x"]
    q = unit_rows(1, seed=5)[0]
    assert chunked.search(q, 11) == whole.search(q, 11)


class FailingKv(MapKv):
    async def put_many(self, items, *, deletes=()):
        raise StorageError("disk full")

    async def delete_many(self, keys):
        raise StorageError("disk full")


async def test_a_failed_write_changes_nothing():
    kv = FailingKv()
    store = await KvVectorStore.open(kv, DIM, "int8")
    with pytest.raises(StorageError):
        await store.upsert(["a"], unit_rows(1))
    assert len(store) == 0
    store._put_rows(["b"], np.zeros((1, DIM), dtype=np.int8), np.zeros(1, np.float32))
    with pytest.raises(StorageError):
        await store.delete(["b"])
    assert store.ids() == ["b"]


async def test_kv_store_rejects_bad_input_before_writing():
    kv = MapKv()
    store = await KvVectorStore.open(kv, DIM)
    with pytest.raises(ValidationError):
        await store.upsert(["a\x00b"], unit_rows(1))  # not a valid KV key
    with pytest.raises(ValidationError):
        await store.upsert(["a"], np.zeros((1, 3)))
    assert await kv.scan("vec:") == []


async def test_kv_store_needs_loading_and_async_writes():
    store = KvVectorStore(MapKv(), DIM)
    with pytest.raises(PymemoryError, match="not loaded"):
        store.search(unit_rows(1)[0], 3)
    await store.load()
    assert store.search(unit_rows(1)[0], 3) == []
    with pytest.raises(PymemoryError, match="async"):
        store.put(["a"], unit_rows(1))
    assert store.record_bytes == 6 + 4 + DIM
