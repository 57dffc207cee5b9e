"""What the memory tools accept: the ``/memories`` path rules and the argument checks.

Shared by the two tools of :mod:`.memory_tool` and the ``memory_20250818`` commands of
:mod:`.memory_commands`. A check that fails raises :class:`Refusal`, a refusal with a stable
code that the tool turns into ``ToolResult(is_error=True)``;
:func:`normalize_memory_path` raises ValidationError.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import ValidationError, shown
from ..storage.base import KvBackend, Writes, iter_prefix

T = TypeVar("T")
MAX_ATTEMPTS = 20

MEMORY_ROOT = "/memories"
MAX_PATH_BYTES = 1024
MAX_SEGMENT_BYTES = 255
MAX_DEPTH = 16  # segments below /memories

_PERCENT_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class Refusal(Exception):
    """A refusal the model can act on: a stable ``code`` and a message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Stale(Exception):
    """What a command read changed before its write could land."""


class RecordedKv:
    """The KV store as one tool command sees it: reads go through and are remembered
    (a prefix is listed whole, once); the command's one ``put_many`` is held back.
    :meth:`commit` writes it in a transaction that first checks every remembered read is
    still what the store holds, so a command never acts on what another writer changed
    (two ``create`` of one path: the second sees the file and fails)."""

    def __init__(self, kv: KvBackend) -> None:
        self.kv = kv
        self.values: dict[str, bytes | None] = {}
        self.listings: dict[str, list[tuple[str, bytes]]] = {}
        self.writes: tuple[list[tuple[str, bytes]], list[str]] | None = None

    async def get(self, key: str) -> bytes | None:
        if key not in self.values:
            self.values[key] = await self.kv.get(key)
        return self.values[key]

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        missing = [k for k in dict.fromkeys(keys) if k not in self.values]
        if missing:
            self.values.update(zip(missing, await self.kv.get_many(missing), strict=True))
        return [self.values[k] for k in keys]

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        rows = self.listings.get(prefix)
        if rows is None:
            rows = self.listings[prefix] = [pair async for pair in iter_prefix(self.kv, prefix)]
        out = [r for r in rows if start_after is None or r[0] > start_after]
        return out if limit is None else out[:limit]

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        if self.writes is not None:
            raise AssertionError("a memory tool command writes one batch")
        self.writes = (list(items), list(deletes))

    async def commit(self) -> None:
        """Write the held batch if nothing read has changed, else raise _Stale."""
        if self.writes is None:
            return
        puts, deletes = self.writes
        expected = {k: v for rows in self.listings.values() for k, v in rows}
        expected.update(self.values)
        keys = list(expected)
        prefixes = list(self.listings)
        listed_then = [[k for k, _ in self.listings[p]] for p in prefixes]

        def write(values: list[bytes | None], listed: list[list[str]]) -> Writes:
            if listed != listed_then or any(
                v != expected[k] for k, v in zip(keys, values, strict=True)
            ):
                raise _Stale()
            return Writes(puts, deletes)

        await self.kv.transact(keys, write, list_prefixes=prefixes)


async def run_recorded(kv: KvBackend, command: Callable[[RecordedKv], Awaitable[T]]) -> T:
    """Run ``command`` over a recorded view of ``kv`` and commit its write; re-run it on
    a fresh view when another writer changed what it read."""
    for _ in range(MAX_ATTEMPTS):
        view = RecordedKv(kv)
        result = await command(view)
        try:
            await view.commit()
        except _Stale:
            continue
        return result
    raise Refusal(
        "conflict",
        "The memory kept changing while this command ran (other writers); try it again.",
    )


def forbidden_char(text: str) -> str | None:
    """The first control, bidi or line-separator character in ``text`` as ``U+XXXX``, or None."""
    for ch in text:
        if ch in _BIDI or unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp"):
            return f"U+{ord(ch):04X}"
    return None


def excerpt(value: object, limit: int = 120) -> str:
    """``value`` as a bounded excerpt for a message (a string as is, anything else as
    :func:`~pymemory.errors.shown` gives it); never raises."""
    if not isinstance(value, str):
        return shown(value, limit + 3)
    return value if len(value) <= limit else value[:limit] + "..."


def normalize_memory_path(path: str) -> str:
    """``path`` as the canonical absolute path under ``/memories``, or ValidationError.

    Accepts ``/memories`` and ``/memories/<segments>`` with one optional trailing slash;
    the result is NFC-normalised with no trailing slash. ``.`` and ``..`` segments are
    resolved the way the Anthropic SDK helpers resolve them (``/memories/a/../b.txt`` is
    ``/memories/b.txt``); a path that resolves outside ``/memories`` is refused ("would
    escape"). Also refused: anything not under the root (``/etc``, ``/memories_x``,
    relative paths), empty segments, backslashes, percent-encoded sequences (``%2e``,
    ``%2F``), control, bidi and line separator characters, segments that read as ``.``
    or ``..`` without being them (U+2025 two-dot leader, fullwidth full stops: their NFKC
    form, with invisible format characters dropped, is a dot segment or holds a slash),
    segments over 255 bytes, paths over 1024 bytes and more than 16 levels below the root.
    """
    if not isinstance(path, str):
        raise ValidationError(f"path must be a string, got {type(path).__name__}")
    if len(path) > MAX_PATH_BYTES:
        raise _invalid(path, f"path is longer than {MAX_PATH_BYTES} bytes")
    if not path.startswith(MEMORY_ROOT):
        raise ValidationError(f"Path must start with {MEMORY_ROOT}, got: {excerpt(path)}")
    bad = forbidden_char(path)
    if bad is not None:
        raise _invalid(path, f"path contains the control or invisible character {bad}")
    if "\\" in path:
        raise _invalid(path, "path contains a backslash; separate segments with '/'")
    if _PERCENT_RE.search(path):
        raise _invalid(
            path,
            "path contains a percent-encoded sequence such as %2e or %2F; "
            "write the characters themselves",
        )
    as_given = path
    path = unicodedata.normalize("NFC", path)
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise _invalid(as_given, f"path is longer than {MAX_PATH_BYTES} bytes")
    if path != MEMORY_ROOT and not path.startswith(MEMORY_ROOT + "/"):
        # The SDK helpers read /memoriesX as /memories/X; we refuse the lookalike root.
        raise _invalid(
            as_given,
            f"path must be {MEMORY_ROOT} or start with {MEMORY_ROOT}/ "
            f"(for example {MEMORY_ROOT}/notes.md)",
        )
    rest = path[len(MEMORY_ROOT) :]
    if rest.endswith("/"):
        rest = rest[:-1]
    if not rest:
        return MEMORY_ROOT
    # Resolve from the filesystem root as the SDK helpers do (their /memories is a real
    # directory): /memories/../memories/x is /memories/x; going above the root's parent
    # can never come back inside.
    stack = [MEMORY_ROOT[1:]]
    for segment in rest[1:].split("/"):
        if not segment:
            raise _invalid(as_given, "path has an empty segment ('//'); remove the extra slash")
        if segment == ".":
            continue
        if segment == "..":
            if not stack:
                raise _escape(as_given)
            stack.pop()
            continue
        if _reads_as_dots(segment):
            raise _invalid(
                as_given,
                f"the segment {shown(segment)} reads as '.' or '..' or holds a slash once "
                "Unicode-normalised (NFKC); write plain characters",
            )
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise _invalid(as_given, f"a path segment is longer than {MAX_SEGMENT_BYTES} bytes")
        stack.append(segment)
        if len(stack) > MAX_DEPTH + 1:
            raise _invalid(as_given, f"path is more than {MAX_DEPTH} levels below {MEMORY_ROOT}")
    if not stack or stack[0] != MEMORY_ROOT[1:]:
        raise _escape(as_given)
    return "/" + "/".join(stack)


def _escape(path: str) -> ValidationError:
    return ValidationError(f"Path {excerpt(path)} would escape {MEMORY_ROOT} directory")


def _invalid(path: str, reason: str) -> ValidationError:
    return ValidationError(f"Invalid path {excerpt(path)!r}: {reason}.")


def _reads_as_dots(segment: str) -> bool:
    """Whether ``segment`` (not itself ``.``/``..``) reads as a dot segment or a separator:
    NFKC folds compatibility forms (two-dot leader, fullwidth full stop and solidus), and
    format characters (zero-width space, word joiner) are invisible."""
    if segment.isascii():
        return False
    folded = unicodedata.normalize("NFKC", segment)
    folded = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    return folded in (".", "..") or "/" in folded or "\\" in folded


def check_key_segments(key: str) -> str | None:
    """Why a 4-operation tool key is refused, or None: a ``/``-separated segment of it
    that reads as ``.`` or ``..`` (plain or lookalike) would mislead any consumer that
    maps keys onto paths."""
    for segment in key.split("/"):
        if segment in (".", "..") or _reads_as_dots(segment):
            return f"`key` has the segment {shown(segment)}, which reads as '.' or '..' or a slash"
    return None


# --- arguments ------------------------------------------------------------------------------


def str_arg(args: Mapping[str, Any], name: str, what: str, *, nonempty: bool = False) -> str:
    """The string argument ``name`` of a command (``what``), else a Refusal."""
    value = args.get(name)
    if not isinstance(value, str) or (nonempty and not value):
        kind = "a non-empty string" if nonempty else "a string"
        raise Refusal("invalid_input", f"`{name}` is required for {what} and must be {kind}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Refusal("invalid_input", f"`{name}` is not valid Unicode text.") from None
    return value


def int_arg(args: Mapping[str, Any], name: str, what: str) -> int:
    """The integer argument ``name`` of a command (``what``; an integral float will do),
    else a Refusal."""
    value = args.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Refusal("invalid_input", f"`{name}` is required for {what} and must be an integer.")
    return value


def check_size(text: str, limit: int, what: str) -> bytes:
    """``text`` as UTF-8 if it is at most ``limit`` bytes, else a ``too_large`` Refusal."""
    data = text.encode("utf-8")
    if len(data) > limit:
        raise Refusal(
            "too_large",
            f"{what} would be {len(data):,} bytes; the limit is {limit:,} bytes. "
            "Split it into smaller files or shorten it.",
        )
    return data
