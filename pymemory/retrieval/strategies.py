"""Retrieval strategies (seed 002 §3.3): small values that compose and serialise.

Filters (``time_window``, ``by_tag``, ``by_type``, ``by_scope``) combine with AND.
Weights (``time_decay``, ``feedback_weight``, ``fusion``) replace the defaults; in
``compose`` a later one overrides an earlier one of the same kind. Every strategy starts
from the default, ``compose(time_decay(), feedback_weight(), fusion())``, so old memories
rank lower but are never dropped unless a hard ``time_window`` asks for it.

The decay and fusion defaults below were tuned on the shipped evaluation suites
(``benchmarks/tune_retrieval.py``; docs/BENCHMARKS.md has the grid): a floor of 0.5 keeps
a weeks-old exact answer above yesterday's chatter, and a low lexical weight with a small
RRF ``k`` lets BM25 break the dense ranking's near-ties without dragging it down.
"""

from __future__ import annotations

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
DECAY_HALF_LIFE_HOURS = 168.0
DECAY_FLOOR = 0.5
FUSION_K = 20.0
FUSION_LEXICAL = 0.2
FUSION_DENSE = 1.0
FUSION_DEPTH = 100


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


@dataclass(frozen=True)
class TimeDecay:
    """Multiply scores by ``floor + (1 - floor) * 0.5 ** (age / half_life)``.

    ``half_life_hours=None`` turns decay off (factor 1).
    """

    half_life_hours: float | None = DECAY_HALF_LIFE_HOURS
    floor: float = DECAY_FLOOR
    kind: str = field(default="time_decay", init=False)


@dataclass(frozen=True)
class FeedbackWeight:
    """Multiply scores by ``liked`` (more likes than dislikes), ``disliked`` (more dislikes)
    and ``important`` (pinned). A weight of 0 removes the item."""

    liked: float = 5.0
    disliked: float = 0.1
    important: float = 3.0
    kind: str = field(default="feedback_weight", init=False)


@dataclass(frozen=True)
class Fusion:
    """How BM25 and dense rankings are fused when an embedder is on: reciprocal-rank
    fusion ``sum(weight / (k + rank))`` over each side's ranking (each side ranked by its
    score x decay x feedback), taking the top ``depth`` dense candidates."""

    k: float = FUSION_K
    lexical: float = FUSION_LEXICAL
    dense: float = FUSION_DENSE
    depth: int = FUSION_DEPTH
    kind: str = field(default="fusion", init=False)


@dataclass(frozen=True)
class Compose:
    strategies: tuple[Strategy, ...]
    kind: str = field(default="compose", init=False)


Strategy = TimeWindow | ByTag | ByType | ByScope | TimeDecay | FeedbackWeight | Fusion | Compose


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


def time_decay(
    half_life_hours: float | None = DECAY_HALF_LIFE_HOURS, *, floor: float = DECAY_FLOOR
) -> TimeDecay:
    half_life_hours = _number(
        "time_decay.half_life_hours", half_life_hours, maximum=MAX_HOURS, allow_none=True
    )
    if half_life_hours is not None and half_life_hours <= 0:
        raise StrategyError("time_decay.half_life_hours must be > 0 (or None for no decay)")
    floor = _number("time_decay.floor", floor)
    if floor > 1:
        raise StrategyError("time_decay.floor must be in 0..1")
    return TimeDecay(half_life_hours, float(floor))


def feedback_weight(
    liked: float = 5.0, disliked: float = 0.1, important: float = 3.0
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
) -> Fusion:
    k = _number("fusion.k", k)
    if k <= 0:
        raise StrategyError("fusion.k must be > 0")
    lexical, dense = _number("fusion.lexical", lexical), _number("fusion.dense", dense)
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 10_000:
        raise StrategyError("fusion.depth must be an int in 1..10000")
    return Fusion(float(k), float(lexical), float(dense), depth)


def compose(*strategies: Strategy | Iterable[Strategy]) -> Compose:
    if len(strategies) == 1 and isinstance(strategies[0], (list, tuple)):
        strategies = tuple(strategies[0])
    for s in strategies:
        if not isinstance(s, Strategy):  # type: ignore[arg-type]
            raise StrategyError(f"compose takes strategies, got {type(s).__name__}")
    return Compose(tuple(strategies))  # type: ignore[arg-type]


DEFAULT_STRATEGY = compose(time_decay(), feedback_weight(), fusion())


# --- serialisation ----------------------------------------------------------------------


def to_dict(strategy: Strategy) -> dict[str, Any]:
    """A JSON-ready dict, e.g. ``{"kind": "by_tag", "tags": ["x"], "match": "any"}``."""
    if isinstance(strategy, Compose):
        return {"kind": "compose", "strategies": [to_dict(s) for s in strategy.strategies]}
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


# --- compiled form used by the orchestrator ---------------------------------------------


@dataclass
class Plan:
    """A strategy flattened: filters as sets (None = no filter), one decay, one feedback."""

    scopes: frozenset[str] | None = None
    types: frozenset[str] | None = None
    tags_any: list[frozenset[str]] = field(default_factory=list)
    tags_all: frozenset[str] = frozenset()
    since_ms: int | None = None
    until_ms: int | None = None
    window_hours: float | None = None
    decay: TimeDecay = field(default_factory=TimeDecay)
    feedback: FeedbackWeight = field(default_factory=FeedbackWeight)
    fusion: Fusion = field(default_factory=Fusion)

    def since(self, now_ms: int) -> int | None:
        bounds = [b for b in (self.since_ms,) if b is not None]
        if self.window_hours is not None:
            bounds.append(now_ms - int(self.window_hours * HOUR_MS))
        return max(bounds) if bounds else None


def compile_strategy(strategy: Strategy) -> Plan:
    plan = Plan()
    _apply(plan, DEFAULT_STRATEGY)
    _apply(plan, strategy)
    return plan


def _intersect(current: frozenset[str] | None, new: Iterable[str]) -> frozenset[str]:
    new = frozenset(new)
    return new if current is None else current & new


def _apply(plan: Plan, s: Strategy) -> None:
    if isinstance(s, Compose):
        for inner in s.strategies:
            _apply(plan, inner)
    elif isinstance(s, TimeWindow):
        if s.hours is not None:
            hours = plan.window_hours
            plan.window_hours = s.hours if hours is None else min(hours, s.hours)
        if s.since_ms is not None:
            plan.since_ms = s.since_ms if plan.since_ms is None else max(plan.since_ms, s.since_ms)
        if s.until_ms is not None:
            plan.until_ms = s.until_ms if plan.until_ms is None else min(plan.until_ms, s.until_ms)
    elif isinstance(s, ByTag):
        if s.match == "all":
            plan.tags_all |= frozenset(s.tags)
        else:
            plan.tags_any.append(frozenset(s.tags))
    elif isinstance(s, ByType):
        plan.types = _intersect(plan.types, s.types)
    elif isinstance(s, ByScope):
        plan.scopes = _intersect(plan.scopes, s.scopes)
    elif isinstance(s, TimeDecay):
        plan.decay = s
    elif isinstance(s, FeedbackWeight):
        plan.feedback = s
    elif isinstance(s, Fusion):
        plan.fusion = s
    else:
        raise StrategyError(f"not a strategy: {s!r}")
