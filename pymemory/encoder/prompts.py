"""The SmolLM2 refiner's prompt: the ``PromptStyle`` and its worked examples."""

from __future__ import annotations

from dataclasses import dataclass

HUMAN_TYPES = ("message", "user_feedback", "user_preference")


@dataclass(frozen=True)
class Example:
    """A worked example shown to the model: a memory of ``type`` and its summary."""

    type: str
    text: str
    summary: str


@dataclass(frozen=True)
class PromptStyle:
    """Everything that shapes the prompt and the decoding (one per evaluated variant)."""

    name: str
    system_en: str
    system_zh: str
    examples_en: tuple[Example, ...] = ()
    examples_zh: tuple[Example, ...] = ()
    per_type: bool = True
    """Show only the examples of the memory's type (all of them if it has none)."""
    user_en: str = "{text}"
    user_zh: str = "{text}"
    """The user turn; ``{text}`` is what is summarised."""
    source: str = "stage1"
    """What the user turn shows: ``"stage1"`` (the stage-1 summary) or ``"text"``."""
    types: tuple[str, ...] = HUMAN_TYPES
    """The memory types refined; the others keep stage 1 without a model call."""
    primes_en: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("message", ("User", "User wants", "User asks")),
        ("user_feedback", ("User says", "User")),
        ("user_preference", ("User", "User wants", "User prefers")),
    )
    primes_zh: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("message", ("用户", "用户想", "用户询问")),
        ("user_feedback", ("用户反馈", "用户认为")),
        ("user_preference", ("用户", "用户希望", "用户偏好")),
    )
    """Per type, the words the answer is started with; each is one candidate."""
    max_candidates: int = 1
    """How many primes to try, in order, until the guard accepts one (0: no priming)."""
    constrain: str = "tokens"
    """``"none"``; ``"chars"``: every Han character written must be the source's (or a
    framing word's); ``"tokens"``: that, and only tokens of the source's words, framing
    words and punctuation may be written."""
    no_repeat_ngram: int = 4
    min_mean_logprob: float = -0.7
    """Reject an output whose tokens' mean log-probability under the model's own
    (unconstrained) distribution is lower: the constraints had to force it."""
    stop_after_zh: str = "。"
    """A Chinese summary is one sentence: generation ends after this token."""
    max_source_tokens: int = 256
    max_new_tokens_en: int = 48
    max_new_tokens_zh: int = 96

    def system(self, zh: bool) -> str:
        return self.system_zh if zh else self.system_en

    def examples(self, zh: bool, type: str) -> tuple[Example, ...]:
        every = self.examples_zh if zh else self.examples_en
        if not self.per_type:
            return every
        return tuple(e for e in every if e.type == type) or every

    def primes_for(self, zh: bool, type: str) -> tuple[str, ...]:
        """The primes to try for a memory of ``type`` (``("",)``: no priming)."""
        table = dict(self.primes_zh if zh else self.primes_en)
        return table.get(type, ())[: self.max_candidates] or ("",)


_EXAMPLES_EN = (
    Example(
        "message",
        "Hi, could you move my meeting with Dana from Monday to Wednesday afternoon? Monday "
        "is packed.",
        "User wants the meeting with Dana moved from Monday to Wednesday afternoon.",
    ),
    Example(
        "message",
        "I've been thinking about the blog redesign. Let's keep the current fonts but make "
        "the header a darker green.",
        "User wants to keep the current blog fonts but make the header a darker green.",
    ),
    Example(
        "user_feedback",
        "Great answer, but the second code sample has a typo in the import line.",
        "User says the answer is great but the second code sample has a typo in the import line.",
    ),
    Example(
        "user_feedback",
        "This recipe was way too salty, I'd use half the soy sauce next time.",
        "User says the recipe was too salty and would use half the soy sauce next time.",
    ),
    Example(
        "user_preference",
        "Please always reply in British English and keep answers under five sentences.",
        "User wants replies in British English and answers under five sentences.",
    ),
    Example(
        "user_preference",
        "I'm a morning person, so schedule my workouts before 8am.",
        "User is a morning person and wants workouts scheduled before 8am.",
    ),
)
_EXAMPLES_ZH = (
    Example(
        "message",
        "周五的分享会能不能改到下周一下午？我周五要请假。",
        "用户想把周五的分享会改到下周一下午",
    ),
    Example(
        "message",
        "我打算下个月开始学吉他，想找一个周末上课的老师。",
        "用户下个月开始学吉他，想找周末上课的老师",
    ),
    Example(
        "user_feedback",
        "这个回答挺好的，不过第二段代码的导入语句有个拼写错误。",
        "用户认为回答挺好，但第二段代码的导入语句有拼写错误",
    ),
    Example(
        "user_feedback",
        "菜谱太咸了，下次酱油减半。",
        "用户反馈菜谱太咸，下次酱油减半",
    ),
    Example(
        "user_preference",
        "以后给我发的报告都用 PDF 格式，别用 Word。",
        "用户希望报告都用 PDF 格式，不用 Word",
    ),
    Example(
        "user_preference",
        "我习惯早上锻炼，健身尽量安排在八点以前。",
        "用户习惯早上锻炼，健身尽量安排在八点以前",
    ),
)

DEFAULT_STYLE = PromptStyle(
    name="fewshot2-stage1-primed-constrained",
    system_en=(
        "Summarize the user's text in one short sentence. Keep names, numbers and dates. "
        "Do not add anything that is not in the text."
    ),
    system_zh="请用 15~25 字概括以下内容的核心意图，不要添加任何解释，输出纯中文。",
    examples_en=_EXAMPLES_EN,
    examples_zh=_EXAMPLES_ZH,
)
