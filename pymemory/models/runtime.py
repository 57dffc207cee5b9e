"""The inference runtime protocol: load an ONNX model once, run it on numpy arrays.

Implementations: ``OrtRuntime`` (PyPI onnxruntime, CPython) and ``OrtWebRuntime``
(onnxruntime-web through the worker's JS bridge, in ``pymemory.browser``). Both take the
same model files and must give the same outputs within float tolerance; tokenisation and
post-processing live outside, in numpy, shared by both.
"""

from __future__ import annotations

import asyncio
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

    A call (``with CALLS.call():``) closes the gate until it ends; background inference
    awaits :meth:`turn` before every model step (a generated token, an embedding batch),
    so it runs between calls, not during them. A step already running finishes. Nothing
    starves: a step waits at most ``max_wait_s``, then runs anyway (counted in
    ``overlapped``), so background work progresses under a steady stream of calls."""

    def __init__(self, max_wait_s: float = 0.5) -> None:
        self.max_wait_s = max_wait_s
        self.in_flight = 0
        self._waiting: list[asyncio.Future[None]] = []  # steps waiting for the calls to end
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
                waiting, self._waiting = self._waiting, []
                for step in waiting:
                    if not step.done() and not step.get_loop().is_closed():
                        step.set_result(None)

    async def turn(self) -> None:
        """Before one background step: wait until no call is in flight (bounded)."""
        self.steps += 1
        if self.in_flight == 0:
            return
        self.waited += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait_s
        # Woken when the calls end, a step may find the next call already started: wait on.
        while self.in_flight:
            step = loop.create_future()
            self._waiting.append(step)
            try:
                await asyncio.wait_for(step, deadline - loop.time())
            except TimeoutError:
                self.overlapped += 1
                return

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
