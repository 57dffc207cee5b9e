"""``OrtRuntime``: the inference runtime over PyPI ``onnxruntime`` (CPython).

    runtime = OrtRuntime(intra_op_threads=2)
    session = await runtime.load(".cache/models/minilm/model.onnx")   # cached per path
    out = await session.run({"input_ids": ids, ...}, ["last_hidden_state"])

Sessions are created once per (resolved) model path and reused. ``run`` executes in a
worker thread (``asyncio.to_thread``) so the event loop stays responsive while the model
computes; onnxruntime sessions accept concurrent ``run`` calls.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["OrtRuntime", "OrtSession"]


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:  # an ImportError: load_embedder reports it as unavailable
        raise ImportError(
            "onnxruntime is not installed: pip install onnxruntime (needed for local models "
            "in CPython)"
        ) from exc
    return onnxruntime


def _check_threads(label: str, value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{label} must be None or an int >= 0 (0: onnxruntime's default)")


class OrtSession:
    """One onnxruntime ``InferenceSession`` behind the async ``InferenceSession`` protocol."""

    def __init__(self, session: Any, path: str) -> None:
        self._session = session
        self.path = path
        self.input_names = tuple(i.name for i in session.get_inputs())
        self.output_names = tuple(o.name for o in session.get_outputs())

    def __repr__(self) -> str:
        return f"OrtSession({self.path!r})"

    def run_sync(
        self, feeds: Mapping[str, np.ndarray], output_names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """The same as :meth:`run`, on the calling thread."""
        names = list(output_names) if output_names is not None else list(self.output_names)
        unknown = [n for n in names if n not in self.output_names]
        if unknown:
            raise ValueError(f"unknown output(s) {unknown}; the model has {self.output_names}")
        arrays = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
        values = self._session.run(names, arrays)
        return dict(zip(names, values, strict=True))

    async def run(
        self, feeds: Mapping[str, np.ndarray], output_names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        return await asyncio.to_thread(self.run_sync, feeds, output_names)


class OrtRuntime:
    """CPython inference through onnxruntime's CPU execution provider.

    ``intra_op_threads``: threads one ``run`` may use (None: onnxruntime's default, one
    per physical core). ``inter_op_threads``: threads across independent graph nodes
    (1 by default: sequential execution, which is what small encoder models want).
    """

    name = "onnxruntime"

    def __init__(
        self,
        *,
        intra_op_threads: int | None = None,
        inter_op_threads: int = 1,
        graph_optimization: str = "all",
    ) -> None:
        _check_threads("intra_op_threads", intra_op_threads)
        _check_threads("inter_op_threads", inter_op_threads)
        self._ort = _import_ort()
        levels = {
            "disable": self._ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": self._ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": self._ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": self._ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }
        if graph_optimization not in levels:
            raise ValueError(f"graph_optimization must be one of {', '.join(levels)}")
        self.intra_op_threads = intra_op_threads
        self.inter_op_threads = inter_op_threads
        self._level = levels[graph_optimization]
        self._sessions: dict[str, OrtSession] = {}
        self._pending: dict[str, asyncio.Future[OrtSession]] = {}
        self.version: str = self._ort.__version__

    def __repr__(self) -> str:
        return f"OrtRuntime(onnxruntime {self.version}, intra_op_threads={self.intra_op_threads})"

    def _options(self) -> Any:
        opts = self._ort.SessionOptions()
        if self.intra_op_threads is not None:
            opts.intra_op_num_threads = self.intra_op_threads
        opts.inter_op_num_threads = self.inter_op_threads
        opts.graph_optimization_level = self._level
        return opts

    def load_sync(self, model: str | os.PathLike[str]) -> OrtSession:
        """Create a session (uncached; :meth:`load` caches)."""
        path = Path(model).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(
                f"no ONNX model at {path} (get it: pymemory models fetch; in a checkout, "
                "python3 build.py setup)"
            )
        session = self._ort.InferenceSession(
            str(path), sess_options=self._options(), providers=["CPUExecutionProvider"]
        )
        return OrtSession(session, str(path))

    async def load(self, model: str | os.PathLike[str]) -> OrtSession:
        """The session of ``model`` (a file path), created on first use and then reused;
        concurrent first calls share one creation."""
        key = str(Path(model).expanduser().resolve())
        session = self._sessions.get(key)
        if session is not None:
            return session
        loop = asyncio.get_running_loop()
        pending = self._pending.get(key)
        if pending is None or pending.get_loop() is not loop:
            pending = loop.create_task(asyncio.to_thread(self.load_sync, key))
            self._pending[key] = pending

            def forget(done: asyncio.Future[OrtSession], key: str = key) -> None:
                if self._pending.get(key) is done:
                    del self._pending[key]

            pending.add_done_callback(forget)
        session = await asyncio.shield(pending)
        self._sessions[key] = session
        return session

    async def read_bytes(self, location: str | os.PathLike[str]) -> bytes:
        """The bytes of a model asset (tokenizer.json, config.json) next to the model."""
        return await asyncio.to_thread(Path(location).expanduser().read_bytes)

    def close(self) -> None:
        """Forget the cached sessions (they are freed once no caller holds them)."""
        self._sessions.clear()
        self._pending.clear()
