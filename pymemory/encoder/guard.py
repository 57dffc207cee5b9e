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
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
# Character classes
# --------------------------------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_CJK = _HAN + "\u3040-\u30ff\u3100-\u312f"
_HAN_CHAR = re.compile(f"[{_HAN}]")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def cjk_ratio(text: str) -> float:
    """CJK characters / (CJK characters + 2 x Latin words): 0 for English, ~1 for Chinese.
    (A Chinese character carries about half of what an English word does.)"""
    cjk = len(_CJK_CHAR.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    total = cjk + 2 * latin
    return cjk / total if total else 0.0


def is_chinese(text: str) -> bool:
    """Whether ``text`` should be summarised in Chinese: its CJK ratio (or, for JSON, that
    of its values alone) is at least 0.4."""
    ratio = cjk_ratio(text)
    if ratio > 0 and text.lstrip().startswith(("{", "[")):
        ratio = max(ratio, cjk_ratio(re.sub(r'"[^"\n]*"\s*:', " ", text)))
    return ratio >= 0.4


# --------------------------------------------------------------------------------------
# Cleaning
# --------------------------------------------------------------------------------------

_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:summary|short summary|one-sentence summary|intent|core intent|tl;?dr"
    r"|answer|output|result|摘要|总结|概括|核心意图|意图|回答|输出)(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_QUOTES = ('""', "''", "“”", "‘’", "「」", "『』", "``")


def clean_candidate(text: str) -> str:
    """A model output made presentable without adding anything: the first paragraph,
    without a leading "Summary:" label, wrapping quotes and surplus whitespace."""
    text = text.strip()
    first = re.split(r"\n\s*\n", text, maxsplit=1)[0]
    text = _LABEL.sub("", first, count=1).strip()
    for pair in _QUOTES:
        if len(text) > 2 and text[0] == pair[0] and text[-1] == pair[1]:
            text = text[1:-1].strip()
    return " ".join(text.split())


# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------


def _words(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


# Neutral function words: carry no fact of their own. (Order and quantity words such as
# before/after/only/all/more are deliberately absent: they must come from the source.)
_FUNCTION_EN = _words(
    "a an the this that these those it its it's is are was were be been being am has have "
    "had do does did done will would can could may might to of in on at by for from with "
    "about as and or but so if when which who whom whose what where why how there their "
    "they them theirs we our us you your i me my also both via per into"
)
# Framing: how a summary refers to the speaker and what it reports.
_FRAMING_EN = _words(
    "user user's users assistant says said notes noted mentions mentioned "
    "reports reported question questions whether regarding"
)
# Request framing: only when the source makes a request.
_REQUEST_FRAMING_EN = _words(
    "wants want wanted requests request requested needs need needed asks ask asked asking"
)
_REQUEST_CUES_EN = re.compile(
    r"\?|\b(?:please|pls|plz|can you|could you|would you|will you|can u|i want|i'd like|"
    r"i would like|i need|we need|help me|let's|let us|remind me|make sure|don't forget|"
    r"looking for|i'd love|if possible|"
    r"how do i|how can i|is it possible|tell me|show me|give me|send me)\b"
    r"|(?:^|[,;.!]\s*|\b(?:so|just|then|and|always|never|please)\s+)"
    r"(?:add|fix|make|create|write|update|remove|delete|change|convert|use|send|check|run|"
    r"install|show|explain|summarize|summarise|translate|book|schedule|set|call|email|"
    r"list|find|build|deploy|rename|move|open|close|stop|start|keep|try|implement|refactor|"
    r"test|review|compare|draft|prepare|cancel|reply|tell|give|put|save|export|import)\b",
    re.IGNORECASE | re.MULTILINE,
)
_NEGATIONS_EN = _words(
    "not no never nothing nobody none nor neither without cannot can't don't doesn't "
    "didn't won't isn't aren't wasn't weren't shouldn't wouldn't couldn't haven't hasn't "
    "hadn't mustn't n't"
)
# Words skipped when looking for the word a negation applies to ("don't want any more").
_NEGATION_SKIP = _FUNCTION_EN | _words("really very too quite any more much just even all")
_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000",
    "twice": "2", "double": "2", "half": "0.5", "dozen": "12", "first": "1", "second": "2",
    "third": "3", "fourth": "4", "fifth": "5",
}  # fmt: skip
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

# Chinese
_FUNCTION_ZH = frozenset("的了和与及并且或在是对将把为被等其该此这个之以于中着地得也但而")
_FRAMING_ZH = ("用户", "询问", "表示", "认为", "提到", "反馈", "称", "说")
_REQUEST_FRAMING_ZH = ("要求", "希望", "想要", "想", "需要", "请求", "请")
_REQUEST_CUES_ZH = re.compile(
    r"[？?]|请|帮|能不能|能否|可不可以|可以帮|吗|我想|想要|我要|要求|需要|希望|麻烦|记得|提醒"
    r"|怎么|如何|给我"
)
_NEGATIONS_ZH = frozenset("不没别无未非勿莫")
_DEGREE_ZH = frozenset("太很都也还再要")
# Measure words and time units: a number in a Chinese summary keeps its unit from the source.
_UNITS_ZH = frozenset("天日月年号点时分秒周个次人条项元块位件张页行倍度级岁层楼台份篇本门种")
# Words with a negation character that do not negate (非常 "very", 不错 "good").
_NOT_NEGATIONS_ZH = (
    "非常", "无论", "未来", "特别", "区别", "分别", "级别", "类别", "识别", "告别", "离别",
    "别人", "不错", "不过", "不同", "不断", "不少", "不仅", "并非", "无数",
)  # fmt: skip
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}  # fmt: skip
_ZH_NUMERAL_RUN = re.compile("[零一二两三四五六七八九十百千]+")
_RELATIVE_TIME = re.compile("([今明昨前后上下本这每次])([天周月年午晚])|[早晚]上|凌晨|傍晚|中午")

# --------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------

_URL = re.compile(r"(?:https?://|www\.)[^\s;,)\]}>\"'，。；）]+", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
# A "code": a token with a digit, an inner dot, slash or underscore, or inner capitals
# (v2.4.1, A-10293, src/cli.py, test_login, gpt-4o-mini, TypeScript is a plain word).
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/@:'’%+#]*[A-Za-z0-9_%#+]|[A-Za-z0-9]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NUMERIC_EXPRESSION = re.compile(r"\d+(?:[:/-]\d+)+|\d+(?:\.\d+){2,}")


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("’", "'")
    return text


def _zh_numeral_value(run: str) -> int | None:
    """The value of a simple Chinese numeral (三, 十二, 二十五, 一百二十), else None."""
    if not run or any(c not in _ZH_DIGITS and c not in "十百千" for c in run):
        return None
    total, current = 0, 0
    for char in run:
        if char in _ZH_DIGITS:
            current = current * 10 + _ZH_DIGITS[char] if current >= 10 else _ZH_DIGITS[char]
        else:
            unit = {"十": 10, "百": 100, "千": 1000}[char]
            total += (current or 1) * unit
            current = 0
    return total + current


def _arabic(text: str) -> str:
    """``text`` with Chinese numerals written as digits (三天 -> 3天), for number matching."""

    def repl(match: re.Match[str]) -> str:
        value = _zh_numeral_value(match.group())
        return match.group() if value is None else str(value)

    return _ZH_NUMERAL_RUN.sub(repl, text)


def _numbers(text: str) -> list[str]:
    """Numbers in ``text`` as canonical strings ("1,200" -> "1200", "3.50" -> "3.5")."""
    out = []
    for match in _NUMBER.finditer(_arabic(_norm(text))):
        out.append(_canonical_number(match.group()))
    return out


def _canonical_number(raw: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", raw):
        raw = raw.replace(",", "")
    if re.fullmatch(r"\d+\.\d+", raw):
        whole, frac = raw.split(".")
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        return f"{whole}.{frac}" if frac else whole
    return raw.lstrip("0") or "0"


def _stem(word: str) -> str:
    """A light English stemmer: enough to match inflections, never to merge meanings."""
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix, repl in (
        ("ies", "y"),
        ("ied", "y"),
        ("ying", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # planned -> plann -> plan
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]  # simplifie/use/used -> us
    if w.endswith("y") and len(w) > 3:
        w = w[:-1] + "i"
    return w


def _is_code(token: str) -> bool:
    inner = token[1:-1]
    return (
        any(c.isdigit() for c in token)
        or any(c in "._/@:#" for c in inner)
        or (any(c.isupper() for c in token[1:]) and any(c.islower() for c in token))
    )


@dataclass(frozen=True)
class _Source:
    """What a source supports, precomputed once per check."""

    text: str
    lower: str
    compact: str  # lowercase, no whitespace, numerals as digits: for Chinese matching
    words: frozenset[str]
    stems: frozenset[str]
    numbers: frozenset[str]
    han: frozenset[str]
    requests: bool
    negated_en: frozenset[str]
    negated_zh: tuple[str, ...]
    negations: bool

    @classmethod
    def of(cls, text: str) -> _Source:
        text = _norm(text)
        lower = text.lower()
        tokens = [t.lower().strip("'") for t in _TOKEN.findall(text)]
        parts = [p for t in tokens for p in re.split(r"[^a-z0-9']+", t) if p]
        words = frozenset(tokens + parts)
        numbers = set(_numbers(text))
        for t in tokens:
            if t in _NUMBER_WORDS:
                numbers.add(_NUMBER_WORDS[t])
        return cls(
            text=text,
            lower=lower,
            compact=_compact(text),
            words=words,
            stems=frozenset(_stem(t) for t in (*tokens, *parts)),
            numbers=frozenset(numbers),
            han=frozenset(_HAN_CHAR.findall(text)),
            requests=bool(_REQUEST_CUES_EN.search(text) or _REQUEST_CUES_ZH.search(text)),
            negated_en=frozenset(_negated_words_en(tokens)),
            negated_zh=tuple(_negated_bigrams_zh(text)),
            negations=bool(
                any(_is_negation_en(t) for t in tokens)
                or any(_is_negation_zh(text, i) for i in range(len(text)))
            ),
        )


def _compact(text: str) -> str:
    return _arabic("".join(_norm(text).lower().split()))


def _is_negation_en(token: str) -> bool:
    return token in _NEGATIONS_EN or token.endswith(("n't", "n’t"))


def _negated_words_en(tokens: Sequence[str]) -> list[str]:
    """Stems of the first content word after each English negation."""
    out = []
    for i, token in enumerate(tokens):
        if not _is_negation_en(token):
            continue
        for nxt in tokens[i + 1 : i + 5]:
            if nxt not in _NEGATION_SKIP:
                out.append(_stem(nxt))
                break
    return out


def _is_negation_zh(text: str, i: int) -> bool:
    """A Chinese negation at ``i``, not the A-not-A question form (能不能, 是不是)."""
    if text[i] not in _NEGATIONS_ZH:
        return False
    if 0 < i < len(text) - 1 and text[i - 1] == text[i + 1]:
        return False
    return not any(text[max(0, i - 1) : i + 2].find(word) != -1 for word in _NOT_NEGATIONS_ZH)


def _negated_bigrams_zh(text: str) -> list[str]:
    """The Han bigrams right after each Chinese negation (degree words skipped)."""
    out = []
    for i in range(len(text)):
        if not _is_negation_zh(text, i):
            continue
        j = i + 1
        while j < len(text) and text[j] in _DEGREE_ZH and j < i + 3:
            j += 1
        pair = text[j : j + 2]
        if len(pair) == 2 and all(_HAN_CHAR.fullmatch(c) for c in pair):
            out.append(pair)
    return out


_LABEL_KEY = re.compile(r"(?:^|(?<=[\s;,{]))[\w.-]+\s*:(?=\s)")


def specifics(text: str) -> list[str]:
    """The checkable specifics of a text: numbers, codes, URLs and capitalised names (not
    at a sentence start); ``key:`` labels (rendered JSON) do not count."""
    text = _LABEL_KEY.sub(" ", _norm(text))
    found: list[str] = []
    found += [m.group().lower() for m in _URL.finditer(text)]
    found += [m.group().lower() for m in _EMAIL.finditer(text)]
    found += [_canonical_number(m.group()) for m in _NUMBER.finditer(text)]
    for match in _TOKEN.finditer(text):
        token = match.group()
        before = text[: match.start()].rstrip()
        if _is_code(token) and not token[0].isdigit():
            found.append(re.split(r"/|::", token.lower())[-1])
        elif (
            token[:1].isupper()
            and before
            and before[-1] not in '.!?:;\n。！？；："“(['
            and token.lower() not in _FUNCTION_EN
            and not token.startswith(("I'", "I’"))
        ):
            found.append(token.lower())
    return list(dict.fromkeys(found))


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
        self.prompt_texts = tuple(_norm(t) for t in prompt_texts)
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
        src = _Source.of(source)
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

    def _form(self, src: _Source, text: str) -> list[str]:
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

    def _copies(self, src: _Source, text: str, stage1: str) -> list[str]:
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

    def _support(self, src: _Source, text: str) -> list[str]:
        text = _norm(text)
        reasons: list[str] = []
        rest = text
        for pattern, code in ((_URL, "unsupported_url"), (_EMAIL, "unsupported_email")):
            for match in pattern.finditer(rest):
                if match.group().lower().rstrip(".,;)") not in src.lower:
                    reasons.append(f"{code}: {match.group()}")
            rest = pattern.sub(" ", rest)
        for number in _numbers(rest):
            if number not in src.numbers:
                reasons.append(f"unsupported_number: {number}")
        for match in _NUMERIC_EXPRESSION.finditer(rest):  # 10:30, 2024-05-01, 2.4.1
            if match.group() not in src.text:
                reasons.append(f"unsupported_number: {match.group()}")
        reasons += self._support_en(src, rest)
        reasons += self._support_zh(src, rest)
        return reasons

    def _support_en(self, src: _Source, text: str) -> list[str]:
        reasons = []
        for token in _TOKEN.findall(text):
            lower = token.lower().strip("'")
            if lower in src.words:
                continue
            if _is_code(token):
                if not any(c.isalpha() for c in token):
                    continue  # a bare number: checked as a number
                if lower not in src.lower:
                    reasons.append(f"unsupported_code: {token}")
            elif lower in _NUMBER_WORDS:
                if _NUMBER_WORDS[lower] not in src.numbers:
                    reasons.append(f"unsupported_number: {token}")
            elif _stem(lower) in src.stems or lower in _FUNCTION_EN or lower in _FRAMING_EN:
                continue
            elif _is_negation_en(lower):
                continue  # negations are judged by _polarity
            elif lower in _REQUEST_FRAMING_EN:
                if not src.requests:
                    reasons.append(f"unsupported_request: {token}")
            else:
                kind = "unsupported_name" if token[0].isupper() else "unsupported_word"
                reasons.append(f"{kind}: {token}")
        return reasons

    def _support_zh(self, src: _Source, text: str) -> list[str]:
        if not _HAN_CHAR.search(text):
            return []
        reasons = []
        compact = _compact(text)
        # Framing words are cut out first (replaced by a separator).
        stripped = compact
        for word in _FRAMING_ZH:
            stripped = stripped.replace(word, "|")
        for word in _REQUEST_FRAMING_ZH:
            if word in stripped and word not in src.compact:
                if not src.requests:
                    reasons.append(f"unsupported_request: {word}")
                stripped = stripped.replace(word, "|")
        allowed = _FUNCTION_ZH | (_NEGATIONS_ZH if src.negations else frozenset())
        missing = sorted(
            {c for c in stripped if _HAN_CHAR.fullmatch(c) and c not in src.han} - allowed
        )
        if missing:
            reasons.append(f"unsupported_cjk: {''.join(missing)}")
        # Numbers with the unit right after them: 3天 needs 3 then 天 (within 2) in the source.
        for match in re.finditer(r"(?<![a-z0-9.:])(\d+(?:\.\d+)?)(.)", compact):
            number, unit = match.groups()
            if unit not in _UNITS_ZH:
                continue
            if not re.search(re.escape(number) + r"(?!\d)\D{0,2}?" + re.escape(unit), src.compact):
                reasons.append(f"unsupported_quantity: {number}{unit}")
        for match in _RELATIVE_TIME.finditer(compact):
            first, second = match.group(1), match.group(2)
            said = match.group() if first is None else f"{first}个?{second}"
            if not re.search(said, src.compact):
                reasons.append(f"unsupported_time: {match.group()}")
        content = [
            stripped[i : i + 2]
            for i in range(len(stripped) - 1)
            if all(_HAN_CHAR.fullmatch(c) and c not in _FUNCTION_ZH for c in stripped[i : i + 2])
        ]
        if content:
            share = sum(b in src.compact for b in content) / len(content)
            if share < self.min_bigram_support:
                reasons.append(f"recombined_cjk: {share:.2f} of bigrams in source")
        return reasons

    # -- polarity -------------------------------------------------------------------------

    def _polarity(self, src: _Source, text: str) -> list[str]:
        text = _norm(text)
        tokens = [t.lower().strip("'") for t in _TOKEN.findall(text)]
        cand_neg = any(_is_negation_en(t) for t in tokens) or any(
            _is_negation_zh(text, i) for i in range(len(text))
        )
        reasons = []
        if cand_neg and not src.negations:
            reasons.append("invented_negation")
        for i, token in enumerate(tokens):
            if _stem(token) in src.negated_en and not any(
                _is_negation_en(t) for t in tokens[max(0, i - 4) : i + 3]
            ):
                reasons.append(f"dropped_negation: {token}")
        for pair in src.negated_zh:
            for match in re.finditer(re.escape(pair), text):
                before = text[max(0, match.start() - 3) : match.start()]
                if not any(c in _NEGATIONS_ZH for c in before):
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
        mine = set(specifics(text)) | {t.lower() for t in _TOKEN.findall(_norm(text))}
        compact = _compact(text)
        lost = [s for s in kept if s not in mine and s not in compact]
        allowed = 0 if len(kept) <= 2 else len(kept) // 3
        if len(lost) > allowed:
            reasons.append(f"lost_specifics: {', '.join(lost[:5])}")
        return reasons

    def _overuse(self, src: _Source, text: str) -> list[str]:
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
    text = _norm(text)
    units = []
    for token in _TOKEN.findall(text):
        lower = token.lower().strip("'")
        if lower in _FUNCTION_EN or lower in _FRAMING_EN or lower in _REQUEST_FRAMING_EN:
            continue
        if _is_negation_en(lower) or lower.isdigit():
            continue
        units.append(_stem(lower))
    han = _HAN_CHAR.findall(text)
    framing = set("".join(_FRAMING_ZH + _REQUEST_FRAMING_ZH))
    units += [c for c in han if c not in _FUNCTION_ZH and c not in framing]
    return units


def coverage(reference: str, text: str) -> float | None:
    """The share of ``reference``'s content units (see :func:`_content_units`) that
    ``text`` has; None if the reference has none."""
    wanted = set(_content_units(_LABEL_KEY.sub(" ", reference)))
    if not wanted:
        return None
    return len(wanted & set(_content_units(text))) / len(wanted)


def _letters(text: str) -> str:
    """Lowercase letters and digits only: for copy detection."""
    return "".join(c for c in _norm(text).lower() if c.isalnum())


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
    han = "".join(_HAN_CHAR.findall(lower))
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
    words = re.findall(r"[^\W_]+", _HAN_CHAR.sub(" ", text.lower()))
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    if len(grams) != len(set(grams)):
        return True
    han = "".join(_HAN_CHAR.findall(text))
    runs = [han[i : i + 6] for i in range(len(han) - 5)]
    return len(runs) != len(set(runs))
