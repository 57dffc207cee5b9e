"""The faithfulness guard for model-written summaries (Encoder stage 2).

A small model invents facts and echoes its input, so nothing it writes is stored unchecked.
:meth:`Guard.check` accepts a candidate only if every one of these holds:

- **form**: non-empty, well-formed (no U+FFFD), at most ``max_chars``, no chat artefacts
  (``<|im_start|>``, role markers), no talk about the text itself ("The text is about",
  "Here is a summary", "As an AI"), no "I" in a summary about "the user", no degenerate
  repetition, no content word said more often than the source says it, and longer than
  the source by at most the framing ("User says ...");
- **language**: a Chinese source gets a Chinese summary, a source without CJK gets none;
- **no copy**: not an echo of the source (one contiguous span covering >= 90% of the
  candidate, when the source is over the limit or the candidate is most of it), not a copy
  of the prompt (a long n-gram of the instruction or the examples absent from the source),
  not (nearly) the stage-1 summary again;
- **supported** (the core rule): everything the candidate says comes from the source.
  English: every URL, e-mail, path, code and number occurs in the source (numbers also as
  number words, "three" = "3"; times, dates and versions verbatim); every other word is
  a neutral function word, a framing word ("user", "says"; "wants"/"asks"/"needs" only if
  the source makes a request), or matches a source word after suffix stripping
  ("simplified" = "simplify"). Chinese: every Han
  character occurs in the source except function characters and framing words (用户,
  询问; 要求/希望/想 only if the source makes a request); every number occurs in the source
  (Chinese numerals read as digits) with the unit that follows it; relative time words
  (下周, 明天, 上午) occur in the source as written; and at least 60% of the candidate's
  content bigrams occur in the source (no recombined characters);
- **polarity**: no negation the source lacks, and a word negated in the source is not
  stated without a negation;
- **not worse than stage 1**: the specifics (numbers, names, codes) stage 1 kept are kept
  (all of them when there are at most two, else two in three), and so is a fair share of
  its content words (40%; 30% when stage 1 is over 120 characters).

Reasons are short codes (``"unsupported_word"``, ``"echo"``, ...) with the offending detail
after a colon: ``"unsupported_number: 5"``. Pure Python, standard library only.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .guard_text import (
    EMAIL,
    FRAMING_EN,
    FRAMING_ZH,
    FUNCTION_EN,
    FUNCTION_ZH,
    HAN_CHAR,
    LABEL_KEY,
    NEGATIONS_ZH,
    NUMBER_WORDS,
    NUMERIC_EXPRESSION,
    RELATIVE_TIME,
    REQUEST_FRAMING_EN,
    REQUEST_FRAMING_ZH,
    TOKEN,
    UNITS_ZH,
    URL,
    Source,
    cjk_ratio,
    clean_candidate,
    compact_form,
    is_chinese,
    is_code,
    is_negation_en,
    is_negation_zh,
    normalized,
    numbers_in,
    specifics,
    stem,
)

__all__ = [
    "Guard",
    "Verdict",
    "cjk_ratio",
    "clean_candidate",
    "is_chinese",
    "specifics",
]

MAX_CHARS = 200
# How much longer than its source a summary may be: room for "User says ..." / 用户认为.
_FRAMING_SLACK_EN = 16
_FRAMING_SLACK_ZH = 6

# --------------------------------------------------------------------------------------
# Form
# --------------------------------------------------------------------------------------

# Phrases that talk about the text or the chat instead of summarising.
_META = re.compile(
    r"\b(?:the (?:text|passage|message|paragraph|article|input|original)\b"
    r"|this (?:text|passage|paragraph|article)\b|here(?:'s| is) (?:a|the|your)\b"
    r"|summar(?:y|ize|ise|ized|ised)\b|as an ai\b|i'm sorry\b|i am sorry\b|i can't\b"
    r"|i'm happy to\b|i'd be happy\b|happy to help\b|smollm\b|hugging face\b)"
    r"|这段(?:文字|话|内容|文本)|以上内容|以下内容|本文|概括|总结如下|核心意图|作为(?:一个)?(?:AI|人工智能)",
    re.IGNORECASE,
)
_ARTEFACT = re.compile(
    r"<\|[a-z_]+\|>|<\|?im_(?:start|end)|</?s>|<(?:repo_name|file_sep|filename)>"
    r"|(?:^|\n)\s*(?:system|user|assistant)\s*(?:\n|:)|(?:^|\n)\s*(?:Q|A|Text|Input|文本|原文)[:：]",
    re.IGNORECASE,
)

# A summary that speaks of "the user" has no "I" left in it.
_THIRD_PERSON = re.compile(r"(?:the )?users?\b|用户", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself)\b|我")


# --------------------------------------------------------------------------------------
# The guard
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """The guard's decision on one candidate."""

    accepted: bool
    reasons: tuple[str, ...]
    """Why it was rejected: codes such as ``"unsupported_number: 5"`` (empty if accepted)."""
    text: str = ""
    """The cleaned candidate (what would be stored)."""

    @property
    def codes(self) -> tuple[str, ...]:
        """The reason codes without their details."""
        return tuple(r.split(":", 1)[0] for r in self.reasons)


class Guard:
    """Accepts a model summary only if it is faithful to the source (see the module doc).

    ``prompt_texts``: the instruction and example texts the model saw; a candidate that
    copies a long n-gram of them which is not in the source is rejected.
    """

    def __init__(
        self,
        *,
        max_chars: int = MAX_CHARS,
        prompt_texts: Iterable[str] = (),
        min_bigram_support: float = 0.6,
        echo_cover: float = 0.9,
        min_coverage: float = 0.4,
        min_coverage_long: float = 0.3,
    ) -> None:
        self.max_chars = max_chars
        self.prompt_texts = tuple(normalized(t) for t in prompt_texts)
        self.min_bigram_support = min_bigram_support
        self.echo_cover = echo_cover
        self.min_coverage = min_coverage
        self.min_coverage_long = min_coverage_long

    def check(self, source: str, candidate: str, *, stage1: str = "") -> Verdict:
        """Judge ``candidate`` (raw model output) as a summary of ``source``."""
        if _ARTEFACT.search(candidate):
            return Verdict(False, ("chat_artefact",), clean_candidate(candidate))
        text = clean_candidate(candidate)
        reasons: list[str] = []
        if not any(c.isalnum() for c in text):
            return Verdict(False, ("empty",), text)
        if "\ufffd" in text:
            return Verdict(False, ("malformed",), text)
        if len(text) > self.max_chars:
            reasons.append(f"too_long: {len(text)} > {self.max_chars}")
        src = Source.of(source)
        slack = _FRAMING_SLACK_ZH if cjk_ratio(text) >= 0.4 else _FRAMING_SLACK_EN
        if len(text) > len(src.text.strip()) + slack:
            reasons.append("longer_than_source")
        reasons += self._form(src, text)
        reasons += self._language(src.text, text)
        reasons += self._copies(src, text, stage1)
        reasons += self._support(src, text)
        reasons += self._polarity(src, text)
        reasons += self._keeps_stage1(text, stage1)
        reasons += self._overuse(src, text)
        reasons = list(dict.fromkeys(reasons))
        return Verdict(not reasons, tuple(reasons), text)

    # -- form and language --------------------------------------------------------------

    def _form(self, src: Source, text: str) -> list[str]:
        reasons = []
        for meta in _META.finditer(text):
            phrase = re.sub(r"(?:d|s)$", "", meta.group().lower())
            if phrase not in src.lower:
                reasons.append(f"meta: {meta.group()}")
                break
        if _repeats(text):
            reasons.append("repetition")
        if _THIRD_PERSON.match(text) and _FIRST_PERSON.search(text):
            reasons.append("mixed_person")
        return reasons

    def _language(self, source: str, text: str) -> list[str]:
        """Chinese for a Chinese source, no CJK for a source without any; a mixed source
        may be summarised either way."""
        if is_chinese(source):
            return [] if cjk_ratio(text) >= 0.4 else ["language: expected Chinese"]
        if cjk_ratio(source) == 0 and cjk_ratio(text) > 0:
            return ["language: unexpected CJK"]
        return []

    # -- copies ---------------------------------------------------------------------------

    def _copies(self, src: Source, text: str, stage1: str) -> list[str]:
        reasons = []
        cand = _letters(text)
        source = _letters(src.text)
        if cand and source:
            cover = _longest_common_substring(cand, source) / len(cand)
            long_source = len(src.text) > self.max_chars
            if cover >= self.echo_cover and (long_source or len(cand) >= 0.8 * len(source)):
                reasons.append(f"echo: {cover:.2f} of it is one span of the source")
        if stage1 and cand:
            other = _letters(stage1)
            if other and _similarity(cand, other) >= 0.95:
                reasons.append("same_as_stage1")
        for prompt in self.prompt_texts:
            copied = _copied_ngram(text, prompt, src.text)
            if copied:
                reasons.append(f"prompt_copy: {copied}")
                break
        return reasons

    # -- support --------------------------------------------------------------------------

    def _support(self, src: Source, text: str) -> list[str]:
        text = normalized(text)
        reasons: list[str] = []
        rest = text
        for pattern, code in ((URL, "unsupported_url"), (EMAIL, "unsupported_email")):
            for match in pattern.finditer(rest):
                if match.group().lower().rstrip(".,;)") not in src.lower:
                    reasons.append(f"{code}: {match.group()}")
            rest = pattern.sub(" ", rest)
        for number in numbers_in(rest):
            if number not in src.numbers:
                reasons.append(f"unsupported_number: {number}")
        for match in NUMERIC_EXPRESSION.finditer(rest):  # 10:30, 2024-05-01, 2.4.1
            if match.group() not in src.text:
                reasons.append(f"unsupported_number: {match.group()}")
        reasons += self._support_en(src, rest)
        reasons += self._support_zh(src, rest)
        return reasons

    def _support_en(self, src: Source, text: str) -> list[str]:
        reasons = []
        for token in TOKEN.findall(text):
            lower = token.lower().strip("'")
            if lower in src.words:
                continue
            if is_code(token):
                if not any(c.isalpha() for c in token):
                    continue  # a bare number: checked as a number
                if lower not in src.lower:
                    reasons.append(f"unsupported_code: {token}")
            elif lower in NUMBER_WORDS:
                if NUMBER_WORDS[lower] not in src.numbers:
                    reasons.append(f"unsupported_number: {token}")
            elif stem(lower) in src.stems or lower in FUNCTION_EN or lower in FRAMING_EN:
                continue
            elif is_negation_en(lower):
                continue  # negations are judged by _polarity
            elif lower in REQUEST_FRAMING_EN:
                if not src.requests:
                    reasons.append(f"unsupported_request: {token}")
            else:
                kind = "unsupported_name" if token[0].isupper() else "unsupported_word"
                reasons.append(f"{kind}: {token}")
        return reasons

    def _support_zh(self, src: Source, text: str) -> list[str]:
        if not HAN_CHAR.search(text):
            return []
        reasons = []
        compact = compact_form(text)
        # Framing words are cut out first (replaced by a separator).
        stripped = compact
        for word in FRAMING_ZH:
            stripped = stripped.replace(word, "|")
        for word in REQUEST_FRAMING_ZH:
            if word in stripped and word not in src.compact:
                if not src.requests:
                    reasons.append(f"unsupported_request: {word}")
                stripped = stripped.replace(word, "|")
        allowed = FUNCTION_ZH | (NEGATIONS_ZH if src.negations else frozenset())
        missing = sorted(
            {c for c in stripped if HAN_CHAR.fullmatch(c) and c not in src.han} - allowed
        )
        if missing:
            reasons.append(f"unsupported_cjk: {''.join(missing)}")
        # Numbers with the unit right after them: 3天 needs 3 then 天 (within 2) in the source.
        for match in re.finditer(r"(?<![a-z0-9.:])(\d+(?:\.\d+)?)(.)", compact):
            number, unit = match.groups()
            if unit not in UNITS_ZH:
                continue
            if not re.search(re.escape(number) + r"(?!\d)\D{0,2}?" + re.escape(unit), src.compact):
                reasons.append(f"unsupported_quantity: {number}{unit}")
        for match in RELATIVE_TIME.finditer(compact):
            first, second = match.group(1), match.group(2)
            said = match.group() if first is None else f"{first}个?{second}"
            if not re.search(said, src.compact):
                reasons.append(f"unsupported_time: {match.group()}")
        content = [
            stripped[i : i + 2]
            for i in range(len(stripped) - 1)
            if all(HAN_CHAR.fullmatch(c) and c not in FUNCTION_ZH for c in stripped[i : i + 2])
        ]
        if content:
            share = sum(b in src.compact for b in content) / len(content)
            if share < self.min_bigram_support:
                reasons.append(f"recombined_cjk: {share:.2f} of bigrams in source")
        return reasons

    # -- polarity -------------------------------------------------------------------------

    def _polarity(self, src: Source, text: str) -> list[str]:
        text = normalized(text)
        tokens = [t.lower().strip("'") for t in TOKEN.findall(text)]
        cand_neg = any(is_negation_en(t) for t in tokens) or any(
            is_negation_zh(text, i) for i in range(len(text))
        )
        reasons = []
        if cand_neg and not src.negations:
            reasons.append("invented_negation")
        for i, token in enumerate(tokens):
            if stem(token) in src.negated_en and not any(
                is_negation_en(t) for t in tokens[max(0, i - 4) : i + 3]
            ):
                reasons.append(f"dropped_negation: {token}")
        for pair in src.negated_zh:
            for match in re.finditer(re.escape(pair), text):
                before = text[max(0, match.start() - 3) : match.start()]
                if not any(c in NEGATIONS_ZH for c in before):
                    reasons.append(f"dropped_negation: {pair}")
        return reasons

    # -- stage 1 --------------------------------------------------------------------------

    def _keeps_stage1(self, text: str, stage1: str) -> list[str]:
        if not stage1:
            return []
        reasons = []
        share = coverage(stage1, text)
        need = self.min_coverage if len(stage1) <= 120 else self.min_coverage_long
        if share is not None and share < need:
            reasons.append(f"low_coverage: {share:.2f} of stage 1's content")
        kept = specifics(stage1)
        if not kept:
            return reasons
        mine = set(specifics(text)) | {t.lower() for t in TOKEN.findall(normalized(text))}
        compact = compact_form(text)
        lost = [s for s in kept if s not in mine and s not in compact]
        allowed = 0 if len(kept) <= 2 else len(kept) // 3
        if len(lost) > allowed:
            reasons.append(f"lost_specifics: {', '.join(lost[:5])}")
        return reasons

    def _overuse(self, src: Source, text: str) -> list[str]:
        """A content word (or Han character) said more often than the source says it."""
        mine = Counter(_content_units(text))
        theirs = Counter(_content_units(src.text))
        over = [unit for unit, n in mine.items() if n > theirs.get(unit, 0) and theirs.get(unit)]
        return [f"overuse: {over[0]}"] if over else []


# --------------------------------------------------------------------------------------
# String helpers
# --------------------------------------------------------------------------------------


def _content_units(text: str) -> list[str]:
    """Content-word stems (English) and content Han characters (Chinese) of ``text``."""
    text = normalized(text)
    units = []
    for token in TOKEN.findall(text):
        lower = token.lower().strip("'")
        if lower in FUNCTION_EN or lower in FRAMING_EN or lower in REQUEST_FRAMING_EN:
            continue
        if is_negation_en(lower) or lower.isdigit():
            continue
        units.append(stem(lower))
    han = HAN_CHAR.findall(text)
    framing = set("".join(FRAMING_ZH + REQUEST_FRAMING_ZH))
    units += [c for c in han if c not in FUNCTION_ZH and c not in framing]
    return units


def coverage(reference: str, text: str) -> float | None:
    """The share of ``reference``'s content units (see :func:`_content_units`) that
    ``text`` has; None if the reference has none."""
    wanted = set(_content_units(LABEL_KEY.sub(" ", reference)))
    if not wanted:
        return None
    return len(wanted & set(_content_units(text))) / len(wanted)


def _letters(text: str) -> str:
    """Lowercase letters and digits only: for copy detection."""
    return "".join(c for c in normalized(text).lower() if c.isalnum())


def _longest_common_substring(a: str, b: str) -> int:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.find_longest_match(0, len(a), 0, len(b)).size


def _similarity(a: str, b: str) -> float:
    """2 x LCS / (len a + len b): 1.0 for equal strings."""
    if not a or not b:
        return 0.0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return 2 * prev[-1] / (len(a) + len(b))


def _ngrams(text: str) -> list[str]:
    """Word 4-grams (English) and 6-character runs (CJK) of ``text``, normalised."""
    lower = text.lower()
    words = re.findall(r"[a-z0-9]+", lower)
    grams = [" ".join(words[i : i + 4]) for i in range(len(words) - 3)]
    han = "".join(HAN_CHAR.findall(lower))
    grams += [han[i : i + 6] for i in range(len(han) - 5)]
    return grams


def _copied_ngram(text: str, prompt: str, source: str) -> str:
    """An n-gram of ``text`` that is in ``prompt`` but not in ``source`` ("" if none)."""
    prompt_grams = set(_ngrams(prompt))
    source_grams = set(_ngrams(source))
    for gram in _ngrams(text):
        if gram in prompt_grams and gram not in source_grams:
            return gram
    return ""


def _repeats(text: str) -> bool:
    """A degenerate loop: a word 4-gram or a 6-character CJK run occurring twice."""
    words = re.findall(r"[^\W_]+", HAN_CHAR.sub(" ", text.lower()))
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    if len(grams) != len(set(grams)):
        return True
    han = "".join(HAN_CHAR.findall(text))
    runs = [han[i : i + 6] for i in range(len(han) - 5)]
    return len(runs) != len(set(runs))
