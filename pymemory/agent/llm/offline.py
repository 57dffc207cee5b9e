"""RuleObserver: an observer model with no network, built on the stage-1 RuleEncoder.

It answers an :class:`~pymemory.agent.observational.ObservationalMemory` request with the
``{"priority", "text"}`` JSON the observer contract asks for: the text is the rule summary
of the transcript (the sentences that carry intent), the priority comes from cue words.
Deterministic and instant, so observational memory works offline and in tests.
"""

from __future__ import annotations

import json
import re

from ...encoder import RuleEncoder
from .base import ChatRequest, ChatResponse

DEFAULT_MAX_CHARS = 400

# Transcript scaffolding written by ObservationalMemory: not content.
_SCAFFOLD = re.compile(
    r"^\s*(?:\[step \d+\]|Steps? \d+(?:\s*-\s*\d+)? of the session:)\s*$",
    re.MULTILINE | re.IGNORECASE,
)
# Speaker labels of transcript lines ("user: ", "tool result (search): "): the rules judge
# what was said, so the label goes (a pleasantry after it would otherwise survive).
_LABEL = re.compile(r"^(?:user|assistant|system|tool result(?: \([^)\n]*\))?):[ \t]*", re.MULTILINE)
_HIGH = re.compile(
    r"\b(?:decided|decision|agreed|must|always|never|prefer(?:s|red)?|allergic|deadline"
    r"|important|remember|don't|do not|error|failed|fails|crash(?:ed)?|broken|password)\b"
    r"|决定|必须|总是|从不|喜欢|不要|过敏|截止|重要|记住|错误|失败|崩溃",
    re.IGNORECASE,
)
_MEDIUM = re.compile(
    r"\d|\b(?:please|need|needs|want|wants|plan|plans|will|should|todo|next)\b"
    r"|请|需要|想要|计划|下一步",
    re.IGNORECASE,
)


def rule_priority(text: str) -> str:
    """``high`` for decisions, preferences, constraints and failures; ``medium`` for
    requests, plans and specifics (numbers, dates); ``low`` otherwise."""
    if _HIGH.search(text):
        return "high"
    if _MEDIUM.search(text):
        return "medium"
    return "low"


class RuleObserver:
    """A :class:`~.base.ChatModel` that summarises the last user message with rules."""

    def __init__(self, *, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.encoder = RuleEncoder(max_chars=max_chars)

    async def __call__(self, request: ChatRequest) -> ChatResponse:
        users = [m.content for m in request.messages if m.role == "user"]
        source = _LABEL.sub("", _SCAFFOLD.sub("", users[-1] if users else "")).strip()
        summary = self.encoder.summarize(source) if source else ""
        reply = json.dumps(
            {"priority": rule_priority(summary), "text": summary}, ensure_ascii=False
        )
        return ChatResponse(text=reply, raw={"source_chars": len(source)})


__all__ = ["RuleObserver", "rule_priority"]
