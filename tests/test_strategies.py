"""Strategy values: construction, composition semantics, serialisation."""

import json

import pytest

from pymemory import StrategyError
from pymemory.retrieval.strategies import (
    DECAY_FLOOR,
    DECAY_HALF_LIFE_HOURS,
    DEFAULT_STRATEGY,
    by_scope,
    by_tag,
    by_type,
    compile_strategy,
    compose,
    feedback_weight,
    from_dict,
    fusion,
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
    assert 0 < DECAY_FLOOR < 1  # old memories weigh less but are never dropped
    assert plan.fusion == fusion()
    assert (plan.feedback.liked, plan.feedback.disliked, plan.feedback.important) == (5, 0.1, 3)


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
    ],
)
def test_invalid(build):
    with pytest.raises(StrategyError):
        build()
