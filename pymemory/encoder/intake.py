"""Raw input -> a new :class:`~pymemory.item.MemoryItem`: ``add()``'s checks and stage 1."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError, shown
from ..item import (
    MEMORY_TYPES,
    MemoryItem,
    check_content,
    check_metadata,
    check_scope,
    check_tags,
    check_text,
    check_timestamp,
    check_ttl,
    new_id,
)

if TYPE_CHECKING:
    from . import Encoder

#: The keyword arguments of ``add()``, which ``add_many()`` entries may hold.
ADD_FIELDS = frozenset(
    {"text", "content", "type", "metadata", "tags", "scope", "ttl_ms", "timestamp"}
)


async def build_item(
    encoder: Encoder,
    clock: Callable[[], int],
    text: str | None,
    content: str | None,
    type: str,
    metadata: Mapping[str, Any] | None,
    tags: Sequence[str],
    scope: str,
    ttl_ms: int | None,
    timestamp: int | None,
) -> MemoryItem:
    """Check ``add()``'s arguments and summarise ``text`` (unless ``content`` is given).
    Every check, sizes included, runs before the encoder: bad input is refused at once."""
    if text is None and content is None:
        raise ValidationError("add() needs text (raw input) or content (a summary)")
    for name, value in (("text", text), ("content", content)):
        if value is not None and not isinstance(value, str):
            raise ValidationError(f"{name} must be a string, got {type_name(value)}")
    if not isinstance(type, str) or type not in MEMORY_TYPES:
        raise ValidationError(f"type must be one of {', '.join(MEMORY_TYPES)}, got {shown(type)}")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ValidationError(f"metadata must be a dict, got {type_name(metadata)}")
    raw = text if text is not None else content
    assert raw is not None
    if not raw.strip():
        raise ValidationError("text must not be empty")
    check_text(raw)
    if content is not None:
        check_content(content)
    check_metadata(dict(metadata or {}))
    check_scope(scope)
    tags = check_tags(tags)
    check_ttl(ttl_ms)
    if timestamp is not None:
        check_timestamp(timestamp)
    method = "given"
    if content is None:
        encoded = await encoder.encode(raw, type=type)
        content, method = encoded.content, encoded.method
        if content == raw:
            method = "verbatim"  # short, clean input: nothing to summarise
    return MemoryItem(
        id=new_id(),
        type=type,
        timestamp=clock() if timestamp is None else check_timestamp(timestamp),
        content=content,
        text=raw,
        metadata=dict(metadata or {}),
        scope=scope,
        tags=tags,
        ttl_ms=ttl_ms,
        content_method=method,
    )


def type_name(value: object) -> str:
    return type(value).__name__
