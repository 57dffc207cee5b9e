"""Retrieval quality in one run: LoCoMo (real conversations), the Chinese suite, the
abstention suites (unrelated questions, Chinese and English) and every shipped suite,
through the public API (``Memory.retrieve`` with the documented defaults).

Usage (from the repository root; ~10 minutes, most of it embedding with MiniLM)::

    python benchmarks/eval_retrieval.py [--locomo PATH] [--json out.json] [--markdown out.md]
        [--embedder multilingual-e5-small] [--similarity-baseline B] [--no-bm25]

``--locomo`` defaults to ``../shared/data/locomo-dev/locomo-dev.json`` (LoCoMo's dev copy,
CC BY-NC 4.0: read from there, never copied into the repository); where it is absent the
LoCoMo part is skipped with a message. LoCoMo is split by conversation into ``tune``
(conv-26, conv-30, conv-41: where the defaults were chosen) and ``check`` (the rest of the
dev copy: never tuned on).

Retrievers: ``bm25`` (no embedder), ``dense`` (MiniLM's cosine alone), ``hybrid`` (the
default fusion), and references computed in the same run: ``bm25-nofloor`` and
``hybrid-nofloor`` (``relevance_floor(0, 0)``: what the floor costs in recall),
``hybrid-prev`` (the previous default: ``fusion(method="score", lexical=1, dense=1,
context=())``) and, on the Chinese suites, ``bigram-bm25`` (a plain BM25 over character
bigrams, the baseline the issue names). Every number is turn-level Recall@k and MRR over
the top 20; ``empty``: answerable questions that got nothing; ``abstained``: unanswerable
ones (the suites' abstention categories) that got nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pymemory.evals.harness import (  # noqa: E402
    Metrics,
    Report,
    _metrics,  # the harness's own metrics, over one split's category
    evaluate,
    load,
    make_retriever,
)
from pymemory.evals.locomo import locomo_suite  # noqa: E402
from pymemory.evals.suites import Suite, load_suite  # noqa: E402
from pymemory.models.embedding import load_embedder  # noqa: E402
from pymemory.retrieval.strategies import fusion, relevance_floor  # noqa: E402

LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
SHIPPED = ("multi-turn-memory", "long-context-recall", "long-conversations")
CHINESE = "chinese-messages"
# The relevance floor's abstention on unrelated questions, in Chinese and in English.
ABSTENTION = ("chinese-abstention", "english-abstention")
K = 20
PREVIOUS = fusion(method="score", lexical=1.0, dense=1.0, context=())
NO_FLOOR = relevance_floor(0, 0)


class BigramBm25:
    """The baseline: BM25 (k1 1.2, b 0.75) over lower-cased ASCII words and the
    overlapping character bigrams of every run of other letters (a lone character stands
    for itself). Nothing else: no stopwords, no stemming, no floor."""

    name = "bigram-bm25"
    _RUN = re.compile(r"[a-z0-9]+|[^\W\da-z_]+")

    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = {i: Counter(self.tokens(t)) for i, t in docs.items()}
        self.len = {i: sum(c.values()) for i, c in self.tf.items()}
        self.avg = sum(self.len.values()) / max(len(self.len), 1)
        self.df: Counter[str] = Counter(t for c in self.tf.values() for t in c)

    @classmethod
    def tokens(cls, text: str) -> list[str]:
        out: list[str] = []
        for run in cls._RUN.findall(text.lower()):
            if run.isascii() or len(run) == 1:
                out.append(run)
            else:
                out += [run[i : i + 2] for i in range(len(run) - 1)]
        return out

    async def search_scored(self, query: str, k: int, now_ms: int) -> list[tuple[str, float]]:
        n = len(self.tf)
        scores: Counter[str] = Counter()
        for t in self.tokens(query):
            df = self.df.get(t, 0)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i, c in self.tf.items():
                if t in c:
                    norm = self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
                    scores[i] += idf * c[t] / (c[t] + norm)
        return scores.most_common(k)

    async def search(self, query: str, k: int, now_ms: int) -> list[str]:
        return [i for i, _ in await self.search_scored(query, k, now_ms)]


async def run(
    suite: Suite, embedder, *, chinese: bool = False, with_bm25: bool = True
) -> list[Report]:
    reports = []
    loaded = await load(suite, None)
    try:
        if not with_bm25:
            return await run_embedded(suite, embedder, reports)
        reports.append(await evaluate(loaded, lambda m: make_retriever("bm25", m), k=K))
        off = await evaluate(loaded, lambda m: make_retriever("bm25", m, strategy=NO_FLOOR), k=K)
        reports.append(replace(off, retriever="bm25-nofloor"))
        if chinese:

            def bigram(m):
                conv = next(c for c in loaded.conversations.values() if c.memory is m)
                texts = {i: suite.turn_index[t].text for i, t in conv.turn_of.items()}
                return BigramBm25(texts)

            reports.append(await evaluate(loaded, bigram, k=K))
    finally:
        await loaded.close()
    return await run_embedded(suite, embedder, reports)


async def run_embedded(suite: Suite, embedder, reports: list[Report]) -> list[Report]:
    loaded = await load(suite, embedder)
    try:
        for name in ("dense", "hybrid"):
            reports.append(await evaluate(loaded, lambda m, n=name: make_retriever(n, m), k=K))
        off = await evaluate(loaded, lambda m: make_retriever("hybrid", m, strategy=NO_FLOOR), k=K)
        reports.append(replace(off, retriever="hybrid-nofloor"))
        prev = await evaluate(loaded, lambda m: make_retriever("hybrid", m, strategy=PREVIOUS), k=K)
        reports.append(replace(prev, retriever="hybrid-prev"))
    finally:
        await loaded.close()
    return reports


def groups_of(r: Report) -> dict[str, Metrics]:
    """Overall, each split, each category, and each category within each split."""
    out = {"all": r.overall, **{f"split {k}": v for k, v in r.by_split.items()}, **r.categories}
    for split in r.by_split:
        for category in r.categories:
            got = [q for q in r.results if q.split == split and q.category == category]
            if any(q.recall is not None for q in got):
                out[f"{split} · {category}"] = _metrics(got, with_auroc=False)
    return out


def rows(suite: str, reports: list[Report]) -> list[dict]:
    out = []
    for r in reports:
        for group, m in groups_of(r).items():
            if m.recall is None:
                continue
            out.append({
                "suite": suite, "retriever": r.retriever, "group": group, "n": m.answerable,
                **{f"R@{n}": round(v, 3) for n, v in m.recall.items()},
                "MRR": round(m.mrr, 3), "p50_ms": round(m.p50_ms, 2),
                "empty": None if m.empty is None else round(m.empty, 3),
                "abstained": None if m.abstained is None else round(m.abstained, 3),
            })  # fmt: skip
    return out


def markdown(table: list[dict]) -> str:
    head = "| suite | retriever | group | n | R@1 | R@5 | R@10 | R@20 | MRR | empty | abstained |"
    lines = [head, "|" + "---|" * 11]
    for r in table:
        lines.append(
            f"| {r['suite']} | {r['retriever']} | {r['group']} | {r['n']} | {r.get('R@1', '-')} | "
            f"{r.get('R@5', '-')} | {r.get('R@10', '-')} | {r.get('R@20', '-')} | {r['MRR']} | "
            f"{r['empty']} | {r['abstained'] if r['abstained'] is not None else '-'} |"
        )
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--suites", nargs="*", default=[CHINESE, *ABSTENTION, *SHIPPED])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--embedder", default="minilm", help="minilm or multilingual-e5-small")
    ap.add_argument(
        "--similarity-baseline", type=float, help="override the embedder's (calibration runs)"
    )
    ap.add_argument("--no-bm25", action="store_true", help="only the embedder's retrievers")
    a = ap.parse_args()
    embedder = await load_embedder(a.embedder)
    if a.similarity_baseline is not None:
        embedder.similarity_baseline = a.similarity_baseline
    table: list[dict] = []
    if a.locomo.is_file():
        suite = locomo_suite(a.locomo)
        table += rows("locomo-dev", await run(suite, embedder, with_bm25=not a.no_bm25))
        print(markdown(table), flush=True)
    else:
        print(f"skipping LoCoMo: no file at {a.locomo} (see ../shared/data/README.md)", flush=True)
    for name in a.suites:
        suite = load_suite(name)
        chinese = name.startswith("chinese-")
        part = rows(name, await run(suite, embedder, chinese=chinese, with_bm25=not a.no_bm25))
        table += part
        print(markdown(part), flush=True)
    if a.json:
        a.json.write_text(json.dumps(table, indent=1))
    if a.markdown:
        a.markdown.write_text(markdown(table) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
