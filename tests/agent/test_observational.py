"""ObservationalMemory: the seven behaviours of seed 001, and the offline observer."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from pymemory.agent.llm import ChatRequest, ChatResponse, LlmError, Message, RuleObserver
from pymemory.agent.observational import (
    OBSERVER_PROMPT,
    Observation,
    ObservationalMemory,
    StepRange,
    parse_observer_output,
)
from pymemory.errors import ValidationError
from pymemory.storage import MapKv


class WordCounter:
    """One token per whitespace-separated word: easy to reason about in tests."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class FakeObserver:
    """Records requests; answers with queued outputs (or raises queued exceptions)."""

    def __init__(self, *outputs: str | Exception) -> None:
        self.outputs = list(outputs)
        self.requests: list[ChatRequest] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if self.gate is not None:
            await self.gate.wait()
        out = self.outputs.pop(0) if self.outputs else '{"priority": "medium", "text": "done"}'
        if isinstance(out, Exception):
            raise out
        return ChatResponse(out)


class SlowScanKv:
    """A KV whose scans yield to the event loop, as a real (SQLite, IndexedDB) one does."""

    def __init__(self, inner: MapKv) -> None:
        self.inner = inner

    async def scan(self, prefix, **kw):
        await asyncio.sleep(0)
        return await self.inner.scan(prefix, **kw)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def make(observer, kv=None, clock=None, **kw) -> ObservationalMemory:
    kw.setdefault("token_threshold", 10)
    kw.setdefault("keep_recent_steps", 2)
    return ObservationalMemory(
        observer, "sess-1", kv, token_counter=WordCounter(), clock=clock, **kw
    )


STEP = "alpha beta gamma"  # 3 tokens


async def test_threshold_trigger(clock):
    observer = FakeObserver('{"priority": "high", "text": "User set up the project."}')
    mem = make(observer, clock=clock)
    for _ in range(3):  # 9 tokens: not over 10
        mem.note_step(STEP)
    await mem.flush()
    assert observer.requests == []
    assert mem.unobserved_tokens == 9
    mem.note_step(STEP)  # 12 tokens > 10: compress all but the 2 most recent steps
    await mem.flush()
    assert len(observer.requests) == 1
    assert await mem.list() == [
        Observation(1, clock.now, "User set up the project.", "high", StepRange(1, 2))
    ]
    assert mem.unobserved_tokens == 6  # steps 3 and 4 stay raw


async def test_threshold_needs_more_steps_than_it_keeps():
    observer = FakeObserver()
    mem = make(observer, keep_recent_steps=2)
    mem.note_step("one two three four five six seven eight nine ten eleven")  # 11 > 10
    mem.note_step("x")
    await mem.flush()
    assert observer.requests == []  # both steps are "recent": nothing to compress yet
    mem.note_step("y")
    await mem.flush()
    assert len(observer.requests) == 1
    assert (await mem.list())[0].covers_steps == StepRange(1, 1)


async def test_observer_override():
    seen: list[ChatRequest] = []

    async def my_observer(request: ChatRequest) -> ChatResponse:  # any async callable
        seen.append(request)
        return ChatResponse('{"priority": "low", "text": "Routine file listing."}')

    mem = make(my_observer, prompt="Custom observer prompt.", observer_temperature=None)
    steps = ["ls the repo now", "read README please", "user: ok thanks", "run the tests"]
    for step in steps:
        mem.note_step(step)
    await mem.flush()
    (request,) = seen
    assert request.system == "Custom observer prompt."
    assert request.temperature is None
    (message,) = request.messages
    assert message.role == "user"
    assert message.content == (
        "Steps 1-2 of the session:\n\n[step 1]\nls the repo now\n\n[step 2]\nread README please"
    )
    (obs,) = await mem.list()
    assert (obs.priority, obs.text) == ("low", "Routine file listing.")


async def test_default_prompt_asks_for_the_json_contract():
    observer = FakeObserver()
    mem = make(observer)
    for _ in range(4):
        mem.note_step(STEP)
    await mem.flush()
    assert observer.requests[0].system == OBSERVER_PROMPT
    assert '{"priority": "high|medium|low", "text": "..."}' in OBSERVER_PROMPT


async def test_error_capture(caplog):
    observer = FakeObserver(LlmError("observer down", status=503))
    mem = make(observer)
    for _ in range(4):
        mem.note_step(STEP)  # never raises, never waits
    await mem.flush()  # nor does flush
    assert isinstance(mem.last_error, LlmError)
    assert mem.errors == [mem.last_error]
    assert await mem.list() == []
    assert mem.unobserved_tokens == 12  # nothing was lost
    assert "observer failed" in caplog.text
    mem.note_step(STEP)  # the next trigger retries the same steps
    await mem.flush()
    (obs,) = await mem.list()
    assert obs.covers_steps == StepRange(1, 3)
    assert len(mem.errors) == 1


async def test_empty_observer_output_is_an_error():
    observer = FakeObserver("   ", '{"priority": "high", "text": ""}')
    mem = make(observer)
    for _ in range(5):
        mem.note_step(STEP)
        await mem.flush()
    assert len(mem.errors) == 2
    assert "empty observation" in str(mem.last_error)
    assert await mem.list() == []


async def test_kv_mirror(clock):
    t0 = clock.now
    kv = MapKv()
    observer = FakeObserver('{"priority": "medium", "text": "First."}')
    mem = make(observer, kv, clock)
    for _ in range(4):
        mem.note_step(STEP)
    await mem.flush()
    stored = await kv.scan("obs:")
    assert [k for k, _ in stored] == ["obs:sess-1:0000000001"]
    assert json.loads(stored[0][1]) == {
        "seq_id": 1,
        "created_at_ms": t0,
        "text": "First.",
        "priority": "medium",
        "covers_steps": {"from": 1, "to": 2},
    }
    # A new instance (a restarted worker) sees the observation and continues after it.
    clock.advance(1000)
    again = make(FakeObserver('{"priority": "low", "text": "Second."}'), kv, clock)
    assert [o.text for o in await again.list()] == ["First."]
    for _ in range(4):
        again.note_step(STEP)
    await again.flush()
    _, second = await again.list()
    assert (second.seq_id, second.covers_steps, second.created_at_ms) == (
        2,
        StepRange(3, 4),
        t0 + 1000,
    )
    assert [k for k, _ in await kv.scan("obs:")] == [
        "obs:sess-1:0000000001",
        "obs:sess-1:0000000002",
    ]


async def test_session_ids_do_not_capture_each_others_keys():
    kv = MapKv()
    a = ObservationalMemory(FakeObserver(), "a", kv, token_threshold=1, keep_recent_steps=0)
    ab = ObservationalMemory(FakeObserver(), "a:b", kv, token_threshold=1, keep_recent_steps=0)
    ab.note_step("two words")
    await ab.flush()
    assert [k for k, _ in await kv.scan("obs:")] == ["obs:a%3Ab:0000000001"]
    assert await a.list() == []
    assert len(await ab.list()) == 1


async def test_sliding_covers_steps():
    observer = FakeObserver(*[f'{{"priority": "low", "text": "part {i}"}}' for i in range(5)])
    mem = make(observer)
    for _ in range(11):
        mem.note_step(STEP)
        await mem.flush()
    # Each time 4 steps (12 tokens) are pending, the oldest 2 are compressed.
    covers = [o.covers_steps for o in await mem.list()]
    assert covers == [StepRange(1, 2), StepRange(3, 4), StepRange(5, 6), StepRange(7, 8)]
    assert [o.seq_id for o in await mem.list()] == [1, 2, 3, 4]
    assert [o.text for o in await mem.list()] == ["part 0", "part 1", "part 2", "part 3"]
    for earlier, later in itertools.pairwise(covers):
        assert later.first == earlier.last + 1  # contiguous, never overlapping


async def test_concurrent_trigger_noop():
    observer = FakeObserver('{"priority": "high", "text": "Batch one."}')
    observer.gate = asyncio.Event()
    mem = make(observer)
    for _ in range(4):
        mem.note_step(STEP)
    await asyncio.sleep(0)  # the scan starts and blocks on the observer
    assert mem.scanning and len(observer.requests) == 1
    for _ in range(3):
        mem.note_step(STEP)  # over the threshold again: no second scan while one runs
        await asyncio.sleep(0)
    assert mem.scans == 1 and len(observer.requests) == 1
    observer.gate.set()
    await mem.flush()
    assert not mem.scanning
    (obs,) = await mem.list()
    assert obs.covers_steps == StepRange(1, 2)  # what was pending when the scan started
    assert mem.unobserved_tokens == 15  # steps 3..7 wait for the next trigger


async def test_list_during_the_first_scan_loads_stored_observations_once():
    kv = MapKv()
    first = make(FakeObserver(), kv)
    for _ in range(4):
        first.note_step(STEP)
    await first.flush()
    again = make(FakeObserver(), SlowScanKv(kv))
    for _ in range(4):
        again.note_step(STEP)  # its scan loads the store while list() does too
    listed = await again.list()
    await again.flush()
    # No observation twice; the scan's own may or may not have landed before list() read.
    assert [o.seq_id for o in listed] in ([1], [1, 2])
    assert [o.seq_id for o in await again.list()] == [1, 2]


async def test_note_step_returns_before_the_observer_answers():
    observer = FakeObserver()
    observer.gate = asyncio.Event()
    mem = make(observer)
    for _ in range(4):
        mem.note_step(STEP)
    await asyncio.sleep(0)
    assert await mem.list() == []  # the observer is still thinking
    observer.gate.set()
    await mem.flush()
    assert len(await mem.list()) == 1


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('{"priority": "high", "text": "Deploy Friday."}', ("high", "Deploy Friday.")),
        ('```json\n{"priority": "medium", "text": "Fenced."}\n```', ("medium", "Fenced.")),
        ('```\n{"text": "Bare fence.", "priority": "LOW"}\n```', ("low", "Bare fence.")),
        (
            'Here you go: {"priority": "high", "text": "In prose."} Hope it helps.',
            ("high", "In prose."),
        ),
        ('{"priority": "urgent", "text": "Odd priority."}', ("low", "Odd priority.")),
        ("The user wants dark mode.", ("low", "The user wants dark mode.")),
        ('{"priority": "high", "text": "cut off', ("low", '{"priority": "high", "text": "cut off')),
        ('{"summary": "wrong keys"}', ("low", '{"summary": "wrong keys"}')),
        ('["a", "list"]', ("low", '["a", "list"]')),
        ("   ", None),
    ],
)
def test_robust_parsing_degrade(output, expected):
    assert parse_observer_output(output) == expected


async def test_prose_reply_degrades_to_a_low_observation():
    observer = FakeObserver("Sure! The user is setting up a Rust project.")
    mem = make(observer)
    for _ in range(4):
        mem.note_step(STEP)
    await mem.flush()
    (obs,) = await mem.list()
    assert (obs.priority, obs.text) == ("low", "Sure! The user is setting up a Rust project.")
    assert mem.errors == []


async def test_steps_as_messages_and_rule_observer_offline():
    mem = ObservationalMemory(RuleObserver(), "offline", token_threshold=30, keep_recent_steps=1)
    mem.note_step(
        [
            Message.user("Hi! My name is Ada and I prefer dark mode in every editor."),
            {"role": "assistant", "content": "Noted, dark mode it is."},
        ]
    )
    mem.note_step(Message.user("The build fails with error E42 when I run make test today."))
    mem.note_step("user: thanks, that fixed it")
    await mem.flush()
    (obs,) = await mem.list()
    assert obs.covers_steps == StepRange(1, 2)
    assert obs.priority == "high"
    assert "I prefer dark mode" in obs.text and "error E42" in obs.text
    assert not obs.text.startswith("Hi")
    assert "# Observations\n- [high] (steps 1-2) My name is Ada" in await mem.format_for_prompt()


def test_bad_arguments_are_typed():
    with pytest.raises(ValidationError):
        ObservationalMemory(FakeObserver(), "")
    with pytest.raises(ValidationError):
        ObservationalMemory(FakeObserver(), "s", token_threshold=0)
    with pytest.raises(ValidationError):
        ObservationalMemory("not a model", "s")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ObservationalMemory(FakeObserver(), "s").note_step(42)  # type: ignore[arg-type]
