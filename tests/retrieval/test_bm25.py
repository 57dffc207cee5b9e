"""Tests for pymemory.retrieval.bm25.Bm25Index.

What the scores are checked against:

* hand-derived closed forms on a three-document corpus;
* ``reference_scores`` below, a direct transcription of the formula in plain Python;
* bm25s with ``method="lucene"``, whose idf and length normalisation are the ones we
  use (it stores scores as float32, hence the 1e-5 tolerance);
* rank_bm25's ``BM25Okapi`` with its idf table replaced by ours: its term weight carries
  the classic ``(k1 + 1)`` factor, so its scores must be ours times ``k1 + 1``.

And the central property: an index updated incrementally with any interleaving of add,
remove and replace scores exactly like an index built afresh from the surviving documents.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymemory.errors import ValidationError
from pymemory.retrieval.bm25 import Bm25Index

K1 = 1.2
B = 0.75


def reference_scores(
    docs: dict[int, list[str]], query: list[str], k1: float = K1, b: float = B
) -> dict[int, float]:
    """BM25 (Lucene variant) straight from the formula; only docs scoring > 0."""
    n = len(docs)
    if n == 0:
        return {}
    avgdl = sum(len(d) for d in docs.values()) / n
    df = Counter(t for d in docs.values() for t in set(d))
    out: dict[int, float] = {}
    for slot, doc in docs.items():
        tf = Counter(doc)
        score = 0.0
        for term in query:
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] / (tf[term] + k1 * (1 - b + b * len(doc) / avgdl))
        if score > 0:
            out[slot] = score
    return out


def as_dict(index: Bm25Index, query: list[str]) -> dict[int, float]:
    slots, scores = index.scores(query)
    return dict(zip(slots.tolist(), scores.tolist(), strict=True))


def build(docs: dict[int, list[str]], **kwargs) -> Bm25Index:
    index = Bm25Index(**kwargs)
    for slot, terms in docs.items():
        index.add(slot, terms)
    return index


def assert_same_scores(a: dict[int, float], b: dict[int, float], rtol: float) -> None:
    assert sorted(a) == sorted(b)
    for slot, value in a.items():
        assert value == pytest.approx(b[slot], rel=rtol, abs=0), slot


# ------------------------------------------------------------------ hand-computed values

TINY = {
    0: ["tea", "green"],
    1: ["tea", "tea", "black", "strong"],
    2: ["coffee"],
}
# N = 3, avgdl = 7/3.
# idf(tea) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6)
# idf(df=1) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3)
# norm(d0) = 1.2 * (0.25 + 0.75 * 2 / (7/3)) = 15/14
# norm(d1) = 1.2 * (0.25 + 0.75 * 4 / (7/3)) = 129/70
# norm(d2) = 1.2 * (0.25 + 0.75 * 1 / (7/3)) = 24/35
TEA_D0 = math.log(1.6) * 1 / (1 + 15 / 14)  # = ln(1.6) * 14/29
TEA_D1 = math.log(1.6) * 2 / (2 + 129 / 70)  # = ln(1.6) * 140/269
GREEN_D0 = math.log(8 / 3) * 1 / (1 + 15 / 14)
COFFEE_D2 = math.log(8 / 3) * 1 / (1 + 24 / 35)  # = ln(8/3) * 35/59


def test_hand_computed_single_term():
    index = build(TINY)
    slots, scores = index.scores(["tea"])
    assert slots.tolist() == [0, 1]
    assert scores.tolist() == pytest.approx([TEA_D0, TEA_D1], rel=1e-12)
    assert math.isclose(TEA_D0, 0.22689830377380343, rel_tol=1e-12)
    assert math.isclose(TEA_D1, 0.2446115542542862, rel_tol=1e-12)
    assert as_dict(index, ["coffee"]) == pytest.approx({2: COFFEE_D2}, rel=1e-12)
    assert math.isclose(COFFEE_D2, 0.5818478619561089, rel_tol=1e-12)


def test_hand_computed_multi_term():
    index = build(TINY)
    got = as_dict(index, ["tea", "green", "coffee"])
    assert got == pytest.approx({0: TEA_D0 + GREEN_D0, 1: TEA_D1, 2: COFFEE_D2}, rel=1e-12)
    assert got[0] == pytest.approx(0.7004020810898093, rel=1e-12)
    assert index.top_k(["tea", "green", "coffee"], 2) == [
        (0, pytest.approx(TEA_D0 + GREEN_D0, rel=1e-12)),
        (2, pytest.approx(COFFEE_D2, rel=1e-12)),
    ]


def test_duplicate_query_terms_count_each_time():
    index = build(TINY)
    once = as_dict(index, ["tea"])
    twice = as_dict(index, ["tea", "green", "tea"])
    assert twice[1] == pytest.approx(2 * once[1], rel=1e-12)
    assert twice[0] == pytest.approx(2 * once[0] + GREEN_D0, rel=1e-12)


def test_unknown_terms_contribute_nothing():
    index = build(TINY)
    assert as_dict(index, ["tea", "nope"]) == as_dict(index, ["tea"])
    slots, scores = index.scores(["nope"])
    assert slots.shape == (0,) and scores.shape == (0,)
    assert index.top_k(["nope"], 5) == []
    assert index.top_k([], 5) == []


def test_k1_and_b_are_used():
    docs = {0: ["a", "b", "b"], 1: ["a", "c", "d", "e", "f"], 2: ["g"]}
    for k1, b in [(0.0, 0.75), (2.0, 0.0), (0.9, 1.0), (1.5, 0.3)]:
        index = build(docs, k1=k1, b=b)
        expected = reference_scores(docs, ["a", "b"], k1=k1, b=b)
        assert_same_scores(as_dict(index, ["a", "b"]), expected, rtol=1e-12)


# ------------------------------------------------------------------ API behaviour


def test_result_types_and_order():
    index = build({5: ["x"], 2: ["x", "y"], 9: ["y"], 7: ["z"]})
    slots, scores = index.scores(["x", "y"])
    assert slots.dtype == np.int64 and scores.dtype == np.float64
    assert slots.tolist() == [2, 5, 9]
    assert (scores > 0).all()
    # the arrays are the caller's: changing them leaves the index alone
    slots[:] = 0
    scores[:] = -1
    assert index.scores(["x", "y"])[0].tolist() == [2, 5, 9]
    single_slots, single_scores = index.scores(["x"])
    single_slots[:] = 0
    single_scores[:] = -1
    assert index.scores(["x"])[0].tolist() == [2, 5]
    assert (index.scores(["x"])[1] > 0).all()


def test_top_k_ties_by_slot_and_bounds():
    docs = {slot: ["same", "len"] for slot in (8, 3, 5, 1)}
    docs[4] = ["other", "len"]
    index = build(docs)
    top = index.top_k(["same"], 3)
    assert [s for s, _ in top] == [1, 3, 5]
    assert len({v for _, v in top}) == 1
    assert [s for s, _ in index.top_k(["same"], 10)] == [1, 3, 5, 8]
    assert index.top_k(["same"], 0) == []
    assert index.top_k(["same"], -1) == []
    assert [s for s, _ in index.top_k(["len"], 10)] == [1, 3, 4, 5, 8]


def test_top_k_matches_sorted_scores():
    rng = random.Random(7)
    vocab = [f"t{i}" for i in range(30)]
    docs = {s: [rng.choice(vocab[: rng.randint(2, 30)]) for _ in range(rng.randint(0, 12))]
            for s in range(400)}  # fmt: skip
    index = build(docs)
    for _ in range(50):
        query = rng.sample(vocab, rng.randint(1, 5))
        slots, scores = index.scores(query)
        expected = sorted(zip(slots.tolist(), scores.tolist(), strict=True),
                          key=lambda p: (-p[1], p[0]))  # fmt: skip
        for k in (1, 3, 10, 1000):
            assert index.top_k(query, k) == expected[:k]


def test_len_contains_replace_remove():
    index = Bm25Index()
    assert len(index) == 0 and 0 not in index
    index.add(0, ["a", "b"])
    index.add(3, ["b"])
    assert len(index) == 2
    assert 0 in index and 3 in index and 1 not in index and 10**9 not in index
    assert "0" not in index and None not in index and True not in index
    index.add(0, ["c"])  # replace
    assert len(index) == 2
    assert index.doc_freq("a") == 0 and index.doc_freq("c") == 1
    assert as_dict(index, ["a"]) == {}
    index.remove(0)
    index.remove(0)  # absent: no-op
    index.remove(12345)  # never used: no-op
    assert len(index) == 1 and 0 not in index
    assert index.vocabulary_size == 1  # only "b" left
    assert index.doc_length(3) == 1
    with pytest.raises(KeyError):
        index.doc_length(0)


def test_empty_document_counts_in_n_and_avgdl():
    docs = {0: ["a"], 1: [], 2: ["b", "b", "b"]}
    index = build(docs)
    assert len(index) == 3 and 1 in index
    assert index.avgdl == pytest.approx(4 / 3)
    assert_same_scores(as_dict(index, ["a", "b"]), reference_scores(docs, ["a", "b"]), 1e-12)


def test_empty_index():
    index = Bm25Index()
    slots, scores = index.scores(["a"])
    assert slots.dtype == np.int64 and scores.dtype == np.float64 and slots.size == 0
    assert index.top_k(["a"], 3) == []
    assert index.avgdl == 0.0
    index.add(0, ["a"])
    index.remove(0)
    assert index.scores(["a"])[0].size == 0 and len(index) == 0


def test_slot_reuse_after_remove():
    index = build({0: ["a"], 1: ["a", "b"], 2: ["b"]})
    index.remove(1)
    index.add(1, ["c"])
    docs = {0: ["a"], 1: ["c"], 2: ["b"]}
    for q in (["a"], ["b"], ["c"], ["a", "b", "c"]):
        assert_same_scores(as_dict(index, q), reference_scores(docs, q), 1e-12)


def test_term_ids_are_recycled():
    index = Bm25Index()
    for round_ in range(5):
        for slot in range(20):
            index.add(slot, [f"r{round_}-{slot}", "shared"])
        assert index.vocabulary_size == 21
    assert index.doc_freq("r0-0") == 0
    assert len(index._terms) <= 41  # ids of vanished terms were reused


def test_postings_grow_and_shrink():
    rng = random.Random(5)
    docs = {s: ["common", *rng.choices("xyz", k=rng.randint(0, 3))] for s in range(500)}
    index = build(docs)
    for slot in rng.sample(range(500), 480):  # the postings of "common" shrink on the way
        index.remove(slot)
        del docs[slot]
    for slot in range(500, 520):
        docs[slot] = ["common", "x"]
        index.add(slot, docs[slot])
    for slot in (3, 1, 2):  # reused low slots go back in slot order
        docs[slot] = ["common"]
        index.add(slot, docs[slot])
    for q in (["common"], ["x", "y", "z"], ["common", "x"]):
        assert_same_scores(as_dict(index, q), reference_scores(docs, q), 1e-12)
        assert index.scores(q)[0].tolist() == sorted(reference_scores(docs, q))


def test_far_apart_slots():
    docs = {0: ["a", "b"], 7: ["b"], 250_000: ["a", "c"], 99_999: ["a", "b", "b"]}
    index = build(docs)
    for q in (["a"], ["b"], ["a", "b"], ["a", "b", "c"], ["c", "c"]):
        assert_same_scores(as_dict(index, q), reference_scores(docs, q), 1e-12)
        assert index.scores(q)[0].tolist() == sorted(reference_scores(docs, q))


def test_dense_and_sparse_summation_agree():
    # Many matching postings over few slots (dense bincount) and few postings over
    # many slots (sort-based) must give identical sums.
    rng = random.Random(3)
    docs = {s: [rng.choice("abcdef") for _ in range(rng.randint(1, 6))] for s in range(300)}
    dense = build(docs)
    sparse = build(docs)
    sparse.add(10_000_000, ["zzz"])
    sparse.remove(10_000_000)
    for q in (["a", "b"], ["a", "b", "c", "d", "e", "f"], ["f", "f", "a"]):
        a_slots, a_scores = dense.scores(q)
        b_slots, b_scores = sparse.scores(q)
        assert a_slots.tolist() == b_slots.tolist()
        assert a_scores.tolist() == b_scores.tolist()


def test_validation():
    index = Bm25Index()
    with pytest.raises(ValidationError):
        index.add(-1, ["a"])
    with pytest.raises(ValidationError):
        index.add(2**31, ["a"])
    with pytest.raises(TypeError):
        index.add(1.5, ["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.add(True, ["a"])
    with pytest.raises(TypeError):
        index.add(0, "abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.add(0, ["a", 1])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        index.scores("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.remove("0")  # type: ignore[arg-type]
    assert len(index) == 0  # nothing was written by the failed calls
    index.add(0, ["a"])
    with pytest.raises(TypeError):
        index.add(0, ["b", None])  # type: ignore[list-item]
    assert as_dict(index, ["a"]) == pytest.approx(reference_scores({0: ["a"]}, ["a"]))
    with pytest.raises(ValidationError):
        Bm25Index(k1=-1.0)
    with pytest.raises(ValidationError):
        Bm25Index(b=1.5)
    with pytest.raises(ValidationError):
        Bm25Index(k1=float("nan"))
    assert index.k1 == 1.2 and index.b == 0.75 and "Bm25Index" in repr(index)


def test_numpy_integer_slots():
    index = Bm25Index()
    index.add(np.int64(4), ["a"])
    assert np.int32(4) in index
    assert index.top_k(["a"], 1)[0][0] == 4
    assert type(index.top_k(["a"], 1)[0][0]) is int


# ------------------------------------------------------------------ incremental == rebuilt

VOCAB = ["a", "b", "c", "d", "e", "f", "g"]
SLOTS_SEEN = [*range(13), 40, 300, 5000]
SLOTS = st.sampled_from(SLOTS_SEEN)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), SLOTS, st.lists(st.sampled_from(VOCAB), max_size=8)),
        st.tuples(st.just("remove"), SLOTS, st.just([])),
    ),
    max_size=60,
)
QUERIES = [[t] for t in VOCAB] + [
    ["a", "b"],
    ["a", "a"],
    ["c", "d", "e", "f", "g"],
    VOCAB,
    ["b", "zzz", "b", "g"],
    ["zzz"],
]


@settings(max_examples=300, deadline=None)
@given(OPS, st.randoms(use_true_random=False))
def test_incremental_equals_rebuilt(ops, rnd):
    index = Bm25Index()
    alive: dict[int, list[str]] = {}
    for op, slot, terms in ops:
        if op == "add":
            index.add(slot, terms)
            alive[slot] = terms
        else:
            index.remove(slot)
            alive.pop(slot, None)
        assert len(index) == len(alive)

    order = list(alive)
    rnd.shuffle(order)
    rebuilt = Bm25Index()
    for slot in order:
        rebuilt.add(slot, alive[slot])

    for slot in SLOTS_SEEN:
        assert (slot in index) == (slot in alive) == (slot in rebuilt)
    for query in QUERIES:
        inc_slots, inc_scores = index.scores(query)
        new_slots, new_scores = rebuilt.scores(query)
        assert inc_slots.tolist() == new_slots.tolist()
        np.testing.assert_allclose(inc_scores, new_scores, rtol=1e-9, atol=0)
        assert_same_scores(as_dict(index, query), reference_scores(alive, query), 1e-12)
        inc_top = index.top_k(query, 3)
        new_top = rebuilt.top_k(query, 3)
        assert [s for s, _ in inc_top] == [s for s, _ in new_top]


# ------------------------------------------------------------------ other implementations


def random_corpus(seed: int, n_docs: int = 300, n_vocab: int = 60) -> list[list[str]]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(n_vocab)]
    weights = [1 / (i + 1) for i in range(n_vocab)]
    return [rng.choices(vocab, weights, k=rng.randint(1, 25)) for _ in range(n_docs)]


def random_queries(seed: int, n: int = 40) -> list[list[str]]:
    rng = random.Random(seed)
    return [[f"w{rng.randrange(70)}" for _ in range(rng.randint(1, 5))] for _ in range(n)]


def test_matches_bm25s_lucene():
    import bm25s  # the `bench` extra

    corpus = random_corpus(1)
    ours = build(dict(enumerate(corpus)))
    theirs = bm25s.BM25(method="lucene", k1=K1, b=B)
    theirs.index(corpus, show_progress=False)
    for query in random_queries(2):
        expected = np.asarray(theirs.get_scores(query), dtype=np.float64)
        slots, scores = ours.scores(query)
        dense = np.zeros(len(corpus))
        dense[slots] = scores
        np.testing.assert_allclose(dense, expected, rtol=1e-5, atol=1e-6)
        # Same ranking wherever bm25s's float32 scores are not (near-)tied.
        top = ours.top_k(query, 10)
        for (s1, v1), (s2, v2) in itertools.pairwise(top):
            if v1 - v2 > 1e-5:
                assert expected[s1] > expected[s2]


def test_matches_rank_bm25_with_lucene_idf():
    import rank_bm25  # the `bench` extra

    corpus = random_corpus(3)
    ours = build(dict(enumerate(corpus)))
    theirs = rank_bm25.BM25Okapi(corpus, k1=K1, b=B)
    n = theirs.corpus_size
    df = Counter(t for doc in corpus for t in set(doc))
    # BM25Okapi's idf is ln((N - df + 0.5) / (df + 0.5)) with a floor; use ours instead.
    theirs.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    for query in random_queries(4):
        expected = theirs.get_scores(query) / (K1 + 1)  # classic (k1 + 1) factor
        slots, scores = ours.scores(query)
        dense = np.zeros(len(corpus))
        dense[slots] = scores
        np.testing.assert_allclose(dense, expected, rtol=1e-12, atol=1e-15)
        order = np.lexsort((np.arange(len(corpus)), -expected))
        matched = int((expected > 0).sum())
        assert [s for s, _ in ours.top_k(query, 10)] == order[: min(10, matched)].tolist()
