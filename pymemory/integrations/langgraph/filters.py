"""``filter=`` and namespace matching for the LangGraph store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .checks import (
    MISSING,
)

# --- filters -----------------------------------------------------------------------------


def _lookup(value: Mapping[str, Any], key: str) -> Any:
    if key in value:
        return value[key]
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return MISSING
        node = node[part]
    return node


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _compare(actual: Any, op: str, target: Any) -> bool:
    if op == "$eq":
        return actual is not MISSING and _json_equal(actual, target)
    if op == "$ne":
        return actual is MISSING or not _json_equal(actual, target)
    comparable = (_is_number(actual) and _is_number(target)) or (
        isinstance(actual, str) and isinstance(target, str)
    )
    if not comparable:
        return False
    if op == "$gt":
        return actual > target
    if op == "$gte":
        return actual >= target
    if op == "$lt":
        return actual < target
    return actual <= target  # $lte (the filter was checked)


def _condition_holds(actual: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping):
        if cond and all(k.startswith("$") for k in cond):
            return all(_compare(actual, op, target) for op, target in cond.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_condition_holds(actual.get(k, MISSING), v) for k, v in cond.items())
    if isinstance(cond, (list, tuple)):
        return (
            isinstance(actual, list)
            and len(actual) == len(cond)
            and all(_condition_holds(a, c) for a, c in zip(actual, cond, strict=True))
        )
    return actual is not MISSING and _json_equal(actual, cond)


def value_matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether a value satisfies every condition of ``flt`` (no filter: always)."""
    return not flt or all(_condition_holds(_lookup(value, k), c) for k, c in flt.items())


def namespace_matches(namespace: tuple[str, ...], match_type: str, path: tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts (``"prefix"``) or ends (``"suffix"``) with ``path``
    (``*`` matches any label)."""
    if len(namespace) < len(path):
        return False
    part = (
        namespace[: len(path)]
        if match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p == "*" or p == n for n, p in zip(part, path, strict=True))
