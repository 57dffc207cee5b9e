"""Reciprocal-rank fusion: hand-computed cases, tie-breaking, and the slot variant."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymemory.errors import ValidationError
from pymemory.retrieval.fusion import MIN_COSINE_SPREAD, minmax_fusion, rrf, rrf_slots


def test_two_rankings_k60():
    fused = rrf([["a", "b", "c"], ["b", "d", "a"]])
    assert fused == [
        ("b", 1 / 62 + 1 / 61),
        ("a", 1 / 61 + 1 / 63),
        ("d", 1 / 62),
        ("c", 1 / 63),
    ]


def test_small_k_hand_computed():
    fused = dict(rrf([["x", "y"], ["y", "z"], ["z"]], k=0))
    assert fused == {"x": 1.0, "y": 1 / 2 + 1.0, "z": 1 / 2 + 1.0}


def test_weights_scale_each_ranking():
    assert rrf([["a"], ["b"]], k=1, weights=[2, 1]) == [("a", 1.0), ("b", 0.5)]
    assert rrf([["a"], ["b"]], k=1, weights=[1, 3]) == [("b", 1.5), ("a", 0.5)]


def test_a_zero_weight_ranking_contributes_nothing():
    assert rrf([["a"], ["b", "a"]], k=1, weights=[1, 0]) == [("a", 0.5)]


def test_an_id_repeated_in_a_ranking_counts_once_at_its_best_rank():
    assert rrf([["a", "b", "a", "a"]], k=0) == [("a", 1.0), ("b", 0.5)]
    # A repeat still takes up its position: "c" is third.
    assert rrf([["a", "a", "c"]], k=0) == [("a", 1.0), ("c", 1 / 3)]


def test_ties_break_by_best_rank_then_earlier_ranking():
    # Same score (1/61 + 1/62): both best-ranked 1st; "b" is first in the first ranking.
    assert [d for d, _ in rrf([["b", "a"], ["a", "b"]])] == ["b", "a"]
    # Same score 1/61 each, both first: the earlier ranking wins.
    assert [d for d, _ in rrf([["y"], ["x"]])] == ["y", "x"]
    # An exact three-way tie at 1.0 (k=0): c and e were ranked 1st, d only 2nd (twice).
    fused = rrf([["c", "d"], ["e", "d"]], k=0)
    assert dict(fused) == {"c": 1.0, "e": 1.0, "d": 1.0}
    assert [d for d, _ in fused] == ["c", "e", "d"]  # c and e were ranked 1st, d only 2nd


def test_order_does_not_depend_on_input_hashing():
    rankings = [[f"id{i}" for i in range(50)], [f"id{i}" for i in range(49, -1, -1)]]
    first = rrf(rankings)
    assert rrf([list(r) for r in rankings]) == first
    assert len({s for _, s in first}) < len(first)  # there are ties, settled the same way


def test_limit_and_empty_input():
    assert rrf([]) == []
    assert rrf([[], []]) == []
    assert rrf([["a", "b", "c"]], limit=2) == [("a", 1 / 61), ("b", 1 / 62)]


@pytest.mark.parametrize(
    ("rankings", "k", "weights"),
    [
        ("abc", 60, None),
        (["abc"], 60, None),
        ([["a"]], -1, None),
        ([["a"]], float("nan"), None),
        ([["a"]], True, None),
        ([["a"]], 60, [1, 2]),
        ([["a"]], 60, [-1]),
        ([["a"]], 60, ["x"]),
        ([[1, 2]], 60, None),
    ],
)
def test_bad_input(rankings, k, weights):
    with pytest.raises(ValidationError):
        rrf(rankings, k, weights)


def test_slots_hand_computed():
    slots, scores = rrf_slots([np.array([3, 1, 2]), np.array([1, 4, 3])], k=60)
    assert slots.tolist() == [1, 3, 4, 2]
    np.testing.assert_array_equal(scores, [1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 62, 1 / 63])
    assert slots.dtype == np.int64 and scores.dtype == np.float64


def test_slots_edge_cases():
    empty_slots, empty_scores = rrf_slots([])
    assert empty_slots.size == 0 and empty_scores.size == 0
    slots, scores = rrf_slots([[5, 5, 2]], k=0)
    assert slots.tolist() == [5, 2] and scores.tolist() == [1.0, 1 / 3]  # 2 is 3rd
    slots, _ = rrf_slots([[1], [2]], weights=[0, 1])
    assert slots.tolist() == [2]
    with pytest.raises(ValidationError):
        rrf_slots([np.array([[1, 2]])])
    with pytest.raises(ValidationError):
        rrf_slots([np.array([0.5])])


ranking = st.lists(st.integers(0, 30), max_size=25)


@settings(max_examples=200, deadline=None)
@given(
    rankings=st.lists(ranking, max_size=4),
    k=st.sampled_from([0, 1, 60, 2.5]),
    data=st.data(),
)
def test_slots_variant_equals_the_id_variant(rankings, k, data):
    weights = data.draw(
        st.none() | st.lists(st.sampled_from([0, 0.5, 1, 2]), min_size=len(rankings),
                             max_size=len(rankings))
    )  # fmt: skip
    by_id = rrf([[f"{s:03d}" for s in r] for r in rankings], k, weights)
    slots, scores = rrf_slots([np.array(r, dtype=np.int64) for r in rankings], k, weights)
    assert [int(d) for d, _ in by_id] == slots.tolist()
    assert [s for _, s in by_id] == scores.tolist()


def test_minmax_fusion_scales_each_signal_over_the_candidates():
    cos = np.array([0.2, 0.6, np.nan, 0.4])
    bm25 = np.array([0.0, 1.0, 4.0, 2.0])
    share = np.array([0.0, 0.1, 0.4, 0.2])
    d, lx = minmax_fusion(cos, bm25, share, lexical=0.4, dense=0.6)
    conf = 0.6  # the best absolute evidence: cosine 0.6 beats the best share 0.4
    assert lx == pytest.approx(conf * 0.4 * bm25 / 4.0)
    assert d[2] == 0  # no vector yet
    assert d[1] == pytest.approx(conf * 0.6) and d[3] == pytest.approx(conf * 0.6 * 0.5)
    assert 0 < d[0] < 1e-3  # the least similar candidate keeps a sliver: it is still one
    # Within a query the confidence changes no order; across queries it calibrates.
    weak_d, weak_lx = minmax_fusion(cos / 4, bm25, share / 4, lexical=0.4, dense=0.6)
    assert np.argsort(-(weak_d + weak_lx)).tolist() == np.argsort(-(d + lx)).tolist()
    assert (weak_d + weak_lx).max() < (d + lx).max()


def test_minmax_fusion_leans_on_bm25_when_cosines_do_not_separate():
    cos = np.array([0.30, 0.31, 0.32])  # a spread of 0.02: not a signal
    bm25 = np.array([3.0, 1.0, 0.0])
    d, lx = minmax_fusion(cos, bm25, np.array([0.5, 0.2, 0.0]), lexical=0.4, dense=0.6)
    assert np.argmax(d + lx) == 0  # BM25's best stays best
    assert d.max() == pytest.approx(0.5 * 0.6 * 0.02 / MIN_COSINE_SPREAD)  # conf 0.5: the share
    assert minmax_fusion(np.zeros(0), np.zeros(0), np.zeros(0), lexical=1, dense=1)[0].size == 0
