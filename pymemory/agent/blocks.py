"""Core memory blocks (seed 000, Letta-style): small labelled texts the model sees every turn.

A :class:`MemoryBlockSet` holds at most ``max_blocks`` blocks (default 5), each with a
``label``, a ``value`` of at most ``limit`` characters (default 2000), a ``description``
telling the model what the block is for, and a ``read_only`` flag. The set renders as ONE
user-role message placed after the cached system prefix (see ``MessageAssembler``), so
editing a block never invalidates the prompt cache of the system prompt and tools. This is
a deliberate difference from Letta, which renders core memory inside the system prompt.

:func:`pymemory.agent.block_tools.core_memory_tools` gives the model Letta's two classic edit
tools over a set; :func:`~pymemory.agent.block_tools.letta_memory_tools` gives it Letta's
current ones (``memory_replace``, ``memory_insert``, ``memory_rethink``).

Rendering. ``render()`` is ours by default (cache-stable, one user message). With
``letta_compat=True`` (per call, or as the set's default) it is Letta's ``<memory_blocks>``
text instead: a header line, then per block a ``<description>`` (always), ``<metadata>``
with ``- read_only=true`` (read-only blocks only), ``- chars_current=`` and
``- chars_limit=``, and the ``<value>``; a set with no blocks renders as "".

Persistence. A set lives in memory by default. ``await blocks.snapshot(kv, set_id)``
writes it, ``await MemoryBlockSet.restore(kv, set_id)`` reads it back, and
``await MemoryBlockSet.open(kv, set_id, blocks)`` returns a set bound to the store that
writes every change before it takes effect in memory. Key layout::

    blk:<set_id>   the whole set as canonical JSON:
                   {"format": 1, "max_blocks": 5, "revision": 7,
                    "blocks": [{"label", "value", "limit", "description", "read_only"}, ...]}

The whole set is one key, so each change is one atomic put: a crash leaves the previous
state or the new one, never half an edit. ``revision`` counts the changes.

Several writers (processes, or workers) may bind sets to one key. Every change of a bound
set is a read-modify-write of the stored set in one transaction: ``append``, ``replace``,
``replace_once``, ``insert`` and ``rethink`` edit the block as it is stored now, so two
appends (or two inserts) keep both lines; ``add`` of a
label another writer added first raises ConflictError; an edit of a block another writer
removed raises NotFoundError. Reads (``get``, ``list``, ``render``) are synchronous and show
the set as of this instance's last change or :meth:`MemoryBlockSet.refresh`; await
``refresh()`` before rendering to see the other writers' edits.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from ..errors import ConflictError, NotFoundError, ValidationError, shown
from ..item import dumps
from ..storage.base import KvBackend, Writes
from ..storage.schema import ensure_schema
from .block import (
    DEFAULT_BLOCK_LIMIT,
    MemoryBlock,
    as_block,
    check_int_range,
    check_text,
)

__all__ = [
    "DEFAULT_BLOCK_LIMIT",
    "DEFAULT_MAX_BLOCKS",
    "MemoryBlock",
    "MemoryBlockSet",
    "block_key",
]

DEFAULT_MAX_BLOCKS = 5
MAX_SET_SIZE = 100
BLOCK_PREFIX = "blk:"
SNAPSHOT_FORMAT = 1
SET_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,127}")

_HEADER = (
    "These memory blocks are your core memory, shown to you on every turn. "
    "Edit them with core_memory_append and core_memory_replace."
)
# letta/schemas/memory.py (Memory._render_memory_blocks_standard): the header line.
_LETTA_HEADER = "The following memory blocks are currently engaged in your core memory unit:"


def block_key(set_id: str) -> str:
    """The KV key of a snapshot: ``blk:<set_id>``."""
    check_text("set_id", set_id)
    if not SET_ID_RE.fullmatch(set_id):
        raise ValidationError(
            f"set_id must be 1-128 characters of letters, digits and _.:/@-, got {shown(set_id)}"
        )
    return BLOCK_PREFIX + set_id


class MemoryBlockSet:
    """An ordered set of memory blocks, in memory or bound to a KV store (see ``open``).

    Reads (``get``, ``list``, ``render``) are synchronous. Changes are async because a
    bound set writes them to its store first; a change that fails validation raises a
    typed error and changes nothing. ``append``, ``replace``, ``replace_once``, ``insert``
    and ``rethink`` are the agent's edits (they refuse read-only blocks); ``set_value``,
    ``add`` and ``remove`` are the app's. ``letta_compat`` is the default of ``render()``
    and ``message()`` (not stored: each instance chooses how it renders).
    """

    def __init__(
        self,
        blocks: Iterable[MemoryBlock | Mapping[str, Any]] = (),
        *,
        max_blocks: int = DEFAULT_MAX_BLOCKS,
        letta_compat: bool = False,
    ) -> None:
        self.max_blocks = check_int_range("max_blocks", max_blocks, 1, MAX_SET_SIZE)
        if not isinstance(letta_compat, bool):
            raise ValidationError("letta_compat must be a bool")
        self.letta_compat = letta_compat
        if isinstance(blocks, (str, bytes, Mapping)):
            raise ValidationError("blocks must be an iterable of blocks")
        items: dict[str, MemoryBlock] = {}
        for raw in blocks:
            block = as_block(raw)
            if block.label in items:
                raise ConflictError(f"two blocks are labelled {block.label!r}")
            items[block.label] = block
        if len(items) > self.max_blocks:
            raise ValidationError(f"{len(items)} blocks given, max_blocks is {self.max_blocks}")
        self._blocks = items
        self._revision = 0
        self._kv: KvBackend | None = None
        self._key: str | None = None
        self._lock = asyncio.Lock()

    # --- persistence ------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        kv: KvBackend,
        set_id: str,
        blocks: Iterable[MemoryBlock | Mapping[str, Any]] = (),
        *,
        max_blocks: int = DEFAULT_MAX_BLOCKS,
        letta_compat: bool = False,
    ) -> MemoryBlockSet:
        """A set bound to ``blk:<set_id>``: the stored one if present (``blocks`` and
        ``max_blocks`` are then ignored), else a new one from ``blocks``, written now
        (unless another writer created it first: then that one is used)."""
        key = block_key(set_id)
        fresh = cls(blocks, max_blocks=max_blocks, letta_compat=letta_compat)
        await ensure_schema(kv)

        def create(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
            if values[0] is not None:
                return Writes(result=values[0])
            return Writes([(key, fresh._encode(fresh._blocks, fresh._revision))])

        raw = await kv.transact([key], create)
        bound = fresh if raw is None else cls._decode(raw, key)
        bound._kv, bound._key, bound.letta_compat = kv, key, letta_compat
        return bound

    @classmethod
    async def restore(cls, kv: KvBackend, set_id: str) -> MemoryBlockSet:
        """An in-memory copy of the snapshot under ``blk:<set_id>`` (NotFoundError if none)."""
        key = block_key(set_id)
        raw = await kv.get(key)
        if raw is None:
            raise NotFoundError(f"no memory block snapshot under {key!r}")
        return cls._decode(raw, key)

    async def snapshot(self, kv: KvBackend, set_id: str) -> None:
        """Write the current state under ``blk:<set_id>`` in one atomic put."""
        key = block_key(set_id)
        await ensure_schema(kv)
        async with self._lock:
            await kv.put_many([(key, self._encode(self._blocks, self._revision))])

    @staticmethod
    async def delete_snapshot(kv: KvBackend, set_id: str) -> None:
        """Remove the snapshot under ``blk:<set_id>`` (absent is fine)."""
        await kv.delete_many([block_key(set_id)])

    @property
    def bound_key(self) -> str | None:
        """The KV key this set writes every change to, or None for an in-memory set."""
        return self._key

    @property
    def revision(self) -> int:
        """How many changes this set has seen (persisted in snapshots)."""
        return self._revision

    def _encode(self, blocks: Mapping[str, MemoryBlock], revision: int) -> bytes:
        record = {
            "format": SNAPSHOT_FORMAT,
            "max_blocks": self.max_blocks,
            "revision": revision,
            "blocks": [b.to_dict() for b in blocks.values()],
        }
        return dumps(record).encode("utf-8")

    @classmethod
    def _decode(cls, raw: bytes, key: str) -> MemoryBlockSet:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
                raise ValidationError(f"expected an object with format {SNAPSHOT_FORMAT}")
            if not isinstance(data.get("blocks"), list):
                raise ValidationError("blocks must be a list")
            out = cls(data["blocks"], max_blocks=data.get("max_blocks"))
            out._revision = check_int_range("revision", data.get("revision"), 0, 2**53)
        except (ValueError, TypeError, ConflictError) as exc:
            raise ValidationError(f"the block snapshot {key!r} is unreadable: {exc}") from None
        return out

    async def _edit(self, change: _Change) -> Any:
        """Apply ``change(blocks, max_blocks) -> (blocks, result)`` to the current state:
        for a bound set the stored one, read and written back in one transaction. Store
        first, then memory: a failed change (typed error, failed write) changes nothing."""
        async with self._lock:
            if self._kv is None or self._key is None:
                blocks, result = change(dict(self._blocks), self.max_blocks)
                self._blocks, self._revision = blocks, self._revision + 1
                return result
            key = self._key

            def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
                if values[0] is None:
                    raise NotFoundError(f"the memory block set {key!r} was deleted")
                stored = MemoryBlockSet._decode(values[0], key)
                blocks, result = change(dict(stored._blocks), stored.max_blocks)
                revision = stored._revision + 1
                state = (blocks, revision, stored.max_blocks, result)
                return Writes([(key, stored._encode(blocks, revision))], result=state)

            blocks, revision, max_blocks, result = await self._kv.transact([key], write)
            self._blocks, self._revision, self.max_blocks = blocks, revision, max_blocks
            return result

    async def refresh(self) -> None:
        """Re-read a bound set from its store (other writers' changes); NotFoundError if
        the stored set was deleted. An in-memory set has nothing to re-read."""
        if self._kv is None or self._key is None:
            return
        async with self._lock:
            raw = await self._kv.get(self._key)
            if raw is None:
                raise NotFoundError(f"the memory block set {self._key!r} was deleted")
            stored = self._decode(raw, self._key)
            self._blocks, self._revision = stored._blocks, stored._revision
            self.max_blocks = stored.max_blocks

    # --- reads ------------------------------------------------------------------------

    def get(self, label: str) -> MemoryBlock:
        """The block labelled ``label`` (NotFoundError if none)."""
        return _get(self._blocks, label)

    def list(self) -> list[MemoryBlock]:
        """All blocks in insertion order."""
        return list(self._blocks.values())

    def labels(self) -> list[str]:
        return list(self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, label: object) -> bool:
        return label in self._blocks

    def __iter__(self) -> Iterator[MemoryBlock]:
        return iter(list(self._blocks.values()))

    def to_dict(self) -> dict[str, Any]:
        """``{"max_blocks": n, "blocks": [...]}``: the JSON state, e.g. for a checkpoint."""
        return {"max_blocks": self.max_blocks, "blocks": [b.to_dict() for b in self]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryBlockSet:
        if not isinstance(data, Mapping) or not isinstance(data.get("blocks"), list):
            raise ValidationError("expected {'max_blocks': int, 'blocks': [...]}")
        return cls(data["blocks"], max_blocks=data.get("max_blocks", DEFAULT_MAX_BLOCKS))

    # --- changes ----------------------------------------------------------------------

    async def add(self, block: MemoryBlock | Mapping[str, Any]) -> MemoryBlock:
        """Add a new block at the end (ConflictError if the label exists)."""
        block = as_block(block)

        def change(blocks: dict[str, MemoryBlock], max_blocks: int) -> _Changed:
            if block.label in blocks:
                raise ConflictError(f"a block labelled {block.label!r} already exists")
            if len(blocks) >= max_blocks:
                raise ValidationError(
                    f"this set already holds max_blocks={max_blocks} blocks; remove one first"
                )
            blocks[block.label] = block
            return blocks, block

        return await self._edit(change)

    async def remove(self, label: str) -> MemoryBlock:
        """Remove and return a block (NotFoundError if none)."""

        def change(blocks: dict[str, MemoryBlock], _max: int) -> _Changed:
            return blocks, blocks.pop(_get(blocks, label).label)

        return await self._edit(change)

    async def set_value(self, label: str, value: str) -> MemoryBlock:
        """Replace a block's whole value (the app's edit: allowed on read-only blocks).
        The last writer's value wins."""
        check_text("value", value)

        def change(blocks: dict[str, MemoryBlock], _max: int) -> _Changed:
            block = replace(_get(blocks, label), value=value)
            blocks[label] = block
            return blocks, block

        return await self._edit(change)

    async def append(self, label: str, content: str) -> MemoryBlock:
        """Letta's ``core_memory_append``: add ``content`` on a new line (no leading
        newline when the block is empty). Refuses read-only blocks and limit overflows."""
        check_text("content", content)

        def change(blocks: dict[str, MemoryBlock], _max: int) -> _Changed:
            block = _editable(blocks, label)
            value = f"{block.value}\n{content}" if block.value else content
            blocks[label] = block = _resized(block, value)
            return blocks, block

        return await self._edit(change)

    async def replace(self, label: str, old_content: str, new_content: str) -> MemoryBlock:
        """Letta's ``core_memory_replace``: replace every occurrence of ``old_content``
        (which must be present and non-empty) by ``new_content`` ("" deletes it)."""
        check_text("old_content", old_content)
        check_text("new_content", new_content)
        return (await self._replace(label, old_content, new_content))[0]

    async def _replace(self, label: str, old: str, new: str) -> tuple[MemoryBlock, int]:
        if not old:
            raise ValidationError("old_content must not be empty")

        def change(blocks: dict[str, MemoryBlock], _max: int) -> _Changed:
            block = _editable(blocks, label)
            count = block.value.count(old)
            if not count:
                raise NotFoundError(
                    f"old_content {_preview(old)} was not found in memory block "
                    f"{label!r}; it must match the block's text exactly"
                )
            blocks[label] = block = _resized(block, block.value.replace(old, new))
            return blocks, (block, count)

        return await self._edit(change)

    async def replace_once(self, label: str, old: str, new: str) -> MemoryBlock:
        """Letta's ``memory_replace``: replace ``old``, which must occur exactly once in the
        block (NotFoundError if it does not occur, ValidationError naming the lines if it
        occurs more than once), by ``new`` ("" deletes it)."""
        check_text("old_string", old)
        check_text("new_string", new)
        if not old:
            raise ValidationError("old_string must not be empty; quote the text to replace")

        def change(blocks: dict[str, MemoryBlock], _max: int) -> _Changed:
            block = _editable(blocks, label)
            count = block.value.count(old)
            if count == 0:
                raise NotFoundError(
                    f"No replacement was performed, old_string `{_clip(old)}` did not appear "
                    f"verbatim in memory block with label `{label}`"
                )
            if count > 1:
                lines = [i for i, line in enumerate(block.value.split("\n"), 1) if old in line]
                raise ValidationError(
                    f"No replacement was performed. Multiple occurrences of old_string "
                    f"`{_clip(old)}` in lines {lines}. Please ensure it is unique"
                )
            blocks[label] = block = _resized(block, block.value.replace(old, new))
            return blocks, block

        return await self._edit(change)

    async def insert(self, label: str, text: str, insert_line: int = -1) -> MemoryBlock:
        """Letta's ``memory_insert``: insert ``text`` as line(s) after line ``insert_line``
        of the block (0: at the start; -1, the default: at the end). Lines are the block's
        value split on "\\n", so an empty block has one (empty) line; inserting into it
        gives ``text`` alone (Letta keeps the empty line, see the README)."""
        check_text("new_string", text)
        if isinstance(insert_line, bool) or not isinstance(insert_line, int):
            raise ValidationError(f"insert_line must be an integer, got {shown(insert_line)}")

        def change(blocks: dict[str, MemoryBlock], _max: int) -> _Changed:
            block = _editable(blocks, label)
            lines = block.value.split("\n")
            at = len(lines) if insert_line == -1 else insert_line
            if not 0 <= at <= len(lines):
                raise ValidationError(
                    f"Invalid `insert_line` parameter: {insert_line}. It should be within the "
                    f"range of lines of the memory block: {[0, len(lines)]}, or -1 to append "
                    "to the end of the memory block"
                )
            value = "\n".join([*lines[:at], text, *lines[at:]]) if block.value else text
            blocks[label] = block = _resized(block, value)
            return blocks, block

        return await self._edit(change)

    async def rethink(self, label: str, value: str) -> MemoryBlock:
        """Letta's ``memory_rethink``: the agent rewrites the whole block (unlike
        ``set_value``, the app's edit, it refuses read-only blocks and an unknown label)."""
        check_text("new_memory", value)

        def change(blocks: dict[str, MemoryBlock], _max: int) -> _Changed:
            blocks[label] = block = _resized(_editable(blocks, label), value)
            return blocks, block

        return await self._edit(change)

    # --- rendering --------------------------------------------------------------------

    def render(self, letta_compat: bool | None = None) -> str:
        """The blocks as the text of one user message, with characters used / limit.
        ``letta_compat`` (default: the set's): Letta's rendering instead (module docstring)."""
        if self.letta_compat if letta_compat is None else letta_compat:
            return self._render_letta()
        parts = ["<memory_blocks>", _HEADER]
        for b in self._blocks.values():
            parts.append("")
            parts.append(f"<{b.label}>")
            if b.description:
                parts.append(f"<description>{b.description}</description>")
            flag = "true" if b.read_only else "false"
            parts.append(
                f"<metadata>chars_used={b.chars} chars_limit={b.limit} read_only={flag}</metadata>"
            )
            parts.extend(["<value>", b.value, "</value>", f"</{b.label}>"])
        parts.append("</memory_blocks>")
        return "\n".join(parts)

    def _render_letta(self) -> str:
        # Letta's standard layout (letta/schemas/memory.py); no blocks: nothing at all.
        if not self._blocks:
            return ""
        parts = []
        for b in self._blocks.values():
            lines = [f"<{b.label}>", "<description>", b.description, "</description>"]
            lines.append("<metadata>")
            if b.read_only:
                lines.append("- read_only=true")
            lines += [f"- chars_current={b.chars}", f"- chars_limit={b.limit}", "</metadata>"]
            lines += ["<value>", b.value, "</value>", f"</{b.label}>", ""]
            parts.append("\n".join(lines))
        return f"<memory_blocks>\n{_LETTA_HEADER}\n\n" + "\n".join(parts) + "\n</memory_blocks>"

    def message(self, letta_compat: bool | None = None) -> dict[str, str]:
        """``{"role": "user", "content": render(letta_compat)}``."""
        return {"role": "user", "content": self.render(letta_compat)}


_Changed = tuple[dict[str, MemoryBlock], Any]
_Change = Callable[[dict[str, MemoryBlock], int], _Changed]


def _get(blocks: Mapping[str, MemoryBlock], label: str) -> MemoryBlock:
    block = blocks.get(label)
    if block is None:
        known = ", ".join(blocks) or "none"
        raise NotFoundError(f"no memory block labelled {shown(label)}; labels: {known}")
    return block


def _editable(blocks: Mapping[str, MemoryBlock], label: str) -> MemoryBlock:
    block = _get(blocks, label)
    if block.read_only:
        raise ValidationError(f"memory block {shown(label)} is read-only and cannot be edited")
    return block


def _resized(block: MemoryBlock, value: str) -> MemoryBlock:
    if len(value) > block.limit:
        raise ValidationError(
            f"edit refused: memory block {block.label!r} would hold {len(value)} "
            f"characters, over its limit of {block.limit}; write less, or condense the "
            "block first"
        )
    return replace(block, value=value)


def _preview(text: str, width: int = 80) -> str:
    return repr(text if len(text) <= width else text[:width] + "...")


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[:width] + "..."
