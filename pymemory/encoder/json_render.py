"""``tool_result`` JSON rendered as ``key: value; key: value``, most informative first."""

from __future__ import annotations

import json
import re
from typing import Any

from ..item import check_json_depth
from .compress import truncate
from .sentences import collapse_whitespace

_JSON_KEY_RANK = {
    **dict.fromkeys(("error", "errors", "err", "exception", "message", "msg", "reason"), 4),
    **dict.fromkeys(("status", "state", "result", "summary", "answer", "title", "name"), 3),
    **dict.fromkeys(("description", "detail", "details", "output", "text", "content"), 3),
    **dict.fromkeys(("code", "count", "total", "value", "type", "label"), 1),
    **dict.fromkeys(("id", "uuid", "guid", "etag", "hash", "checksum", "token"), -3),
    **dict.fromkeys(("signature", "created_at", "updated_at", "timestamp", "ts"), -2),
    **dict.fromkeys(("url", "href", "link", "icon", "avatar", "thumbnail", "image"), -2),
}
_OPAQUE_VALUE = re.compile(r"[0-9a-fA-F-]{16,}|[A-Za-z0-9+/=_-]{32,}")
_JSON_PIECE_MIN = 24  # room below which a JSON field is not squeezed in truncated


class _Number(str):
    """A JSON number kept as the literal text it had in the input."""


def render_json(text: str, max_chars: int) -> str:
    """``key: value; key: value`` from a JSON object/array's scalar leaves, most informative
    first; "" if ``text`` is not a JSON object or array or has no non-empty leaf."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return ""
    try:
        check_json_depth(stripped)  # deeper input would exhaust the parser's stack
        data = json.loads(stripped, parse_int=_Number, parse_float=_Number, parse_constant=_Number)
    except (ValueError, RecursionError):
        return ""
    fields = _json_fields(data)
    if not fields:
        return ""
    value_room = max(1, max_chars // 2)
    ranked = sorted(enumerate(fields), key=lambda item: (-item[1][2], item[0]))
    pieces: list[str] = []
    used = 0
    for _, (label, value, _score) in ranked:
        value = truncate(value, value_room)
        piece = f"{label}: {value}" if label else value
        cost = len(piece) + (2 if pieces else 0)
        if used + cost <= max_chars:
            pieces.append(piece)
            used += cost
        elif not pieces or max_chars - used >= _JSON_PIECE_MIN:
            pieces.append(piece)
            break
    return truncate("; ".join(pieces), max_chars)


def _json_fields(data: Any) -> list[tuple[str, str, int]]:
    """(label, rendered value, score) for each scalar leaf (or list of scalars), in order."""
    fields: list[tuple[str, str, int]] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        label, node = stack.pop()
        if isinstance(node, dict):
            stack.extend(reversed([(collapse_whitespace(str(k)), v) for k, v in node.items()]))
        elif isinstance(node, list):
            if all(_is_scalar(v) for v in node):
                values = [r for r in map(_render_scalar, node) if r]
                if values:
                    score = max(_json_score(label, v) for v in node if _render_scalar(v))
                    fields.append((label, ", ".join(values), score))
            else:
                stack.extend(reversed([(label, v) for v in node]))
        else:
            value = _render_scalar(node)
            if value:
                fields.append((label, value, _json_score(label, node)))
    return fields


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _render_scalar(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return collapse_whitespace(str(value))


def _json_score(label: str, value: Any) -> int:
    """Errors and messages first, then names and prose, numbers, flags; ids last."""
    key = label.lower()
    score = _JSON_KEY_RANK.get(key, 0)
    if key not in _JSON_KEY_RANK and (key.endswith(("_id", "-id")) or label.endswith("Id")):
        score -= 2
    if isinstance(value, bool):
        return score
    if isinstance(value, _Number):
        return score + 1
    text = str(value)
    if _OPAQUE_VALUE.fullmatch(text):
        return score - 1
    if any(ch.isalpha() for ch in text):
        score += 2 + (" " in text.strip())
    return score
