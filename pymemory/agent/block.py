"""One core memory block (seed 000, Letta-style): a label, a value of at most ``limit``
characters, a description telling the model what the block is for, a read-only flag.
:class:`~pymemory.agent.blocks.MemoryBlockSet` holds and edits them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import ValidationError, shown

DEFAULT_BLOCK_LIMIT = 2000
MAX_BLOCK_LIMIT = 100_000
MAX_DESCRIPTION_CHARS = 1000
LABEL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def check_text(name: str, value: object) -> str:
    """``value`` if it is a string that encodes as UTF-8 (no lone surrogates)."""
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{name} must not contain lone surrogates") from None
    return value


def check_int_range(name: str, value: object, lo: int, hi: int) -> int:
    """``value`` if it is an int (not a bool) in ``lo..hi``."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValidationError(f"{name} must be an int in {lo}..{hi}, got {shown(value)}")
    return value


def _check_label(value: object) -> str:
    check_text("label", value)
    if not LABEL_RE.fullmatch(value):  # type: ignore[arg-type]
        raise ValidationError(
            "a block label must be 1-64 letters, digits, _ or - and start with a letter "
            f"or _ (e.g. 'human'), got {shown(value)}"
        )
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class MemoryBlock:
    """One labelled block. ``value`` never exceeds ``limit`` characters (code points)."""

    label: str
    value: str = ""
    limit: int = DEFAULT_BLOCK_LIMIT
    description: str = ""
    read_only: bool = False

    def __post_init__(self) -> None:
        _check_label(self.label)
        check_text("value", self.value)
        check_int_range("limit", self.limit, 1, MAX_BLOCK_LIMIT)
        check_text("description", self.description)
        if len(self.description) > MAX_DESCRIPTION_CHARS:
            raise ValidationError(f"description must be at most {MAX_DESCRIPTION_CHARS} chars")
        if not isinstance(self.read_only, bool):
            raise ValidationError("read_only must be a bool")
        if len(self.value) > self.limit:
            raise ValidationError(
                f"block {self.label!r} value has {len(self.value)} characters, over its "
                f"limit of {self.limit}; raise the limit or shorten the value"
            )

    @property
    def chars(self) -> int:
        return len(self.value)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryBlock:
        if not isinstance(data, Mapping):
            raise ValidationError("a block must be a MemoryBlock or a mapping")
        unknown = set(data) - {"label", "value", "limit", "description", "read_only"}
        if unknown:
            raise ValidationError(f"unknown block fields: {', '.join(sorted(map(str, unknown)))}")
        if "label" not in data:
            raise ValidationError("a block needs a label")
        return cls(**data)


def as_block(block: MemoryBlock | Mapping[str, Any]) -> MemoryBlock:
    """``block`` as a MemoryBlock (a mapping is read with :meth:`MemoryBlock.from_dict`)."""
    return block if isinstance(block, MemoryBlock) else MemoryBlock.from_dict(block)
