"""Content encoders: turn raw input into a memory's short, human-readable ``content``.

Stage 1 is :class:`RuleEncoder`: deterministic rules for English and Chinese, instant and
standard library only (it also runs under Pyodide). A later stage can refine the result with a
local model; every stage implements the :class:`Encoder` protocol.

How the rules summarise a text:

1. ``tool_result`` input that is a JSON object or array becomes ``key: value; key: value``
   built from its scalar leaves, most informative first.
2. Otherwise the text is cut into units: sentences (English ``.!?`` aware of decimals,
   abbreviations, URLs and file names; Chinese ``。！？；…``), lines and bullets. A fenced code
   block or a stack trace becomes one unit: its exception line or first meaningful line.
3. Pleasantries ("hi", "thanks!", 你好, 辛苦了) are dropped, and filler words ("basically",
   "I think that", 其实) are removed where that is safe; negations and numbers always stay.
4. If what is left fits, it is kept whole. Otherwise the units carrying intent (requests,
   decisions, preferences, facts, steps, problems; for feedback the evaluative sentence) are
   kept, best first while they fit, and joined in their original order. If no unit carries
   intent, the first sentences are kept.
5. If the result is still too long it is cut on a word boundary (English) or a character
   boundary (CJK) and ends with "…".

The output never contains a word that is not in the input (apart from "…"): the rules only
delete. The one exception is JSON, whose ``\\uXXXX`` escapes are decoded.
"""

from __future__ import annotations

from ..errors import ValidationError, shown
from .base import MAX_CONTENT_CHARS, MEMORY_TYPES, Encoded, Encoder
from .compress import Candidate, join_candidates, select_candidates, strip_filler, truncate
from .cues import HUMAN_TYPES, intent_score, is_pleasantry, is_signature
from .json_render import render_json
from .sentences import Unit, collapse_whitespace, split_units

__all__ = [
    "MAX_CONTENT_CHARS",
    "MEMORY_TYPES",
    "Encoded",
    "Encoder",
    "RuleEncoder",
]


# --------------------------------------------------------------------------------------
# The encoder
# --------------------------------------------------------------------------------------


class RuleEncoder:
    """Stage 1: deterministic rules (English and Chinese), standard library only."""

    method = "rules"

    def __init__(self, max_chars: int = MAX_CONTENT_CHARS) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ValidationError(f"max_chars must be a positive int, got {shown(max_chars)}")
        self.max_chars = max_chars

    def summarize(self, text: str, *, type: str = "message") -> str:
        """The summary of ``text``: at most ``max_chars`` long, "" only for blank input."""
        if not isinstance(text, str):
            raise ValidationError(f"text must be a string, got {_type_name(text)}")
        if type not in MEMORY_TYPES:
            raise ValidationError(
                f"type must be one of {', '.join(MEMORY_TYPES)}, got {shown(type)}"
            )
        if not text.strip():
            return ""
        if type == "tool_result":
            rendered = render_json(text, self.max_chars)
            if rendered:
                return rendered
        units = split_units(text, self.max_chars, by_line=type == "tool_result")
        candidates = _candidates(units, type)
        if not candidates:  # only pleasantries: fall back to the first sentences as they are
            candidates = [Candidate(i, u.text, 0, u.glued) for i, u in enumerate(units)]
        summary = join_candidates(
            select_candidates(candidates, self.max_chars, len(units)), len(units)
        )
        if not summary:
            summary = collapse_whitespace(text)
        return truncate(summary, self.max_chars)

    async def encode(self, text: str, *, type: str = "message") -> Encoded:
        """``summarize`` wrapped as an :class:`Encoded` with ``method="rules"``."""
        return Encoded(self.summarize(text, type=type), self.method)


def _type_name(value: object) -> str:
    return value.__class__.__name__


def _candidates(units: list[Unit], type: str) -> list[Candidate]:
    """Units worth keeping, scored. In text people wrote, pleasantries are left out and
    filler is dropped; machine text (tool results, system events) is kept as it is."""
    candidates = []
    for index, unit in enumerate(units):
        if unit.kind == "code" or type not in HUMAN_TYPES:
            score = unit.bonus + intent_score(unit.text, type)
            candidates.append(Candidate(index, unit.text, score, unit.glued))
            continue
        if is_pleasantry(unit.text, type) or is_signature(units, index):
            continue
        text = strip_filler(unit.text)
        if not is_pleasantry(text, type):
            candidates.append(Candidate(index, text, intent_score(text, type), unit.glued))
    return candidates
