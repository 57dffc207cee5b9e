"""A strategy compiled for the orchestrator: a :class:`Plan`, the default strategy with the
given one applied on top (filters intersect, a later weight replaces an earlier one)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import StrategyError
from .strategies import (
    DEFAULT_STRATEGY,
    HOUR_MS,
    ByScope,
    ByTag,
    ByType,
    Compose,
    FeedbackWeight,
    Fusion,
    RelevanceFloor,
    Strategy,
    TimeDecay,
    TimeWindow,
)


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
    floor: RelevanceFloor = field(default_factory=RelevanceFloor)

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
    elif isinstance(s, RelevanceFloor):
        plan.floor = s
    else:
        raise StrategyError(f"not a strategy: {s!r}")
