"""How Python meets the bridges' JS halves: importing a half, and bytes across.

A JS half (``idb_kv.mjs``, ``webcrypto.mjs``) ships in the wheel beside its Python module
and is imported by pymemory itself through a Blob URL (:func:`load_bridge`), so any
Pyodide works after ``micropip.install(<wheel url>)``, with no script tag. Batches cross
the boundary as one Uint8Array of concatenated values plus a list of lengths
(:func:`to_uint8`, :func:`split_values`), so a 1000-value batch is one conversion, not 1000.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Any

import js
from pyodide.code import run_js
from pyodide.ffi import JsException, to_js

from ...errors import StorageError

_bridges: dict[str, asyncio.Future[Any]] = {}


async def _import_bridge(file: str) -> Any:
    source = resources.files(__package__).joinpath(file).read_text(encoding="utf-8")
    options = js.Object.fromEntries(to_js([["type", "text/javascript"]]))
    url = js.URL.createObjectURL(js.Blob.new(to_js([source]), options))
    try:
        return await run_js("(url) => import(url)")(url)
    except JsException as exc:
        raise StorageError(
            f"cannot load pymemory's JS bridge {file} through a Blob URL: {exc}. A "
            "Content-Security-Policy must allow blob: scripts (script-src blob:)."
        ) from None
    finally:
        js.URL.revokeObjectURL(url)


async def load_bridge(file: str) -> Any:
    """The JS module ``file`` of this package, imported once per interpreter through a Blob
    URL (again after a failed import). Raises StorageError if this JS realm cannot import it."""
    loading = _bridges.get(file)
    if loading is None or (loading.done() and loading.exception() is not None):
        loading = _bridges[file] = asyncio.ensure_future(_import_bridge(file))
    return await asyncio.shield(loading)


def to_uint8(blob: bytes) -> Any:
    """``blob`` as a new JS Uint8Array."""
    arr = js.Uint8Array.new(len(blob))
    if blob:
        arr.assign(blob)
    return arr


def split_values(blob: bytes, lengths: list[int]) -> list[bytes | None]:
    """The values concatenated in ``blob``, by ``lengths`` (a negative length: None)."""
    out: list[bytes | None] = []
    pos = 0
    for n in lengths:
        if n < 0:
            out.append(None)
        else:
            out.append(blob[pos : pos + n])
            pos += n
    return out
