# ruff: noqa: E501 (report-building lines read better unwrapped)
"""Choose the retrieval defaults (fusion, speaker, decay, time phrases, relevance floor).

Usage (from the repository root; about 5 minutes, most of it embedding with MiniLM)::

    python benchmarks/tune_retrieval.py [--cache /tmp/lab.pkl] [--json out.json]

Data: the ``tune`` split of ``long-conversations`` and the two small suites
(``multi-turn-memory``, ``long-context-recall``) are the development data; every choice
below is made on them. The ``heldout`` split of ``long-conversations`` (other people,
names and question wordings) is only reported, never used to choose.

Every suite is loaded once per indexing variant into real Memories with MiniLM
(``benchmarks/fusion_lab.py``); rankings are then the library's own scoring applied to
the extracted signals, so the numbers equal ``pymemory eval``'s. The report has, each
with Recall@10 / MRR per group:

1. the fusion methods side by side (decay, time phrases and floor off, so only the
   fusion differs): RRF with several k and weights (the old default included),
   per-query min-max and z-score normalisation, score fusion ``cos + b * share ** p``
   (the share: BM25 over the query's idf mass) and a logistic fit of the same signals;
   the default is the best score-fusion point by mean (R@10 + MRR) / 2 over the
   development groups;
2. conversation-aware memories: the speaker in BM25 and in the embedded text, no
   speaker, the speaker in BM25 only, the previous turn of the session added to the
   embedded text, and a turn lifted towards a better-scoring neighbour turn at scoring
   time;
3. the decay of messages, 4. the time-phrase boost, 5. the relevance floor (abstention
   against recall lost, in hybrid and BM25 mode), and 6. the chosen defaults on every
   group, held-out included, per category.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import fusion_lab as lab  # noqa: E402

from pymemory.models.embedding import load_embedder  # noqa: E402
from pymemory.retrieval.plan import Plan, compile_strategy  # noqa: E402
from pymemory.retrieval.strategies import (  # noqa: E402
    DEFAULT_STRATEGY,
    compose,
    fusion,
    relevance_floor,
    time_decay,
)

SUITES = ("multi-turn-memory", "long-context-recall", "long-conversations")
DEV = ("multi-turn-memory", "long-context-recall", "long-conversations:tune")
HELD = "long-conversations:heldout"
GROUPS = (*DEV, HELD)
SHORT = {
    "multi-turn-memory": "mtm",
    "long-context-recall": "lcr",
    "long-conversations:tune": "lc tune",
    "long-conversations:heldout": "lc heldout",
}

OFF = (time_decay(None, query_window=1.0), relevance_floor(0, 0))


def plan_of(*parts) -> Plan:
    return compile_strategy(compose(*parts))


def prev_turn_context(turns, i: int) -> str:
    """The embedded text with the previous turn of the same session before it."""
    t = turns[i]
    me = f"{t.speaker}: {t.text}" if t.speaker else t.text
    if i and turns[i - 1].session == t.session:
        p = turns[i - 1]
        return f"{p.speaker + ': ' if p.speaker else ''}{p.text}\n{me}"
    return me


async def extract_all(cache: Path | None) -> dict:
    if cache is not None and cache.is_file():
        return pickle.loads(cache.read_bytes())
    embedder = await load_embedder("minilm")
    variants = {
        "speaker": {},
        "no speaker": {"speaker": False},
        "speaker in BM25 only": {"dense_text": lambda turns, i: turns[i].text},
        "previous turn in the embedded text": {"dense_text": prev_turn_context},
    }
    out = {"embedder": embedder.name, "variants": {}}
    for name, options in variants.items():
        feats = []
        for suite in SUITES:
            if name != "speaker" and suite != "long-conversations":
                continue  # the small suites have no speakers or sessions of chat turns
            feats += await lab.extract(suite, embedder, **options)
            print(f"extracted {name}: {suite}", file=sys.stderr, flush=True)
        out["variants"][name] = feats
    if cache is not None:
        cache.write_bytes(pickle.dumps(out))
    return out


def grouped(feats: Sequence[lab.QFeatures]) -> dict[str, list[lab.QFeatures]]:
    out: dict[str, list[lab.QFeatures]] = {g: [] for g in GROUPS}
    for f in feats:
        key = f.suite if f.suite != "long-conversations" else f"{f.suite}:{f.split}"
        if key in out:
            out[key].append(f)
    return {k: v for k, v in out.items() if v}


Scorer = Callable[[lab.QFeatures], "lab.np.ndarray"]


def measure(groups: dict, scorer: Scorer) -> dict[str, dict]:
    return {g: lab.metrics(fs, [scorer(f) for f in fs]) for g, fs in groups.items()}


def cell(m: dict) -> str:
    return f"{m['r10']:.3f} / {m['mrr']:.3f}"


def objective(res: dict) -> float:
    return sum((res[g]["r10"] + res[g]["mrr"]) / 2 for g in DEV if g in res) / len(DEV)


def table(rows: list[tuple[str, dict]], groups: Sequence[str], extra: str = "") -> list[str]:
    head = "| " + " | ".join(["", *(SHORT[g] for g in groups)]) + " |" + extra
    lines = [head, "|---" * (len(groups) + 1) + "|"]
    for label, res in rows:
        lines.append("| " + " | ".join([label, *(cell(res[g]) for g in groups)]) + " |")
    return lines


def run(data: dict) -> tuple[list[str], dict]:
    groups = grouped(data["variants"]["speaker"])
    out: list[str] = [f"embedder {data['embedder']}; R@10 / MRR", ""]
    summary: dict = {}

    bm25 = measure(groups, lambda f: lab.rank(f, plan_of(), "bm25"))
    dense = measure(groups, lab.dense_only)
    out.append("### 1. Fusion (decay, time phrases and floor off)")
    out.append("")
    rows: list[tuple[str, dict]] = [("BM25 alone", bm25), ("dense alone", dense)]
    old = plan_of(fusion(20, 0.2, 1, method="rrf"), *OFF)
    rows.append(("RRF k=20, lexical 0.2 (the old default)", measure(groups, lambda f: lab.rank(f, old))))
    for k, (wl, wd) in itertools.product((10, 20, 60), ((1, 1), (1, 0.5), (0.5, 1))):
        p = plan_of(fusion(k, wl, wd, method="rrf"), *OFF)
        res = measure(groups, lambda f, p=p: lab.rank(f, p))
        rows.append((f"RRF k={k}, lexical {wl}, dense {wd}", res))
    for a in (0.2, 0.3, 0.5):
        rows.append((f"min-max, {a} BM25", measure(groups, lambda f, a=a: lab.minmax_fusion(f, a))))
    for a in (0.2, 0.3, 0.5):
        rows.append((f"z-score, {a} BM25", measure(groups, lambda f, a=a: lab.zscore_fusion(f, a))))
    w = lab.fit_logistic(groups["long-conversations:tune"])
    rows.append((f"logistic fit on lc tune {[round(float(x), 2) for x in w]}",
                 measure(groups, lambda f: lab.logistic_fusion(f, w))))  # fmt: skip
    for power, beta in itertools.product((1, 2, 3), (0.25, 0.5, 1, 2)):
        p = plan_of(fusion(lexical=beta, power=power), *OFF)
        rows.append((f"score: cos + {beta} * share^{power}", measure(groups, lambda f, p=p: lab.rank(f, p))))
    out += table(rows, GROUPS)

    # Selection: the score-fusion grid with the other defaults on; among the points that
    # beat BM25 and dense alone on R@10 and MRR on every development group (a tie at 1.0
    # counts), the best mean (R@10 + MRR) / 2.
    out += ["", "### 1b. Selection (the other defaults on; * = beats BM25 and dense on every "
            "development group)", ""]  # fmt: skip
    score_rows = []
    for power, beta in itertools.product((1, 1.5, 2, 3), (0.25, 0.5, 0.75, 1, 1.5, 2)):
        p = plan_of(time_decay(), fusion(lexical=beta, power=power), relevance_floor())
        res = measure(groups, lambda f, p=p: lab.rank(f, p))
        ok = all(
            res[g][m] > max(bm25[g][m], dense[g][m]) or res[g][m] >= 0.999
            for g in DEV for m in ("r10", "mrr")
        )  # fmt: skip
        score_rows.append((power, beta, res, ok))
    sel = [(f"{'*' if ok else ' '} lexical {b}, power {pw} (objective {objective(r):.3f})", r)
           for pw, b, r, ok in score_rows]  # fmt: skip
    out += table(sel, GROUPS)
    feasible = [r for r in score_rows if r[3]] or score_rows
    best_power, best_beta, best_res, _ = max(feasible, key=lambda r: objective(r[2]))
    out.append("")
    out.append(f"Chosen: score fusion, lexical {best_beta}, power {best_power} "
               f"(objective {objective(best_res):.3f} over {', '.join(SHORT[g] for g in DEV)}).")  # fmt: skip
    summary["fusion"] = {"lexical": best_beta, "power": best_power}
    chosen_fusion = fusion(lexical=best_beta, power=best_power)

    out += ["", "### 2. Conversation-aware indexing (long-conversations, chosen fusion)", ""]
    rows = []
    for variant, feats in data["variants"].items():
        g = grouped(feats)
        lc = {k: v for k, v in g.items() if k.startswith("long-conversations")}
        p = plan_of(chosen_fusion, *OFF)
        rows.append((f"{variant}: hybrid", measure(lc, lambda f, p=p: lab.rank(f, p))))
        rows.append((f"{variant}: BM25", measure(lc, lambda f: lab.rank(f, plan_of(), "bm25"))))
        rows.append((f"{variant}: dense", measure(lc, lab.dense_only)))
        if variant == "speaker":
            for w in (0.1, 0.2, 0.3, 0.5):
                rows.append((f"{variant}: hybrid, lifted {w} toward a better neighbour turn",
                             measure(lc, lambda f, p=p, w=w: lab.neighbour_lift(f, lab.rank(f, p), w))))  # fmt: skip
    out += table(rows, ("long-conversations:tune", HELD))
    r5 = [f"{label}: {res['long-conversations:tune']['r5']:.3f} / {res[HELD]['r5']:.3f}"
          for label, res in rows if label.endswith(": hybrid")]  # fmt: skip
    out += ["", "R@5 of the hybrid rows (tune / heldout): " + "; ".join(r5) + "."]

    out += ["", "### 3. Decay of messages (chosen fusion; half-life, floor)", ""]
    rows = []
    decays = [(None, 1.0), (2160.0, 0.95), (720.0, 0.9), (720.0, 0.8), (168.0, 0.5)]
    decay_rows = []
    for hl, fl in decays:
        p = plan_of(chosen_fusion, time_decay(hl, floor=fl, query_window=1.0), relevance_floor())
        res = measure(groups, lambda f, p=p: lab.rank(f, p))
        ku = {g: lab.metrics(fs, [lab.rank(f, p) for f in fs])
              for g, fs in (("ku", [f for f in groups["long-conversations:tune"]
                                     if f.category == "knowledge-update"]),)}  # fmt: skip
        label = "off" if hl is None else f"{hl / 24:g} d, floor {fl}"
        decay_rows.append((hl, fl, res))
        rows.append((f"{label} (lc tune knowledge-update {cell(ku['ku'])})", res))
    out += table(rows, GROUPS)
    hl, fl, _ = max(decay_rows, key=lambda r: objective(r[2]))
    out.append("")
    out.append(f"Best by the objective: {'off' if hl is None else f'{hl / 24:g} d, floor {fl}'}.")
    summary["decay_best"] = [hl, fl]

    out += ["", "### 4. Time phrases in the query (factor for memories inside the span)", ""]
    rows = []
    for boost in (1.0, 1.25, 1.5, 2.0):
        p = plan_of(chosen_fusion, time_decay(query_window=boost), relevance_floor(0, 0))
        rows.append((f"x{boost}", measure(groups, lambda f, p=p: lab.rank(f, p))))
    out += table(rows, GROUPS)

    out += ["", "### 5. Relevance floor: R@10 / MRR, abstained (unanswerable with nothing) "
            "and empty (answerable with nothing)", ""]  # fmt: skip
    head = "| mode | min_dense | min_lexical | " + " | ".join(SHORT[g] for g in GROUPS) + " |"
    out += [head, "|---" * (3 + len(GROUPS)) + "|"]
    for mode, grid in (("hybrid", [(0, 0), (0.1, 0.05), (0.15, 0.05), (0.2, 0.05), (0.25, 0.05),
                                   (0.3, 0.1)]),
                       ("bm25", [(0, 0), (0, 0.05), (0, 0.1), (0, 0.15)])):  # fmt: skip
        for md, ml in grid:
            p = plan_of(chosen_fusion, time_decay(), relevance_floor(md, ml))
            res = measure(groups, lambda f, p=p, mode=mode: lab.rank(f, p, mode))
            cells = []
            for g in GROUPS:
                m = res[g]
                ab = "-" if m["abstained"] is None else f"{m['abstained']:.2f}"
                cells.append(f"{cell(m)}, abst {ab}, empty {m['empty']:.2f}")
            out.append(f"| {mode} | {md} | {ml} | " + " | ".join(cells) + " |")

    out += ["", "### 6. The defaults in the code, every group", ""]
    default = compile_strategy(DEFAULT_STRATEGY)
    final = {
        "BM25 (default strategy, no embedder)": measure(groups, lambda f: lab.rank(f, default, "bm25")),
        "dense": dense,
        "hybrid (default strategy)": measure(groups, lambda f: lab.rank(f, default)),
    }
    out += table(list(final.items()), GROUPS)
    out += ["", "Per category, hybrid (default strategy):", ""]
    cats = sorted({f.category for f in data["variants"]["speaker"] if f.answerable})
    rows = []
    for c in cats:
        sub = {g: [f for f in fs if f.category == c] for g, fs in groups.items()}
        sub = {g: fs for g, fs in sub.items() if any(f.answerable for f in fs)}
        res = measure(sub, lambda f: lab.rank(f, default))
        rows.append((c, {g: res.get(g, {"r10": float("nan"), "mrr": float("nan")}) for g in GROUPS}))
    out += table(rows, GROUPS)
    summary["final"] = {k: {g: {m: v[g][m] for m in ("r10", "mrr", "r5")} for g in GROUPS}
                        for k, v in final.items()}  # fmt: skip
    return out, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, help="pickle of the extracted signals (reused)")
    parser.add_argument("--json", type=Path)
    a = parser.parse_args()
    data = asyncio.run(extract_all(a.cache))
    lines, summary = run(data)
    print("\n".join(lines))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
