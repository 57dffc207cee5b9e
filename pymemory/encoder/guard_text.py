"""What the guard reads in a text: language, words, numbers, codes, negations, specifics."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# --------------------------------------------------------------------------------------
# Character classes
# --------------------------------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_CJK = _HAN + "\u3040-\u30ff\u3100-\u312f"
HAN_CHAR = re.compile(f"[{_HAN}]")
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
FUNCTION_EN = _words(
    "a an the this that these those it its it's is are was were be been being am has have "
    "had do does did done will would can could may might to of in on at by for from with "
    "about as and or but so if when which who whom whose what where why how there their "
    "they them theirs we our us you your i me my also both via per into"
)
# Framing: how a summary refers to the speaker and what it reports.
FRAMING_EN = _words(
    "user user's users assistant says said notes noted mentions mentioned "
    "reports reported question questions whether regarding"
)
# Request framing: only when the source makes a request.
REQUEST_FRAMING_EN = _words(
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
_NEGATION_SKIP = FUNCTION_EN | _words("really very too quite any more much just even all")
NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000",
    "twice": "2", "double": "2", "half": "0.5", "dozen": "12", "first": "1", "second": "2",
    "third": "3", "fourth": "4", "fifth": "5",
}  # fmt: skip

# Chinese
FUNCTION_ZH = frozenset("的了和与及并且或在是对将把为被等其该此这个之以于中着地得也但而")
FRAMING_ZH = ("用户", "询问", "表示", "认为", "提到", "反馈", "称", "说")
REQUEST_FRAMING_ZH = ("要求", "希望", "想要", "想", "需要", "请求", "请")
_REQUEST_CUES_ZH = re.compile(
    r"[？?]|请|帮|能不能|能否|可不可以|可以帮|吗|我想|想要|我要|要求|需要|希望|麻烦|记得|提醒"
    r"|怎么|如何|给我"
)
NEGATIONS_ZH = frozenset("不没别无未非勿莫")
_DEGREE_ZH = frozenset("太很都也还再要")
# Measure words and time units: a number in a Chinese summary keeps its unit from the source.
UNITS_ZH = frozenset("天日月年号点时分秒周个次人条项元块位件张页行倍度级岁层楼台份篇本门种")
# Words with a negation character that do not negate (非常 "very", 不错 "good").
_NOT_NEGATIONS_ZH = (
    "非常", "无论", "未来", "特别", "区别", "分别", "级别", "类别", "识别", "告别", "离别",
    "别人", "不错", "不过", "不同", "不断", "不少", "不仅", "并非", "无数",
)  # fmt: skip
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}  # fmt: skip
_ZH_NUMERAL_RUN = re.compile("[零一二两三四五六七八九十百千]+")
RELATIVE_TIME = re.compile("([今明昨前后上下本这每次])([天周月年午晚])|[早晚]上|凌晨|傍晚|中午")

# --------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------

URL = re.compile(r"(?:https?://|www\.)[^\s;,)\]}>\"'，。；）]+", re.IGNORECASE)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
# A "code": a token with a digit, an inner dot, slash or underscore, or inner capitals
# (v2.4.1, A-10293, src/cli.py, test_login, gpt-4o-mini, TypeScript is a plain word).
TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/@:'’%+#]*[A-Za-z0-9_%#+]|[A-Za-z0-9]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
NUMERIC_EXPRESSION = re.compile(r"\d+(?:[:/-]\d+)+|\d+(?:\.\d+){2,}")


def normalized(text: str) -> str:
    """``text`` in NFKC with typographic apostrophes made plain."""
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


def numbers_in(text: str) -> list[str]:
    """Numbers in ``text`` as canonical strings ("1,200" -> "1200", "3.50" -> "3.5")."""
    out = []
    for match in _NUMBER.finditer(_arabic(normalized(text))):
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


def stem(word: str) -> str:
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


def is_code(token: str) -> bool:
    """Whether a token is a code: a digit, an inner dot, slash or underscore, or inner capitals."""
    inner = token[1:-1]
    return (
        any(c.isdigit() for c in token)
        or any(c in "._/@:#" for c in inner)
        or (any(c.isupper() for c in token[1:]) and any(c.islower() for c in token))
    )


@dataclass(frozen=True)
class Source:
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
    def of(cls, text: str) -> Source:
        text = normalized(text)
        lower = text.lower()
        tokens = [t.lower().strip("'") for t in TOKEN.findall(text)]
        parts = [p for t in tokens for p in re.split(r"[^a-z0-9']+", t) if p]
        words = frozenset(tokens + parts)
        numbers = set(numbers_in(text))
        for t in tokens:
            if t in NUMBER_WORDS:
                numbers.add(NUMBER_WORDS[t])
        return cls(
            text=text,
            lower=lower,
            compact=compact_form(text),
            words=words,
            stems=frozenset(stem(t) for t in (*tokens, *parts)),
            numbers=frozenset(numbers),
            han=frozenset(HAN_CHAR.findall(text)),
            requests=bool(_REQUEST_CUES_EN.search(text) or _REQUEST_CUES_ZH.search(text)),
            negated_en=frozenset(_negated_words_en(tokens)),
            negated_zh=tuple(_negated_bigrams_zh(text)),
            negations=bool(
                any(is_negation_en(t) for t in tokens)
                or any(is_negation_zh(text, i) for i in range(len(text)))
            ),
        )


def compact_form(text: str) -> str:
    """``text`` lowercased without whitespace, numerals as digits: for Chinese matching."""
    return _arabic("".join(normalized(text).lower().split()))


def is_negation_en(token: str) -> bool:
    """Whether an English token negates ("not", "never", any "n't")."""
    return token in _NEGATIONS_EN or token.endswith(("n't", "n’t"))


def _negated_words_en(tokens: Sequence[str]) -> list[str]:
    """Stems of the first content word after each English negation."""
    out = []
    for i, token in enumerate(tokens):
        if not is_negation_en(token):
            continue
        for nxt in tokens[i + 1 : i + 5]:
            if nxt not in _NEGATION_SKIP:
                out.append(stem(nxt))
                break
    return out


def is_negation_zh(text: str, i: int) -> bool:
    """A Chinese negation at ``i``, not the A-not-A question form (能不能, 是不是)."""
    if text[i] not in NEGATIONS_ZH:
        return False
    if 0 < i < len(text) - 1 and text[i - 1] == text[i + 1]:
        return False
    return not any(text[max(0, i - 1) : i + 2].find(word) != -1 for word in _NOT_NEGATIONS_ZH)


def _negated_bigrams_zh(text: str) -> list[str]:
    """The Han bigrams right after each Chinese negation (degree words skipped)."""
    out = []
    for i in range(len(text)):
        if not is_negation_zh(text, i):
            continue
        j = i + 1
        while j < len(text) and text[j] in _DEGREE_ZH and j < i + 3:
            j += 1
        pair = text[j : j + 2]
        if len(pair) == 2 and all(HAN_CHAR.fullmatch(c) for c in pair):
            out.append(pair)
    return out


LABEL_KEY = re.compile(r"(?:^|(?<=[\s;,{]))[\w.-]+\s*:(?=\s)")


def specifics(text: str) -> list[str]:
    """The checkable specifics of a text: numbers, codes, URLs and capitalised names (not
    at a sentence start); ``key:`` labels (rendered JSON) do not count."""
    text = LABEL_KEY.sub(" ", normalized(text))
    found: list[str] = []
    found += [m.group().lower() for m in URL.finditer(text)]
    found += [m.group().lower() for m in EMAIL.finditer(text)]
    found += [_canonical_number(m.group()) for m in _NUMBER.finditer(text)]
    for match in TOKEN.finditer(text):
        token = match.group()
        before = text[: match.start()].rstrip()
        if is_code(token) and not token[0].isdigit():
            found.append(re.split(r"/|::", token.lower())[-1])
        elif (
            token[:1].isupper()
            and before
            and before[-1] not in '.!?:;\n。！？；："“(['
            and token.lower() not in FUNCTION_EN
            and not token.startswith(("I'", "I’"))
        ):
            found.append(token.lower())
    return list(dict.fromkeys(found))
