"""The inference runtime protocol: load an ONNX model once, run it on numpy arrays.

Implementations: ``OrtRuntime`` (PyPI onnxruntime, CPython) and ``OrtWebRuntime``
(onnxruntime-web through the worker's JS bridge, in ``pymemory.browser``). Both take the
same model files and must give the same outputs within float tolerance; tokenisation and
post-processing live outside, in numpy, shared by both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np


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
