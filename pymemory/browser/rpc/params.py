"""Checks of what a JSON API method was passed (:mod:`.methods` lists each method's keys).

A method's parameters are one JSON object in the JS naming (camelCase):
:func:`check_params` checks its keys, :func:`py_names` renames the few whose Python name
differs, and the ``check_*`` functions check one value. Each raises ValidationError with a
message that names the parameter.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from ...errors import ValidationError, shown

MAX_SESSION_ID_CHARS = 128


def check_params(
    params: Any, allowed: Set[str], required: Set[str] = frozenset()
) -> dict[str, Any]:
    """``params`` (None: ``{}``) if it is an object with only ``allowed`` keys and every
    ``required`` one."""
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


def py_names(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the JS names of :data:`PY_NAMES` renamed to their Python names."""
    return {PY_NAMES.get(k, k): v for k, v in params.items()}


def check_str(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {type(value).__name__}")
    return value


def check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValidationError(f"{name} must be an integer >= {low}, got {shown(value)}")
    return value


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be a boolean, got {shown(value)}")
    return value


def check_session_id(value: object) -> str:
    text = check_str("sessionId", value)
    if not text or len(text) > MAX_SESSION_ID_CHARS:
        raise ValidationError(f"sessionId must be 1-{MAX_SESSION_ID_CHARS} characters")
    return text


def check_url(name: str, value: object) -> str:
    text = check_str(name, value)
    if not text.startswith(("http://", "https://")):
        raise ValidationError(f"{name} must be an http(s) URL, got {shown(value)}")
    return text
