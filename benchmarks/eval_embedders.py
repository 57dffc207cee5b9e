"""Embedder candidates side by side (issue 38): retrieval quality and CPython costs, one run.

Usage (from the repository root; ~10 minutes with four candidates on one thread)::

    python benchmarks/eval_embedders.py [--model DIR ...] [--locomo PATH] [--no-chinese]
                                        [--vectors NAME=NPZ ...] [--rounds 2] [--json out.json]

Candidates: MiniLM (the built ``.cache/models/minilm``, today's embedder) and every
``--model DIR`` (default: each ``.cache/embedders/*/`` holding a ``config.json``), i.e. the
folders ``tools/convert_embedder.py`` writes: an int8 ONNX encoder with MiniLM's inputs and
output, mean-pooled and L2-normalised by the same :class:`~pymemory.models.minilm.MiniLmEmbedder`,
with the folder's own tokenizer (WordPiece through ``pymemory.models.tokenizers``, or the
converter's :class:`UnigramTokenizer`) and, where ``config.json`` names them, the
``query_prefix`` for questions and the ``passage_prefix`` for memories (the e5 family is
trained with ``query: `` / ``passage: ``). Everything runs with onnxruntime
``intra_op_threads = 1``.

Quality: LoCoMo's dev copy (``../shared/data/locomo-dev``, read in place, never copied; split
by conversation into ``tune`` and ``check`` as in ``benchmarks/tune_locomo.py``) and the
Chinese suite ``chinese-messages``. The BM25 side, the candidates and the neighbour turns come
from ``fusion_lab.extract`` (one load with MiniLM); each candidate then only replaces the
cosine array, computed from float32 vectors of the text the library embeds
(``"<speaker>: <text>"``). Rows per candidate:

- ``dense``: cosine alone over every memory (the harness's ``dense``);
- ``hybrid``: the default fusion as ``tune_locomo.py`` scores it (min-max at the default
  weights with the default neighbour context; no floor, no decay);
- ``retrieve``: the whole default plan as ``Memory.retrieve`` applies it
  (``fusion_lab.rank``: fusion, relevance floor, decay, time match), whose floor was tuned
  on MiniLM's cosines.

R@5, R@10 and MRR over the top 20. ``bm25`` is the same for every candidate. Costs: the
ONNX file size, the resident memory the loaded session adds, the median time to embed one
question alone (CPython), and the bulk rate over every LoCoMo turn (one ``embed`` call),
each measured in a fresh process, ``--rounds`` times in turn (the fastest round is kept).
``--vectors`` adds candidates whose vectors were computed elsewhere (quality rows only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import fusion_lab as lab  # noqa: E402
import tune_locomo  # noqa: E402

from pymemory.evals.locomo import locomo_suite  # noqa: E402
from pymemory.evals.suites import Suite, load_suite  # noqa: E402
from pymemory.models.local import find_model_dir  # noqa: E402
from pymemory.models.minilm import MiniLmEmbedder  # noqa: E402
from pymemory.models.ort import OrtRuntime  # noqa: E402
from pymemory.models.tokenizers import load_tokenizer  # noqa: E402
from pymemory.models.tokenizers.unigram import UnigramTokenizer  # noqa: E402
from pymemory.retrieval.plan import compile_strategy  # noqa: E402
from pymemory.retrieval.strategies import (  # noqa: E402
    DEFAULT_STRATEGY,
    FUSION_CONTEXT,
    FUSION_DENSE,
    FUSION_LEXICAL,
)
from tools.e5_engine import CHECK_SENTENCES  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
CANDIDATES = ROOT / ".cache" / "embedders"
K = 20
lab_ranker = tune_locomo.Ranker


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Candidate:
    name: str
    embedder: MiniLmEmbedder
    query_prefix: str
    passage_prefix: str
    onnx_mb: float
    load_rss_mb: float

    async def queries(self, texts: list[str]) -> np.ndarray:
        return await self.embedder.embed([self.query_prefix + t for t in texts])

    async def passages(self, texts: list[str]) -> np.ndarray:
        return await self.embedder.embed([self.passage_prefix + t for t in texts])


async def load_candidate(folder: Path) -> Candidate:
    config = json.loads((folder / "config.json").read_text())
    spec = json.loads((folder / config.get("tokenizer", "tokenizer.json")).read_text())
    if spec.get("type") == "sentencepiece-unigram":
        tokenizer = UnigramTokenizer(spec, max_length=int(config["max_length"]))
    else:
        tokenizer = load_tokenizer(spec)
    before = rss_mb()
    embedder = MiniLmEmbedder(OrtRuntime(intra_op_threads=1), folder, tokenizer, config=config)
    await embedder.load()
    return Candidate(
        name=str(config.get("model", folder.name)),
        embedder=embedder,
        query_prefix=str(config.get("query_prefix", "")),
        passage_prefix=str(config.get("passage_prefix", "")),
        onnx_mb=(folder / config.get("file", "model.onnx")).stat().st_size / 1e6,
        load_rss_mb=rss_mb() - before,
    )


class Precomputed:
    """A candidate whose vectors were made elsewhere (another venv, a C engine): an
    ``.npz`` with ``keys`` (``"q:" + question`` / ``"p:" + memory text``) and ``vectors``
    (float32, unit rows). ``--dump-texts`` writes the keys this benchmark asks for."""

    def __init__(self, name: str, path: Path) -> None:
        data = np.load(path, allow_pickle=False)
        self.name = name
        self.rows = {str(k): i for i, k in enumerate(data["keys"])}
        self.vectors = np.asarray(data["vectors"], dtype=np.float32)

    async def _get(self, keys: list[str]) -> np.ndarray:
        missing = [k for k in keys if k not in self.rows]
        if missing:
            raise SystemExit(
                f"{self.name}: {len(missing)} texts have no vector, e.g. {missing[0]!r}"
            )
        return self.vectors[[self.rows[k] for k in keys]]

    async def queries(self, texts: list[str]) -> np.ndarray:
        return await self._get(["q:" + t for t in texts])

    async def passages(self, texts: list[str]) -> np.ndarray:
        return await self._get(["p:" + t for t in texts])


def wanted_keys(suites: dict[str, Suite]) -> list[str]:
    """Every text a candidate is asked to embed, as Precomputed keys."""
    keys: dict[str, None] = {}
    for suite in suites.values():
        keys.update(dict.fromkeys("p:" + embedded_text(t) for t in suite.turns))
        keys.update(dict.fromkeys("q:" + q.text for q in suite.questions))
    return list(keys)


def embedded_text(turn) -> str:
    """What the library embeds for a turn (``catalog.dense_text``)."""
    return turn.text if turn.speaker is None else f"{turn.speaker}: {turn.text}"


async def cosines(
    cand: Candidate | Precomputed, suite: Suite, feats: list[lab.QFeatures]
) -> tuple[list, dict]:
    """Each question's cosine array for ``cand`` (float32 vectors), and the bulk timing."""
    convs = sorted({t.conversation for t in suite.turns})
    turns = {c: [t for t in suite.turns if t.conversation == c] for c in convs}
    flat = [t for c in convs for t in turns[c]]
    t0 = time.perf_counter()
    vecs = await cand.passages([embedded_text(t) for t in flat])
    bulk_s = time.perf_counter() - t0
    doc: dict[str, np.ndarray] = {}
    start = 0
    for c in convs:
        doc[c] = vecs[start : start + len(turns[c])]
        start += len(turns[c])
    qvecs = await cand.queries([f.text for f in feats])
    out = [(doc[f.conversation] @ v).astype(np.float64) for f, v in zip(feats, qvecs, strict=True)]
    return out, {"texts": len(flat), "seconds": round(bulk_s, 2),
                 "per_s": round(len(flat) / bulk_s, 1)}  # fmt: skip


async def query_ms(cand: Candidate, questions: list[str], n: int = 60) -> float:
    """Median ms to embed one question alone (after 3 warm-up calls)."""
    for q in questions[:3]:
        await cand.queries([q])
    times = []
    for q in questions[:n]:
        t0 = time.perf_counter()
        await cand.queries([q])
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def hybrid_ranker(lexical: float, context: tuple[float, ...]) -> lab_ranker:
    return tune_locomo.ranker("minmax", lexical, context)


#: The default fusion (tune_locomo.py's "default" row): lexical share and neighbour context.
DEFAULT_LEXICAL = FUSION_LEXICAL / (FUSION_LEXICAL + FUSION_DENSE)
#: What the re-tuned hybrid may choose from, on LoCoMo's tune half only.
SWEEP = [(lx, ctx) for lx in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7) for ctx in ((), FUSION_CONTEXT)]


def metric_row(fs: list[lab.QFeatures], rank) -> dict:
    m = lab.metrics(fs, [rank(f) for f in fs], k=K)
    return {"n": m["n"], "R@5": round(m["r5"], 3), "R@10": round(m["r10"], 3),
            "MRR": round(m["mrr"], 3)}  # fmt: skip


def retune(feats: list[lab.QFeatures]) -> tuple[float, tuple[float, ...]]:
    """The (lexical, context) of SWEEP with the best (R@10 + MRR) / 2 on the tune half."""
    tune = [f for f in feats if f.split == "tune"]

    def score(choice: tuple[float, tuple[float, ...]]) -> float:
        m = lab.metrics(tune, [hybrid_ranker(*choice)(f) for f in tune], k=K)
        return (m["r10"] + m["mrr"]) / 2

    return max(SWEEP, key=score)


def scored(feats: list[lab.QFeatures], split: str | None, tuned) -> dict[str, dict]:
    fs = [f for f in feats if split is None or f.split == split]
    plan = compile_strategy(DEFAULT_STRATEGY)
    rankers = {
        "dense": lab.dense_only,
        "hybrid": hybrid_ranker(DEFAULT_LEXICAL, FUSION_CONTEXT),
        "retrieve": lambda f: lab.rank(f, plan, "hybrid"),
    }
    if tuned is not None:
        rankers[f"hybrid re-tuned (lexical {tuned[0]}, context {tuned[1]})"] = hybrid_ranker(*tuned)
    return {name: metric_row(fs, rank) for name, rank in rankers.items()}


def bm25_row(feats: list[lab.QFeatures], split: str | None) -> dict:
    fs = [f for f in feats if split is None or f.split == split]
    return metric_row(fs, lambda f: np.where(f.bm25 > 0, f.bm25, -np.inf))


async def costs(folder: Path, locomo: Path) -> dict:
    """Run in a fresh process (``--cost-of``): what loading adds to the resident memory,
    one question alone (median ms) and the bulk rate over LoCoMo's turns."""
    import onnxruntime  # noqa: F401 - imported before the baseline is read

    cand = await load_candidate(folder)
    out = {"onnx_MB": round(cand.onnx_mb, 1), "load_rss_MB": round(cand.load_rss_mb, 1)}
    if locomo.is_file():
        suite = locomo_suite(locomo)
        questions = [q.text for q in suite.questions]
        texts = [embedded_text(t) for t in suite.turns]
    else:
        questions = [t for _, t in CHECK_SENTENCES] * 6
        texts = questions * 20
    out["query_ms_median"] = round(await query_ms(cand, questions), 2)
    t0 = time.perf_counter()
    await cand.passages(texts)
    seconds = time.perf_counter() - t0
    out["bulk"] = {"texts": len(texts), "seconds": round(seconds, 2),
                   "per_s": round(len(texts) / seconds, 1)}  # fmt: skip
    out["rss_after_bulk_MB"] = round(rss_mb(), 1)
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, action="append", default=None)
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--no-chinese", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--vectors",
        action="append",
        default=[],
        metavar="NAME=NPZ",
        help="also score vectors made elsewhere (see Precomputed)",
    )
    ap.add_argument("--dump-texts", type=Path, help="write the texts to embed (JSON) and stop")
    ap.add_argument("--rounds", type=int, default=2, help="cost measurements per model")
    ap.add_argument("--cost-of", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cost_of is not None:
        print(json.dumps(await costs(a.cost_of, a.locomo)))
        return
    suites: dict[str, Suite] = {}
    if a.locomo.is_file():
        suites["locomo-dev"] = locomo_suite(a.locomo)
    else:
        print(f"skipping LoCoMo: no file at {a.locomo}")
    if not a.no_chinese:
        suites["chinese-messages"] = load_suite("chinese-messages")
    if a.dump_texts is not None:
        a.dump_texts.write_text(json.dumps(wanted_keys(suites), ensure_ascii=False))
        return
    minilm_dir = find_model_dir("minilm")
    if minilm_dir is None:
        raise SystemExit("MiniLM is not built: run `python3 build.py setup` first")
    folders = [Path(minilm_dir)]
    folders += a.model or sorted(p.parent for p in CANDIDATES.glob("*/config.json"))
    report: dict = {"candidates": {}, "quality": {}}
    # Costs first, each in a fresh process (memory and timings not mixed between models),
    # ``--rounds`` times in turn so that load from other work on the machine hits all alike:
    # the fastest round of each is kept.
    for _ in range(a.rounds):
        for folder in folders:
            got = subprocess.run(
                [sys.executable, __file__, "--cost-of", str(folder), "--locomo", str(a.locomo)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            info = json.loads(got.stdout.strip().splitlines()[-1])
            print(f"costs {folder.name}: {info}", flush=True)
            best = report["candidates"].setdefault(str(folder), info)
            best["query_ms_rounds"] = [*best.get("query_ms_rounds", []), info["query_ms_median"]]
            best["query_ms_median"] = min(best["query_ms_median"], info["query_ms_median"])
            if info["bulk"]["per_s"] > best["bulk"]["per_s"]:
                best["bulk"] = info["bulk"]
    cands = [await load_candidate(f) for f in folders]
    report["candidates"] = {
        c.name: report["candidates"][str(f)] for c, f in zip(cands, folders, strict=True)
    }
    others = [Precomputed(*spec.split("=", 1)[:1], Path(spec.split("=", 1)[1]))
              for spec in a.vectors]  # fmt: skip
    tuned: dict[str, tuple] = {}
    for sname, suite in suites.items():
        # One load with MiniLM gives the BM25 side and the neighbours of every question.
        base = await lab.extract(suite, cands[0].embedder)
        splits = ["tune", "check"] if sname == "locomo-dev" else [None]
        q: dict = {"bm25": {str(s or "all"): bm25_row(base, s) for s in splits}}
        q["minilm (stored int8 vectors)"] = {str(s or "all"): scored(base, s, None) for s in splits}
        for cand in [*cands, *others]:
            cos, _ = await cosines(cand, suite, base)
            feats = [replace(f, cos=c) for f, c in zip(base, cos, strict=True)]
            if sname == "locomo-dev":
                tuned[cand.name] = retune(feats)
            choice = tuned.get(cand.name)
            q[cand.name] = {str(s or "all"): scored(feats, s, choice) for s in splits}
            print(f"{sname} {cand.name}: {json.dumps(q[cand.name])}", flush=True)
        report["quality"][sname] = q
    report["tuned"] = {k: {"lexical": v[0], "context": list(v[1])} for k, v in tuned.items()}
    print(markdown(report))
    if a.json:
        a.json.write_text(json.dumps(report, indent=1) + "\n")


def markdown(report: dict) -> str:
    lines = []
    for sname, q in report["quality"].items():
        splits = list(q["bm25"])
        head = " | ".join(f"{s} R@5 / R@10 / MRR" for s in splits)
        lines += ["", f"**{sname}**", "", f"| embedder | ranking | {head} |",
                  "|---|---|" + "---|" * len(splits)]  # fmt: skip
        cells = " | ".join(f"{q['bm25'][s]['R@5']} / {q['bm25'][s]['R@10']} / {q['bm25'][s]['MRR']}"
                           for s in splits)  # fmt: skip
        lines.append(f"| (none) | bm25 | {cells} |")
        for cname, rows in q.items():
            if cname == "bm25":
                continue
            for ranking in rows[splits[0]]:
                cells = " | ".join(
                    f"{rows[s][ranking]['R@5']} / {rows[s][ranking]['R@10']} / "
                    f"{rows[s][ranking]['MRR']}"
                    for s in splits
                )
                lines.append(f"| {cname} | {ranking} | {cells} |")
    lines += ["", "| embedder | ONNX MB | RSS added by loading MB | RSS after bulk MB | "
              "query ms (median) | bulk texts/s |", "|---|---|---|---|---|---|"]  # fmt: skip
    for cname, info in report["candidates"].items():
        lines.append(f"| {cname} | {info['onnx_MB']} | {info['load_rss_MB']} | "
                     f"{info['rss_after_bulk_MB']} | {info['query_ms_median']} | "
                     f"{info['bulk']['per_s']} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    asyncio.run(main())
