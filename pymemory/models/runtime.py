"""The inference runtime protocol: load an ONNX model once, run it on numpy arrays.

Implementations: ``OrtRuntime`` (PyPI onnxruntime, CPython) and ``OrtWebRuntime``
(onnxruntime-web through the worker's JS bridge, in ``pymemory.browser``). Both take the
same model files and must give the same outputs within float tolerance; tokenisation and
post-processing live outside, in numpy, shared by both.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, runtime_checkable

import numpy as np

#: The priority of inference started in this context. Runtimes that queue runs (the
#: browser's model worker) take higher first; the query embedding of a retrieve is URGENT,
#: background work (embedding new items, refining summaries) the default 0.
PRIORITY: ContextVar[int] = ContextVar("pymemory_inference_priority", default=0)
URGENT = 10


@contextmanager
def urgent() -> Iterator[None]:
    """Run the inference started inside before queued background work."""
    token = PRIORITY.set(URGENT)
    try:
        yield
    finally:
        PRIORITY.reset(token)


#: Whether inference started in this context is background work (embedding new items,
#: refining summaries): set by :func:`background` around the creation of those loops.
BACKGROUND: ContextVar[bool] = ContextVar("pymemory_background_inference", default=False)


@contextmanager
def background() -> Iterator[None]:
    """Mark the tasks created inside as background inference (they yield to calls)."""
    token = BACKGROUND.set(True)
    try:
        yield
    finally:
        BACKGROUND.reset(token)


class CallGate:
    """The user's calls in flight, and the gate background inference waits at.

    A call (``with CALLS.call():``) closes the gate until it ends and ``quiet_s`` more
    have passed with no call: calls come in bursts (an add, then a retrieve, then the
    next add a few ms later), and a step started in such a gap would be met by the next
    call. Background inference awaits :meth:`turn` before every model step (a generated
    token, an embedding batch, a vector commit), so it runs between bursts, not during
    them. A step already running finishes. Nothing starves: a step waits at most
    ``max_wait_s``, then runs anyway (counted in ``overlapped``), so background work
    progresses under a steady stream of calls."""

    def __init__(self, max_wait_s: float = 0.5, quiet_s: float = 0.05) -> None:
        self.max_wait_s = max_wait_s
        self.quiet_s = quiet_s
        self.in_flight = 0
        self.last_end = -float("inf")  # time.monotonic() when the last call ended
        self._changed: list[asyncio.Future[None]] = []  # steps waiting for a call to end
        self.steps = 0  # background steps taken
        self.waited = 0  # of them, how many waited for a call to end
        self.overlapped = 0  # of them, how many ran during a call (the wait ran out)

    @contextmanager
    def call(self) -> Iterator[None]:
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.last_end = time.monotonic()
                waiting, self._changed = self._changed, []
                for step in waiting:
                    if not step.done() and not step.get_loop().is_closed():
                        step.set_result(None)

    def _quiet_for(self, now: float) -> float:
        """How much longer the gate stays closed (0: open)."""
        if self.in_flight:
            return float("inf")
        return max(0.0, self.last_end + self.quiet_s - now)

    async def turn(self) -> None:
        """Before one background step: wait until no call was in flight for ``quiet_s``
        (at most ``max_wait_s`` in all)."""
        self.steps += 1
        if self._quiet_for(time.monotonic()) == 0:
            return
        self.waited += 1
        deadline = time.monotonic() + self.max_wait_s
        while (left := self._quiet_for(now := time.monotonic())) > 0:
            if now >= deadline:
                self.overlapped += self.in_flight > 0  # else it runs in a gap of a burst
                return
            step = asyncio.get_running_loop().create_future()
            self._changed.append(step)
            # Woken when the calls end, or when the quiet time or the wait is over.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(step, min(left, deadline - now))

    def stats(self) -> dict[str, int]:
        return {"steps": self.steps, "waited": self.waited, "overlapped": self.overlapped}


#: One gate per process (or worker): its calls and its background inference share cores.
CALLS = CallGate()


async def yield_to_calls() -> None:
    """Where background inference may pause: a no-op outside background work."""
    if BACKGROUND.get() and PRIORITY.get() < URGENT:
        await CALLS.turn()


@runtime_checkable
class InferenceSession(Protocol):
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]

    async def run(
        self, feeds: Mapping[str, np.ndarray], output_names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Run the model; returns the requested outputs (all by default) by name."""
        ...


@runtime_checkable
class InferenceRuntime(Protocol):
    name: str

    async def load(self, model: str) -> InferenceSession:
        """Load a model (a file path in CPython, a URL in the browser). Callers cache it."""
        ...
