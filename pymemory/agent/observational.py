"""ObservationalMemory (seed 001): a cheap observer model compresses a long run's history
into short, ordered observations in the background, so the agent's context stays bounded.

``note_step(step)`` records a step and returns at once. When the steps not yet observed
cost more than ``token_threshold`` tokens, a background scan asks the observer to compress
all of them but the most recent ``keep_recent_steps`` into one :class:`Observation`
(``covers_steps`` slides: each observation starts where the previous one ended). Only one
scan runs at a time; a trigger during a scan is a no-op. Observer failures are logged and
kept in ``errors`` / ``last_error``, never raised, and the steps stay unobserved for the
next scan. Observations are mirrored to the KV store under ``obs:<session_id>:<seq_id>``
(``seq_id`` zero-padded to 10 digits, so key order is seq order) and reloaded by a new
instance for the same session.

Steps are numbered from 1 per session; a new instance continues after the last step an
observation covers. Steps not yet observed live only in memory.

Several instances (processes, workers) may observe one session in one store: each
observation takes the next free ``seq_id`` inside the transaction that writes it, so seq
ids stay unique and dense across writers, and ``list()`` reads the stored observations,
so it shows every writer's. Step numbers count the steps each writer saw.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from ..errors import ValidationError, shown
from ..item import check_json_depth, dumps
from ..retrieval.tokens import HeuristicTokenCounter, TokenCounter
from ..storage import KvBackend, MapKv, Writes, iter_prefix
from .llm.base import ChatModel, ChatRequest, ChatResponse, Message, render_transcript

log = logging.getLogger("pymemory.observational")

Priority = Literal["high", "medium", "low"]
PRIORITIES: tuple[str, ...] = ("high", "medium", "low")
_PRIORITY_OF: dict[str, Priority] = {"high": "high", "medium": "medium", "low": "low"}
KEY_PREFIX = "obs:"
SEQ_DIGITS = 10
MAX_ERRORS = 20

OBSERVER_PROMPT = """\
You compress an AI agent's working history into one observation for its long-term context.
Read the steps and write a single paragraph that keeps what the agent will need later:
the user's goals, decisions, preferences and constraints, facts learned, tool results that
matter, errors and how they were handled, and open tasks. Drop pleasantries and repetition.
Rate the observation's priority: "high" for decisions, preferences, constraints or failures
that must not be forgotten, "medium" for useful progress and facts, "low" for routine work.
Answer with JSON only, exactly this shape: {"priority": "high|medium|low", "text": "..."}"""

StepInput = str | Message | Mapping[str, Any] | Sequence[Message | Mapping[str, Any] | str]


class StepRange(NamedTuple):
    """Inclusive step numbers; serialised as ``{"from": first, "to": last}``."""

    first: int
    last: int


@dataclass(frozen=True)
class Observation:
    seq_id: int
    created_at_ms: int
    text: str
    priority: Priority
    covers_steps: StepRange

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq_id": self.seq_id,
            "created_at_ms": self.created_at_ms,
            "text": self.text,
            "priority": self.priority,
            "covers_steps": {"from": self.covers_steps.first, "to": self.covers_steps.last},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Observation:
        try:
            covers = data["covers_steps"]
            obs = cls(
                seq_id=int(data["seq_id"]),
                created_at_ms=int(data["created_at_ms"]),
                text=str(data["text"]),
                priority=data["priority"],
                covers_steps=StepRange(int(covers["from"]), int(covers["to"])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"malformed observation record: {exc!r}") from None
        if obs.priority not in PRIORITIES:
            raise ValidationError(f"malformed observation record: priority {shown(obs.priority)}")
        return obs


@dataclass(frozen=True)
class _Step:
    number: int  # local index + 1 until the session's offset is known
    text: str
    tokens: int


_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def parse_observer_output(output: str) -> tuple[Priority, str] | None:
    """``(priority, text)`` from an observer's reply; None when the reply is blank.

    A ``{"priority", "text"}`` object (bare, inside a ``` fence, or inside prose) is used
    as is; an unknown priority becomes "low". Anything else (prose, broken JSON, other
    keys) degrades to a low-priority observation whose text is the raw output.
    """
    raw = output.strip()
    if not raw:
        return None
    data = _find_object(raw)
    if data is not None:
        text = data.get("text")
        if isinstance(text, str) and text.strip():
            priority = str(data.get("priority", "")).strip().lower()
            return _PRIORITY_OF.get(priority, "low"), text.strip()
        if isinstance(text, str):
            return None  # the contract, with nothing in it
    return "low", raw


def _find_object(raw: str) -> dict[str, Any] | None:
    candidates = [raw, *(m.group(1).strip() for m in _FENCE.finditer(raw))]
    start, end = raw.find("{"), raw.rfind("}")
    if 0 <= start < end:
        candidates.append(raw[start : end + 1])
    for candidate in candidates:
        try:
            check_json_depth(candidate)  # deeper input would exhaust the parser's stack
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _step_text(step: StepInput) -> str:
    if isinstance(step, str):
        return step
    if isinstance(step, Message | Mapping):
        return render_transcript([step])
    if isinstance(step, Sequence):
        return render_transcript(list(step))
    raise ValidationError(
        f"a step is text, a message or a list of messages, got {type(step).__name__}"
    )


def _session_key(session_id: str) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValidationError("session_id must be a non-empty string")
    # ':' separates key parts and '%' escapes: a session id never captures another's keys.
    return session_id.replace("%", "%25").replace(":", "%3A")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _is_seq(key: str, prefix: str) -> bool:
    rest = key[len(prefix) :]
    return len(rest) == SEQ_DIGITS and rest.isdigit()


class ObservationalMemory:
    """Background compression of an agent's steps into observations (see module doc)."""

    def __init__(
        self,
        observer_model: ChatModel | Callable[[ChatRequest], Any],
        session_id: str,
        kv: KvBackend | None = None,
        *,
        token_counter: TokenCounter | None = None,
        token_threshold: int = 6000,
        keep_recent_steps: int = 5,
        clock: Callable[[], int] | None = None,
        prompt: str = OBSERVER_PROMPT,
        observer_max_tokens: int | None = 1024,
        observer_temperature: float | None = 0.0,
    ) -> None:
        if not callable(observer_model):
            raise ValidationError("observer_model must be an async callable")
        for name, value, low in (
            ("token_threshold", token_threshold, 1),
            ("keep_recent_steps", keep_recent_steps, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValidationError(f"{name} must be an int >= {low}, got {shown(value)}")
        self.observer_model = observer_model
        self.session_id = session_id
        self.prefix = f"{KEY_PREFIX}{_session_key(session_id)}:"
        self.kv: KvBackend = kv if kv is not None else MapKv()
        self.token_counter = token_counter or HeuristicTokenCounter()
        self.token_threshold = token_threshold
        self.keep_recent_steps = keep_recent_steps
        self.clock = clock or _now_ms
        self.prompt = prompt
        self.observer_max_tokens = observer_max_tokens
        self.observer_temperature = observer_temperature
        self.errors: list[BaseException] = []
        self.scans = 0  # scans started (observer calls attempted)
        self._pending: list[_Step] = []  # noted, not yet observed, in order
        self._noted = 0  # steps noted by this instance
        self._observations: list[Observation] = []
        self._loaded = False
        self._step_base = 0  # last step covered by observations of earlier instances
        self._next_seq = 1
        self._task: asyncio.Task[None] | None = None

    # -- recording -----------------------------------------------------------------------

    def note_step(self, step: StepInput) -> None:
        """Record one agent step (text, a message or a list of messages) and, if the
        unobserved steps now exceed the threshold, start a background scan. Returns at
        once; never raises for observer trouble. Outside a running event loop the step is
        recorded and the scan waits for the next call inside one."""
        text = _step_text(step)
        self._noted += 1
        self._pending.append(_Step(self._noted, text, self.token_counter.count(text)))
        if self.scanning or not self._scan_due():
            return  # a scan is running: this trigger is a no-op
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = loop.create_task(self._scan())
        self._task.add_done_callback(self._scan_done)

    @property
    def scanning(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def unobserved_tokens(self) -> int:
        return sum(s.tokens for s in self._pending)

    @property
    def last_error(self) -> BaseException | None:
        return self.errors[-1] if self.errors else None

    def _scan_due(self) -> bool:
        return (
            self.unobserved_tokens > self.token_threshold
            and len(self._pending) > self.keep_recent_steps
        )

    def _scan_done(self, task: asyncio.Task[None]) -> None:
        if self._task is task:
            self._task = None

    # -- the scan ------------------------------------------------------------------------

    async def _scan(self) -> None:
        self.scans += 1
        try:
            await self._load()
            cut = len(self._pending) - self.keep_recent_steps
            batch = self._pending[:cut]
            if not batch:
                return
            first = self._step_base + batch[0].number
            last = self._step_base + batch[-1].number
            reply = await self.observer_model(self._request(batch, first, last))
            output = reply.text if isinstance(reply, ChatResponse) else str(reply)
            parsed = parse_observer_output(output)
            if parsed is None:
                raise ValueError("the observer returned an empty observation")
            priority, text = parsed
            covers = StepRange(first, last)
            created = int(self.clock())

            def write(_values: list[bytes | None], listed: list[list[str]]) -> Writes:
                # The next seq id after every stored one, whoever wrote it.
                taken = [int(k[len(self.prefix) :]) for k in listed[0] if _is_seq(k, self.prefix)]
                seq = max([self._next_seq - 1, *taken]) + 1
                obs = Observation(seq, created, text, priority, covers)
                return Writes([(self._key(seq), dumps(obs.to_dict()).encode())], result=obs)

            obs = await self.kv.transact([], write, list_prefixes=[self.prefix])
            self._observations.append(obs)
            self._next_seq = obs.seq_id + 1
            del self._pending[: len(batch)]
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._record_error(exc)

    def _request(self, batch: list[_Step], first: int, last: int) -> ChatRequest:
        parts = [f"Steps {first}-{last} of the session:"]
        parts += [f"[step {self._step_base + s.number}]\n{s.text}" for s in batch]
        return ChatRequest(
            [Message.user("\n\n".join(parts))],
            system=self.prompt,
            temperature=self.observer_temperature,
            max_tokens=self.observer_max_tokens,
        )

    def _record_error(self, exc: Exception) -> None:
        log.warning("observer failed for session %r: %s", self.session_id, exc, exc_info=exc)
        self.errors.append(exc)
        del self.errors[:-MAX_ERRORS]

    def _key(self, seq_id: int) -> str:
        return f"{self.prefix}{seq_id:0{SEQ_DIGITS}d}"

    async def _load(self) -> None:
        """Merge the session's stored observations (from earlier instances) once."""
        if self._loaded:
            return
        stored = [
            Observation.from_dict(json.loads(value))
            async for _, value in iter_prefix(self.kv, self.prefix)
        ]
        if self._loaded:  # a concurrent call (list() during a scan) got there first
            return
        if stored:
            self._step_base = max(o.covers_steps.last for o in stored)
            self._next_seq = max(o.seq_id for o in stored) + 1
            self._observations = stored + self._observations
        self._loaded = True

    # -- reading -------------------------------------------------------------------------

    async def flush(self) -> None:
        """Wait for the scan in flight, if any (its errors stay in ``errors``)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def list(self) -> list[Observation]:
        """Every observation of this session, oldest first: the stored ones (any writer's)
        and any this instance holds that its store does not."""
        await self._load()
        stored = {
            o.seq_id: o
            for o in [
                Observation.from_dict(json.loads(value))
                async for _, value in iter_prefix(self.kv, self.prefix)
            ]
        }
        for o in self._observations:
            stored.setdefault(o.seq_id, o)
        return [stored[seq] for seq in sorted(stored)]

    async def format_for_prompt(self) -> str:
        """The observations as a prompt block ("" when there are none)."""
        observations = await self.list()
        if not observations:
            return ""
        lines = ["# Observations"]
        lines += [
            f"- [{o.priority}] (steps {o.covers_steps.first}-{o.covers_steps.last}) {o.text}"
            for o in observations
        ]
        return "\n".join(lines)


__all__ = [
    "KEY_PREFIX",
    "OBSERVER_PROMPT",
    "Observation",
    "ObservationalMemory",
    "StepRange",
    "parse_observer_output",
]
