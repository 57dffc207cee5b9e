"""The Pyodide bridge: the browser implementations of the core's seams, and open_memory.

One module per seam: :mod:`.idb_kv` (``IndexedDbKv``, the KvBackend over IndexedDB, with
its JS half ``idb_kv.mjs``), :mod:`.webcrypto` (``WebCrypto``, the Crypto of encrypted
stores, with ``webcrypto.mjs``), :mod:`.ort_web` (``OrtWebRuntime``, onnxruntime-web
through the worker's ``ort-bridge.mjs``), :mod:`.tokens` (``JsTokenCounter``, the
worker's o200k_base counts) and :mod:`.sync_fetch` (``FetchTransport``, ``Memory.sync``'s
HTTP over ``fetch``); :mod:`.bridge` imports the JS halves, shipped in the wheel,
through a Blob URL. This package is the only one in pymemory that imports ``js`` or
``pyodide``.

Any Pyodide works after ``micropip.install(<wheel url>)``: a page's own, PyScript,
JupyterLite, main thread or worker; no pymemory worker and no script tag::

    from pymemory.browser.pyodide import open_memory
    memory = await open_memory("my-notes")          # a Memory over IndexedDB "my-notes"

Encrypted: ``open_memory(name, passphrase=...)`` (or ``key=``: 32 bytes, or an app's
AES-GCM ``CryptoKey``) wraps the IndexedDbKv in an EncryptedKv::

    memory = await open_memory("my-notes", passphrase="correct horse battery staple")

``create_api()`` builds the RpcApi (:mod:`pymemory.browser.rpc`) the pymemory worker
serves to pages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from pyodide.ffi import JsProxy

from ...errors import ValidationError, WrongKeyError
from ...memory import Memory
from ...storage.base import KvBackend
from ...storage.encrypted import DEFAULT_ITERATIONS, KEYRING_KEY, EncryptedKv
from ..rpc import RpcApi, Unlock
from .idb_kv import DEFAULT_RESERVE_BYTES, IDB_BRIDGE_FILE, IndexedDbKv, idb_bridge
from .ort_web import (
    OrtWebRuntime,
    OrtWebSession,
    load_embedder_web,
    load_smollm2_web,
    tensor_from_js,
    tensor_to_js,
)
from .sync_fetch import FetchTransport, fetch_transport
from .tokens import JsTokenCounter
from .webcrypto import CRYPTO_BRIDGE_FILE, WebCrypto, WebCryptoKey, crypto_bridge, open_encrypted


async def _refuse_encrypted(kv: KvBackend, name: str) -> None:
    """WrongKeyError (closing ``kv``) if database ``name`` holds an encrypted store."""
    try:
        encrypted = await kv.get(KEYRING_KEY) is not None
    except BaseException:
        await kv.close()
        raise
    if encrypted:
        await kv.close()
        raise WrongKeyError(
            f"IndexedDB database {name!r} is encrypted: open it with its passphrase or key"
        )


def unlock_from_js(value: Any) -> Unlock:
    """A client's ``encryption`` option as the worker passes it (a JS object
    ``{id, passphrase | key, iterations?}``; ``key`` a CryptoKey) as an Unlock."""
    if isinstance(value, JsProxy):
        value = value.to_py(depth=1)  # the CryptoKey stays a JsProxy
    if isinstance(value, Unlock):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError("encryption must be an object")
    return Unlock.from_fields(value)


async def open_memory(
    name: str = "pymemory",
    *,
    durability: str = "strict",
    reserve_bytes: int = DEFAULT_RESERVE_BYTES,
    passphrase: str | None = None,
    key: Any = None,
    iterations: int = DEFAULT_ITERATIONS,
    **memory_options: Any,
) -> Memory:
    """A :class:`~pymemory.Memory` over the IndexedDB database ``name``, in this Pyodide
    (no pymemory worker needed). ``memory_options`` go to ``Memory.open`` (e.g.
    ``token_counter``, ``embedder``); ``await memory.close()`` closes the database too.
    Token budgets count o200k_base with the ranks in the wheel (pure Python here).

    Encrypted: pass ``passphrase`` (PBKDF2 with ``iterations``, recorded when the store
    is created) or ``key`` (32 bytes, or an AES-GCM CryptoKey of 256 bits); the store is
    an :class:`~pymemory.storage.encrypted.EncryptedKv` (WrongKeyError for a wrong one,
    and for an encrypted database opened without one)."""
    kv: KvBackend = await IndexedDbKv.open(name, durability, reserve_bytes=reserve_bytes)
    if passphrase is None and key is None:
        await _refuse_encrypted(kv, name)
    else:
        kv = await open_encrypted(kv, passphrase=passphrase, key=key, iterations=iterations)
    try:
        memory = await Memory.open(kv, **memory_options)
    except BaseException:
        await kv.close()
        raise
    memory.syncs.transport = fetch_transport  # memory.sync(url) over the browser's fetch
    memory._owns_kv = True  # opened here, so close() closes it (as for a SQLite path)
    return memory


def create_api(
    bridge: Any = None,
    *,
    durability: str = "strict",
    reserve_bytes: int = DEFAULT_RESERVE_BYTES,
    passphrase: str | None = None,
    key: Any = None,
    iterations: int = DEFAULT_ITERATIONS,
    **memory_options: Any,
) -> RpcApi:
    """The API the pymemory worker exposes: one Memory per IndexedDB database name. The
    IndexedDB bridge is pymemory's own (:func:`idb_bridge`); ``bridge`` carries the other
    JS bridges of the worker, if any (``bridge.ort``: onnxruntime-web).

    Encrypted databases: each call may bring its client's key (``api.call(..., unlock)``,
    the client's ``encryption`` option, read by :func:`unlock_from_js`); the database is
    then an EncryptedKv over IndexedDB (see :class:`~pymemory.browser.rpc.Unlock`). ``passphrase`` /
    ``key`` / ``iterations`` here are the key of calls that bring none."""

    async def kv_factory(name: str) -> IndexedDbKv:
        return await IndexedDbKv.open(name, durability, reserve_bytes=reserve_bytes)

    async def locked_kv_factory(name: str, unlock: Unlock) -> EncryptedKv:
        inner = await IndexedDbKv.open(name, durability, reserve_bytes=reserve_bytes)
        return await open_encrypted(
            inner, passphrase=unlock.passphrase, key=unlock.key, iterations=unlock.iterations
        )

    if "token_counter" not in memory_options:
        # A worker without its tiktoken.mjs falls back to the heuristic counter.
        with contextlib.suppress(ImportError):
            memory_options["token_counter"] = JsTokenCounter()
    api = RpcApi(kv_factory, **memory_options)
    api.locked_kv_factory = locked_kv_factory
    api.parse_unlock = unlock_from_js  # type: ignore[method-assign]
    api.sync_transport = fetch_transport  # Memory.sync over the browser's fetch
    if passphrase is not None or key is not None:
        api.default_unlock = Unlock("default", passphrase, key, iterations)
    ort_bridge = getattr(bridge, "ort", None)  # the worker's ort-bridge.mjs, if it has one
    if ort_bridge is not None:
        runtime = OrtWebRuntime(ort_bridge)
        api.embedder_factory = lambda name: load_embedder_web(runtime, name)
        api.refiner_factory = lambda: load_smollm2_web(runtime)
    return api


__all__ = [
    "CRYPTO_BRIDGE_FILE",
    "DEFAULT_RESERVE_BYTES",
    "IDB_BRIDGE_FILE",
    "FetchTransport",
    "IndexedDbKv",
    "JsTokenCounter",
    "OrtWebRuntime",
    "OrtWebSession",
    "WebCrypto",
    "WebCryptoKey",
    "create_api",
    "crypto_bridge",
    "fetch_transport",
    "idb_bridge",
    "load_embedder_web",
    "load_smollm2_web",
    "open_encrypted",
    "open_memory",
    "tensor_from_js",
    "tensor_to_js",
    "unlock_from_js",
]
