"""LoCoMo (Maharana et al., ACL 2024) as an evaluation :class:`~pymemory.evals.suites.Suite`.

LoCoMo's long two-person conversations (months of dated sessions, ~600 turns each) with
annotated evidence turns are the retrieval dev set. The data is CC BY-NC 4.0: it is never
shipped; this module reads a copy the caller points at (``locomo10.json`` or a subset of
its samples) and builds the suite in memory.

The measurement (``docs/BENCHMARKS.md``): one memory per turn, text
``"<speaker>: <text>"``, timestamp = its session's date; every question of a conversation
asked at its last session's time; categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop; 5, adversarial, is left out as memory papers do). Each evidence turn is a
gold piece, so Recall@k is the share of a question's evidence turns in the top k.

Splits are by conversation: the ones named in ``tune`` are the ``tune`` split, the others
``check`` (never tuned on).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import ValidationError
from .suites import Question, Suite, Turn

__all__ = ["CATEGORIES", "DEFAULT_TUNE", "locomo_suite"]

#: LoCoMo's category numbers -> names (5, adversarial, is not scored).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: The conversations of the dev copy tuned on; the rest of it is the check split.
DEFAULT_TUNE = ("conv-26", "conv-30", "conv-41")

_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_DATE = "%I:%M %p on %d %B, %Y"


def _session_time(text: str, where: str) -> int:
    try:
        when = dt.datetime.strptime(text.strip(), _DATE).replace(tzinfo=dt.UTC)
    except ValueError:
        raise ValidationError(f"{where}: unreadable session date {text!r}") from None
    return int(when.timestamp() * 1000)


def _turn_id(conv: str, session: int, turn: int) -> str:
    return f"{conv}:D{session}:{turn}"


def locomo_suite(path: str | Path, *, tune: Iterable[str] = DEFAULT_TUNE) -> Suite:
    """The LoCoMo samples in the JSON file at ``path`` as one suite (a conversation per
    sample, questions of categories 1-4, splits ``tune`` / ``check``)."""
    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"no LoCoMo file at {path}")
    try:
        return _build(json.loads(path.read_text(encoding="utf-8")), path.name, set(tune))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            raise
        what = f"{type(exc).__name__}: {exc}"
        raise ValidationError(f"{path} is not LoCoMo's format ({what})") from None


def _build(samples: list, source: str, tune: set[str]) -> Suite:
    turns: list[Turn] = []
    questions: list[Question] = []
    for sample in samples:
        conv = sample["sample_id"]
        c = sample["conversation"]
        n_sessions = max(
            int(m.group(1)) for k in c if (m := re.fullmatch(r"session_(\d+)", k))
        )
        known: set[str] = set()
        last = 0
        for s in range(1, n_sessions + 1):
            if not c.get(f"session_{s}"):
                continue
            at = _session_time(c[f"session_{s}_date_time"], f"{conv} session {s}")
            last = max(last, at)
            for t in c[f"session_{s}"]:
                m = _EVIDENCE.fullmatch(t["dia_id"])
                if m is None:
                    raise ValidationError(f"{conv}: unreadable turn id {t['dia_id']!r}")
                tid = _turn_id(conv, int(m.group(1)), int(m.group(2)))
                known.add(tid)
                text = f"{t['speaker']}: {t['text']}"
                turns.append(Turn(tid, f"{conv}:S{s}", "user", at, text, None, conv))
        split = "tune" if conv in tune else "check"
        for n, qa in enumerate(sample["qa"]):
            category = CATEGORIES.get(qa.get("category"))
            if category is None:
                continue
            gold = []
            for ev in qa.get("evidence", []):
                for m in _EVIDENCE.finditer(ev):
                    tid = _turn_id(conv, int(m.group(1)), int(m.group(2)))
                    if tid in known and (tid,) not in gold:
                        gold.append((tid,))
            if not gold:  # evidence that names no turn of the conversation: unscorable
                continue
            answer = qa.get("answer")
            questions.append(
                Question(
                    f"{conv}:q{n}", category, qa["question"], last, tuple(gold), "mixed",
                    None, conv, split, None if answer is None else str(answer),
                )
            )  # fmt: skip
    return Suite(
        name="locomo",
        description=f"LoCoMo conversations from {source} (categories 1-4)",
        categories=tuple(CATEGORIES.values()),
        turns=tuple(turns),
        questions=tuple(questions),
        splits=("tune", "check"),
    )
