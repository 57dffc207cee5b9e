"""Pleasantries, filler and the intent cues (English and Chinese) that score a unit."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .patterns import lazy_compile, word_set
from .sentences import Unit

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
HUMAN_TYPES = ("message", "user_feedback", "user_preference")


def _sequence_of(patterns: Iterable[str]) -> Any:
    """Matches one or more of ``patterns`` in a row, then up to two names ("Thanks, Bob")."""
    item = "(?>" + "|".join(f"(?:{p})" for p in patterns) + ")"
    return lazy_compile(f"{item}(?:[\\W_]*{item})*+{_NAMES}", re.IGNORECASE | re.DOTALL)


# A sign-off, and the lone name that may follow it as the last line ("Best regards,\nTom").
_SIGN_OFF = lazy_compile(
    r"(?:many )?thanks|thank you|cheers|(?:best|kind|warm) regards|regards|best(?: wishes)?"
    r"|sincerely|yours(?: truly| sincerely)?|take care|talk soon",
    re.IGNORECASE,
)
_SIGNATURE = lazy_compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)?[.!]?")
_PLEASANTRY = _sequence_of(_PLEASANTRIES)
_PLEASANTRY_OR_ACK = _sequence_of(_PLEASANTRIES + _ACKS_EVALUATIVE)
_SOFT_PLEASANTRY = lazy_compile(
    "|".join(f"(?:{p})" for p in _SOFT_PLEASANTRIES), re.IGNORECASE | re.DOTALL
)

# A pleasantry opening a unit that goes on with something else: "Hi John, can you ...".
PLEASANTRY_PREFIX = lazy_compile(
    r"^(?:(?:" + _GREETING + _NAME + r")|" + _THANKS + r"|ok|okay|so|well|oh|um+|uh+|hmm+"
    r"|sorry|alright|anyway|btw|by the way)(?:\s*[,!:;]\s*|\s+[—–-]\s+)(?=\S)"
    r"|^(?:你好|您好|嗨|哈喽|大家好|早上好|下午好|晚上好|谢谢|多谢|不好意思|抱歉|打扰一下|打扰了"
    r"|麻烦(?:你|您)了|辛苦(?:你|您)?了|对了|嗯+|呃+|啊+|哦+|那个|好的)[，,、！!~～\s]+(?=\S)",
    re.IGNORECASE,
)
# ... or closing it: "Could you check this, thanks!".
PLEASANTRY_SUFFIX = lazy_compile(
    r"(?:\s*[,，、;；]\s*|\s+|(?<=[\u4e00-\u9fff]))"
    r"(?:thanks|thank you|thx|cheers|谢谢(?:你|您|啦|了)?|多谢|辛苦了|麻烦(?:你|您)了)"
    r"(?:\s+(?:so|very) much|\s+a lot|\s+in advance)?[\s!！.。~～]*$",
    re.IGNORECASE,
)

# Filler words: removed only between spaces and never right after a negation or before a
# number ("not just", "just 5 minutes" stay).
_FILLER_WORDS_EN = word_set("basically actually literally honestly essentially really just")
FILLER_EN = lazy_compile(
    r"(?:(?<=\s)|^)(?:" + "|".join(sorted(_FILLER_WORDS_EN)) + r")(?:,\s*|\s+)(?=[^\W\d_])",
    re.IGNORECASE,
)
MAX_WORD_CHARS = 24  # how far back to look for a negation before a filler word
NEGATIONS_EN = word_set("not no never nothing nobody none nor neither without hardly")
# Hedges opening a unit: "I think that we should ..." -> "we should ...".
HEDGE_THAT = lazy_compile(
    r"^i (?:think|believe|guess|feel) that\s+"
    r"(?!(?:is|was|would|will|should|could|might|can|does|did|has|had|sounds|seems|looks"
    r"|works|makes)\b)",
    re.IGNORECASE,
)
HEDGE = lazy_compile(
    r"^(?:i (?:think|believe|guess)\s+(?=(?:we|it|they|you|this|that|the|there|he|she|i|my"
    r"|our|your|its|maybe|a|an)\b)|i mean,\s*|i guess,\s*)",
    re.IGNORECASE,
)
FILLER_ZH = lazy_compile(
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
_STEP_OPENERS = lazy_compile(
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
_DIGIT = lazy_compile(r"\d")
_LINK = lazy_compile(r"https?://|www\.|\w@\w|(?<![\w-])[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b(?!\.\w)")
_PROPER_NOUN = lazy_compile(r"(?<=\S )(?!I\b|I')[A-Z][\w-]*")
_COPULA = lazy_compile(r"\b(?:is|are|was|were)\b|是")
_QUESTION = lazy_compile(r"[?？]|吗")

# Imperatives: a unit starting with one of these verbs is a request ("Convert the file.").
_IMPERATIVE_VERBS = word_set(
    "add fix make create write update remove delete change convert use send check run "
    "install show explain summarize summarise translate book schedule set call email list "
    "find build deploy rename move open close stop start keep try implement refactor test "
    "review compare draft prepare cancel reply tell give put save export import upload "
    "download merge revert ignore replace include exclude sort filter format clean"
)
_FIRST_WORD = lazy_compile(r"^(?:[-*•+]\s*|\d+[.)]\s*)?([A-Za-z]+)\b")


def _cue_pattern(cues: Iterable[str]) -> Any:
    """One regex for a cue table: English cues on word boundaries, Chinese ones anywhere."""
    cues = tuple(cues)
    english = [c for c in cues if c.isascii() and not c.startswith(r"\d")]
    other = [c for c in cues if c not in english]
    parts = []
    if english:
        parts.append(r"\b(?:" + "|".join(english) + r")\b")
    if other:
        parts.append("|".join(other))
    return lazy_compile("|".join(parts))


_CATEGORIES: dict[str, Any] = {
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


# --------------------------------------------------------------------------------------
# Pleasantries and scoring
# --------------------------------------------------------------------------------------


def is_signature(units: list[Unit], index: int) -> bool:
    """Whether the unit at ``index`` is the name signing off the text ("Thanks,\nBob")."""
    return (
        index == len(units) - 1
        and index > 0
        and _SIGNATURE.fullmatch(units[index].text) is not None
        and _SIGN_OFF.fullmatch(_strip_symbols(units[index - 1].text)) is not None
    )


def is_pleasantry(text: str, type: str) -> bool:
    """Whether ``text`` is nothing but pleasantries (for feedback, a bare "Perfect!" is not)."""
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
    while start < end and not is_word_char(text[start]):
        start += 1
    while end > start and not is_word_char(text[end - 1]):
        end -= 1
    return text[start:end]


def is_word_char(char: str) -> bool:
    """Whether ``char`` is a letter, digit or underscore."""
    return bool(char) and (char.isalnum() or char == "_")


def _lower(text: str) -> str:
    return text.lower().replace("’", "'")


def intent_score(text: str, type: str) -> int:
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
