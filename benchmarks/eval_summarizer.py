"""Encoder stage 2 on the labelled dev set: rules vs raw model vs guarded model.

Usage::

    python benchmarks/eval_summarizer.py [--json out.json] [--details] [--threads 2]

For every item of ``pymemory/evals/summaries_dev.jsonl`` (English and Chinese chat
messages, tool results, feedback, preferences and system events, each with a reference
summary written by hand) it computes:

- **rules**: stage 1 (``RuleEncoder``);
- **raw model**: what SmolLM2 writes with the production prompt and decoding, run on every
  item (also the types production does not refine), before the guard;
- **guarded**: what ``Memory`` stores: the model's text if the refiner runs on the item's
  type and the guard accepts it, else stage 1.

Reported: ROUGE-L F1 against the references (implemented here: word level for English,
character level for Chinese), overall, per language, on the human-written types, and on
the two halves of the set (odd items tuned the prompt, even items were held out); the share
of outputs with unsupported content by an independent checker (stricter than the guard;
it must find nothing in what the guard accepts); the guard's acceptance rate; CPython
latency per refinement (p50/p95, after the prompt prefixes are cached) and per rules call;
model load time and file size. Prints a Markdown table; ``--json`` writes everything.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pymemory.encoder import MEMORY_TYPES, RuleEncoder  # noqa: E402
from pymemory.encoder.guard import clean_candidate  # noqa: E402
from pymemory.encoder.smollm2 import (  # noqa: E402
    HUMAN_TYPES,
    SmolLm2Refiner,
    load_smollm2_refiner,
)

DEV = ROOT / "pymemory" / "evals" / "summaries_dev.jsonl"

# --------------------------------------------------------------------------------------
# ROUGE-L
# --------------------------------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_ZH_UNITS = re.compile(f"[{_HAN}]|[a-z0-9]+")
_EN_UNITS = re.compile(r"[a-z0-9]+")


def rouge_units(text: str, lang: str) -> list[str]:
    """English: lowercase words and numbers. Chinese: Han characters, plus Latin words and
    numbers as one unit each."""
    return (_ZH_UNITS if lang == "zh" else _EN_UNITS).findall(text.lower())


def lcs_length(a: list[str], b: list[str]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(candidate: str, reference: str, lang: str) -> float:
    """ROUGE-L F1 (beta = 1) of ``candidate`` against ``reference``."""
    cand, ref = rouge_units(candidate, lang), rouge_units(reference, lang)
    hit = lcs_length(cand, ref)
    if hit == 0:
        return 0.0
    precision, recall = hit / len(cand), hit / len(ref)
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------------------
# The independent checker (stricter than the guard, written separately on purpose)
# --------------------------------------------------------------------------------------


def _words(spec: str) -> set[str]:
    return set(spec.split())


# Closed-class words that carry no fact. Smaller than the guard's list.
_STRICT_FUNCTION = _words(
    "a an the is are was were be been has have had do does did to of in on at by for from "
    "with as and or but so that this these those it its they their them there which who "
    "what when where how whether about i me my you your we our us"
)
# Framing: how a note names its subject. Not facts; still a closed list.
_STRICT_FRAMING = _words("user user's users says said wants asks needs notes mentions")
_STRICT_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|without|cannot)\b|n't|[不没别无未]", re.IGNORECASE
)
_STRICT_HAN_FRAMING = set("用户要求希望想询问反馈认为表示的了和与及并在是对将把为被也但")
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|\d+(?:\.\d+)?|[" + _HAN + "]")


def _inflections(word: str) -> set[str]:
    """A source word and the regular inflections of it (the checker never stems the
    candidate: it only lets a source word take an ending)."""
    forms = {word, word + "s", word + "es", word + "ed", word + "d", word + "ing", word + "'s"}
    if word.endswith("y"):
        forms |= {word[:-1] + "ies", word[:-1] + "ied"}
    if word.endswith("e"):
        forms |= {word[:-1] + "ing", word[:-1] + "ed"}
    if word.endswith(("ed", "es", "s", "ing")):
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix):
                stem = word[: -len(suffix)]
                forms |= {stem, stem + "e", stem + "s", stem + "ed", stem + "ing", stem + "es"}
                if len(stem) > 2 and stem[-1] == stem[-2]:
                    forms |= {stem[:-1], stem[:-1] + "s"}
                if stem.endswith("i"):
                    forms |= {stem[:-1] + "y", stem[:-1] + "ies"}
                break
    if len(word) > 2 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou":
        forms |= {word + word[-1] + "ed", word + word[-1] + "ing"}
    return forms


def unsupported(source: str, candidate: str) -> list[str]:
    """What ``candidate`` says that ``source`` does not: numbers, numeric expressions
    (times, dates, versions: verbatim) and Han characters not in the source, words that
    are no inflection of a source word (beyond a short closed list of function and framing
    words), and a negation the source does not have."""
    if not candidate.strip():
        return []
    src_lower = source.lower()
    src_tokens = _WORD.findall(src_lower)
    src_words: set[str] = set()
    for token in src_tokens:
        src_words |= _inflections(token)
    for part in re.split(r"[^a-z0-9]+", src_lower):
        if part:
            src_words |= _inflections(part)
    src_numbers = set(re.findall(r"\d+(?:\.\d+)?", source))
    src_han = set(re.findall(f"[{_HAN}]", source))
    problems = []
    for token in _WORD.findall(candidate):
        lower = token.lower()
        if token[0].isdigit():
            if token not in src_numbers:
                problems.append(f"number {token}")
        elif re.fullmatch(f"[{_HAN}]", token):
            if token not in src_han and token not in _STRICT_HAN_FRAMING:
                problems.append(f"han {token}")
        elif lower not in src_words and lower not in _STRICT_FUNCTION | _STRICT_FRAMING:
            negation = _STRICT_NEGATION.fullmatch(lower) or lower.endswith("n't")
            if not (negation and _STRICT_NEGATION.search(source)):
                problems.append(f"word {token}")
    for expression in re.findall(r"\d+(?:[:./-]\d+)+", candidate):
        if expression not in source:
            problems.append(f"expression {expression}")
    if _STRICT_NEGATION.search(candidate) and not _STRICT_NEGATION.search(source):
        problems.append("negation")
    return problems


# --------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def load_dev(path: Path) -> list[dict[str, Any]]:
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for i, item in enumerate(items):
        item["split"] = "tune" if i % 2 == 1 else "held_out"
    return items


async def run(args: argparse.Namespace) -> dict[str, Any]:
    items = load_dev(Path(args.dev))
    if args.limit:
        items = items[: args.limit]
    rules = RuleEncoder()
    t0 = time.perf_counter()
    production = await load_smollm2_refiner(intra_op_threads=args.threads)
    load_ms = (time.perf_counter() - t0) * 1000
    model_file = Path(production.model_url)
    # The same prompt and decoding on every type, to see the raw model on all of them.
    everything: SmolLm2Refiner = production.with_style(
        dataclasses.replace(production.style, types=MEMORY_TYPES)
    )
    prefix_ms = await everything.warm_up()
    rows = []
    for item in items:
        t1 = time.perf_counter()
        stage1 = rules.summarize(item["text"], type=item["type"])
        rules_ms = (time.perf_counter() - t1) * 1000
        refinement = await everything.propose(item["text"], stage1, type=item["type"])
        refined = item["type"] in production.style.types
        raw = clean_candidate(refinement.raw)
        guarded = refinement.text if refined and refinement.accepted else stage1
        rows.append(
            {
                "id": item["id"],
                "lang": item["lang"],
                "type": item["type"],
                "split": item["split"],
                "reference": item["reference"],
                "rules": stage1,
                "raw": raw,
                "guarded": guarded,
                "refined_type": refined,
                "accepted": refinement.accepted,
                "reasons": list(refinement.verdict.reasons),
                "model_ms": refinement.ms,
                "rules_ms": rules_ms,
                "new_tokens": len(refinement.generation.ids) if refinement.generation else 0,
                "unsupported": {
                    k: unsupported(item["text"], v)
                    for k, v in (("rules", stage1), ("raw", raw), ("guarded", guarded))
                },
                "rouge_l": {
                    k: rouge_l(v, item["reference"], item["lang"])
                    for k, v in (("rules", stage1), ("raw", raw), ("guarded", guarded))
                },
            }
        )
        if args.verbose:
            mark = "+" if refinement.accepted else "-"
            print(f"{item['id']} {mark} {raw[:90]!r} {refinement.verdict.reasons[:2]}")
    return summarize(rows, args, load_ms, prefix_ms, model_file, production)


def _mean(rows: list[dict[str, Any]], system: str) -> float:
    return statistics.mean(r["rouge_l"][system] for r in rows) if rows else float("nan")


def _unsupported_share(rows: list[dict[str, Any]], system: str) -> float:
    if not rows:
        return float("nan")
    return sum(bool(r["unsupported"][system]) for r in rows) / len(rows)


def summarize(
    rows: list[dict[str, Any]],
    args: argparse.Namespace,
    load_ms: float,
    prefix_ms: float,
    model_file: Path,
    refiner: SmolLm2Refiner,
) -> dict[str, Any]:
    subsets = {
        "all": rows,
        "en": [r for r in rows if r["lang"] == "en"],
        "zh": [r for r in rows if r["lang"] == "zh"],
        "human_types": [r for r in rows if r["type"] in HUMAN_TYPES],
        "tune": [r for r in rows if r["split"] == "tune"],
        "held_out": [r for r in rows if r["split"] == "held_out"],
    }
    refined = [r for r in rows if r["refined_type"]]
    accepted = [r for r in refined if r["accepted"]]
    other = [r for r in rows if not r["refined_type"]]
    model_ms = [r["model_ms"] for r in refined]
    result: dict[str, Any] = {
        "dev_set": {
            "items": len(rows),
            "chinese_share": round(len(subsets["zh"]) / len(rows), 3),
            "types": {t: sum(r["type"] == t for r in rows) for t in MEMORY_TYPES},
        },
        "rouge_l_f1": {
            name: {s: round(_mean(sub, s), 4) for s in ("rules", "raw", "guarded")}
            | {"n": len(sub)}
            for name, sub in subsets.items()
        },
        "unsupported_share": {
            s: round(_unsupported_share(rows, s), 4) for s in ("rules", "raw", "guarded")
        },
        "unsupported_in_accepted": sum(bool(r["unsupported"]["guarded"]) for r in accepted),
        "guard": {
            "refined_items": len(refined),
            "accepted": len(accepted),
            "acceptance_rate": round(len(accepted) / len(refined), 4) if refined else 0.0,
            "acceptance_rate_en": _rate([r for r in refined if r["lang"] == "en"]),
            "acceptance_rate_zh": _rate([r for r in refined if r["lang"] == "zh"]),
            "acceptance_rate_other_types_if_run": _rate(other),
            "reasons": _reason_counts(refined),
        },
        "latency_ms": {
            "refine_p50": round(percentile(model_ms, 0.5), 1),
            "refine_p95": round(percentile(model_ms, 0.95), 1),
            "refine_mean": round(statistics.mean(model_ms), 1) if model_ms else None,
            "rules_p50": round(percentile([r["rules_ms"] for r in rows], 0.5), 3),
            "rules_p95": round(percentile([r["rules_ms"] for r in rows], 0.95), 3),
            "new_tokens_p50": percentile([float(r["new_tokens"]) for r in refined], 0.5),
            "model_load": round(load_ms, 1),
            "prefix_cache_build": round(prefix_ms, 1),
        },
        "model": {
            "file": str(model_file.relative_to(ROOT)) if model_file.is_relative_to(ROOT) else "",
            "size_mb": round(model_file.stat().st_size / 1e6, 1),
            "style": refiner.style.name,
            "refined_types": list(refiner.style.types),
        },
        "machine": {
            "cpu": _cpu(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "onnxruntime": getattr(refiner.runtime, "version", "?"),
            "intra_op_threads": args.threads,
        },
    }
    if args.details:
        result["items"] = rows
    return result


def _rate(rows: list[dict[str, Any]]) -> float:
    return round(sum(r["accepted"] for r in rows) / len(rows), 4) if rows else 0.0


def _reason_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        for code in {reason.split(":", 1)[0] for reason in row["reasons"]}:
            counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def markdown(result: dict[str, Any]) -> str:
    r, u, g, lat = (
        result["rouge_l_f1"],
        result["unsupported_share"],
        result["guard"],
        result["latency_ms"],
    )
    lines = [
        f"Dev set: {result['dev_set']['items']} items, "
        f"{result['dev_set']['chinese_share']:.0%} Chinese; model {result['model']['style']}, "
        f"refines {', '.join(result['model']['refined_types'])}.",
        "",
        "| | rules (stage 1) | raw model | guarded model |",
        "|---|---|---|---|",
    ]
    for name, label in (
        ("all", "ROUGE-L F1, all"),
        ("en", "ROUGE-L F1, English"),
        ("zh", "ROUGE-L F1, Chinese"),
        ("human_types", "ROUGE-L F1, human-written types"),
        ("tune", "ROUGE-L F1, tuning half"),
        ("held_out", "ROUGE-L F1, held-out half"),
    ):
        row = r[name]
        lines.append(
            f"| {label} (n={row['n']}) | {row['rules']:.3f} | {row['raw']:.3f} | "
            f"{row['guarded']:.3f} |"
        )
    lines.append(
        f"| outputs with unsupported content | {u['rules']:.1%} | {u['raw']:.1%} | "
        f"{u['guarded']:.1%} |"
    )
    lines.append(
        f"| guard acceptance (refined types, n={g['refined_items']}) | | | "
        f"{g['acceptance_rate']:.1%} (en {g['acceptance_rate_en']:.0%}, "
        f"zh {g['acceptance_rate_zh']:.0%}) |"
    )
    lines += [
        "",
        f"Unsupported content in guard-accepted outputs: {result['unsupported_in_accepted']}. "
        f"Guard on the types not refined, if they were: "
        f"{g['acceptance_rate_other_types_if_run']:.0%} accepted.",
        "",
        "| latency (CPython) | p50 | p95 |",
        "|---|---|---|",
        f"| refine() per memory (model + guard) | {lat['refine_p50']:.0f} ms | "
        f"{lat['refine_p95']:.0f} ms |",
        f"| rules per memory | {lat['rules_p50']:.2f} ms | {lat['rules_p95']:.2f} ms |",
        "",
        f"Model: {result['model']['file']} ({result['model']['size_mb']} MB), load "
        f"{lat['model_load'] / 1000:.2f} s, prompt prefixes cached in "
        f"{lat['prefix_cache_build'] / 1000:.2f} s; {result['machine']['cpu']}, "
        f"{result['machine']['cores']} cores, onnxruntime {result['machine']['onnxruntime']}.",
        "",
        "Rejections: " + ", ".join(f"{k} {v}" for k, v in g["reasons"].items()),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", default=str(DEV), help="the labelled dev set (JSONL)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--details", action="store_true", help="per-item rows in the JSON")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--limit", type=int, default=0, help="only the first N items")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every item")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(markdown(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
