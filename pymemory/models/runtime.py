"""The inference runtime protocol: load an ONNX model once, run it on numpy arrays.

Implementations: ``OrtRuntime`` (PyPI onnxruntime, CPython) and ``OrtWebRuntime``
(onnxruntime-web through the worker's JS bridge, in ``pymemory.browser``). Both take the
same model files and must give the same outputs within float tolerance; tokenisation and
post-processing live outside, in numpy, shared by both.
"""

from __future__ import annotations

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
