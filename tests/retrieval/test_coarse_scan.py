"""The coarse first pass of vector search: sign codes kept in step, exact re-rank, recall."""

from __future__ import annotations

import numpy as np
import pytest

from pymemory.retrieval import coarse
from pymemory.retrieval.coarse import COARSE_MIN_ROWS, candidate_count, sign_codes
from pymemory.retrieval.vectors import InMemoryVectorStore


def clustered(rng: np.random.Generator, n: int, dim: int, clusters: int) -> np.ndarray:
    centers = rng.standard_normal((clusters, dim), dtype=np.float32)
    noise = rng.standard_normal((n, dim), dtype=np.float32)
    return centers[rng.integers(0, clusters, n)] + np.float32(0.8) * noise


def store_of(vectors: np.ndarray, coarse_min_rows: int | None, **kw) -> InMemoryVectorStore:
    store = InMemoryVectorStore(vectors.shape[1], **kw)
    store.coarse_min_rows = coarse_min_rows
    store.put([f"m{i:06d}" for i in range(len(vectors))], vectors)
    return store


@pytest.fixture
def short_lists(monkeypatch):
    """Shortlists of 40+ rows, so that the coarse pass runs on small stores."""
    monkeypatch.setattr(coarse, "COARSE_CANDIDATES", 40)
    monkeypatch.setattr(coarse, "COARSE_PER_K", 4)


def fresh_codes(store: InMemoryVectorStore) -> np.ndarray:
    """The store's codes computed afresh, as word columns like the kept ones."""
    return coarse.word_columns(sign_codes(store._rows, store._codes.width))


def overlap_at_k(got: list[tuple[str, float]], exact: list[tuple[str, float]], k: int) -> float:
    """Share of ``got``'s top-k that score at least the exact k-th best (tie-aware)."""
    kth = exact[min(k, len(exact)) - 1][1]
    return sum(score >= kth for _, score in got[:k]) / min(k, len(exact))


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32"])
def test_codes_stay_in_step_through_add_replace_remove_and_growth(dtype, short_lists):
    rng = np.random.default_rng(1)
    dim = 70  # not a multiple of 64: padding bits stay zero
    store = store_of(rng.normal(size=(300, dim)), coarse_min_rows=100, dtype=dtype)
    assert store._codes.nbytes == 0  # nothing built before a large search
    assert store.search(rng.normal(size=dim), 5)
    assert store._codes.synced(store._rows)
    assert store._codes.words(store._rows).shape == (2, store._rows.shape[0])  # 16 bytes

    store.put([f"m{i:06d}" for i in range(0, 300, 3)], rng.normal(size=(100, dim)))  # replace
    store.remove([f"m{i:06d}" for i in range(1, 300, 7)])
    store.put([f"n{i}" for i in range(700)], rng.normal(size=(700, dim)))  # reuse + grow
    store.remove(["n699", "n698", "unknown"])  # trailing slots given back
    assert store._codes.synced(store._rows)  # kept up, not rebuilt
    assert np.array_equal(store._codes.words(store._rows), fresh_codes(store))
    dead = ~store._alive
    assert not store._codes.words(store._rows)[:, dead].any()


def test_a_replaced_matrix_is_coded_again(short_lists):
    rng = np.random.default_rng(2)
    store = store_of(rng.normal(size=(400, 32)), coarse_min_rows=100)
    store.search(rng.normal(size=32), 3)
    # What a reload does: the arrays are swapped for ones decoded elsewhere.
    other = store_of(rng.normal(size=(400, 32)), coarse_min_rows=100)
    store._rows, store._inv_norm, store._scale = other._rows, other._inv_norm, other._scale
    assert not store._codes.synced(store._rows)
    q = rng.normal(size=32)
    assert store.search(q, 10) == other.search(q, 10)
    assert np.array_equal(store._codes.words(store._rows), fresh_codes(store))


def test_below_the_threshold_results_are_identical_to_the_exact_scan():
    rng = np.random.default_rng(3)
    vectors = clustered(rng, COARSE_MIN_ROWS - 1, 48, 50)
    default = store_of(vectors, coarse_min_rows=COARSE_MIN_ROWS)
    exact = store_of(vectors, coarse_min_rows=None)
    allowed = [f"m{i:06d}" for i in range(0, COARSE_MIN_ROWS - 1, 2)]
    for q in rng.normal(size=(20, 48)):
        assert default.search(q, 10) == exact.search(q, 10)
        assert default.search(q, 100, allowed) == exact.search(q, 100, allowed)
    assert default._codes.nbytes == 0  # the codes were never needed


def test_the_re_rank_returns_exact_scores_and_respects_the_mask(short_lists):
    rng = np.random.default_rng(4)
    n = 6000
    store = store_of(clustered(rng, n, 64, 40), coarse_min_rows=1000)
    removed = {f"m{i:06d}" for i in range(0, n, 5)}
    store.remove(sorted(removed))
    allowed = [f"m{i:06d}" for i in range(n) if i % 3]
    for q in rng.normal(size=(10, 64)):
        assert store._coarse_on(len(store), 10)
        got = store.search(q, 10)
        assert len(got) == 10 and not removed & {i for i, _ in got}
        ids = [i for i, _ in got]
        exact = store.scores(q, ids)
        assert [s for _, s in got] == exact.tolist()  # the very same float32 values
        assert got == sorted(got, key=lambda p: (-p[1], p[0]))
        some = store.search(q, 10, allowed)
        assert {i for i, _ in some} <= set(allowed) - removed
        assert [s for _, s in some] == store.scores(q, [i for i, _ in some]).tolist()


def test_top_10_overlap_with_the_exact_scan_on_clustered_vectors():
    rng = np.random.default_rng(5)
    vectors = clustered(rng, 24_000, 384, 300)
    store = store_of(vectors, coarse_min_rows=COARSE_MIN_ROWS)
    exact = store_of(vectors, coarse_min_rows=None)
    queries = vectors[rng.integers(0, len(vectors), 60)] + 0.8 * rng.normal(size=(60, 384))
    queries = queries.astype(np.float32)
    assert store._coarse_on(len(store), 10)
    recall = [overlap_at_k(store.search(q, 10), exact.search(q, 10), 10) for q in queries]
    assert np.mean(recall) >= 0.99
    assert store._codes.nbytes  # the coarse pass did run


def test_the_shortlist_keeps_ties_and_skips_excluded_rows():
    dist = np.array([5, 1, 3, 3, 3, 0, 9, 2], dtype=np.uint16)
    assert coarse.shortlist(dist, 3).tolist() == [1, 5, 7]
    assert coarse.shortlist(dist, 4).tolist() == [1, 2, 3, 4, 5, 7]  # every 3 tied
    excluded = np.zeros(8, dtype=bool)
    excluded[[5, 6]] = True
    assert coarse.shortlist(dist, 2, excluded).tolist() == [1, 7]
    assert coarse.shortlist(dist, 100, excluded).tolist() == [0, 1, 2, 3, 4, 7]
    assert coarse.shortlist(np.zeros(0, dtype=np.uint16), 3).tolist() == []


@pytest.mark.parametrize("bitwise_count", [False, True])
def test_both_popcounts_agree_with_a_bit_by_bit_count(monkeypatch, bitwise_count):
    if bitwise_count and not coarse._HAS_BITWISE_COUNT:
        pytest.skip("numpy < 2.0 has no bitwise_count")  # the table path is checked
    monkeypatch.setattr(coarse, "_HAS_BITWISE_COUNT", bitwise_count)
    rng = np.random.default_rng(6)
    rows = rng.normal(size=(500, 200))
    width = coarse.code_width(200)
    codes = sign_codes(rows, width)
    query = sign_codes(rng.normal(size=(1, 200)), width)[0]
    want = (np.unpackbits(codes, axis=1) != np.unpackbits(query)).sum(axis=1)
    assert coarse.hamming(coarse.word_columns(codes), query).tolist() == want.tolist()


def test_the_shortlist_grows_with_k():
    assert candidate_count(10) == coarse.COARSE_CANDIDATES
    assert candidate_count(10_000) == coarse.COARSE_PER_K * 10_000
    store = store_of(np.eye(8, 16).repeat(10, axis=0), coarse_min_rows=1)
    assert not store._coarse_on(80, 10)  # shortlist as large as the store: exact


async def test_a_persisted_store_reopened_or_reloaded_searches_alike(short_lists):
    from pymemory.retrieval.vectors_kv import KvVectorStore
    from pymemory.storage import MapKv

    rng = np.random.default_rng(7)
    kv = MapKv()
    store = await KvVectorStore.open(kv, 24)
    store.coarse_min_rows = 100
    await store.upsert([f"m{i:04d}" for i in range(500)], rng.normal(size=(500, 24)))
    queries = rng.normal(size=(10, 24))
    assert [store.search(q, 5) for q in queries]
    assert store._codes.nbytes
    await store.delete(["m0001", "m0002"])
    await store.upsert(["m0003"], rng.normal(size=(1, 24)))
    after = [store.search(q, 5) for q in queries]
    await store.load()  # the arrays replaced by ones read back
    assert [store.search(q, 5) for q in queries] == after
    again = await KvVectorStore.open(kv, 24)
    again.coarse_min_rows = 100
    assert [again.search(q, 5) for q in queries] == after
    assert np.array_equal(again._codes.words(again._rows), fresh_codes(again))
