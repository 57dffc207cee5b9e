"""A call's JSON in and out: the parameters, checked before they are parsed, and the
answer, ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {"code", "message"}}``.

The parameters' size and nesting are checked before parsing (a deep document would
exhaust the parser's stack and, in Pyodide, take the worker down), and the answer is
always valid JSON: never ``NaN`` or ``Infinity``, never a lone surrogate unescaped.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ...errors import PymemoryError, ValidationError
from ...item import MAX_JSON_DEPTH, check_json_depth
from .methods import Method

log = logging.getLogger("pymemory")


def parse_params(params_json: Any, method: Method) -> Any:
    """The call's parameters (``{}`` for none), size and nesting checked before parsing."""
    if params_json is None or params_json == "":
        return {}
    if not isinstance(params_json, str):
        raise ValidationError("parameters must arrive as a JSON string")
    limit = method.max_chars
    if len(params_json) > limit:
        raise ValidationError(
            f"parameters are {len(params_json)} characters of JSON, over the limit of {limit}"
        )
    check_json_depth(params_json, MAX_JSON_DEPTH)
    try:
        return json.loads(params_json)
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"parameters are not JSON: {exc}") from None


def error_answer(code: str, message: str, retryable: bool | None = None) -> str:
    """The answer of a call that failed with the stable ``code``; ``retryable`` (errors
    that say, e.g. ``sync_failed``): whether the same call may succeed later."""
    error: dict[str, Any] = {"code": code, "message": message}
    if isinstance(retryable, bool):
        error["retryable"] = retryable
    return json.dumps({"ok": False, "error": error})


def error_js(exc: PymemoryError) -> dict[str, Any]:
    """A pymemory error as a result's ``error`` field: ``{code, message, retryable?}``."""
    error: dict[str, Any] = {"code": exc.code, "message": str(exc)}
    retryable = getattr(exc, "retryable", None)
    if isinstance(retryable, bool):
        error["retryable"] = retryable
    return error


def ok_answer(method: str, result: Any) -> str:
    """``{"ok": true, "result": ...}`` as strict JSON (no NaN/Infinity, no lone
    surrogates), so the page's JSON.parse can always read it."""
    try:
        text = json.dumps({"ok": True, "result": result}, ensure_ascii=False, allow_nan=False)
    except ValueError:  # a non-finite number: a bug, reported as one, never sent as JSON
        log.error("%s produced a non-finite number; not sent", method)
        return error_answer("internal", f"{method} produced a number that is not finite")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape it (\udXXX is valid JSON)
        text = json.dumps({"ok": True, "result": result}, allow_nan=False)
    return text
