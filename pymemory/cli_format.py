"""Terminal output of the ``pymemory`` command line: items, retrievals, tables, JSON."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from .item import ArchivedItem, MemoryItem
from .retrieval.results import Retrieval

CONTENT_WIDTH = 60  # characters of content shown in a table row


def fmt_time(ms: int | None) -> str:
    """Epoch ms as a local ISO date-time to the second."""
    if ms is None:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def one_line(text: str, width: int = CONTENT_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def counts(mapping: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in mapping.items()) or "-"


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def emit(document: Any) -> None:
    print(json.dumps(document, ensure_ascii=False, indent=2))


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> None:
    """Print aligned columns under a header and a dashed rule; ``right`` columns right-aligned."""
    widths = [max(len(row[i]) for row in (headers, *rows)) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        padded = (
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    print(line(headers))
    print(line(["-" * w for w in widths]))
    for row in rows:
        print(line(row))


def block(pairs: Sequence[tuple[str, str]]) -> None:
    """Print ``key  value`` lines with the values aligned (multi-line values indented)."""
    width = max(len(key) for key, _ in pairs)
    for key, value in pairs:
        first, *rest = value.splitlines() or [""]
        print(f"{key.ljust(width)}  {first}")
        for more in rest:
            print(f"{' ' * width}  {more}")


def summarized(item: MemoryItem) -> bool:
    """Whether ``content`` is a summary of a longer or different ``text``."""
    return item.content != item.text


def item_json(item: MemoryItem) -> dict[str, Any]:
    """The item's codec dict, with ``text`` always present and a ``summarized`` flag."""
    return {**item.to_dict(), "text": item.text, "summarized": summarized(item)}


def show_item(item: MemoryItem, *, full: bool) -> None:
    summary = (
        f"yes ({item.content_method}); full text kept, {len(item.text)} chars"
        if summarized(item)
        else "no (content is the whole text)"
    )
    pairs = [
        ("id", item.id),
        ("type", item.type),
        ("scope", item.scope),
        ("tags", ", ".join(item.tags) or "-"),
    ]
    if full:
        pairs += [
            ("created", fmt_time(item.timestamp)),
            ("expires", fmt_time(item.expires_at) if item.ttl_ms else "never"),
            ("feedback", feedback_line(item)),
            ("metadata", json.dumps(item.metadata, ensure_ascii=False, sort_keys=True)),
        ]
    pairs += [("content", item.content), ("summary", summary)]
    if full and summarized(item):
        pairs.append(("text", item.text))
    block(pairs)


def feedback_line(item: MemoryItem) -> str:
    fb = item.feedback
    return f"liked {fb.liked}, disliked {fb.disliked}, important {'yes' if fb.important else 'no'}"


def item_rows(items: Sequence[MemoryItem]) -> list[list[str]]:
    return [
        [i.id, fmt_time(i.timestamp), i.type, i.scope, ",".join(i.tags), one_line(i.content)]
        for i in items
    ]


def show_trace(r: Retrieval) -> None:
    assert r.trace is not None
    print(f"\ntrace: {plural(len(r.trace), 'candidate', 'candidates')}, best first")
    if not r.trace:
        return
    rows = [
        [
            str(n),
            c.status,
            f"{c.score:.3f}",
            f"{c.relevance:.3f}",
            f"{c.bm25:.3f}",
            f"{c.decay:.3f}",
            f"{c.feedback_weight:g}",
            "-" if c.tokens is None else str(c.tokens),
            c.id,
            one_line(c.content, 40),
        ]
        for n, c in enumerate(r.trace, 1)
    ]
    headers = [
        "#", "status", "score", "relevance", "bm25", "decay", "feedback", "tokens", "id",
        "content",
    ]  # fmt: skip
    table(headers, rows, right=(0, 2, 3, 4, 5, 6, 7))


def archive_rows(found: Sequence[ArchivedItem]) -> list[list[str]]:
    return [[f.id, fmt_time(f.timestamp), f.type, one_line(f.content)] for f in found]
