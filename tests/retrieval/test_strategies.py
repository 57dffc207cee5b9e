"""Strategy values: construction, composition semantics, serialisation."""

import json

import pytest

from pymemory import StrategyError
from pymemory.item import MEMORY_TYPES
from pymemory.retrieval.plan import compile_strategy
from pymemory.retrieval.strategies import (
    DECAY_FLOOR,
    DECAY_HALF_LIFE_HOURS,
    DEFAULT_STRATEGY,
    by_scope,
    by_tag,
    by_type,
    compose,
    feedback_weight,
    from_dict,
    fusion,
    relevance_floor,
    time_decay,
    time_window,
    to_dict,
)

ALL = [
    time_window(24),
    time_window(since_ms=5, until_ms=10),
    by_tag("a", "b"),
    by_tag(["a"], match="all"),
    by_type("message", "tool_result"),
    by_scope("conversation:1"),
    time_decay(12, floor=0.5),
    time_decay(None),
    time_decay(by_type={"tool_result": {"half_life_hours": 2, "floor": 0.1}}, query_window=1.0),
    fusion(method="rrf", k=10),
    fusion(lexical=0.5, power=1.5),
    fusion(method="score", context=()),
    fusion(context=(0.7, 0.2, 0.1)),
    relevance_floor(0.3, 0.2),
    relevance_floor(0, 0),
    feedback_weight(liked=2, disliked=0, important=4),
    compose(time_window(72), by_tag("project_x"), feedback_weight(liked=3)),
    compose([compose(by_type("message")), time_decay(1)]),
]


@pytest.mark.parametrize("strategy", ALL, ids=lambda s: s.kind)
def test_round_trip_through_json(strategy):
    data = json.loads(json.dumps(to_dict(strategy)))
    assert from_dict(data) == strategy


def test_default_keeps_everything_with_decay_and_feedback():
    plan = compile_strategy(DEFAULT_STRATEGY)
    assert plan.since(10**12) is None and plan.scopes is None and plan.types is None
    assert plan.decay.half_life_hours == DECAY_HALF_LIFE_HOURS and plan.decay.floor == DECAY_FLOOR
    assert plan.decay.rule("message") == (None, 1.0)  # what was said does not fade
    assert plan.decay.rule("user_preference") == (None, 1.0)
    half_life, floor = plan.decay.rule("tool_result")
    assert half_life == 24 and 0 < floor < 1  # stale fast, but never dropped
    assert plan.fusion == fusion() and plan.fusion.method == "minmax"
    assert plan.floor == relevance_floor() and not plan.floor.off
    assert (plan.feedback.liked, plan.feedback.disliked, plan.feedback.important) == (1.5, 0.5, 1.5)


def test_time_decay_forms():
    uniform = time_decay(12, floor=0.25)
    assert {uniform.rule(t) for t in MEMORY_TYPES} == {(12.0, 0.25)}
    assert {time_decay(None).rule(t)[0] for t in MEMORY_TYPES} == {None}
    assert time_decay(floor=0.9).rule("message") == (720.0, 0.9)  # the other value filled in
    mixed = time_decay(by_type={"tool_result": {"floor": 0.1}, "message": {"half_life_hours": 48}})
    assert mixed.rule("tool_result") == (24.0, 0.1) and mixed.rule("message") == (48.0, 1.0)
    assert mixed.rule("user_preference") == (None, 1.0)
    assert from_dict(to_dict(mixed)) == mixed
    for bad in (
        {"kind": "time_decay", "by_type": {"nope": {"floor": 0.5}}},
        {"kind": "time_decay", "by_type": {"message": {"floor": 2}}},
        {"kind": "time_decay", "by_type": {"message": {"speed": 2}}},
        {"kind": "time_decay", "by_type": ["message"]},
        {"kind": "time_decay", "query_window": 0},
        {"kind": "fusion", "method": "magic"},
        {"kind": "fusion", "power": 0},
        {"kind": "relevance_floor", "min_dense": 1.5},
        {"kind": "relevance_floor", "min_lexical": -1},
    ):
        with pytest.raises(StrategyError):
            from_dict(bad)


def test_compose_semantics():
    plan = compile_strategy(
        compose(
            by_type("message", "tool_result"),
            by_type("tool_result", "system_event"),
            time_window(72),
            time_window(24),
            feedback_weight(liked=2),
            feedback_weight(liked=9),
            by_tag("x"),
            by_tag("y", "z"),
        )
    )
    assert plan.types == {"tool_result"}  # filters intersect
    assert plan.window_hours == 24
    assert plan.feedback.liked == 9  # later weight overrides
    assert plan.tags_any == [{"x"}, {"y", "z"}]  # each tag group must match
    assert compile_strategy(by_tag("x")).decay == time_decay()  # defaults still apply


@pytest.mark.parametrize(
    "build",
    [
        lambda: time_window(),
        lambda: time_window(0),
        lambda: by_tag(),
        lambda: by_tag("x", match="most"),
        lambda: by_type("chat"),
        lambda: by_scope("has space"),
        lambda: time_decay(-1),
        lambda: time_decay(10, floor=1.5),
        lambda: feedback_weight(liked=float("inf")),
        lambda: feedback_weight(liked=True),
        lambda: compose("not a strategy"),
        lambda: fusion(method="linear"),
        lambda: fusion(context=(1.5,)),
        lambda: fusion(context=(-0.1,)),
        lambda: fusion(context="0.5"),
        lambda: fusion(context=0.5),
        lambda: fusion(context=[0.1] * 9),
        lambda: fusion(context=[float("nan")]),
        lambda: from_dict({"kind": "fusion", "context": {"a": 1}}),
    ],
)
def test_invalid(build):
    with pytest.raises(StrategyError):
        build()
