"""Retrieval strategies (seed 002 §3.3): small values that compose and serialise.

Filters (``time_window``, ``by_tag``, ``by_type``, ``by_scope``) combine with AND.
Weights (``time_decay``, ``feedback_weight``, ``fusion``, ``relevance_floor``) replace
the defaults; in ``compose`` a later one overrides an earlier one of the same kind. Every
strategy starts from the default, ``compose(time_decay(), feedback_weight(), fusion(),
relevance_floor())``.

How they score (``pipeline.py``)::

    score = relevance x decay x feedback x time_match

``relevance`` comes from the query alone (``fusion``): with an embedder, BM25 scaled by the
best candidate's and the cosine scaled between the worst and the best candidate's, added
(0.4 / 0.6) and times the query's confidence; without one, the share of the query's BM25
weight a memory matches; either way lifted towards a better-scoring neighbour turn
(``context``). ``decay``, ``feedback`` and ``time_match`` only re-rank: by default
messages and preferences do not decay at all, tool results and system events fall to
x0.5 / x0.7, feedback gives x0.5..x2.25 and a time phrase x1.5, so they order comparably
relevant memories and do not lift chatter over a clear answer
(``tests/retrieval/test_ranking.py`` holds that as a property). ``relevance_floor`` leaves out
memories that are not relevant at all.

The fusion defaults were chosen on the tune half of the LoCoMo dev split (real
conversations, ``benchmarks/tune_locomo.py``), and checked on its other half and on
every shipped suite; docs/BENCHMARKS.md has the grids and the numbers. The decay and
floor defaults come from ``benchmarks/tune_retrieval.py`` on the generated suites (they
re-rank and abstain; they were not re-chosen).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import StrategyError, ValidationError
from ..item import MAX_TIMESTAMP_MS, MEMORY_TYPES, check_scope, check_tag

HOUR_MS = 3_600_000
# Bounds that keep every score and time computation finite: a window or half-life up to
# a thousand years, weights up to a million, and compose nested at most 16 deep.
MAX_HOURS = 24 * 366 * 1000
MAX_WEIGHT = 1e6
MAX_COMPOSE_DEPTH = 16

# Defaults, in one place (the JS builders leave unset options to these).
#: Per memory type: (half-life in hours or None for no decay, floor). Messages and
#: preferences do not fade: on long conversations every decay of messages we measured
#: cost recall (docs/BENCHMARKS.md), and what someone said months ago is still what they
#: said. Feedback on an answer fades over months; tool results and system events go
#: stale fast (yesterday's weather is not today's).
DECAY_BY_TYPE: dict[str, tuple[float | None, float]] = {
    "message": (None, 1.0),
    "user_feedback": (2160.0, 0.8),
    "user_preference": (None, 1.0),
    "tool_result": (24.0, 0.5),
    "system_event": (168.0, 0.7),
}
DECAY_HALF_LIFE_HOURS = DECAY_BY_TYPE["message"][0]
DECAY_FLOOR = DECAY_BY_TYPE["message"][1]
#: What ``time_decay(floor=...)`` or ``time_decay(half_life_hours)`` fill in for the value
#: not given (one decay for every type).
UNIFORM_HALF_LIFE_HOURS = 720.0
UNIFORM_FLOOR = 0.5
#: Lift for memories written inside a time span the query names ("last weekend").
QUERY_WINDOW_BOOST = 1.5
FUSION_METHODS = ("minmax", "score", "rrf")
#: Chosen on the tune half of the LoCoMo dev split (real conversations), checked on its
#: other half and on every shipped suite (``benchmarks/tune_locomo.py``, docs/BENCHMARKS.md).
FUSION_METHOD = "minmax"
FUSION_K = 60.0
FUSION_LEXICAL = 0.4
FUSION_DENSE = 0.6
FUSION_POWER = 2.0
FUSION_DEPTH = 100
#: A memory moves this share of the way up to a better-scoring neighbour (the memory just
#: before or after it in the same conversation), then the next one out, ...
FUSION_CONTEXT = (0.5, 0.4)
MAX_CONTEXT_TURNS = 8
FLOOR_MIN_DENSE = 0.15
FLOOR_MIN_LEXICAL = 0.05
FEEDBACK_LIKED = 1.5
FEEDBACK_DISLIKED = 0.5
FEEDBACK_IMPORTANT = 1.5

_UNSET: Any = object()


@dataclass(frozen=True)
class TimeWindow:
    """Keep items newer than ``hours`` and/or within [since_ms, until_ms] (epoch ms)."""

    hours: float | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    kind: str = field(default="time_window", init=False)


@dataclass(frozen=True)
class ByTag:
    """Keep items carrying any (or all) of ``tags``."""

    tags: tuple[str, ...]
    match: Literal["any", "all"] = "any"
    kind: str = field(default="by_tag", init=False)


@dataclass(frozen=True)
class ByType:
    types: tuple[str, ...]
    kind: str = field(default="by_type", init=False)


@dataclass(frozen=True)
class ByScope:
    scopes: tuple[str, ...]
    kind: str = field(default="by_scope", init=False)


def _default_rules() -> tuple[tuple[str, float | None, float], ...]:
    return tuple((t, *DECAY_BY_TYPE[t]) for t in MEMORY_TYPES)


@dataclass(frozen=True)
class TimeDecay:
    """Multiply scores by ``floor + (1 - floor) * 0.5 ** (age / half_life)``, with a
    half-life and floor per memory type (``rules``: ``(type, half_life_hours, floor)``;
    a half-life of None means no decay for that type). ``query_window``: the factor for
    memories inside a time span the query names ("what did I do last weekend?"); 1 turns
    it off."""

    rules: tuple[tuple[str, float | None, float], ...] = field(default_factory=_default_rules)
    query_window: float = QUERY_WINDOW_BOOST
    kind: str = field(default="time_decay", init=False)

    def rule(self, type: str) -> tuple[float | None, float]:
        """(half-life in hours or None, floor) for memories of ``type``."""
        for t, half_life, floor in self.rules:
            if t == type:
                return half_life, floor
        raise StrategyError(f"time_decay has no rule for type {type!r}")

    @property
    def half_life_hours(self) -> float | None:
        """The half-life of messages (the most common type)."""
        return self.rule("message")[0]

    @property
    def floor(self) -> float:
        """The floor of messages."""
        return self.rule("message")[1]


@dataclass(frozen=True)
class FeedbackWeight:
    """Multiply scores by ``liked`` (more likes than dislikes), ``disliked`` (more dislikes)
    and ``important`` (pinned). A weight of 0 removes the item. The defaults re-rank
    (x1.5, x0.5, x1.5); a large weight lets feedback overrule relevance."""

    liked: float = FEEDBACK_LIKED
    disliked: float = FEEDBACK_DISLIKED
    important: float = FEEDBACK_IMPORTANT
    kind: str = field(default="feedback_weight", init=False)


@dataclass(frozen=True)
class Fusion:
    """How a memory's relevance is made from BM25 and the embedding, once an embedder is
    on (taking the ``depth`` nearest memories by embedding as candidates, with every
    memory BM25 matches).

    ``method="minmax"`` (default): ``lexical * bm25 / best bm25 + dense * (cosine -
    worst) / max(best - worst, 0.1)`` over the query's candidates, times the query's
    confidence (the best candidate's absolute evidence: its cosine or its share of the
    query's BM25 weight), so scores still compare across queries. ``method="score"``:
    ``dense * max(cosine, 0) + lexical * share ** power``, where ``share`` is the memory's
    BM25 score over the query's total idf (0..1). ``method="rrf"``: reciprocal-rank
    fusion, ``dense / (k + dense rank) + lexical / (k + BM25 rank)``.

    ``context`` (every method, and BM25 alone): a turn means what it means beside its
    neighbours. A memory moves ``context[0]`` of the way up to the relevance of a
    better-scoring neighbour (the memory just before or after it in the same scope, with
    no gap of more than ``CONTEXT_GAP_MS`` between them), ``context[1]`` towards the one
    two away, and so on; ``()`` turns it off.
    """

    k: float = FUSION_K
    lexical: float = FUSION_LEXICAL
    dense: float = FUSION_DENSE
    depth: int = FUSION_DEPTH
    method: str = FUSION_METHOD
    power: float = FUSION_POWER
    context: tuple[float, ...] = FUSION_CONTEXT
    kind: str = field(default="fusion", init=False)


@dataclass(frozen=True)
class RelevanceFloor:
    """Leave out memories that are not relevant to the query at all: a candidate stays
    only if its cosine is at least ``min_dense`` (with an embedder) or it matches at least
    ``min_lexical`` of the query's BM25 weight, or keeps company with one that does
    (``pipeline.in_company``). Both 0 turn the floor off. Cut memories
    show as ``below_floor`` in the trace; an empty query (recency) has no floor."""

    min_dense: float = FLOOR_MIN_DENSE
    min_lexical: float = FLOOR_MIN_LEXICAL
    kind: str = field(default="relevance_floor", init=False)

    @property
    def off(self) -> bool:
        return self.min_dense == 0 and self.min_lexical == 0


@dataclass(frozen=True)
class Compose:
    strategies: tuple[Strategy, ...]
    kind: str = field(default="compose", init=False)


Strategy = (
    TimeWindow
    | ByTag
    | ByType
    | ByScope
    | TimeDecay
    | FeedbackWeight
    | Fusion
    | RelevanceFloor
    | Compose
)


# --- constructors -----------------------------------------------------------------------


def _number(
    name: str,
    value: Any,
    *,
    minimum: float = 0.0,
    maximum: float = MAX_WEIGHT,
    allow_none: bool = False,
) -> Any:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StrategyError(f"{name} must be a finite number, got {_short(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite or not minimum <= value <= maximum:
        raise StrategyError(
            f"{name} must be a number in {minimum:g}..{maximum:,.0f}, got {_short(value)}"
        )
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _ms(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TIMESTAMP_MS:
        raise StrategyError(f"{name} must be epoch milliseconds (an int >= 0), got {_short(value)}")
    return value


def _strings(name: str, values: tuple[Any, ...]) -> tuple[str, ...]:
    """Accept ``f("a", "b")`` as well as ``f(["a", "b"])``."""
    if len(values) == 1 and not isinstance(values[0], str):
        values = values[0]
    if not isinstance(values, (list, tuple)) or not values:
        raise StrategyError(f"{name} needs a non-empty list of strings")
    return tuple(values)


def time_window(
    hours: float | None = None, *, since_ms: int | None = None, until_ms: int | None = None
) -> TimeWindow:
    if hours is None and since_ms is None and until_ms is None:
        raise StrategyError("time_window needs hours, since_ms or until_ms")
    hours = _number("time_window.hours", hours, maximum=MAX_HOURS, allow_none=True)
    if hours is not None and hours <= 0:
        raise StrategyError("time_window.hours must be > 0")
    since, until = _ms("time_window.since_ms", since_ms), _ms("time_window.until_ms", until_ms)
    if since is not None and until is not None and since > until:
        raise StrategyError("time_window.since_ms is after until_ms")
    return TimeWindow(hours, since, until)


def by_tag(*tags: str | Iterable[str], match: str = "any") -> ByTag:
    flat = _strings("by_tag", tags)
    if not isinstance(match, str) or match not in ("any", "all"):
        raise StrategyError(f"by_tag.match must be 'any' or 'all', got {match!r}")
    try:
        return ByTag(tuple(check_tag(t) for t in flat), match)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise StrategyError(f"by_tag: {exc}") from None


def by_type(*types: str | Iterable[str]) -> ByType:
    flat = _strings("by_type", types)
    for t in flat:
        if not isinstance(t, str) or t not in MEMORY_TYPES:
            known = ", ".join(MEMORY_TYPES)
            raise StrategyError(f"by_type: unknown type {t!r}; use one of {known}")
    return ByType(flat)


def by_scope(*scopes: str | Iterable[str]) -> ByScope:
    flat = _strings("by_scope", scopes)
    try:
        return ByScope(tuple(check_scope(s) for s in flat))
    except ValidationError as exc:
        raise StrategyError(f"by_scope: {exc}") from None


def _decay_rule(name: str, half_life: Any, floor: Any) -> tuple[float | None, float]:
    half_life = _number(f"{name}.half_life_hours", half_life, maximum=MAX_HOURS, allow_none=True)
    if half_life is not None and half_life <= 0:
        raise StrategyError(f"{name}.half_life_hours must be > 0 (or None for no decay)")
    floor = _number(f"{name}.floor", floor)
    if floor > 1:
        raise StrategyError(f"{name}.floor must be in 0..1")
    return (None if half_life is None else float(half_life)), float(floor)


def time_decay(
    half_life_hours: float | None = _UNSET,
    *,
    floor: float = _UNSET,
    by_type: Mapping[str, Mapping[str, Any]] | None = None,
    query_window: float = QUERY_WINDOW_BOOST,
) -> TimeDecay:
    """Time decay. No arguments: the per-type defaults (:data:`DECAY_BY_TYPE`).
    ``half_life_hours`` and/or ``floor`` set one decay for every type (the value not given:
    30 days, floor 0.5; ``time_decay(None)`` turns decay off). ``by_type`` then overrides
    single types: ``{"tool_result": {"half_life_hours": 6, "floor": 0.2}}``."""
    rules = {t: DECAY_BY_TYPE[t] for t in MEMORY_TYPES}
    if half_life_hours is not _UNSET or floor is not _UNSET:
        hl = UNIFORM_HALF_LIFE_HOURS if half_life_hours is _UNSET else half_life_hours
        fl = UNIFORM_FLOOR if floor is _UNSET else floor
        rule = _decay_rule("time_decay", hl, fl)
        rules = dict.fromkeys(MEMORY_TYPES, rule)
    if by_type is not None:
        if not isinstance(by_type, Mapping):
            raise StrategyError("time_decay.by_type must map types to {half_life_hours, floor}")
        for t, spec in by_type.items():
            if t not in MEMORY_TYPES:
                raise StrategyError(f"time_decay.by_type: unknown type {t!r}")
            if not isinstance(spec, Mapping) or set(spec) - {"half_life_hours", "floor"}:
                raise StrategyError(
                    f"time_decay.by_type[{t!r}] must be an object with half_life_hours and/or floor"
                )
            hl, fl = rules[t]
            rules[t] = _decay_rule(
                f"time_decay.by_type[{t!r}]", spec.get("half_life_hours", hl), spec.get("floor", fl)
            )
    query_window = _number("time_decay.query_window", query_window)
    if not 0 < query_window <= 10:
        raise StrategyError("time_decay.query_window must be in (0, 10] (1 turns it off)")
    return TimeDecay(tuple((t, *rules[t]) for t in MEMORY_TYPES), float(query_window))


def feedback_weight(
    liked: float = FEEDBACK_LIKED,
    disliked: float = FEEDBACK_DISLIKED,
    important: float = FEEDBACK_IMPORTANT,
) -> FeedbackWeight:
    return FeedbackWeight(
        float(_number("feedback_weight.liked", liked)),
        float(_number("feedback_weight.disliked", disliked)),
        float(_number("feedback_weight.important", important)),
    )


def fusion(
    k: float = FUSION_K,
    lexical: float = FUSION_LEXICAL,
    dense: float = FUSION_DENSE,
    depth: int = FUSION_DEPTH,
    *,
    method: str = FUSION_METHOD,
    power: float = FUSION_POWER,
    context: Iterable[float] = FUSION_CONTEXT,
) -> Fusion:
    """See :class:`Fusion`. ``k`` is used by ``method="rrf"``, ``power`` by ``"score"``."""
    if method not in FUSION_METHODS:
        raise StrategyError(f"fusion.method must be one of {', '.join(FUSION_METHODS)}")
    k = _number("fusion.k", k)
    if k <= 0:
        raise StrategyError("fusion.k must be > 0")
    lexical, dense = _number("fusion.lexical", lexical), _number("fusion.dense", dense)
    power = _number("fusion.power", power)
    if not 0 < power <= 8:
        raise StrategyError("fusion.power must be in (0, 8]")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 10_000:
        raise StrategyError("fusion.depth must be an int in 1..10000")
    if isinstance(context, (str, bytes, Mapping)) or not isinstance(context, Iterable):
        raise StrategyError("fusion.context must be a list of numbers in 0..1")
    context = tuple(itertools.islice(context, MAX_CONTEXT_TURNS + 1))
    if len(context) > MAX_CONTEXT_TURNS:
        raise StrategyError(f"fusion.context takes at most {MAX_CONTEXT_TURNS} weights")
    weights = tuple(float(_number("fusion.context", w)) for w in context)
    if any(w > 1 for w in weights):
        raise StrategyError("fusion.context weights must be in 0..1")
    return Fusion(float(k), float(lexical), float(dense), depth, method, float(power), weights)


def relevance_floor(
    min_dense: float = FLOOR_MIN_DENSE, min_lexical: float = FLOOR_MIN_LEXICAL
) -> RelevanceFloor:
    """See :class:`RelevanceFloor`; ``relevance_floor(0, 0)`` turns the floor off."""
    min_dense = _number("relevance_floor.min_dense", min_dense)
    min_lexical = _number("relevance_floor.min_lexical", min_lexical)
    if min_dense > 1 or min_lexical > 1:
        raise StrategyError("relevance_floor thresholds must be in 0..1")
    return RelevanceFloor(float(min_dense), float(min_lexical))


def compose(*strategies: Strategy | Iterable[Strategy]) -> Compose:
    if len(strategies) == 1 and isinstance(strategies[0], (list, tuple)):
        strategies = tuple(strategies[0])
    for s in strategies:
        if not isinstance(s, Strategy):  # type: ignore[arg-type]
            raise StrategyError(f"compose takes strategies, got {type(s).__name__}")
    return Compose(tuple(strategies))  # type: ignore[arg-type]


DEFAULT_STRATEGY = compose(time_decay(), feedback_weight(), fusion(), relevance_floor())


# --- serialisation ----------------------------------------------------------------------


def to_dict(strategy: Strategy) -> dict[str, Any]:
    """A JSON-ready dict, e.g. ``{"kind": "by_tag", "tags": ["x"], "match": "any"}``."""
    if isinstance(strategy, Compose):
        return {"kind": "compose", "strategies": [to_dict(s) for s in strategy.strategies]}
    if isinstance(strategy, TimeDecay):
        return {
            "kind": "time_decay",
            "by_type": {t: {"half_life_hours": h, "floor": f} for t, h, f in strategy.rules},
            "query_window": strategy.query_window,
        }
    out = {k: v for k, v in strategy.__dict__.items() if k != "kind"}
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
    return {"kind": strategy.kind, **out}


_BUILDERS: dict[str, Any] = {
    "time_window": time_window,
    "by_tag": lambda tags, match="any": by_tag(*_as_list(tags), match=match),
    "by_type": lambda types: by_type(*_as_list(types)),
    "by_scope": lambda scopes: by_scope(*_as_list(scopes)),
    "time_decay": time_decay,
    "feedback_weight": feedback_weight,
    "fusion": fusion,
    "relevance_floor": relevance_floor,
    "compose": lambda strategies: compose([from_dict(s) for s in _as_list(strategies)]),
}


def _as_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise StrategyError(f"expected a JSON list, got {type(value).__name__}")
    return value


def from_dict(data: Any) -> Strategy:
    """Parse ``to_dict`` output (e.g. from JS). Raises StrategyError when malformed."""
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        raise StrategyError("a strategy is an object with a 'kind'")
    builder = _BUILDERS.get(data["kind"])
    if builder is None:
        known = ", ".join(_BUILDERS)
        raise StrategyError(f"unknown strategy kind {data['kind']!r}; known: {known}")
    args = {k: v for k, v in data.items() if k != "kind"}
    try:
        return builder(**args)
    except TypeError as exc:
        raise StrategyError(f"bad arguments for {data['kind']}: {exc}") from None


def _nesting(strategy: Any) -> int:
    """How deep ``compose`` nests in a strategy or its dict form (without recursing)."""
    deepest, todo = 0, [(strategy, 0)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, Compose):
            inner: Any = node.strategies
        elif isinstance(node, Mapping) and node.get("kind") == "compose":
            inner = node.get("strategies")
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_COMPOSE_DEPTH:
            break
        if isinstance(inner, (list, tuple)):
            todo.extend((s, depth + 1) for s in inner)
    return deepest


def coerce(strategy: Strategy | Mapping[str, Any] | None) -> Strategy:
    if strategy is None:
        return DEFAULT_STRATEGY
    if _nesting(strategy) > MAX_COMPOSE_DEPTH:
        raise StrategyError(f"compose nests deeper than {MAX_COMPOSE_DEPTH} levels; flatten it")
    if isinstance(strategy, Mapping):
        return from_dict(strategy)
    if isinstance(strategy, Strategy):  # type: ignore[arg-type]
        return strategy  # type: ignore[return-value]
    raise StrategyError(f"strategy must be a Strategy or a dict, got {type(strategy).__name__}")
