"""Item filters shared by ``list()`` and ``clear()``: scope, type, tags and a time window."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import ValidationError
from ..item import MEMORY_TYPES, MemoryItem, check_scope, check_tags, check_timestamp


def item_matcher(
    scope: str | Sequence[str] | None,
    tags: Sequence[str] | None,
    type: str | Sequence[str] | None,
    since_ms: int | None,
    until_ms: int | None,
) -> Callable[[MemoryItem], bool]:
    """A predicate true for items matching every given filter (``tags``: any of them)."""
    scopes = None if scope is None else {check_scope(s) for s in _as_strings("scope", scope)}
    types = None if type is None else set(_as_strings("type", type))
    if types is not None and not types <= set(MEMORY_TYPES):
        raise ValidationError(f"type must be among {', '.join(MEMORY_TYPES)}")
    tagset = None if tags is None else set(check_tags(tags))
    since = None if since_ms is None else check_timestamp(since_ms, "since_ms")
    until = None if until_ms is None else check_timestamp(until_ms, "until_ms")

    def match(item: MemoryItem) -> bool:
        return (
            (scopes is None or item.scope in scopes)
            and (types is None or item.type in types)
            and (tagset is None or not tagset.isdisjoint(item.tags))
            and (since is None or item.timestamp >= since)
            and (until is None or item.timestamp <= until)
        )

    return match


def _as_strings(name: str, value: str | Sequence[str]) -> list[str]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise ValidationError(f"{name} must be a string or a list of strings")
    return list(values)


DAY_MS = 86_400_000


def older_than(days: float, now_ms: int, keep_important: bool) -> Callable[[MemoryItem], bool]:
    """A predicate true for items older than ``days`` (marked important ones only when
    ``keep_important`` is False): what ``archive_older_than()`` moves."""
    cutoff = now_ms - days * DAY_MS

    def old(item: MemoryItem) -> bool:
        return item.timestamp < cutoff and not (keep_important and item.feedback.important)

    return old
