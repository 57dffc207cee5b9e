"""The fenced code blocks of README.md and docs/*.md, found the way the tests name them:
by page, the heading they sit under, and their position under it."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^( *)```(\w*)\s*$")
HEADING = re.compile(r"^#{1,6} \S")


@dataclass(frozen=True)
class Block:
    page: str  # "README.md" or "docs/<name>.md"
    heading: str  # the nearest heading above the block, e.g. "## Python quick tour"
    index: int  # 0 for the first block under that heading, 1 for the next, ...
    lang: str  # the fence's language ("" for output)
    body: str  # dedented, ending with a newline
    line: int  # the fence's line number (1-based)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.page, self.heading, self.index)


def pages() -> list[str]:
    """README.md and every docs page but BENCHMARKS.md (tables, not examples)."""
    docs = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "BENCHMARKS.md")
    return ["README.md", *(f"docs/{name}" for name in docs)]


def blocks(page: str) -> list[Block]:
    lines = (ROOT / page).read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    heading, count = "", 0
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence is None:
            if HEADING.match(line):
                heading, count = line.strip(), 0
            i += 1
            continue
        indent, lang = fence.groups()
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"
             and lines[j].startswith(indent)),
            None,
        )  # fmt: skip
        assert end is not None, f"{page}:{i + 1}: a code fence that is never closed"
        body = textwrap.dedent("\n".join(lines[i + 1 : end]) + "\n")
        found.append(Block(page, heading, count, lang, body, i + 1))
        count += 1
        i = end + 1
    return found


def block(page: str, heading: str, index: int = 0) -> Block:
    """The ``index``-th block under ``heading`` on ``page`` (fails loudly if it moved)."""
    for b in blocks(page):
        if b.heading == heading and b.index == index:
            return b
    raise AssertionError(f"{page} has no block {index} under {heading!r}")


def section(page: str, heading: str) -> str:
    """The text of ``page`` from ``heading`` to the next heading of the same or a higher level."""
    text = (ROOT / page).read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    level = len(heading) - len(heading.lstrip("#"))
    rest = text[start + len(heading) :]
    stop = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return heading + (rest[: stop.start()] if stop else rest)
