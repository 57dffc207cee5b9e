"""The ``pymemory`` command line: manage an agent's memory in a SQLite file.

    pymemory add "The user prefers dark mode in every editor" --type user_preference
    pymemory search "editor theme" --trace
    pymemory --json list --scope user
    pymemory eval multi-turn-memory --retriever all --embedder minilm

``--db`` and ``--json`` go before or after the command. A library error prints
``error [<code>]: <message>`` on stderr and exits 1; a usage error exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sqlite3
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .errors import ConflictError, PymemoryError
from .item import FEEDBACK_KINDS, MEMORY_TYPES, ArchivedItem, MemoryItem
from .memory import Memory
from .retrieval.pipeline import Retrieval
from .retrieval.strategies import Strategy, by_scope, by_tag, by_type, compose, time_window
from .retrieval.strategies import to_dict as strategy_dict

APP = "pymemory"
CONTENT_WIDTH = 60  # characters of content shown in a table row

Handler = Callable[[Memory, argparse.Namespace], Awaitable[None]]
EVAL_RETRIEVERS = ("bm25", "dense", "hybrid")


def default_db_path(platform: str | None = None) -> Path:
    """The store used without ``--db``: ``$PYMEMORY_DB``, else ``memory.db`` in the user's
    data directory (XDG on Linux, Application Support on macOS, %APPDATA% on Windows)."""
    if os.environ.get("PYMEMORY_DB"):
        return Path(os.environ["PYMEMORY_DB"]).expanduser()
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")  # the XDG spec ignores relative paths
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / APP / "memory.db"


# --- argument types ---------------------------------------------------------------------


def parse_meta(value: str) -> tuple[str, Any]:
    """``KEY=VALUE``: VALUE as JSON when it parses (``3``, ``true``, ``["a"]``), else a string."""
    key, sep, raw = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    try:
        return key, json.loads(raw, parse_constant=_reject)
    except ValueError:
        return key, raw


def _reject(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity stay strings


def parse_count(value: str) -> int:
    """An int >= 0."""
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value!r}")
    return int(value)


def parse_time(value: str) -> int:
    """Epoch milliseconds, or an ISO date / date-time (local time unless it has an offset)."""
    if value.isdigit():
        return int(value)
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO date-time, got {value!r}"
        ) from None
    return round(when.timestamp() * 1000)


# --- output helpers ---------------------------------------------------------------------


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


# --- commands ---------------------------------------------------------------------------


async def cmd_add(memory: Memory, a: argparse.Namespace) -> None:
    metadata = {"source": "cli", **dict(a.meta or [])}
    item = await memory.add(
        a.text,
        content=a.content,
        type=a.type,
        metadata=metadata,
        tags=a.tag or [],
        scope=a.scope,
        ttl_ms=a.ttl_ms,
    )
    if a.json:
        emit(item_json(item))
    else:
        show_item(item, full=False)


def search_strategy(a: argparse.Namespace) -> Strategy | None:
    """The filters of ``search`` as one composed strategy (None: the default ranking)."""
    parts: list[Strategy] = []
    if a.tag:
        parts.append(by_tag(a.tag))
    if a.type:
        parts.append(by_type(a.type))
    if a.scope:
        parts.append(by_scope(a.scope))
    if a.hours is not None:
        parts.append(time_window(a.hours))
    return compose(parts) if parts else None


async def cmd_search(memory: Memory, a: argparse.Namespace) -> None:
    strategy = search_strategy(a)
    r = await memory.retrieve(
        a.query, strategy, max_items=a.max_items, max_tokens=a.max_tokens, trace=a.trace
    )
    if a.json:
        out = r.to_dict()
        for row, scored in zip(out["memories"], r.memories, strict=True):
            row["item"] = item_json(scored.item)
        out["strategy"] = None if strategy is None else strategy_dict(strategy)
        emit(out)
        return
    print(
        f"{plural(len(r.memories), 'memory', 'memories')} · "
        f"{r.tokens_used}/{r.max_tokens} tokens ({r.token_counter}) · "
        f"max {plural(r.max_items, 'item', 'items')} · ranked by {r.mode}"
    )
    for n, m in enumerate(r.memories, 1):
        it = m.item
        tags = f"  [{', '.join(it.tags)}]" if it.tags else ""
        print(f"\n{n}. {it.id}  {it.type}  {it.scope}  {fmt_time(it.timestamp)}{tags}")
        print(f"   {it.content}")
        print(
            f"   score {m.score:.3f} = bm25 {m.bm25:.3f} × decay {m.decay:.3f}"
            f" × feedback {m.feedback_weight:g} · {m.tokens} tokens"
        )
    if r.trace is not None:
        show_trace(r)


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
            f"{c.bm25:.3f}",
            f"{c.decay:.3f}",
            f"{c.feedback_weight:g}",
            "-" if c.tokens is None else str(c.tokens),
            c.id,
            one_line(c.content, 40),
        ]
        for n, c in enumerate(r.trace, 1)
    ]
    headers = ["#", "status", "score", "bm25", "decay", "feedback", "tokens", "id", "content"]
    table(headers, rows, right=(0, 2, 3, 4, 5, 6))


async def cmd_list(memory: Memory, a: argparse.Namespace) -> None:
    items = await memory.list(scope=a.scope, type=a.type, tags=a.tag, limit=a.limit)
    if a.json:
        emit([item_json(i) for i in items])
    elif not items:
        print("no memories")
    else:
        table(["id", "created", "type", "scope", "tags", "content"], item_rows(items))


async def cmd_get(memory: Memory, a: argparse.Namespace) -> None:
    item = await memory.get(a.id)
    if a.json:
        emit(item_json(item))
    else:
        show_item(item, full=True)


async def cmd_forget(memory: Memory, a: argparse.Namespace) -> None:
    if a.ids:
        ids = list(dict.fromkeys(a.ids))
        for id in ids:  # every id must exist before anything is deleted
            await memory.get(id)
        for id in ids:
            await memory.delete(id)
        removed = len(ids)
    else:
        removed = await memory.clear(
            scope=a.scope,
            tags=a.tag,
            type=a.type,
            since_ms=a.since,
            until_ms=a.until,
            all=a.all,
        )
    if a.json:
        emit({"removed": removed})
    elif a.all:
        print(f"forgot everything: {plural(removed, 'record', 'records')} (memories and archive)")
    else:
        print(f"forgot {plural(removed, 'memory', 'memories')}")


async def cmd_feedback(memory: Memory, a: argparse.Namespace) -> None:
    await memory.feedback(a.id, a.kind)
    item = await memory.get(a.id)
    if a.json:
        emit({"id": a.id, "kind": a.kind, "feedback": item.to_dict()["feedback"]})
    else:
        print(f"{a.kind}: {a.id} ({feedback_line(item)})")


async def cmd_archive(memory: Memory, a: argparse.Namespace) -> None:
    if a.older_than is not None:
        moved = await memory.archive_older_than(a.older_than)
        if a.json:
            emit({"archived": moved, "older_than_days": a.older_than})
        else:
            print(
                f"archived {plural(moved, 'memory', 'memories')} older than {a.older_than:g} "
                "days (memories marked important stay)"
            )
        return
    found = await memory.search_archive(a.search, limit=a.limit)
    if a.json:
        emit([f.to_dict() for f in found])
    elif not found:
        print("no archived memories match")
    else:
        table(["id", "created", "type", "content"], archive_rows(found))


def archive_rows(found: Sequence[ArchivedItem]) -> list[list[str]]:
    return [[f.id, fmt_time(f.timestamp), f.type, one_line(f.content)] for f in found]


async def cmd_export(memory: Memory, a: argparse.Namespace) -> None:
    if a.file in (None, "-"):
        async for line in memory.export():
            sys.stdout.write(line)
        return
    path = Path(a.file)
    tmp = path.with_name(path.name + ".tmp")
    kinds: Counter[str] = Counter()
    try:  # write beside the target and rename, so a failed export never clobbers a file
        with tmp.open("w", encoding="utf-8", newline="") as f:
            async for line in memory.export():
                f.write(line)
                kinds[json.loads(line).get("kind", "header")] += 1
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    if a.json:
        emit({"file": str(path), "memories": kinds["memory"], "archived": kinds["archived"]})
    else:
        print(
            f"exported {plural(kinds['memory'], 'memory', 'memories')} and "
            f"{kinds['archived']} archived to {path}"
        )


async def cmd_import(memory: Memory, a: argparse.Namespace) -> None:
    result = await memory.import_(a.data, on_conflict=a.on_conflict)
    if a.json:
        emit(
            {
                "added": result.added,
                "replaced": result.replaced,
                "skipped": result.skipped,
                "archived": result.archived,
            }
        )
    else:
        print(
            f"imported {a.file}: {result.added} added, {result.replaced} replaced, "
            f"{result.skipped} skipped ({result.archived} of them archived)"
        )


async def cmd_stats(memory: Memory, a: argparse.Namespace) -> None:
    s = await memory.stats()
    if a.json:
        emit({"db": str(a.db), **s})
        return
    block(
        [
            ("db", str(a.db)),
            ("memories", str(s["items"])),
            ("archived", str(s["archived"])),
            ("expired", f"{s['expired_pending_sweep']} (not yet swept)"),
            ("by type", counts(s["by_type"])),
            ("by scope", counts(s["by_scope"])),
            ("content by", counts(s["by_method"])),
            ("oldest", fmt_time(s["oldest_ms"])),
            ("newest", fmt_time(s["newest_ms"])),
            ("unreadable", str(s["unreadable_records"])),
            ("schema", f"v{s['schema_version']}"),
            ("tokens", f"{s['token_counter']} counter"),
        ]
    )


async def cmd_eval(memory: Memory | None, a: argparse.Namespace) -> None:
    """Run a shipped evaluation suite (no store is opened: each run uses a fresh memory)."""
    from .evals.harness import REPORT_HEADERS, report_rows, run_suite
    from .evals.suites import load_suite
    from .models.embedding import load_embedder

    suite = load_suite(a.suite)
    names = EVAL_RETRIEVERS if a.retriever == "all" else (a.retriever,)
    embedder = None
    if any(name != "bm25" for name in names):
        embedder = await load_embedder(a.embedder)
    reports = [await run_suite(suite, name, embedder) for name in names]
    if a.json:
        emit({"suite": suite.name, "reports": [r.to_dict() for r in reports]})
        return
    first = reports[0]
    print(
        f"{suite.name}: {plural(first.turns, 'turn', 'turns')} "
        f"({first.turn_tokens:,} tokens), {plural(len(suite.questions), 'question', 'questions')}"
        f" · top {first.k} · embedder {embedder.name if embedder else '-'}"
    )
    for report in reports:
        print()
        table(REPORT_HEADERS, report_rows(report), right=range(2, len(REPORT_HEADERS)))
    print(
        "\nR@n: share of each question's evidence in the top n · MRR: first gold turn · "
        "AUROC: top score separates answerable from abstention questions"
    )


# --- parser -----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    # --db and --json are accepted after the command too; SUPPRESS keeps the global value.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )

    parser = argparse.ArgumentParser(
        prog=APP, description="Private, offline memory for AI agents, kept in a SQLite file."
    )
    parser.add_argument(
        "--db", type=Path, help="SQLite file (default: $PYMEMORY_DB, else memory.db in the "
        f"user data directory, here {default_db_path()})",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="machine-readable JSON output")
    parser.add_argument("--version", action="version", version=f"{APP} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler, parser=p)
        return p

    def filters(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument("--tag", action="append", metavar="TAG", help=f"{what} tag (repeatable)")
        p.add_argument(
            "--type", action="append", choices=MEMORY_TYPES, help=f"{what} type (repeatable)"
        )
        p.add_argument("--scope", action="append", metavar="S", help=f"{what} scope (repeatable)")

    p = command("add", cmd_add, "store a memory")
    p.add_argument("text", metavar="TEXT", help="raw input, summarised into content; - is stdin")
    p.add_argument("--content", metavar="S", help="give the <= 200-char summary yourself")
    p.add_argument("--type", default="message", choices=MEMORY_TYPES, help="default: message")
    p.add_argument("--tag", action="append", metavar="TAG", help="a tag (repeatable)")
    p.add_argument("--scope", default="global", metavar="S", help="default: global")
    p.add_argument("--ttl-ms", type=int, metavar="N", help="expire N milliseconds from now")
    p.add_argument(
        "--meta", action="append", type=parse_meta, metavar="KEY=VALUE",
        help="metadata; VALUE is JSON or a plain string (repeatable)",
    )  # fmt: skip

    p = command("search", cmd_search, "retrieve the memories that matter for a query")
    p.add_argument("query", metavar="QUERY", nargs="?", default="", help="empty: by recency")
    p.add_argument("--max-items", type=int, default=5, metavar="N", help="default: 5")
    p.add_argument("--max-tokens", type=int, default=1500, metavar="N", help="default: 1500")
    filters(p, "only this")
    p.add_argument("--hours", type=float, metavar="H", help="only the last H hours")
    p.add_argument("--trace", action="store_true", help="show every candidate and why it was cut")

    p = command("list", cmd_list, "list memories, newest first")
    filters(p, "only this")
    p.add_argument("--limit", type=parse_count, metavar="N", help="at most N memories")

    p = command("get", cmd_get, "show one memory")
    p.add_argument("id", metavar="ID")

    p = command("forget", cmd_forget, "delete memories by id or by filter")
    p.add_argument("ids", metavar="ID", nargs="*", help="ids to delete")
    filters(p, "delete memories with this")
    p.add_argument("--since", type=parse_time, metavar="WHEN", help="epoch ms or ISO date-time")
    p.add_argument("--until", type=parse_time, metavar="WHEN", help="epoch ms or ISO date-time")
    p.add_argument("--all", action="store_true", help="delete every memory and the archive")
    p.add_argument("--yes", action="store_true", help="confirm --all")

    p = command("feedback", cmd_feedback, "record the user's feedback on a memory")
    p.add_argument("id", metavar="ID")
    p.add_argument("kind", choices=FEEDBACK_KINDS)

    p = command("archive", cmd_archive, "archive old memories, or search the archive")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--older-than", type=float, metavar="DAYS", help="archive older memories")
    group.add_argument("--search", metavar="QUERY", help="search the archive ('' = newest)")
    p.add_argument("--limit", type=parse_count, default=10, metavar="N", help="search results (10)")

    p = command("export", cmd_export, "write the whole store as JSON Lines")
    p.add_argument("file", metavar="FILE", nargs="?", help="default: stdout")

    p = command("import", cmd_import, "load a JSON Lines export")
    p.add_argument("file", metavar="FILE", help="- reads stdin")
    p.add_argument("--on-conflict", choices=("error", "skip", "replace"), default="error")

    command("stats", cmd_stats, "counts and store details")

    p = command("eval", cmd_eval, "measure retrieval on a shipped evaluation suite")
    p.set_defaults(needs_db=False)
    p.add_argument(
        "suite", metavar="SUITE",
        help="multi-turn-memory, long-context-recall, or a suite file (JSON Lines)",
    )  # fmt: skip
    p.add_argument(
        "--retriever", choices=(*EVAL_RETRIEVERS, "all"), default="all", help="default: all"
    )
    p.add_argument(
        "--embedder", default="minilm", metavar="NAME",
        help="for dense and hybrid: minilm (the local model) or hashing (a model-free "
        "lexical baseline); default: minilm",
    )  # fmt: skip
    return parser


def check_usage(a: argparse.Namespace) -> None:
    """Usage rules argparse cannot express; each failure exits 2."""
    if a.command != "forget":
        return
    filtered = any(v is not None for v in (a.scope, a.tag, a.type, a.since, a.until))
    if a.ids and (filtered or a.all):
        a.parser.error("give ids or filters, not both")
    if a.all and filtered:
        a.parser.error("--all takes no filters")
    if a.all and not a.yes:
        a.parser.error("--all deletes every memory and the archive; add --yes to confirm")
    if not (a.ids or filtered or a.all):
        a.parser.error("give ids, a filter (--scope, --tag, --type, --since, --until) or --all")


def read_input(a: argparse.Namespace) -> None:
    """Read stdin and files before the store is opened."""
    if a.command == "add" and a.text == "-":
        a.text = sys.stdin.read().rstrip("\r\n")
    elif a.command == "import":
        a.data = sys.stdin.read() if a.file == "-" else Path(a.file).read_text(encoding="utf-8")


async def run(a: argparse.Namespace) -> None:
    if not getattr(a, "needs_db", True):
        await a.handler(None, a)
        return
    async with await Memory.open(a.db) as memory:
        await a.handler(memory, a)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 error, 2 usage)."""
    try:
        args = build_parser().parse_args(argv)
        check_usage(args)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 2
    args.db = args.db or default_db_path()
    try:
        read_input(args)
        asyncio.run(run(args))
    except PymemoryError as exc:
        print(f"error [{exc.code}]: {exc}", file=sys.stderr)
        if isinstance(exc, ConflictError) and args.command == "import":
            print("hint: import --on-conflict skip|replace", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `pymemory export | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except sqlite3.Error as exc:
        print(f"error: cannot use {args.db}: {exc}", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
