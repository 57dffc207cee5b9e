"""Raw input -> a :class:`~pymemory.item.MemoryItem`: the checks and stage 1 of
``add()``, ``add_many()`` and ``update()``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..checks import type_name
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
#: An ``update()`` argument not given (None is a value: ``ttl_ms=None`` removes the TTL).
UNSET: Any = object()


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


async def build_items(
    encoder: Encoder, clock: Callable[[], int], entries: Iterable[Mapping[str, Any]]
) -> list[MemoryItem]:
    """``add_many()``: every entry (a dict of ``add()``'s arguments) checked and summarised;
    ValidationError names the first bad entry."""
    if isinstance(entries, (str, bytes, bytearray, Mapping)) or not isinstance(entries, Iterable):
        raise ValidationError("add_many() takes a list of dicts of add() arguments")
    items = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValidationError(f"entry {i} must be a dict of add() arguments")
        unknown = set(entry) - ADD_FIELDS
        if unknown:
            names = ", ".join(sorted(map(str, unknown)))
            raise ValidationError(f"entry {i} has unknown keys: {names}")
        try:
            items.append(
                await build_item(
                    encoder,
                    clock,
                    entry.get("text"),
                    entry.get("content"),
                    entry.get("type", "message"),
                    entry.get("metadata"),
                    entry.get("tags", ()),
                    entry.get("scope", "global"),
                    entry.get("ttl_ms"),
                    entry.get("timestamp"),
                )
            )
        except ValidationError as exc:
            raise ValidationError(f"entry {i}: {exc}") from None
    return items


async def changed_fields(
    encoder: Encoder,
    old: MemoryItem,
    *,
    text: Any,
    content: Any,
    type: Any,
    metadata: Any,
    tags: Any,
    scope: Any,
    ttl_ms: Any,
) -> dict[str, Any]:
    """``update()``'s arguments (UNSET where not given) checked against ``old`` and turned
    into the fields to replace; new ``text`` without ``content`` is re-summarised."""
    fields: dict[str, Any] = {}
    if text is not UNSET:
        if not isinstance(text, str):
            raise ValidationError(f"text must be a string, got {type_name(text)}")
        fields["text"] = text
        if content is UNSET:
            kind = old.type if type is UNSET else type
            replace(old, text=text, type=kind)  # check size and type before encoding
            encoded = await encoder.encode(text, type=kind)
            fields["content"], fields["content_method"] = encoded.content, encoded.method
    if content is not UNSET:
        fields["content"], fields["content_method"] = content, "given"
    for name, value in (("type", type), ("scope", scope), ("ttl_ms", ttl_ms)):
        if value is not UNSET:
            fields[name] = value
    if metadata is not UNSET:
        if not isinstance(metadata, Mapping):
            raise ValidationError(f"metadata must be a dict, got {type_name(metadata)}")
        fields["metadata"] = dict(metadata)
    if tags is not UNSET:
        fields["tags"] = check_tags(tags)
    replace(old, **fields)  # every check, before the transaction
    return fields

