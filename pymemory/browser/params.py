"""The parameters of the worker's JSON API methods (:mod:`.api`, :mod:`.agent_api`).

A method's parameters are one JSON object in the JS naming (camelCase): :func:`_params`
checks its keys, and :func:`_py` renames the few whose Python name differs.
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError


def _params(params: Any, allowed: set[str], required: set[str] = frozenset()) -> dict[str, Any]:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValidationError("parameters must be an object")
    unknown = set(params) - allowed
    if unknown:
        raise ValidationError(
            f"unknown parameter(s): {', '.join(sorted(unknown))}; allowed: "
            f"{', '.join(sorted(allowed)) or 'none'}"
        )
    missing = required - set(params)
    if missing:
        raise ValidationError(f"missing parameter(s): {', '.join(sorted(missing))}")
    return params


PY_NAMES = {
    "ttlMs": "ttl_ms",
    "sinceMs": "since_ms",
    "untilMs": "until_ms",
    "expectedVersion": "expected_version",
}


def _py(params: dict[str, Any]) -> dict[str, Any]:
    return {PY_NAMES.get(k, k): v for k, v in params.items()}
