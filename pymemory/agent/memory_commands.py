"""The Anthropic ``memory_20250818`` commands over the ``fs:`` files of one KvBackend.

:class:`MemoryTree` holds the lookups and the six commands (``view`` / ``create`` /
``str_replace`` / ``insert`` / ``delete`` / ``rename``) with the output formats and messages
Claude expects; :func:`~.memory_tool.create_anthropic_memory_tool` checks the arguments and
dispatches to it. The key layout is described in :mod:`.memory_tool`.

Each command works on the normalised path (``/memories/a/../b.md`` is stored as
``/memories/b.md``), and its success message names the path as the model gave it
(``given``), as both Anthropic SDK helpers do; a directory listing's rows are the
normalised paths, so each can be passed back as is.
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..storage.base import MAX_KEY_CHARS, KvBackend, iter_prefix
from .memory_checks import MEMORY_ROOT, Refusal, check_size, excerpt, normalize_memory_path

_HIDDEN = "node_modules"


def _human_size(n: int) -> str:
    """Bytes as ``du -h`` shows them: 512B, 1.5K, 2M."""
    if n < 1024:
        return f"{n}B"
    size, unit = n / 1024, "K"
    for unit in "KMG":
        if size < 1024 or unit == "G":
            break
        size /= 1024
    return (f"{size:.1f}".removesuffix(".0")) + unit


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


MAX_LINES = 999_999  # the SDK helpers' view limit
MAX_LISTED_LINES = 50  # line numbers named by a multiple_matches refusal


def _matches(text: str, sub: str, max_lines: int = MAX_LISTED_LINES) -> tuple[int, list[int]]:
    """Where ``sub`` occurs in ``text``, in one pass: ``(count, lines)``.

    ``count`` is 0, 1 or 2 (two or more, overlapping ones included); ``lines`` are the
    distinct 1-based lines where occurrences start, at most ``max_lines`` + 1 of them (one
    more than listed says "and more"). After a hit the scan jumps to the next line, and
    each newline is counted once, so the cost is bounded by the text and ``max_lines``,
    whatever ``sub`` is (a one-letter ``old_str`` in a file of that letter included).
    """
    first = text.find(sub)
    if first == -1:
        return 0, []
    if text.find(sub, first + 1) == -1:
        return 1, [text.count("\n", 0, first) + 1]
    lines: list[int] = []
    line, counted_to, at = 1, 0, first
    while at != -1 and len(lines) <= max_lines:
        line += text.count("\n", counted_to, at)
        counted_to = at
        lines.append(line)
        newline = text.find("\n", at)
        if newline == -1:
            break
        at = text.find(sub, newline + 1)
    return 2, lines


# --- the /memories tree (memory_20250818) ---------------------------------------------------


class MemoryTree:
    """The ``fs:`` files of one KV: lookups and the six commands."""

    def __init__(self, kv: KvBackend, prefix: str, max_file_bytes: int, max_files: int) -> None:
        self.kv = kv
        self.prefix = prefix
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files

    def key(self, path: str) -> str:
        key = self.prefix + path
        if len(key) > MAX_KEY_CHARS:
            limit = MAX_KEY_CHARS - len(self.prefix)
            raise Refusal("invalid_path", f"The path {path} is too long to store ({limit} max).")
        return key

    async def read(self, path: str) -> str | None:
        raw = await self.kv.get(self.key(path))
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            # Showing it with replacement characters would let an edit rewrite the bytes.
            raise Refusal(
                "corrupt_record",
                f"The file {path} is stored as invalid UTF-8 and cannot be read or edited; "
                "delete it or rename it away, then create it again.",
            ) from None

    async def files_under(self, path: str) -> list[tuple[str, bytes]]:
        """(path, value) of every file strictly under directory ``path``."""
        start = len(self.prefix)
        return [(k[start:], v) async for k, v in iter_prefix(self.kv, self.key(path) + "/")]

    async def is_dir(self, path: str) -> bool:
        return path == MEMORY_ROOT or bool(await self.kv.scan(self.key(path) + "/", limit=1))

    async def check_parents(self, path: str) -> None:
        parts = path.split("/")[2:-1]  # ["", "memories", *parents, name]
        parents = [MEMORY_ROOT + "/" + "/".join(parts[: i + 1]) for i in range(len(parts))]
        found = await self.kv.get_many([self.key(p) for p in parents])
        for parent, raw in zip(parents, found, strict=True):
            if raw is not None:
                raise Refusal("parent_is_file", f"{parent} is a file, so it cannot contain {path}.")

    async def count_files(self) -> int:
        return sum([1 async for _ in iter_prefix(self.kv, self.key(MEMORY_ROOT) + "/")])

    async def file_text(self, path: str) -> str:
        text = await self.read(path)
        if text is None:
            if await self.is_dir(path):
                raise Refusal("is_directory", f"The path {path} is a directory, not a file.")
            raise Refusal(
                "not_found", f"The path {path} does not exist. Please provide a valid path."
            )
        return text

    # commands: each returns (content, outcome, artifact extras)

    async def view(
        self, path: str, view_range: object, given: str | None = None
    ) -> tuple[str, str, dict[str, Any]]:
        given = path if given is None else given
        text = await self.read(path)
        if text is None:
            if not await self.is_dir(path):
                raise Refusal(
                    "not_found", f"The path {path} does not exist. Please provide a valid path."
                )
            if view_range is not None:
                raise Refusal(
                    "invalid_input",
                    "The `view_range` parameter is not allowed when `path` points to a directory.",
                )
            return await self._listing(path, given)
        lines = text.split("\n")
        if len(lines) > MAX_LINES:
            raise Refusal(
                "too_many_lines",
                f"File {path} exceeds maximum line limit of {MAX_LINES:,} lines.",
            )
        first, last = 1, len(lines)
        if view_range is not None:
            first, last = self._range(view_range, len(lines))
        body = _numbered(lines[first - 1 : last], first)
        extras = {"lines": [first, last], "bytes": len(text.encode("utf-8"))}
        return f"Here's the content of {given} with line numbers:\n{body}", "viewed", extras

    @staticmethod
    def _range(view_range: object, n_lines: int) -> tuple[int, int]:
        ok = (
            isinstance(view_range, (list, tuple))
            and len(view_range) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in view_range)
        )
        if not ok:
            raise Refusal(
                "invalid_input",
                f"Invalid `view_range` parameter: {excerpt(view_range)}. "
                "It should be a list of two integers [start_line, end_line].",
            )
        first, last = view_range  # type: ignore[misc]
        # Range-check before formatting: str() of an int past 4,300 digits raises.
        shown = f"[{excerpt(first, 40)}, {excerpt(last, 40)}]"
        if not 1 <= first <= n_lines:
            raise Refusal(
                "invalid_input",
                f"Invalid `view_range` parameter: {shown}. Its first element "
                f"`{excerpt(first, 40)}` should be within the range of lines of the file: "
                f"[1, {n_lines}].",
            )
        if last == -1:
            return first, n_lines
        if not first <= last <= n_lines:
            raise Refusal(
                "invalid_input",
                f"Invalid `view_range` parameter: {shown}. Its second element "
                f"`{excerpt(last, 40)}` should be -1 or within [{first}, {n_lines}].",
            )
        return first, last

    async def _listing(self, path: str, given: str) -> tuple[str, str, dict[str, Any]]:
        files = await self.files_under(path)
        base = len(path) + 1
        sizes: dict[tuple[str, ...], int] = {}
        is_dir: set[tuple[str, ...]] = set()
        total = 0
        for file_path, value in files:
            parts = tuple(file_path[base:].split("/"))
            total += len(value)
            for depth in range(1, min(len(parts), 2) + 1):
                rel = parts[:depth]
                sizes[rel] = sizes.get(rel, 0) + len(value)
                if depth < len(parts):
                    is_dir.add(rel)
        rows = [f"{_human_size(total)}\t{path}"]
        for rel in sorted(sizes):
            if any(p.startswith(".") or p == _HIDDEN for p in rel):
                continue
            slash = "/" if rel in is_dir else ""
            rows.append(f"{_human_size(sizes[rel])}\t{path}/{'/'.join(rel)}{slash}")
        header = (
            f"Here're the files and directories up to 2 levels deep in {given}, "
            "excluding hidden items and node_modules:"
        )
        extras = {"entries": len(rows) - 1, "files": len(files), "bytes": total}
        return header + "\n" + "\n".join(rows), "listed", extras

    async def create(
        self, path: str, file_text: str, given: str | None = None
    ) -> tuple[str, str, dict[str, Any]]:
        if path == MEMORY_ROOT:
            raise Refusal("is_directory", f"{MEMORY_ROOT} is a directory; create a file under it.")
        data = check_size(file_text, self.max_file_bytes, f"The file {path}")
        key = self.key(path)
        if await self.kv.get(key) is not None:
            raise Refusal(
                "already_exists",
                f"File {path} already exists. Use str_replace or insert to edit it, "
                "or delete it first.",
            )
        if await self.is_dir(path):
            raise Refusal("is_directory", f"The path {path} is a directory, not a file.")
        await self.check_parents(path)
        count = await self.count_files()
        if count >= self.max_files:
            raise Refusal(
                "too_many_files",
                f"The memory directory already holds {count} files, the limit. "
                "Delete or merge files before creating new ones.",
            )
        await self.kv.put_many([(key, data)])
        done = f"File created successfully at: {path if given is None else given}"
        return done, "created", {"bytes": len(data)}

    async def str_replace(
        self, path: str, old_str: str, new_str: str
    ) -> tuple[str, str, dict[str, Any]]:
        text = await self.file_text(path)
        count, lines = _matches(text, old_str)
        if not count:
            raise Refusal(
                "no_match",
                f"No replacement was performed, old_str `{excerpt(old_str, 200)}` did not "
                f"appear verbatim in {path}.",
            )
        if count > 1:
            listed = ", ".join(map(str, lines[:MAX_LISTED_LINES]))
            if len(lines) > MAX_LISTED_LINES:
                listed += ", ..."
            raise Refusal(
                "multiple_matches",
                f"No replacement was performed. Multiple occurrences of old_str "
                f"`{excerpt(old_str, 200)}` in lines: {listed}. Please ensure it is unique",
            )
        at = text.find(old_str)
        new_text = text[:at] + new_str + text[at + len(old_str) :]
        data = check_size(new_text, self.max_file_bytes, f"The file {path}")
        await self.kv.put_many([(self.key(path), data)])
        new_lines = new_text.split("\n")
        first = text.count("\n", 0, at)  # 0-based line of the change
        last = first + new_str.count("\n")
        lo, hi = max(0, first - 2), min(len(new_lines), last + 3)
        snippet = _numbered(new_lines[lo:hi], lo + 1)
        content = (
            "The memory file has been edited. Here is the snippet showing the change "
            f"(with line numbers):\n{snippet}"
        )
        return content, "edited", {"line": first + 1, "bytes": len(data)}

    async def insert(
        self, path: str, insert_line: int, insert_text: str, given: str | None = None
    ) -> tuple[str, str, dict[str, Any]]:
        text = await self.file_text(path)
        lines = text.split("\n")
        if not 0 <= insert_line <= len(lines):
            raise Refusal(
                "invalid_input",
                f"Invalid `insert_line` parameter: {excerpt(insert_line, 40)}. It should be "
                "within the "
                f"range of lines of the file: [0, {len(lines)}].",
            )
        if insert_text.endswith("\n"):
            insert_text = insert_text[:-1]
        lines.insert(insert_line, insert_text)
        data = check_size("\n".join(lines), self.max_file_bytes, f"The file {path}")
        await self.kv.put_many([(self.key(path), data)])
        done = f"The file {path if given is None else given} has been edited."
        return done, "edited", {"line": insert_line}

    async def delete(self, path: str, given: str | None = None) -> tuple[str, str, dict[str, Any]]:
        if path == MEMORY_ROOT:
            raise Refusal("invalid_path", f"Cannot delete the {MEMORY_ROOT} directory itself.")
        key = self.key(path)
        if await self.kv.get(key) is not None:
            doomed = [key]
        else:
            doomed = [self.key(p) for p, _ in await self.files_under(path)]
            if not doomed:
                raise Refusal("not_found", f"The path {path} does not exist.")
        await self.kv.put_many([], deletes=doomed)
        done = f"Successfully deleted {path if given is None else given}"
        return done, "deleted", {"deleted": len(doomed)}

    async def rename(
        self, old: str, new: str, given: tuple[str, str] | None = None
    ) -> tuple[str, str, dict[str, Any]]:
        if MEMORY_ROOT in (old, new):
            raise Refusal("invalid_path", f"Cannot rename the {MEMORY_ROOT} directory itself.")
        if new.startswith(old + "/"):
            raise Refusal("invalid_path", f"Cannot move {old} into itself ({new}).")
        old_key, new_key = self.key(old), self.key(new)
        value = await self.kv.get(old_key)
        files = [] if value is not None else await self.files_under(old)
        if value is None and not files:
            raise Refusal("not_found", f"The path {old} does not exist.")
        if await self.kv.get(new_key) is not None or await self.is_dir(new):
            raise Refusal("already_exists", f"The destination {new} already exists.")
        await self.check_parents(new)
        if value is not None:
            moves = [(new_key, value)]
            doomed = [old_key]
        else:
            moves, doomed = [], []
            for file_path, data in files:
                target = new + file_path[len(old) :]
                try:
                    target = normalize_memory_path(target)
                except ValidationError as exc:
                    raise Refusal("invalid_path", f"Cannot move {file_path}: {exc}.") from None
                moves.append((self.key(target), data))
                doomed.append(self.key(file_path))
        await self.kv.put_many(moves, deletes=doomed)
        old_given, new_given = (old, new) if given is None else given
        done = f"Successfully renamed {old_given} to {new_given}"
        return done, "renamed", {"moved": len(moves)}
