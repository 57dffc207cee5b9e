"""The encoder's contract: memory types, the content limit, ``Encoded`` and the protocols."""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

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


class Refiner(Protocol):
    """Encoder stage 2: a slower, better summary, computed in the background after
    ``add()`` returns. ``Memory`` replaces the stage-1 content only with what this returns."""

    method: str

    async def refine(self, text: str, summary: str, *, type: str = "message") -> str | None:
        """A better summary of ``text`` than stage 1's ``summary``, or None to keep it."""
        ...
