"""Background embedding throughput with MiniLM in CPython: before and after, in one run.

Usage (from the repository root; about a minute)::

    python benchmarks/bench_embedding.py [--turns 2000] [--rounds 2] [--json out.json]

The texts are the first ``--turns`` turns of the ``long-conversations`` suite (chat turns
of 3-40 words). Each round measures, in turn:

* **before**: the background embedder as it was: ``DenseIndex`` takes 32 queued items at a
  time in arrival order and ``embed`` pads each call to its longest text, batches of 32,
  fresh input arrays per batch (the previous ``MiniLmEmbedder.embed_ids``, kept below as
  :class:`PreviousMiniLm`);
* **after**: the background embedder now: up to 1024 queued items sorted by text length,
  embedded in calls of 256 similar-length texts, each call cut into model batches by a
  token budget (``batch_size`` 64, ``max_batch_tokens`` 4096) with input buffers reused
  from batch to batch;
* **one embed() call**: every text in a single ``embed`` call (sorted globally), before
  and after, for reference.

Both background rows go through the real path: ``Memory.add_many`` of the turns with the
embedder attached, then ``embed_idle()``; turns/s is turns over that wall time (adding
2000 turns alone takes about 0.4 s of it). Padded
token slots (rows x longest per model batch) against real tokens show the padding.
Rounds alternate the modes so that drift on a shared machine hits all alike; the report
gives the best round of each.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bm25 import machine_info  # noqa: E402

import pymemory.retrieval.dense as dense  # noqa: E402
from pymemory import Memory  # noqa: E402
from pymemory.evals.suites import load_suite  # noqa: E402
from pymemory.models import load_minilm  # noqa: E402
from pymemory.models.minilm import MiniLmEmbedder  # noqa: E402
from pymemory.storage import MapKv  # noqa: E402


class CountingMixin:
    """Counts real and padded token slots of every model batch."""

    real = 0
    slots = 0

    async def forward(self, feeds):  # type: ignore[no-untyped-def]
        mask = feeds["attention_mask"]
        self.real += int(mask.sum())
        self.slots += int(mask.size)
        return await super().forward(feeds)  # type: ignore[misc]


class Counting(CountingMixin, MiniLmEmbedder):
    pass


class PreviousMiniLm(CountingMixin, MiniLmEmbedder):
    """``embed_ids`` as it was: sort the call's texts, fixed batches of ``batch_size``,
    fresh arrays per batch (``batch_inputs``)."""

    async def embed_ids(self, ids):  # type: ignore[no-untyped-def]
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            feeds = self.batch_inputs([ids[i] for i in rows])
            hidden = await self.forward(feeds)
            out[rows] = self.pool(hidden, feeds["attention_mask"])
        return out


def like(cls, base: MiniLmEmbedder, **options):  # type: ignore[no-untyped-def]
    e = cls(base.runtime, base.location, base.tokenizer, config=base.config, **options)
    e._session = base._session  # the same loaded model
    return e


async def background(embedder, texts: list[str], drain: int, call: int) -> tuple[float, int, int]:
    """Seconds to add ``texts`` and embed them through Memory's background embedder."""
    dense.EMBED_DRAIN, dense.EMBED_CALL = drain, call
    embedder.real = embedder.slots = 0
    mem = await Memory.open(MapKv(), embedder=embedder)
    try:
        t0 = time.perf_counter()
        await mem.add_many([{"text": t} for t in texts])
        await mem.embed_idle()
        seconds = time.perf_counter() - t0
        assert len(mem.vectors) == len(texts)
    finally:
        await mem.close()
    return seconds, embedder.real, embedder.slots


async def one_call(embedder, texts: list[str]) -> tuple[float, int, int]:
    embedder.real = embedder.slots = 0
    t0 = time.perf_counter()
    await embedder.embed(texts)
    return time.perf_counter() - t0, embedder.real, embedder.slots


async def run(n_turns: int, rounds: int) -> dict:
    suite = load_suite("long-conversations")
    texts = [t.text for t in suite.turns[:n_turns]]
    base = await load_minilm()
    before = like(PreviousMiniLm, base, batch_size=32)
    after = like(Counting, base)  # the defaults: batch_size 64, max_batch_tokens 4096
    await base.embed(texts[:64])  # warm up the session
    saved = dense.EMBED_DRAIN, dense.EMBED_CALL
    results: dict[str, list] = {}
    try:
        for _ in range(rounds):
            for name, coro in (
                ("before: background embedder", lambda: background(before, texts, 32, 32)),
                ("after: background embedder", lambda: background(after, texts, *saved)),
                ("before: one embed() call", lambda: one_call(before, texts)),
                ("after: one embed() call", lambda: one_call(after, texts)),
            ):
                results.setdefault(name, []).append(await coro())
    finally:
        dense.EMBED_DRAIN, dense.EMBED_CALL = saved
    rows = {}
    for name, runs in results.items():
        seconds, real, slots = min(runs)
        rows[name] = {
            "turns_per_s": len(texts) / seconds,
            "seconds": seconds,
            "real_tokens": real,
            "token_slots": slots,
            "rounds_turns_per_s": [len(texts) / r[0] for r in runs],
        }
    return {
        "turns": len(texts),
        "embedder": base.name,
        "runtime": repr(base.runtime),
        "machine": machine_info(),
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
        "rows": rows,
    }


def report(out: dict) -> str:
    lines = [
        f"{out['turns']} turns of long-conversations, {out['embedder']}, {out['runtime']}, "
        f"Python {out['python']}, {out['date']}",
        "",
        "| path | turns/s | seconds | real tokens | padded token slots | slots / token |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in out["rows"].items():
        lines.append(
            f"| {name} | {r['turns_per_s']:.0f} | {r['seconds']:.2f} | {r['real_tokens']:,} "
            f"| {r['token_slots']:,} | {r['token_slots'] / r['real_tokens']:.2f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    a = parser.parse_args()
    out = asyncio.run(run(a.turns, a.rounds))
    print(report(out))
    if a.json:
        a.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
