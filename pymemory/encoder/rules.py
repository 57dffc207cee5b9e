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

import json
import re
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..errors import ValidationError

MAX_CONTENT_CHARS = 200
MEMORY_TYPES = ("message", "tool_result", "user_feedback", "user_preference", "system_event")
ELLIPSIS = "…"


class Encoded(NamedTuple):
    """An encoder's output: the summary and the stage that produced it."""

    content: str
    """At most ``max_chars`` long; non-empty whenever the input has a non-space character."""
    method: str
    """Which stage produced ``content``, e.g. ``"rules"``."""


@runtime_checkable
class Encoder(Protocol):
    async def encode(self, text: str, *, type: str = "message") -> Encoded:
        """Summarise ``text`` (a memory of the given ``type``) into a short ``content``."""
        ...


# --------------------------------------------------------------------------------------
# Character classes and sentence punctuation
# --------------------------------------------------------------------------------------

# Han, kana, bopomofo, CJK punctuation and full-width forms: text that is written without
# spaces, so it may be cut between any two characters. (Hangul is written with spaces.)
_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0003134f"
)
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_TERMINATORS = "。！？；"
_CLOSERS = "\"'”’)]」』）】"
# A run of sentence punctuation and the quotes/brackets closing right after it.
_TERMINATOR_RUN = re.compile(f"(?:[.!?…]+|[{_CJK_TERMINATORS}]+)[{re.escape(_CLOSERS)}]*")
# Punctuation that ends a clause inside a sentence too long to keep whole.
_CLAUSE_RUN = re.compile(r"[,;:]+(?= )|[，；：、]+")
_CLAUSE_PUNCTUATION = ",;:，；：、"
# Punctuation after which a unit may be glued to the next one without a space.
_GLUE_AFTER = "。！？；，、：…」』）】"


def _word_set(words: str) -> frozenset[str]:
    """A table of cue words written as one space-separated string."""
    return frozenset(words.split())


# A period after one of these does not end the sentence.
_ABBREVIATIONS = _word_set(
    "mr. mrs. ms. dr. prof. sr. jr. st. mt. vs. e.g. i.e. cf. approx. fig. no. nos. vol. "
    "dept. est. ca. al. eg. ie. viz. ref. ver. incl. min. max. avg. jan. feb. mar. apr. "
    "jun. jul. aug. sep. sept. oct. nov. dec. mon. tue. wed. thu. fri. sat. sun."
)
# ... nor after one of these when the next word starts in lower case or with a digit.
_SOFT_ABBREVIATIONS = _word_set("etc. a.m. p.m. inc. ltd. co. corp.")
_SENTENCE_END = ".!?…:" + _CJK_TERMINATORS

# --------------------------------------------------------------------------------------
# Code blocks and stack traces
# --------------------------------------------------------------------------------------

_FENCES = ("```", "~~~")
_MIN_WRAPPED_LINE = 40  # a shorter line was ended on purpose, not wrapped
_TRACEBACK_HEADER = "Traceback (most recent call last)"
_EXCEPTION_LINE = re.compile(
    r"(?:(?i:uncaught|unhandled|fatal)\s+)?(?:[A-Za-z_][\w$]*\.)*[A-Za-z_]*"
    r"(?:Error|Exception|Warning|Exit|Interrupt|Fault|Panic)(?::.*)?"
)
# Stack frames and traceback chatter: dropped outright.
_NOISE_LINE = re.compile(
    r'\s*File ".*", line \d+'
    r"|\s+at\s.*:\d+"
    r"|\s+\.\.\. \d+ more"
    r"|During handling of the above exception"
    r"|The above exception was the direct cause"
)
_CODE_HEADER = re.compile(r"#!|#\s*-\*-|Traceback \(most recent call last\)")
_CODE_COMMENT = re.compile(r"#\s|#$|//|/\*|\*|--\s|<!--")

# --------------------------------------------------------------------------------------
# Pleasantries and filler
# --------------------------------------------------------------------------------------

_NAME = r"(?:\s+(?-i:[A-Z][\w'-]*))?"
_NAMES = r"(?:[\W_]+(?-i:[A-Z][\w'-]*)){0,2}"
_GREETING = (
    r"(?:hi|hello|hey|heya|hiya|yo|howdy|greetings|dear"
    r"|good (?:morning|afternoon|evening|day))"
    r"(?:\s+(?:there|all|everyone|everybody|team|guys|folks|again|y'all))?"
)
_THANKS = (
    r"(?:many |big )?(?:thanks|thank you|thank u|thx|tysm|cheers)"
    r"(?:\s+(?:so|very) much|\s+a (?:lot|ton|bunch)|\s+again|\s+in advance|\s+(?:all|everyone))*"
)

# A unit that is nothing but pleasantries ("Hi, hope you're well!", "ok cool", "好的谢谢") is
# a sequence of these, matched against the unit without the punctuation and emoji at its
# edges. Each is tried longest first and matched atomically, so matching stays linear.
_PLEASANTRIES = (
    r"(?:i )?hope (?:you|you're|you are|all|all's|everything|everything's|this|that|things"
    r"|your)\b[^.!?]*\b(?:well|good|great|fine|nice|lovely|wonderful|weekend|day|holiday|trip)",
    r"(?:i )?hope (?:this|that|it) helps",
    r"how (?:are|r) (?:you|u|things)(?: doing| today| going)?|how's it going"
    r"|how have you been|what's up",
    r"(?:have|enjoy) a (?:nice|good|great|lovely|wonderful|fantastic)(?: \w+)?"
    r" (?:day|weekend|evening|night|one|week|time|holiday)",
    r"(?:sorry|apologies|i apologi[sz]e)"
    r"(?: to (?:bother|disturb|trouble)(?: you)?(?: again)?"
    r"| for (?:the (?:trouble|inconvenience|late reply|delay|wait|long message)"
    r"|bothering you|disturbing you|my late reply))?",
    r"let me know if (?:you )?(?:have any (?:questions|thoughts)|need anything(?: else)?"
    r"|there(?:'s| is) anything else)",
    r"(?:i )?(?:am )?(?:looking forward to|look forward to)"
    r" (?:hearing from you|your (?:reply|response|answer|thoughts))",
    r"(?:any help|your help) (?:is|would be) (?:much |greatly |really )?appreciated",
    _GREETING,
    _THANKS + r"(?:\W+for (?:everything|your (?:help|time|patience)))?",
    r"see you (?:soon|later|tomorrow)|see you|see ya|talk (?:to you )?(?:soon|later)|ttyl"
    r"|take care|best wishes|kind regards|warm regards|regards|best|sincerely"
    r"|goodbye|bye|sure thing|sure|got it|gotcha|alright|all right|sounds good|no worries"
    r"|no problem|np|okay|ok|kk|k|lol|lmao|haha+|hehe+|oh|ah|hmm+|um+|uh+|you're welcome"
    r"|my pleasure",
    r"(?:你好|您好|嗨|哈喽|哈罗|大家好|各位好|早上好|上午好|中午好|下午好|晚上好|早安|晚安)"
    r"(?:啊|呀|哇)?",
    r"(?:非常感谢|太感谢了|感谢感谢|谢谢|多谢|感谢|谢啦|谢了)(?:你|您|大家)?(?:了|啦|哈|哦)?",
    r"麻烦(?:你|您)了|辛苦(?:你|您)?了|辛苦啦|(?:不好意思|抱歉)打扰(?:了|一下)?|打扰了|不好意思",
    r"好的|好滴|好吧|嗯+|哦+|噢|哈哈+|呵呵|嘿嘿|收到|明白了?|知道了|了解|没问题|行",
    r"再见|拜拜|回头见|下次见|回聊",
    r"祝.{0,10}(?:愉快|顺利|开心|快乐|好运)",
    r"希望(?:你|您)一切(?:都)?(?:好|顺利)",
    r"(?:你|您)(?:最近)?(?:好吗|怎么样)",
)
# Short acknowledgements that are pleasantries in a chat message but the whole point of
# a piece of feedback ("Perfect!").
_ACKS_EVALUATIVE = (
    r"good job|great job|nice work|great work|well done|love it|cool|great|nice|awesome"
    r"|perfect|excellent|wonderful|fantastic|amazing",
    r"太棒了|好棒|很好|不错|完美|厉害|赞",
)
# Units that open with thanks/apologies/greetings: pleasantries unless they also carry intent
# ("Thanks so much for yesterday." goes; "Thanks for fixing the bug in parser.py" stays).
_SOFT_PLEASANTRIES = (
    _THANKS + r"\b.*",
    r"(?:sorry|apologies)\b.*",
    _GREETING + r"\b.*",
    r"(?:谢谢|多谢|感谢|不好意思|抱歉|你好|您好).*",
)
_MAX_PLEASANTRY_CHARS = 160  # a longer unit is never a mere pleasantry
# The types written by people: only these get pleasantries and filler removed ("OK: 3 tests
# passed" from a tool, or "actually" in a log line, stays).
_HUMAN_TYPES = ("message", "user_feedback", "user_preference")


def _sequence_of(patterns: Iterable[str]) -> re.Pattern[str]:
    """Matches one or more of ``patterns`` in a row, then up to two names ("Thanks, Bob")."""
    item = "(?>" + "|".join(f"(?:{p})" for p in patterns) + ")"
    return re.compile(f"{item}(?:[\\W_]*{item})*+{_NAMES}", re.IGNORECASE | re.DOTALL)


# A sign-off, and the lone name that may follow it as the last line ("Best regards,\nTom").
_SIGN_OFF = re.compile(
    r"(?:many )?thanks|thank you|cheers|(?:best|kind|warm) regards|regards|best(?: wishes)?"
    r"|sincerely|yours(?: truly| sincerely)?|take care|talk soon",
    re.IGNORECASE,
)
_SIGNATURE = re.compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)?[.!]?")
_PLEASANTRY = _sequence_of(_PLEASANTRIES)
_PLEASANTRY_OR_ACK = _sequence_of(_PLEASANTRIES + _ACKS_EVALUATIVE)
_SOFT_PLEASANTRY = re.compile(
    "|".join(f"(?:{p})" for p in _SOFT_PLEASANTRIES), re.IGNORECASE | re.DOTALL
)

# A pleasantry opening a unit that goes on with something else: "Hi John, can you ...".
_PLEASANTRY_PREFIX = re.compile(
    r"^(?:(?:" + _GREETING + _NAME + r")|" + _THANKS + r"|ok|okay|so|well|oh|um+|uh+|hmm+"
    r"|sorry|alright|anyway|btw|by the way)(?:\s*[,!:;]\s*|\s+[—–-]\s+)(?=\S)"
    r"|^(?:你好|您好|嗨|哈喽|大家好|早上好|下午好|晚上好|谢谢|多谢|不好意思|抱歉|打扰一下|打扰了"
    r"|麻烦(?:你|您)了|辛苦(?:你|您)?了|对了|嗯+|呃+|啊+|哦+|那个|好的)[，,、！!~～\s]+(?=\S)",
    re.IGNORECASE,
)
# ... or closing it: "Could you check this, thanks!".
_PLEASANTRY_SUFFIX = re.compile(
    r"(?:\s*[,，、;；]\s*|\s+|(?<=[\u4e00-\u9fff]))"
    r"(?:thanks|thank you|thx|cheers|谢谢(?:你|您|啦|了)?|多谢|辛苦了|麻烦(?:你|您)了)"
    r"(?:\s+(?:so|very) much|\s+a lot|\s+in advance)?[\s!！.。~～]*$",
    re.IGNORECASE,
)

# Filler words: removed only between spaces and never right after a negation or before a
# number ("not just", "just 5 minutes" stay).
_FILLER_WORDS_EN = _word_set("basically actually literally honestly essentially really just")
_FILLER_EN = re.compile(
    r"(?:(?<=\s)|^)(?:" + "|".join(sorted(_FILLER_WORDS_EN)) + r")(?:,\s*|\s+)(?=[^\W\d_])",
    re.IGNORECASE,
)
_MAX_WORD_CHARS = 24  # how far back to look for a negation before a filler word
_NEGATIONS_EN = _word_set("not no never nothing nobody none nor neither without hardly")
# Hedges opening a unit: "I think that we should ..." -> "we should ...".
_HEDGE_THAT = re.compile(
    r"^i (?:think|believe|guess|feel) that\s+"
    r"(?!(?:is|was|would|will|should|could|might|can|does|did|has|had|sounds|seems|looks"
    r"|works|makes)\b)",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"^(?:i (?:think|believe|guess)\s+(?=(?:we|it|they|you|this|that|the|there|he|she|i|my"
    r"|our|your|its|maybe|a|an)\b)|i mean,\s*|i guess,\s*)",
    re.IGNORECASE,
)
_FILLER_ZH = re.compile(
    r"其实|(?:^|(?<=[，,。！？；\s]))(?:那个|嗯|呃|啊|就是说|说实话|老实说|说白了)[，,、…\s]+"
)

# --------------------------------------------------------------------------------------
# Cue words: what makes a unit worth keeping
# --------------------------------------------------------------------------------------

_REQUEST_CUES = (
    "please", "pls", "plz", "can you", "could you", "would you", "will you", "can u",
    "could u", "would you mind", "i want", "i wanna", "i'd like", "i would like", "i need",
    "we need", "need to", "needs to", "help me", "let me know", "make sure", "remind me",
    "don't forget", "how do i", "how can i", "how to", "is it possible", "i'm looking for",
    "tell me", "show me", "give me", "send me", "what is", "what's", "what are", "where is",
    "when is", "why",
    # 请 opening a clause, or 请 + you/help/...: not 请大家吃饭 ("treat everyone to dinner").
    r"(?:^|(?<=[，,。！？；：\s]))请", "请(?:你|您|帮|把|给|将|问|务必|确认|检查)",
    "帮我", "帮忙", "麻烦你", "麻烦您", "能不能", "能否", "可不可以", "可以帮",
    "想要", "我想", "想", "需要", "要求", "希望", "给我", "记得", "提醒", "告诉我",
    "怎么", "如何", "为什么",
)  # fmt: skip
_DECISION_CUES = (
    "we decided", "i decided", "we've decided", "decided", "decision", "let's", "let us",
    "we will", "we'll", "we're going to", "we are going to", "i'm going to", "i will", "i'll",
    "agreed", "the plan is", "plan to", "we chose", "i chose", "settled on", "go with",
    "going with", "switch to", "from now on",
    "决定", "确定", "定了", "就这么定", "采用", "选用", "选定", "商定", "同意", "约定",
    "以后都", "从现在起", "计划",
)  # fmt: skip
_PREFERENCE_CUES = (
    "prefer", "prefers", "preferred", "preferably", "i'd rather", "i would rather",
    "rather than", "i like", "i love", "i enjoy", "i hate", "i dislike", "i don't like",
    "i do not like", "can't stand", "favorite", "favourite", "always", "never", "don't",
    "do not", "avoid", "instead of", "allergic", "vegetarian", "vegan",
    "喜欢", "偏好", "偏爱", "不要", "别", "讨厌", "受不了", "总是", "从不", "从来不", "永远",
    "一直", "习惯", "宁愿", "宁可", "倾向", "尽量", "避免", "不吃", "过敏",
)  # fmt: skip
_STEP_CUES = (
    r"step \d+", "step one", "then", "after that", "afterwards", "first of all",
    "第一步", "第二步", "第三步", r"第[一二三四五六七八九十\d]+步", "首先", "其次", "然后", "接着",
    "之后", "最后", "步骤",
)  # fmt: skip
# Ordinals are steps only when they open a unit ("Third, ..." but not "the third floor").
_STEP_OPENERS = re.compile(
    r"^(?:[-*•+]\s*|\d+[.)]\s*)?(?:first|firstly|second|secondly|third|thirdly|next|finally"
    r"|lastly)\b"
)
_ISSUE_CUES = (
    "error", "errors", "exception", "bug", "bugs", "crash", "crashes", "crashed", "crashing",
    "fail", "fails", "failed", "failing", "failure", "broken", "doesn't work",
    "does not work", "didn't work", "not working", "won't", "can't", "cannot", "unable to",
    "issue", "problem", "timeout", "timed out", "warning", "traceback", "denied",
    "not found", "missing",
    "报错", "错误", "出错", "失败", "崩溃", "异常", "问题", "故障", "bug", "不能用", "用不了",
    "无法", "不行", "卡住", "超时", "打不开",
)  # fmt: skip
_EVALUATIVE_CUES = (
    "good", "great", "bad", "terrible", "awful", "excellent", "perfect", "perfectly", "wrong",
    "correct", "incorrect", "helpful", "unhelpful", "useful", "useless", "works", "worked",
    "broken", "slow", "fast", "too", "confusing", "clear", "unclear", "love", "loved", "hate",
    "hated", "like", "liked", "dislike", "disliked", "annoying", "better", "worse", "best",
    "worst", "accurate", "inaccurate", "nice", "amazing", "awesome", "poor", "spot on",
    "disappointed", "happy", "unhappy", "satisfied", "impressed", "frustrating", "verbose",
    "concise", "easy", "hard", "simple", "complicated", "complex",
    "好用", "不好用", "很好", "挺好", "不错", "太棒", "棒", "满意", "不满意", "有用", "没用",
    "有帮助", "没帮助", "差", "太慢", "很慢", "慢", "太快", "错了", "不对", "对了", "准确",
    "不准", "复杂", "简单", "清楚", "不清楚", "啰嗦", "太长", "太短", "失望", "完美", "好多了",
    "更好", "更差",
)  # fmt: skip
_FACT_CUES = (
    "my name is", "call me", r"i'm (?:a|an|the|from)", r"i am (?:a|an|the|from)", "i live",
    r"i work (?:at|for|as|in|on)", "i was born", r"my \w+ is", r"my \w+ are", r"our \w+ is",
    r"our \w+ are", "deadline", "birthday",
    "我叫", "我的名字", "名字是", "我是", "我住", "住在", "我来自", "生日", "截止",
)  # fmt: skip
# Specifics: each kind found adds to a unit's score.
_DATE_CUES = (
    "today", "tomorrow", "yesterday", "tonight", "next week", "last week", "monday",
    "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", r"\d{4}-\d{2}-\d{2}", r"\d{1,2}:\d{2}",
    "今天", "明天", "后天", "昨天", "今晚", "下周", "上周", "本周", "周[一二三四五六日天]",
    "星期[一二三四五六日天]", r"(?<!\d)\d+\s*[年月日号点]",
)  # fmt: skip
_DIGIT = re.compile(r"\d")
_LINK = re.compile(r"https?://|www\.|\w@\w|(?<![\w-])[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b(?!\.\w)")
_PROPER_NOUN = re.compile(r"(?<=\S )(?!I\b|I')[A-Z][\w-]*")
_COPULA = re.compile(r"\b(?:is|are|was|were)\b|是")
_QUESTION = re.compile(r"[?？]|吗")

# Imperatives: a unit starting with one of these verbs is a request ("Convert the file.").
_IMPERATIVE_VERBS = _word_set(
    "add fix make create write update remove delete change convert use send check run "
    "install show explain summarize summarise translate book schedule set call email list "
    "find build deploy rename move open close stop start keep try implement refactor test "
    "review compare draft prepare cancel reply tell give put save export import upload "
    "download merge revert ignore replace include exclude sort filter format clean"
)
_FIRST_WORD = re.compile(r"^(?:[-*•+]\s*|\d+[.)]\s*)?([A-Za-z]+)\b")


def _cue_pattern(cues: Iterable[str]) -> re.Pattern[str]:
    """One regex for a cue table: English cues on word boundaries, Chinese ones anywhere."""
    cues = tuple(cues)
    english = [c for c in cues if c.isascii() and not c.startswith(r"\d")]
    other = [c for c in cues if c not in english]
    parts = []
    if english:
        parts.append(r"\b(?:" + "|".join(english) + r")\b")
    if other:
        parts.append("|".join(other))
    return re.compile("|".join(parts))


_CATEGORIES: dict[str, re.Pattern[str]] = {
    "request": _cue_pattern(_REQUEST_CUES),
    "decision": _cue_pattern(_DECISION_CUES),
    "preference": _cue_pattern(_PREFERENCE_CUES),
    "step": _cue_pattern(_STEP_CUES),
    "issue": _cue_pattern(_ISSUE_CUES),
    "evaluative": _cue_pattern(_EVALUATIVE_CUES),
    "fact": _cue_pattern(_FACT_CUES),
}
_DATES = _cue_pattern(_DATE_CUES)
# Categories that make a "soft" pleasantry ("Thanks for ...") worth keeping.
_STRONG = ("request", "decision", "preference", "step", "issue", "evaluative")
# Evaluative words ("great", 不错) only count in feedback and preferences: in a chat message
# "nobody was in a great mood" carries no intent.
_WEIGHTS = {
    "request": 3,
    "decision": 3,
    "preference": 3,
    "step": 2,
    "issue": 2,
    "evaluative": 0,
    "fact": 2,
}
_TYPE_BONUS: dict[str, dict[str, int]] = {
    "user_feedback": {"evaluative": 4, "issue": 1},
    "user_preference": {"preference": 3, "evaluative": 3},
    "tool_result": {"issue": 2},
    "system_event": {"fact": 1},
}
_CODE_BONUS = 1
_EXCEPTION_BONUS = 4

# --------------------------------------------------------------------------------------
# JSON tool results
# --------------------------------------------------------------------------------------

_JSON_KEY_RANK = {
    **dict.fromkeys(("error", "errors", "err", "exception", "message", "msg", "reason"), 4),
    **dict.fromkeys(("status", "state", "result", "summary", "answer", "title", "name"), 3),
    **dict.fromkeys(("description", "detail", "details", "output", "text", "content"), 3),
    **dict.fromkeys(("code", "count", "total", "value", "type", "label"), 1),
    **dict.fromkeys(("id", "uuid", "guid", "etag", "hash", "checksum", "token"), -3),
    **dict.fromkeys(("signature", "created_at", "updated_at", "timestamp", "ts"), -2),
    **dict.fromkeys(("url", "href", "link", "icon", "avatar", "thumbnail", "image"), -2),
}
_OPAQUE_VALUE = re.compile(r"[0-9a-fA-F-]{16,}|[A-Za-z0-9+/=_-]{32,}")
_JSON_PIECE_MIN = 24  # room below which a JSON field is not squeezed in truncated


class _Number(str):
    """A JSON number kept as the literal text it had in the input."""


class _Unit(NamedTuple):
    text: str  # whitespace-normalised
    glued: bool  # no whitespace between this unit and the previous one in the input
    kind: str  # "prose" or "code"
    bonus: int = 0


class _Candidate(NamedTuple):
    index: int
    text: str
    score: int
    glued: bool


# --------------------------------------------------------------------------------------
# The encoder
# --------------------------------------------------------------------------------------


class RuleEncoder:
    """Stage 1: deterministic rules (English and Chinese), standard library only."""

    method = "rules"

    def __init__(self, max_chars: int = MAX_CONTENT_CHARS) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ValidationError(f"max_chars must be a positive int, got {max_chars!r}")
        self.max_chars = max_chars

    def summarize(self, text: str, *, type: str = "message") -> str:
        """The summary of ``text``: at most ``max_chars`` long, "" only for blank input."""
        if not isinstance(text, str):
            raise ValidationError(f"text must be a string, got {_type_name(text)}")
        if type not in MEMORY_TYPES:
            raise ValidationError(f"type must be one of {', '.join(MEMORY_TYPES)}, got {type!r}")
        if not text.strip():
            return ""
        if type == "tool_result":
            rendered = _render_json(text, self.max_chars)
            if rendered:
                return rendered
        units = _split_units(text, self.max_chars, by_line=type == "tool_result")
        candidates = _candidates(units, type)
        if not candidates:  # only pleasantries: fall back to the first sentences as they are
            candidates = [_Candidate(i, u.text, 0, u.glued) for i, u in enumerate(units)]
        summary = _join(_select(candidates, self.max_chars, len(units)), len(units))
        if not summary:
            summary = _normalize(text)
        return _truncate(summary, self.max_chars)

    async def encode(self, text: str, *, type: str = "message") -> Encoded:
        """``summarize`` wrapped as an :class:`Encoded` with ``method="rules"``."""
        return Encoded(self.summarize(text, type=type), self.method)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (whitespace collapsed), cut where the rule encoder cuts."""
    return [sentence for sentence, _ in _split_sentences(_normalize(text))]


def _type_name(value: object) -> str:
    return value.__class__.__name__


def _normalize(text: str) -> str:
    return " ".join(text.split())


def _is_cjk(char: str) -> bool:
    return bool(char) and _CJK_CHAR.match(char) is not None


# --------------------------------------------------------------------------------------
# Units: sentences, clauses and code lines
# --------------------------------------------------------------------------------------


def _split_units(text: str, max_chars: int, *, by_line: bool = False) -> list[_Unit]:
    """Sentences of the prose, one line per code block or stack trace, in input order.

    ``by_line`` (tool output): each line is a unit, split into sentences only if too long.
    """
    units: list[_Unit] = []
    for kind, block in _blocks(text, wrap=not by_line):
        if kind == "code":
            units.append(_Unit(block, False, "code", _code_bonus(block)))
            continue
        if by_line and len(block) <= max_chars:  # tool output is line-oriented
            units.append(_Unit(block, False, "prose"))
            continue
        for i, (sentence, glued) in enumerate(_split_sentences(block)):
            # A block starts on a new line: its first sentence is never glued to anything.
            glued = glued and i > 0
            pieces = _split_clauses(sentence) if len(sentence) > max_chars else [(sentence, False)]
            for j, (piece, piece_glued) in enumerate(pieces):
                units.append(_Unit(piece, piece_glued if j else glued, "prose"))
    return units


def _blocks(text: str, *, wrap: bool = True) -> list[tuple[str, str]]:
    """("prose", paragraph) and ("code", meaningful line) blocks, in input order.

    With ``wrap``, a line continuing a hard-wrapped sentence joins the line before it.
    """
    blocks: list[tuple[str, str]] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append(("prose", _normalize(" ".join(paragraph))))
            paragraph.clear()

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(_FENCES):
            end = _fence_end(lines, i)
            flush()
            _add_code(blocks, lines[i + 1 : end])
            i = end + 1
        elif stripped.startswith(_TRACEBACK_HEADER):
            end = _traceback_end(lines, i)
            flush()
            _add_code(blocks, lines[i : end + 1])
            i = end + 1
        elif _EXCEPTION_LINE.fullmatch(stripped):
            flush()
            blocks.append(("code", _normalize(stripped)))
            i += 1
        else:
            if not stripped or _NOISE_LINE.match(line):
                flush()
            elif wrap and paragraph and _continues(paragraph[-1], stripped):
                paragraph.append(stripped)
            else:
                flush()
                paragraph.append(stripped)
            i += 1
    flush()
    return blocks


def _fence_end(lines: list[str], start: int) -> int:
    """Index of the line closing the fence opened at ``start`` (or len(lines))."""
    fence = lines[start].strip()[:3]
    for j in range(start + 1, len(lines)):
        if lines[j].strip().startswith(fence):
            return j
    return len(lines)


def _traceback_end(lines: list[str], start: int) -> int:
    """Index of the exception line ending the traceback opened at ``start``."""
    indent = _indent(lines[start])
    for j in range(start + 1, len(lines)):
        line = lines[j]
        if line.strip() and _indent(line) <= indent and not _NOISE_LINE.match(line):
            return j
    return len(lines) - 1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _add_code(blocks: list[tuple[str, str]], body: list[str]) -> None:
    line = _code_line(body)
    if line:
        blocks.append(("code", line))


def _code_line(body: list[str]) -> str:
    """The line that best stands for a code block: its last exception line, else its first
    line of code (a comment only if there is no code), skipping shebangs, headers and stack
    frames."""
    exceptions = [s for s in (line.strip() for line in body) if _EXCEPTION_LINE.fullmatch(s)]
    if exceptions:
        return _normalize(exceptions[-1])
    meaningful = [line.strip() for line in body if _is_meaningful(line)]
    code = [line for line in meaningful if not _CODE_COMMENT.match(line)]
    return _normalize((code or meaningful or [""])[0])


def _is_meaningful(line: str) -> bool:
    stripped = line.strip()
    return (
        any(ch.isalnum() for ch in stripped)
        and not _CODE_HEADER.match(stripped)
        and not _NOISE_LINE.match(line)
    )


def _code_bonus(line: str) -> int:
    return _EXCEPTION_BONUS if _EXCEPTION_LINE.fullmatch(line) else _CODE_BONUS


def _continues(previous: str, line: str) -> bool:
    """Whether ``line`` continues a hard-wrapped sentence begun on the (long) line before."""
    return (
        len(previous) >= _MIN_WRAPPED_LINE
        and previous[-1] not in _SENTENCE_END
        and "a" <= line[0] <= "z"
    )


def _split_sentences(paragraph: str) -> list[tuple[str, bool]]:
    """(sentence, glued to the previous one) pairs of a whitespace-normalised paragraph."""
    ends = [m.end() for m in _TERMINATOR_RUN.finditer(paragraph) if _ends_sentence(paragraph, m)]
    return _cut(paragraph, ends)


def _split_clauses(sentence: str) -> list[tuple[str, bool]]:
    """A sentence too long to keep whole, cut after its commas, semicolons and colons."""
    return _cut(sentence, [m.end() for m in _CLAUSE_RUN.finditer(sentence)])


def _cut(text: str, ends: list[int]) -> list[tuple[str, bool]]:
    pieces: list[tuple[str, bool]] = []
    start = 0
    for end in [*ends, len(text)]:
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            pieces.append((stripped, not piece[0].isspace()))
        start = end
    return pieces


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    run = match.group()
    if run[0] in _CJK_TERMINATORS:
        return True
    after = text[match.end() : match.end() + 1]
    if after and not after.isspace() and not _is_cjk(after):
        return False  # 3.5, main.py, example.com/a?b, wait…what
    if run.rstrip(_CLOSERS) != ".":
        return True
    word_start = text.rfind(" ", 0, match.start()) + 1
    word = text[word_start : match.start()].lstrip("([{\"'“‘").lower() + "."
    if word in _ABBREVIATIONS:
        return False
    if len(word) == 2 and "a" <= word[0] <= "z" and text[match.start() - 1].isupper():
        return False  # an initial: J. Smith
    if word[:-1].isdigit() and word_start == 0:
        return False  # a numbered list item: "1. Install it"
    following = text[match.end() + 1 : match.end() + 2]
    return not (word in _SOFT_ABBREVIATIONS and (following.islower() or following.isdigit()))


# --------------------------------------------------------------------------------------
# Compression, pleasantries and scoring
# --------------------------------------------------------------------------------------


def _candidates(units: list[_Unit], type: str) -> list[_Candidate]:
    """Units worth keeping, scored. In text people wrote, pleasantries are left out and
    filler is dropped; machine text (tool results, system events) is kept as it is."""
    candidates = []
    for index, unit in enumerate(units):
        if unit.kind == "code" or type not in _HUMAN_TYPES:
            score = unit.bonus + _score(unit.text, type)
            candidates.append(_Candidate(index, unit.text, score, unit.glued))
            continue
        if _is_pleasantry(unit.text, type) or _is_signature(units, index):
            continue
        text = _compress(unit.text)
        if not _is_pleasantry(text, type):
            candidates.append(_Candidate(index, text, _score(text, type), unit.glued))
    return candidates


def _is_signature(units: list[_Unit], index: int) -> bool:
    """Whether the unit at ``index`` is the name signing off the text ("Thanks,\nBob")."""
    return (
        index == len(units) - 1
        and index > 0
        and _SIGNATURE.fullmatch(units[index].text) is not None
        and _SIGN_OFF.fullmatch(_strip_symbols(units[index - 1].text)) is not None
    )


def _compress(text: str) -> str:
    """Drop the pleasantry around a unit's content and the filler inside it."""
    result = _PLEASANTRY_SUFFIX.sub("", text, count=1) or text
    for _ in range(4):  # again: dropping one can expose another ("Basically, I think that")
        trimmed = _PLEASANTRY_PREFIX.sub("", result, count=1)
        trimmed = _HEDGE_THAT.sub("", trimmed, count=1) or trimmed
        trimmed = _HEDGE.sub("", trimmed, count=1) or trimmed
        trimmed = _drop_fillers(_FILLER_ZH, _drop_fillers(_FILLER_EN, trimmed))
        if not trimmed.strip() or trimmed == result:
            break
        result = trimmed
    return _normalize(result) or text


def _drop_fillers(pattern: re.Pattern[str], text: str) -> str:
    """``text`` without the matches of ``pattern``, except where dropping one would change
    the meaning ("not just", "isn't actually") or fuse two words ("abc其实def")."""
    parts: list[str] = []
    before = ""  # the last character kept so far
    kept_until = 0
    for match in pattern.finditer(text):
        parts.append(text[kept_until : match.start()])
        before = parts[-1][-1:] or before
        after = text[match.end() : match.end() + 1]
        if _would_fuse_chars(before, after) or _after_negation(text, match.start()):
            parts.append(match.group())
            before = match.group()[-1]
        kept_until = match.end()
    parts.append(text[kept_until:])
    return "".join(parts)


def _would_fuse_chars(before: str, after: str) -> bool:
    return (
        _is_word_char(before) and _is_word_char(after) and not (_is_cjk(before) or _is_cjk(after))
    )


def _after_negation(text: str, start: int) -> bool:
    word = _previous_word(text, start).lower().strip(".,;:!?\"'()")
    return word in _NEGATIONS_EN or word.endswith(("n't", "n’t", "不", "没"))


def _previous_word(text: str, start: int) -> str:
    """The (end of the) word before ``start``: at most _MAX_WORD_CHARS, to stay linear."""
    end = start
    while end > 0 and text[end - 1].isspace():
        end -= 1
    begin = end
    while begin > max(0, end - _MAX_WORD_CHARS) and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:end]


def _is_word_char(char: str) -> bool:
    return bool(char) and (char.isalnum() or char == "_")


def _is_pleasantry(text: str, type: str) -> bool:
    core = _strip_symbols(text)
    if not core:
        return True  # only punctuation or emoji
    if len(core) > _MAX_PLEASANTRY_CHARS:
        return False
    if _PLEASANTRY.fullmatch(core):
        return True
    if _PLEASANTRY_OR_ACK.fullmatch(core):
        return type not in ("user_feedback", "user_preference")
    if _SOFT_PLEASANTRY.fullmatch(core):
        lowered = _lower(text)
        return not any(_CATEGORIES[name].search(lowered) for name in _STRONG)
    return False


def _strip_symbols(text: str) -> str:
    """``text`` without the punctuation, symbols and emoji at its two ends."""
    start, end = 0, len(text)
    while start < end and not _is_word_char(text[start]):
        start += 1
    while end > start and not _is_word_char(text[end - 1]):
        end -= 1
    return text[start:end]


def _lower(text: str) -> str:
    return text.lower().replace("’", "'")


def _score(text: str, type: str) -> int:
    """How much intent a unit carries: weighted cue categories plus specifics."""
    lowered = _lower(text)
    bonus = _TYPE_BONUS.get(type, {})
    hits = {name for name, pattern in _CATEGORIES.items() if pattern.search(lowered)}
    if "request" not in hits and _is_imperative(text):
        hits.add("request")
    if _STEP_OPENERS.match(lowered):
        hits.add("step")
    score = sum(_WEIGHTS[name] + bonus.get(name, 0) for name in hits)
    specifics = sum(
        1
        for found in (
            _DIGIT.search(text),
            _DATES.search(lowered),
            _LINK.search(text),
            _PROPER_NOUN.search(text),
        )
        if found
    )
    if specifics and _COPULA.search(lowered):
        specifics += 1  # "The meeting is on March 3"
    if _QUESTION.search(text):
        score += 1
    return score + min(specifics, 3)


def _is_imperative(text: str) -> bool:
    match = _FIRST_WORD.match(text)
    return match is not None and match.group(1).lower() in _IMPERATIVE_VERBS


# --------------------------------------------------------------------------------------
# Selection, joining and truncation
# --------------------------------------------------------------------------------------


def _select(candidates: list[_Candidate], max_chars: int, total: int) -> list[_Candidate]:
    """The candidates to keep, in input order.

    All of them if they fit. Otherwise those carrying intent, best score first (earlier
    first on ties) while they fit; if even the best one does not fit it is kept alone, to be
    truncated. If none carries intent, all of them: the first sentences survive truncation.
    """
    if len(_join(candidates, total)) <= max_chars:
        return candidates
    seen: set[str] = set()
    scored = []
    for candidate in candidates:  # repeated lines (logs) are kept once
        if candidate.score > 0 and candidate.text not in seen:
            scored.append(candidate)
            seen.add(candidate.text)
    if not scored:
        return candidates
    chosen: list[_Candidate] = []
    used = 0
    for candidate in sorted(scored, key=lambda c: (-c.score, c.index)):
        cost = len(candidate.text) + (1 if chosen else 0)
        if used + cost <= max_chars:
            chosen.append(candidate)
            used += cost
        elif not chosen:
            return [candidate]
    return sorted(chosen, key=lambda c: c.index)


def _join(chosen: list[_Candidate], total: int) -> str:
    """Kept units in order: as they were joined in the input when they were neighbours,
    else with a space (none after CJK punctuation). A unit whose successor (of ``total``
    units) was left out loses a dangling comma, semicolon or colon."""
    parts: list[str] = []
    for i, candidate in enumerate(chosen):
        text = candidate.text
        followed = i + 1 < len(chosen) and chosen[i + 1].index == candidate.index + 1
        if not followed and candidate.index + 1 < total:
            text = text.rstrip(_CLAUSE_PUNCTUATION).rstrip() or text
        if parts:
            if candidate.index == chosen[i - 1].index + 1:
                glued = candidate.glued and not _would_fuse(parts[-1], text)
            else:
                glued = parts[-1][-1] in _GLUE_AFTER
            parts.append("" if glued else " ")
        parts.append(text)
    return "".join(parts)


def _would_fuse(left: str, right: str) -> bool:
    """Whether writing ``right`` straight after ``left`` would run two words together
    (a unit can lose its closing punctuation to compression: "ok, thanks。")."""
    return _would_fuse_chars(left[-1], right[0])


def _truncate(text: str, max_chars: int) -> str:
    """``text`` if it fits, else its head cut on a word (or CJK character) boundary + "…"."""
    if len(text) <= max_chars:
        return text
    room = max_chars - len(ELLIPSIS)
    if room <= 0:
        return ELLIPSIS[:max_chars]
    cut = _cut_point(text, room)
    head = text[:cut].rstrip().rstrip(",;:，；：、-–—(（[")
    if not head:
        head = text[:room].rstrip() or text[:room]
    return head + ELLIPSIS


def _cut_point(text: str, room: int) -> int:
    """The last word boundary at or before ``room``; ``room`` itself (mid-word) if the last
    boundary would throw away more than half of the room."""
    for i in range(room, room // 2, -1):
        if _is_boundary(text, i):
            return i
    return room


def _is_boundary(text: str, i: int) -> bool:
    before, after = text[i - 1], text[i]
    return before.isspace() or after.isspace() or _is_cjk(before) or _is_cjk(after)


# --------------------------------------------------------------------------------------
# JSON tool results
# --------------------------------------------------------------------------------------


def _render_json(text: str, max_chars: int) -> str:
    """``key: value; key: value`` from a JSON object/array's scalar leaves, most informative
    first; "" if ``text`` is not a JSON object or array or has no non-empty leaf."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return ""
    try:
        data = json.loads(stripped, parse_int=_Number, parse_float=_Number, parse_constant=_Number)
    except (ValueError, RecursionError):
        return ""
    fields = _json_fields(data)
    if not fields:
        return ""
    value_room = max(1, max_chars // 2)
    ranked = sorted(enumerate(fields), key=lambda item: (-item[1][2], item[0]))
    pieces: list[str] = []
    used = 0
    for _, (label, value, _score) in ranked:
        value = _truncate(value, value_room)
        piece = f"{label}: {value}" if label else value
        cost = len(piece) + (2 if pieces else 0)
        if used + cost <= max_chars:
            pieces.append(piece)
            used += cost
        elif not pieces or max_chars - used >= _JSON_PIECE_MIN:
            pieces.append(piece)
            break
    return _truncate("; ".join(pieces), max_chars)


def _json_fields(data: Any) -> list[tuple[str, str, int]]:
    """(label, rendered value, score) for each scalar leaf (or list of scalars), in order."""
    fields: list[tuple[str, str, int]] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        label, node = stack.pop()
        if isinstance(node, dict):
            stack.extend(reversed([(_normalize(str(k)), v) for k, v in node.items()]))
        elif isinstance(node, list):
            if all(_is_scalar(v) for v in node):
                values = [r for r in map(_render_scalar, node) if r]
                if values:
                    score = max(_json_score(label, v) for v in node if _render_scalar(v))
                    fields.append((label, ", ".join(values), score))
            else:
                stack.extend(reversed([(label, v) for v in node]))
        else:
            value = _render_scalar(node)
            if value:
                fields.append((label, value, _json_score(label, node)))
    return fields


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _render_scalar(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return _normalize(str(value))


def _json_score(label: str, value: Any) -> int:
    """Errors and messages first, then names and prose, numbers, flags; ids last."""
    key = label.lower()
    score = _JSON_KEY_RANK.get(key, 0)
    if key not in _JSON_KEY_RANK and (key.endswith(("_id", "-id")) or label.endswith("Id")):
        score -= 2
    if isinstance(value, bool):
        return score
    if isinstance(value, _Number):
        return score + 1
    text = str(value)
    if _OPAQUE_VALUE.fullmatch(text):
        return score - 1
    if any(ch.isalpha() for ch in text):
        score += 2 + (" " in text.strip())
    return score


__all__ = [
    "MAX_CONTENT_CHARS",
    "MEMORY_TYPES",
    "Encoded",
    "Encoder",
    "RuleEncoder",
]


class Refiner(Protocol):
    """Encoder stage 2: a slower, better summary, computed in the background after
    ``add()`` returns. ``Memory`` replaces the stage-1 content only with what this returns."""

    method: str

    async def refine(self, text: str, summary: str, *, type: str = "message") -> str | None:
        """A better summary of ``text`` than stage 1's ``summary``, or None to keep it."""
        ...
