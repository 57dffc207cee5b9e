"""The browser's inference runtime: onnxruntime-web through the worker's ``ort-bridge.mjs``.

:class:`OrtWebRuntime` implements :class:`~pymemory.models.runtime.InferenceRuntime`
(sessions created once per model URL; model files read through Cache Storage);
tensors cross as ``{type, dims, bytes}`` (:func:`tensor_to_js`, :func:`tensor_from_js`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import js
import numpy as np
from pyodide.ffi import JsException, to_js

from ...errors import ValidationError
from ...models.runtime import PRIORITY
from .bridge import to_uint8

# numpy dtype <-> onnxruntime-web tensor type (int64 crosses as BigInt64Array on the JS side).
_ORT_TYPES: dict[str, str] = {
    "float32": "float32",
    "float64": "float64",
    "float16": "float16",
    "int64": "int64",
    "uint64": "uint64",
    "int32": "int32",
    "uint32": "uint32",
    "int16": "int16",
    "uint16": "uint16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}
_NP_TYPES: dict[str, Any] = {v: np.dtype(k) for k, v in _ORT_TYPES.items()}


def tensor_to_js(name: str, value: Any) -> Any:
    """Input ``name`` as the bridge takes a tensor: ``{type, dims, bytes}`` (ValidationError
    for a dtype onnxruntime-web does not have)."""
    arr = np.ascontiguousarray(value)
    ort_type = _ORT_TYPES.get(arr.dtype.name)
    if ort_type is None:
        raise ValidationError(
            f"input {name}: dtype {arr.dtype} is not supported by onnxruntime-web"
        )
    return js.Object.fromEntries(
        to_js([["type", ort_type], ["dims", list(arr.shape)], ["bytes", to_uint8(arr.tobytes())]])
    )


def tensor_from_js(name: str, tensor: Any) -> np.ndarray:
    """Output ``name`` (an onnxruntime-web tensor: ``type``, ``dims``, typed ``data``) as a
    numpy array of the same dtype and shape."""
    dtype = _NP_TYPES.get(str(tensor.type))
    if dtype is None:
        raise RuntimeError(f"output {name}: tensor type {tensor.type} is not supported")
    out = np.empty(tuple(int(d) for d in tensor.dims), dtype=dtype)
    if out.size:
        tensor.data.assign_to(out)
    return out


class OrtWebSession:
    """An onnxruntime-web ``InferenceSession`` (in the worker's JS) behind the async
    ``InferenceSession`` protocol. ``info`` says where the model came from (``source``:
    ``"cache"`` or ``"network"``) and how long fetching and creating took."""

    def __init__(self, handle: Any, url: str) -> None:
        self._h = handle
        self.url = url
        self.input_names = tuple(handle.inputNames.to_py())
        self.output_names = tuple(handle.outputNames.to_py())
        self.info: dict[str, Any] = handle.info.to_py()

    def __repr__(self) -> str:
        return f"OrtWebSession({self.url!r})"

    async def run(
        self, feeds: Mapping[str, np.ndarray], output_names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        names = list(output_names) if output_names is not None else list(self.output_names)
        unknown = [n for n in names if n not in self.output_names]
        if unknown:
            raise ValueError(f"unknown output(s) {unknown}; the model has {self.output_names}")
        js_feeds = js.Object.fromEntries(to_js([[k, tensor_to_js(k, v)] for k, v in feeds.items()]))
        try:
            res = await self._h.run(js_feeds, to_js(names), PRIORITY.get())
        except JsException as exc:
            raise RuntimeError(f"onnxruntime-web could not run {self.url}: {exc}") from None
        got = res.names.to_py()
        return {n: tensor_from_js(n, res.outputs[i]) for i, n in enumerate(got)}


class OrtWebRuntime:
    """The inference runtime of the browser: onnxruntime-web (WASM) through the worker's
    ``ort-bridge.mjs``. ``load(url)`` creates a session once per URL (the model bytes come
    from Cache Storage after the first visit) and reuses it."""

    name = "onnxruntime-web"

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge
        self._sessions: dict[str, OrtWebSession] = {}
        self._pending: dict[str, asyncio.Future[OrtWebSession]] = {}

    def __repr__(self) -> str:
        return "OrtWebRuntime()"

    @property
    def models_url(self) -> str:
        """The URL of the served models folder (``.../models/``)."""
        return str(self._bridge.modelsUrl())

    def settings(self) -> dict[str, Any]:
        return self._bridge.settings().to_py()

    async def _create(self, url: str) -> OrtWebSession:
        try:
            handle = await self._bridge.load(url)
        except JsException as exc:
            raise OSError(f"onnxruntime-web could not load {url}: {exc}") from None
        return OrtWebSession(handle, url)

    async def load(self, model: str) -> OrtWebSession:
        session = self._sessions.get(model)
        if session is not None:
            return session
        pending = self._pending.get(model)
        if pending is None:
            pending = asyncio.ensure_future(self._create(model))
            self._pending[model] = pending
            pending.add_done_callback(lambda _f, key=model: self._pending.pop(key, None))
        session = await asyncio.shield(pending)
        self._sessions[model] = session
        return session

    async def read_bytes(self, url: str) -> bytes:
        """A model file's bytes (through Cache Storage, checked against the manifest)."""
        try:
            res = await self._bridge.fetchAsset(url)
        except JsException as exc:
            raise OSError(f"cannot read {url}: {exc}") from None
        return res.bytes.to_bytes()


async def load_embedder_web(
    runtime: OrtWebRuntime, name: str = "minilm", model_url: str | None = None
) -> Any:
    """The local embedder ``name`` (``"minilm"``, ``"multilingual-e5-small"``) on
    onnxruntime-web, from the site's ``/models/<name>/`` unless ``model_url`` says."""
    from ...models import load_local_embedder

    return await load_local_embedder(name, runtime, model_url or f"{runtime.models_url}{name}/")


async def load_smollm2_web(runtime: OrtWebRuntime, model_url: str | None = None) -> Any:
    """The SmolLM2 summarizer (Encoder stage 2) over onnxruntime-web, from the site's
    ``/models/smollm2/`` (kept in Cache Storage after the first visit)."""
    from ...encoder.smollm2 import load_smollm2_refiner

    return await load_smollm2_refiner(runtime, model_url or runtime.models_url + "smollm2/")
