"""Evidence seen: what reaches the prompt, not where the right memory ranks.

For each question, the share of its gold evidence turns whose words reach
``Retrieval.text`` (at least 60% of the turn's word trigrams: lower-cased runs of letters
and digits, each CJK character a word of its own), beside "memory returned" (the share
whose memory is among ``Retrieval.items``), so the loss between finding and injecting is
visible. Each conversation is stored two ways:

- ``turn``: one memory per turn (text ``"<speaker>: <text>"``);
- ``session``: one memory per session, its dated transcript as the text (a finished
  chat, a meeting note, a document).

Retrievers: ``bm25`` (no embedder) and ``hybrid`` (MiniLM attached, or the embedder
``--embedder`` names), each through
``Memory.retrieve(question, max_items=MAX_ITEMS, max_tokens=B)`` at B = 300, 1000 and 2000
tokens (the token budget governs; ``MAX_ITEMS`` is high), and optionally
``inject="summary"`` (``--summary``: the previous behaviour). Two naive baselines in the
same run, with the same o200k token counter: ``paste-memories`` (a plain BM25 over the
stored memories, their raw text pasted best first until the budget is full, the last one
cut to fit) and ``paste-chunks`` (the same over the lines of every memory's text: turns).

Data: LoCoMo's dev copy (``../shared/data/locomo-dev``, CC BY-NC 4.0, read from there,
never copied), split by conversation into ``tune`` (conv-26, conv-30, conv-41: where
choices are made) and ``check`` (never tuned on); and the Chinese suite (one split).

Usage (from the repository root; ~10 minutes)::

    python benchmarks/eval_evidence.py [--locomo PATH] [--budgets 300 1000 2000]
        [--modes turn session] [--no-chinese] [--embedder multilingual-e5-small]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import json
import math
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pymemory import Memory  # noqa: E402
from pymemory.evals.harness import turn_entry  # noqa: E402
from pymemory.evals.locomo import locomo_suite  # noqa: E402
from pymemory.evals.suites import Suite, Turn, load_suite  # noqa: E402
from pymemory.models.embedding import load_embedder  # noqa: E402
from pymemory.storage import MapKv  # noqa: E402

LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
MAX_ITEMS = 100
SEEN_SHARE = 0.6
_WORDS = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "he", "her", "his", "how", "i", "in", "is", "it", "its", "me", "my",
    "of", "on", "or", "she", "so", "that", "the", "their", "them", "they", "this", "to", "was",
    "were", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
])


def words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def grams(text: str) -> set[tuple[str, ...]]:
    w = words(text)
    n = 3 if len(w) >= 3 else max(len(w), 1)
    return {tuple(w[i : i + n]) for i in range(max(len(w) - n + 1, 0))}


def seen(turn_text: str, prompt_grams: set[tuple[str, ...]], prompt_words: set[str]) -> bool:
    g = grams(turn_text)
    if not g:
        return False
    if len(next(iter(g))) < 3:  # a turn of one or two words
        return all(w in prompt_words for w in words(turn_text))
    return sum(x in prompt_grams for x in g) >= SEEN_SHARE * len(g)


def prompt_index(text: str) -> tuple[set[tuple[str, ...]], set[str]]:
    w = words(text)
    return {tuple(w[i : i + 3]) for i in range(len(w) - 2)}, set(w)


def bm25_tokens(text: str) -> list[str]:
    out: list[str] = []
    for w in words(text):
        if w not in _STOP:
            out.append(w)
    cjk = [w for w in out if not w.isascii()]
    if cjk:  # character bigrams for CJK runs (the Chinese suite's baseline)
        out += [a + b for a, b in itertools.pairwise(cjk)]
    return out


class PlainBm25:
    """BM25 (k1 1.5, b 0.75) over :func:`bm25_tokens`: the naive baselines' ranker."""

    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.tf = [Counter(bm25_tokens(d)) for d in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(len(self.len), 1)
        self.df: Counter[str] = Counter(t for c in self.tf for t in c)
        self.k1, self.b = k1, b

    def rank(self, query: str) -> list[int]:
        n = len(self.tf)
        scores: Counter[int] = Counter()
        for t in set(bm25_tokens(query)):
            df = self.df.get(t, 0)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i, c in enumerate(self.tf):
                if t in c:
                    norm = self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
                    scores[i] += idf * c[t] * (self.k1 + 1) / (c[t] + norm)
        return [i for i, _ in scores.most_common()]


def paste(docs: list[str], order: list[int], budget: int, count) -> str:
    """Paste ``docs`` in ``order`` until ``budget`` tokens are used, the last one cut."""
    out: list[str] = []
    used = 0
    for i in order:
        text = docs[i]
        tokens = count(text) + 1
        if used + tokens <= budget:
            out.append(text)
            used += tokens
            continue
        room = budget - used - 1
        if room > 8:  # the part of the last one that fits (by characters, then checked)
            cut = text[: max(int(len(text) * room / tokens), 0)]
            while cut and count(cut) > room:
                cut = cut[: int(len(cut) * 0.9)]
            if cut:
                out.append(cut)
        break
    return "\n".join(out)


def session_entries(turns: list[Turn]) -> tuple[list[dict], list[list[str]]]:
    """One memory per session: its dated transcript; and each memory's turn ids."""
    by_session: dict[str, list[Turn]] = defaultdict(list)
    for t in turns:
        by_session[t.session].append(t)
    entries, members = [], []
    for session, ts in by_session.items():
        when = dt.datetime.fromtimestamp(ts[0].timestamp / 1000, tz=dt.UTC)
        head = when.strftime("%Y-%m-%d %H:%M")
        lines = [f"[{head}]"]
        for t in ts:
            who = f"{t.speaker}: " if t.speaker else ""
            lines.append(f"{who}{t.text}")
        entries.append({
            "text": "\n".join(lines), "timestamp": ts[0].timestamp,
            "metadata": {"source": "eval", "session": session},
        })  # fmt: skip
        members.append([t.id for t in ts])
    return entries, members


@dataclass
class Stored:
    """One conversation stored one way, with what each memory holds."""

    memory: Memory
    members: dict[str, list[str]]  # memory id -> the turn ids it holds
    docs: list[str]  # the memories' texts (the baselines' documents)
    doc_members: list[list[str]]
    chunk_turn: list[str] = field(default_factory=list)  # chunk i is (part of) this turn
    chunks: list[str] = field(default_factory=list)


async def store(turns: list[Turn], mode: str, embedder, clock) -> Stored:
    memory = await Memory.open(MapKv(), clock=clock)
    if mode == "turn":
        entries = [turn_entry(t) for t in turns]
        members_list = [[t.id] for t in turns]
    else:
        entries, members_list = session_entries(turns)
    items = await memory.add_many(entries)
    if embedder is not None:
        await memory.attach_embedder(embedder)
        await memory.embed_idle()
    docs = [e["text"] for e in entries]
    s = Stored(memory, {i.id: m for i, m in zip(items, members_list, strict=True)}, docs,
               members_list)  # fmt: skip
    for t in turns:  # a chunk is a turn (a line of a transcript)
        s.chunks.append(f"{t.speaker}: {t.text}" if t.speaker else t.text)
        s.chunk_turn.append(t.id)
    return s


@dataclass
class Tally:
    seen: list[float] = field(default_factory=list)
    returned: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def row(self) -> dict:
        n = len(self.seen)
        ms = sorted(self.ms)
        return {
            "n": n,
            "evidence_seen": round(sum(self.seen) / n, 3) if n else None,
            "memory_returned": round(sum(self.returned) / n, 3) if self.returned else None,
            "tokens": round(sum(self.tokens) / n) if n else None,
            "p50_ms": round(ms[len(ms) // 2], 2) if ms else None,
        }


async def evaluate(
    suite: Suite, modes: list[str], budgets: list[int], embedder, inject: list[str],
    split_of,
) -> dict[tuple, Tally]:  # fmt: skip
    from pymemory.evals.harness import _Clock

    tallies: dict[tuple, Tally] = defaultdict(Tally)
    convs = suite.conversations or ("",)
    for conv in convs:
        turns = [t for t in suite.turns if t.conversation == conv]
        questions = [q for q in suite.questions if q.conversation == conv and q.gold]
        clock = _Clock(max(t.timestamp for t in turns))
        for mode in modes:
            for retriever in ("bm25", "hybrid"):
                s = await store(turns, mode, embedder if retriever == "hybrid" else None, clock)
                count = s.memory.token_counter.count
                try:
                    if retriever == "bm25":  # the baselines need no embedder: once
                        await _baselines(s, questions, suite, mode, budgets, count, split_of,
                                         tallies)  # fmt: skip
                    for q in questions:
                        clock.now = q.asked_at
                        gold = [t for piece in q.gold for t in piece]
                        texts = [suite.turn_index[t].text for t in gold]
                        for how in inject:
                            for budget in budgets:
                                t0 = time.perf_counter()
                                r = await s.memory.retrieve(
                                    q.text, max_items=MAX_ITEMS, max_tokens=budget, inject=how
                                )
                                ms = (time.perf_counter() - t0) * 1000
                                got = {t for i in r.items for t in s.members[i.id]}
                                pg, pw = prompt_index(r.text)
                                name = retriever if how == "passages" else f"{retriever}-{how}"
                                for key in _keys(name, mode, budget, q, split_of):
                                    tl = tallies[key]
                                    tl.seen.append(sum(seen(x, pg, pw) for x in texts) / len(texts))
                                    tl.returned.append(sum(g in got for g in gold) / len(gold))
                                    tl.tokens.append(r.tokens_used)
                                    tl.ms.append(ms)
                finally:
                    await s.memory.close()
    return tallies


def _keys(name: str, mode: str, budget: int, q, split_of) -> list[tuple]:
    keys = [(name, mode, budget, "all")]
    if split_of(q) != "all":
        keys.append((name, mode, budget, split_of(q)))
    return keys


async def _baselines(s: Stored, questions, suite, mode, budgets, count, split_of, tallies):
    mem_bm25 = PlainBm25(s.docs)
    chunk_bm25 = PlainBm25(s.chunks)
    for q in questions:
        gold = [t for piece in q.gold for t in piece]
        texts = [suite.turn_index[t].text for t in gold]
        mem_order = mem_bm25.rank(q.text)
        chunk_order = chunk_bm25.rank(q.text)
        for budget in budgets:
            for name, docs, order in (
                ("paste-memories", s.docs, mem_order),
                ("paste-chunks", s.chunks, chunk_order),
            ):
                text = paste(docs, order, budget, count)
                pg, pw = prompt_index(text)
                for key in _keys(name, mode, budget, q, split_of):
                    tl = tallies[key]
                    tl.seen.append(sum(seen(x, pg, pw) for x in texts) / len(texts))
                    tl.tokens.append(count(text))


def table(tallies: dict[tuple, Tally], suite_name: str) -> list[dict]:
    out = []
    for (name, mode, budget, group), t in sorted(tallies.items(), key=lambda kv: (
            kv[0][3], kv[0][1], kv[0][2], kv[0][0])):  # fmt: skip
        out.append({"suite": suite_name, "group": group, "mode": mode, "budget": budget,
                    "retriever": name, **t.row()})  # fmt: skip
    return out


def markdown(rows: list[dict]) -> str:
    head = ("| suite | group | stored | budget | retriever | n | evidence seen | memory returned "
            "| tokens | p50 ms |")  # fmt: skip
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        lines.append(
            f"| {r['suite']} | {r['group']} | {r['mode']} | {r['budget']} | {r['retriever']} | "
            f"{r['n']} | {r['evidence_seen']} | {r['memory_returned'] or '-'} | {r['tokens']} | "
            f"{r['p50_ms'] or '-'} |"
        )
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--budgets", type=int, nargs="*", default=[300, 1000, 2000])
    ap.add_argument("--modes", nargs="*", default=["turn", "session"])
    ap.add_argument("--split", choices=("tune", "check", "both"), default="both")
    ap.add_argument("--summary", action="store_true", help="also inject='summary'")
    ap.add_argument("--no-chinese", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--embedder", default="minilm", help="minilm or multilingual-e5-small")
    a = ap.parse_args()
    embedder = await load_embedder(a.embedder)
    inject = ["passages", "summary"] if a.summary else ["passages"]
    rows: list[dict] = []
    if a.locomo.is_file():
        suite = locomo_suite(a.locomo)
        if a.split != "both":
            keep = {q.conversation for q in suite.questions if q.split == a.split}
            suite = Suite(suite.name, suite.description, suite.categories,
                          tuple(t for t in suite.turns if t.conversation in keep),
                          tuple(q for q in suite.questions if q.conversation in keep),
                          splits=suite.splits)  # fmt: skip
        tallies = await evaluate(suite, a.modes, a.budgets, embedder, inject, lambda q: q.split)
        rows += table(tallies, "locomo-dev")
        print(markdown(rows), flush=True)
    else:
        print(f"skipping LoCoMo: no file at {a.locomo} (see ../shared/data/README.md)")
    if not a.no_chinese:
        zh = load_suite("chinese-messages")
        tallies = await evaluate(zh, a.modes, a.budgets, embedder, inject, lambda q: "all")
        part = table(tallies, "chinese-messages")
        rows += part
        print(markdown(part), flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
