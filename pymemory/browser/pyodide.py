"""The browser boundary: the one module that knows it runs in Pyodide.

``IndexedDbKv`` is the KvBackend over IndexedDB. Its JS half, ``idb_kv.mjs``, ships in the
wheel beside this module and is imported by pymemory itself (:func:`idb_bridge`), so any
Pyodide works after ``micropip.install(<wheel url>)``: a page's own, PyScript, JupyterLite,
main thread or worker; no pymemory worker and no script tag::

    from pymemory.browser.pyodide import open_memory
    memory = await open_memory("my-notes")          # a Memory over IndexedDB "my-notes"

Batches cross the boundary as one Uint8Array of concatenated values plus a list of lengths,
so a 1000-item batch is one conversion, not 1000. ``create_api()`` builds the RpcApi the
pymemory worker exposes to pages.

Encrypted stores: :class:`WebCrypto` is the browser's :class:`~pymemory.storage.encrypted.Crypto`
(AES-256-GCM and PBKDF2-SHA256 in ``crypto.subtle``, through ``webcrypto.mjs``, shipped and
imported like ``idb_kv.mjs``); ``open_memory(name, passphrase=...)`` (or ``key=``: 32 bytes,
or an app's AES-GCM ``CryptoKey``) wraps the IndexedDbKv in an EncryptedKv::

    memory = await open_memory("my-notes", passphrase="correct horse battery staple")
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import js
import numpy as np
from pyodide.code import run_js
from pyodide.ffi import JsBuffer, JsException, JsProxy, create_proxy, to_js

from ..errors import (
    QuotaExceededError,
    StorageError,
    StoreClosedError,
    ValidationError,
    WrongKeyError,
    shown,
)
from ..memory import Memory
from ..models.runtime import PRIORITY
from ..storage.base import (
    KvBackend,
    TransactFn,
    check_items,
    check_key,
    check_prefixes,
    check_writes,
)
from ..storage.encrypted import DEFAULT_ITERATIONS, KEYRING_KEY, AeadKey, EncryptedKv, TagMismatch
from ..storage.encrypted.cipher import AeadItem
from ..storage.room import MIB, RoomGuard, RoomReading, check_reserve, frees_room
from .api import RpcApi, Unlock

#: The JS half of IndexedDbKv, package data of pymemory.browser.
IDB_BRIDGE_FILE = "idb_kv.mjs"
#: The JS half of WebCrypto (encrypted stores), package data of pymemory.browser.
CRYPTO_BRIDGE_FILE = "webcrypto.mjs"
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


async def _bridge(file: str) -> Any:
    loading = _bridges.get(file)
    if loading is None or (loading.done() and loading.exception() is not None):
        loading = _bridges[file] = asyncio.ensure_future(_import_bridge(file))
    return await asyncio.shield(loading)


async def idb_bridge() -> Any:
    """The IndexedDB bridge module (``idb_kv.mjs`` from the wheel), imported once per
    interpreter through a Blob URL. Raises StorageError if this JS realm cannot import it."""
    return await _bridge(IDB_BRIDGE_FILE)


async def crypto_bridge() -> Any:
    """The WebCrypto bridge module (``webcrypto.mjs`` from the wheel), imported once per
    interpreter like :func:`idb_bridge`."""
    return await _bridge(CRYPTO_BRIDGE_FILE)


def _to_uint8(blob: bytes) -> Any:
    arr = js.Uint8Array.new(len(blob))
    if blob:
        arr.assign(blob)
    return arr


def _split(blob: bytes, lengths: list[int]) -> list[bytes | None]:
    out: list[bytes | None] = []
    pos = 0
    for n in lengths:
        if n < 0:
            out.append(None)
        else:
            out.append(blob[pos : pos + n])
            pos += n
    return out


#: The bridge methods that write: after one fails, IndexedDbKv checks the database.
_WRITES = frozenset({"putMany", "deleteMany", "transact"})

#: Room an IndexedDbKv leaves under the origin's quota by default: LevelDB needs free disk
#: to compact, and a write that fails at the disk's limit can cost the whole database.
DEFAULT_RESERVE_BYTES = 32 * MIB


class IndexedDbKv:
    """KvBackend over one IndexedDB object store (binary UTF-8 keys, so the store's byte
    order is code point order). Each put_many / delete_many is one transaction. Writes
    keep ``reserve_bytes`` under the origin's quota (``navigator.storage.estimate()``; see
    :mod:`pymemory.storage.room`)."""

    def __init__(
        self, handle: Any, name: str, bridge: Any, reserve_bytes: int = DEFAULT_RESERVE_BYTES
    ) -> None:
        self._h = handle
        self.name = name
        self._closed = False
        self._bridge = bridge
        self._room = RoomGuard(reserve_bytes, self._measure)
        self._persisted: bool | None = None
        self._room_kept = False  # the room value for deletes is stored (idb_kv.mjs)

    @classmethod
    async def open(
        cls, name: str, durability: str = "strict", *, reserve_bytes: int = DEFAULT_RESERVE_BYTES
    ) -> IndexedDbKv:
        """Open (creating if needed) the IndexedDB database ``name``. ``durability`` is
        ``"strict"`` (a write resolves once it is on disk) or ``"relaxed"``.
        ``reserve_bytes``: room under the origin's quota writes leave (0: none)."""
        if not isinstance(name, str) or not name:
            raise ValidationError("the IndexedDB database name must be a non-empty string")
        if durability not in ("strict", "relaxed"):
            raise ValidationError(
                f"durability must be 'strict' or 'relaxed', not {shown(durability)}"
            )
        check_reserve(reserve_bytes)
        bridge = await idb_bridge()
        if getattr(js, "indexedDB", None) is None:
            raise StorageError("this JS runtime has no IndexedDB (a browser page or worker has)")
        try:
            handle = await bridge.open(name, durability)
        except JsException as exc:
            raise StorageError(f"cannot open IndexedDB database {name!r}: {exc}") from None
        kv = cls(handle, name, bridge, reserve_bytes)
        await kv._keep_room()
        return kv

    async def _measure(self) -> RoomReading | None:
        try:
            est = await self._bridge.estimate()
        except JsException as exc:
            raise StorageError(f"navigator.storage.estimate() failed: {exc}") from None
        if est is None:
            return None
        persisted = est.persisted  # JS null (no StorageManager.persisted) is not a bool
        self._persisted = persisted if isinstance(persisted, bool) else None
        usage, quota = int(est.usage), int(est.quota)
        return RoomReading(available=max(quota - usage, 0), usage=usage, quota=quota)

    async def room(self) -> dict[str, Any]:
        """The origin's usage and quota as the browser estimates them, the reserve, and
        ``persisted``: whether the browser keeps this origin's storage under storage
        pressure (``navigator.storage.persisted()``; None where unknown)."""
        await self._room.refresh(force=True)
        return {**self._room.report(), "persisted": self._persisted}

    async def _call(self, method: str, *args: Any) -> Any:
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        try:
            return await getattr(self._h, method)(*args)
        except JsException as exc:
            failure = str(exc)
        if method in _WRITES:
            failure += await self._check_after_failed_write(method, failure)
        if "QuotaExceededError" in failure:
            raise QuotaExceededError(
                f"IndexedDB {method}: the browser's storage is full ({failure}); nothing was"
                " written. Delete or clear memories and retry."
            )
        raise StorageError(f"IndexedDB {method} failed: {failure}")

    async def _check_after_failed_write(self, method: str, failure: str) -> str:
        """A write failed (an aborted transaction writes nothing): check that the database
        still opens and answers a read (``idb_kv.mjs`` reopens a connection the browser
        closed, as Chromium does after an I/O error). When the disk runs short Chromium
        deletes a best-effort origin's data: say so instead of writing on into an empty
        store. Returns what to add to the error message."""
        self._room.forget()  # measure again before the next write
        try:
            records = int(await self._h.verify())
        except JsException as exc:
            raise StorageError(
                f"IndexedDB {method} failed ({failure}) and the database {self.name!r} no"
                f" longer exists ({exc}): the browser deleted it, as Chromium does to a"
                " best-effort origin's storage when the disk runs short. Ask for"
                " persistent storage (createAgentMemory({ persist: true })) to prevent it."
            ) from None
        if records < 0:
            return (
                "; the browser closed the database and cannot reopen it now (a full disk?):"
                " calls work again once there is room"
            )
        return ""

    async def get(self, key: str) -> bytes | None:
        return (await self.get_many([key]))[0]

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = [check_key(k) for k in keys]
        if not keys:
            if self._closed:
                raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
            return []
        res = await self._call("getMany", to_js(keys))
        return _split(res.blob.to_bytes(), res.lengths.to_py())

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        pairs = check_items(items)
        doomed = [check_key(k) for k in deletes]
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        if not pairs and not doomed:
            return
        await self._room.refresh()
        self._room.check(pairs, doomed)
        blob = b"".join(v for _, v in pairs)

        async def put() -> None:
            await self._call(
                "putMany",
                to_js([k for k, _ in pairs]),
                _to_uint8(blob),
                to_js([len(v) for _, v in pairs]),
                to_js(doomed),
            )

        try:
            await put()
        except QuotaExceededError:
            if not (frees_room(pairs, doomed) and await self._release_room()):
                raise
            await put()  # nothing of it was written: all of it, once more
        self._room.wrote(pairs)
        if doomed and not self._room_kept:
            await self._keep_room()

    async def _release_room(self) -> int:
        """Free the room value ``idb_kv.mjs`` keeps for deletes; the bytes freed (0: none
        was left). Called when the browser refused a batch that frees room for the quota."""
        self._room_kept = False
        try:
            return int(await self._h.releaseRoom())
        except JsException:
            return 0

    async def _keep_room(self) -> None:
        """Store the room value again if there is room (after a batch that deleted)."""
        try:
            self._room_kept = bool(await self._h.keepRoom())
        except JsException:
            self._room_kept = False

    async def delete_many(self, keys: Sequence[str]) -> None:
        doomed = [check_key(k) for k in keys]
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        if doomed:
            await self._call("deleteMany", to_js(doomed))
            if not self._room_kept:
                await self._keep_room()

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        if not isinstance(prefix, str):
            check_key(prefix)
        res = await self._call("scan", prefix, start_after, -1 if limit is None else int(limit))
        keys = res.keys.to_py()
        values = _split(res.blob.to_bytes(), res.lengths.to_py())
        return list(zip(keys, values, strict=True))  # type: ignore[arg-type]

    async def transact(
        self, keys: Sequence[str], fn: TransactFn, *, list_prefixes: Sequence[str] = ()
    ) -> Any:
        keys = [check_key(k) for k in keys]
        prefixes = check_prefixes(list_prefixes)
        await self._room.refresh()
        outcome: dict[str, Any] = {}

        def run(blob: Any, lengths: Any, listed: Any) -> Any:
            # Called by idb-kv.mjs inside the IndexedDB transaction. Never raises into JS:
            # an exception is kept here and re-raised once the transaction has aborted.
            try:
                values = _split(blob.to_bytes(), lengths.to_py())
                writes = fn(values, [list(ks) for ks in listed.to_py()])
                puts, deletes = check_writes(writes)
                self._room.check(puts, deletes)
            except BaseException as exc:  # re-raised below, unchanged
                outcome["error"] = exc
                return None
            outcome["result"] = writes.result
            outcome["puts"] = puts
            outcome["deletes"] = deletes
            outcome["replay"] = (values, [list(ks) for ks in listed.to_py()], writes)
            return to_js(
                [
                    [k for k, _ in puts],
                    _to_uint8(b"".join(v for _, v in puts)),
                    [len(v) for _, v in puts],
                    deletes,
                ]
            )

        proxy = create_proxy(run)
        try:
            await self._call("transact", to_js(keys), to_js(prefixes), proxy)
        except StorageError as exc:
            if "error" in outcome:
                raise outcome["error"] from None
            replay = outcome.get("replay")
            if not (
                isinstance(exc, QuotaExceededError)
                and replay is not None
                and frees_room(outcome["puts"], outcome["deletes"])
                and await self._release_room()
            ):
                raise
        else:
            replay = None
        finally:
            proxy.destroy()
        if "error" in outcome:
            raise outcome["error"]
        if replay is not None:
            # The browser refused this freeing batch for the quota and the room value is
            # released: the same writes once more, if what they were computed from is
            # still what is stored (nothing of the batch was written).
            read, listed, writes = replay

            def again(values: list[bytes | None], now: list[list[str]]) -> Any:
                if values != read or now != listed:
                    raise StorageError(
                        "the store changed while room was made for this write; nothing"
                        " was written, retry"
                    )
                return writes

            return await self.transact(keys, again, list_prefixes=prefixes)
        self._room.wrote(outcome.get("puts", ()))
        if outcome.get("deletes") and not self._room_kept:
            await self._keep_room()  # this batch deleted: there may be room for it again
        return outcome.get("result")

    async def purge(self) -> None:
        # IndexedDB gives no control over its files: the browser compacts them (Chrome's
        # LevelDB, Firefox's and Safari's SQLite) on its own schedule. Nothing to do.
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._h.close()

    async def destroy(self) -> None:
        """Close and delete the whole database (used by diagnostics and tests)."""
        self._closed = True
        await self._h.destroy()


# --- encrypted stores: WebCrypto through webcrypto.mjs ----------------------------------


def _crypto_error(what: str, exc: JsException) -> StorageError:
    return StorageError(f"WebCrypto {what} failed: {exc}")


class WebCryptoKey:
    """An :class:`~pymemory.storage.encrypted.AeadKey` over a WebCrypto ``CryptoKey``
    (AES-GCM, 256 bits, possibly non-extractable): the bytes are those of CPython's
    ``AESGCM`` (12-byte nonce, ciphertext, then the 16-byte tag). Each value crosses the
    JS boundary once each way, as one Uint8Array."""

    def __init__(self, handle: Any, bridge: Any) -> None:
        self.handle = handle
        self._bridge = bridge

    def __repr__(self) -> str:
        return "WebCryptoKey(AES-GCM-256)"

    async def encrypt(self, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
        try:
            out = await self._bridge.encrypt(
                self.handle, _to_uint8(nonce), _to_uint8(plaintext), _to_uint8(aad)
            )
        except JsException as exc:
            raise _crypto_error("encrypt", exc) from None
        return out.to_bytes()

    async def decrypt(self, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
        try:
            out = await self._bridge.decrypt(
                self.handle, _to_uint8(nonce), _to_uint8(ciphertext), _to_uint8(aad)
            )
        except JsException as exc:
            raise _crypto_error("decrypt", exc) from None
        if out is None:  # WebCrypto's OperationError: the tag does not verify
            raise TagMismatch()
        return out.to_bytes()

    async def _many(self, method: str, items: Sequence[AeadItem]) -> list[bytes | None]:
        if any(len(nonce) != 12 for nonce, _, _ in items):
            raise ValidationError("AES-GCM nonces here are 12 bytes")
        blob = b"".join(part for item in items for part in item)
        lengths = [n for _, data, aad in items for n in (len(data), len(aad))]
        try:
            res = await getattr(self._bridge, method)(self.handle, _to_uint8(blob), to_js(lengths))
        except JsException as exc:
            raise _crypto_error(method, exc) from None
        return _split(res.blob.to_bytes(), res.lengths.to_py())

    async def encrypt_many(self, items: Sequence[AeadItem]) -> list[bytes]:
        """Each (nonce, plaintext, aad)'s ciphertext and tag: one WebCrypto call for all."""
        return await self._many("encryptMany", items)  # type: ignore[return-value]

    async def decrypt_many(self, items: Sequence[AeadItem]) -> list[bytes | None]:
        """Each (nonce, ciphertext, aad)'s plaintext, None where the tag does not verify."""
        return await self._many("decryptMany", items)


class WebCrypto:
    """The browser's :class:`~pymemory.storage.encrypted.Crypto`: AES-256-GCM and
    PBKDF2-HMAC-SHA256 in WebCrypto (``crypto.subtle``). Keys it makes are non-extractable
    CryptoKeys. ``await WebCrypto.load()`` imports its JS half once."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge

    @classmethod
    async def load(cls) -> WebCrypto:
        return cls(await crypto_bridge())

    async def import_key(self, raw: bytes) -> WebCryptoKey:
        if not isinstance(raw, (bytes, bytearray, memoryview)) or len(raw) != 32:
            raise ValidationError("an AES-256 key is 32 bytes")
        try:
            handle = await self._bridge.importKey(_to_uint8(bytes(raw)))
        except JsException as exc:
            raise _crypto_error("importKey", exc) from None
        return WebCryptoKey(handle, self._bridge)

    async def derive_key(self, passphrase: bytes, salt: bytes, iterations: int) -> WebCryptoKey:
        try:
            handle = await self._bridge.deriveKey(
                _to_uint8(passphrase), _to_uint8(salt), int(iterations)
            )
        except JsException as exc:
            raise _crypto_error("deriveKey (PBKDF2)", exc) from None
        return WebCryptoKey(handle, self._bridge)

    def from_js(self, crypto_key: Any) -> WebCryptoKey:
        """An app's ``CryptoKey`` (AES-GCM, 256 bits, usages encrypt and decrypt; it may be
        non-extractable) as a key handle. ValidationError for any other object."""
        problem = self._bridge.keyProblem(crypto_key)
        if problem is not None:
            raise ValidationError(f"key must be an AES-GCM CryptoKey of 256 bits: {problem}")
        return WebCryptoKey(crypto_key, self._bridge)


def _secret_key(crypto: WebCrypto, key: Any) -> bytes | AeadKey | None:
    """``key`` as EncryptedKv takes it: 32 bytes, or a handle (a CryptoKey is wrapped)."""
    if key is None or isinstance(key, (bytes, bytearray, memoryview, WebCryptoKey)):
        return key
    if isinstance(key, JsBuffer):  # a Uint8Array or ArrayBuffer of raw key bytes
        return key.to_bytes()
    if isinstance(key, JsProxy):
        return crypto.from_js(key)
    if isinstance(key, AeadKey):
        return key
    raise ValidationError("key must be 32 bytes, a CryptoKey or an AeadKey handle")


async def open_encrypted(
    inner: KvBackend,
    *,
    passphrase: str | None = None,
    key: Any = None,
    iterations: int = DEFAULT_ITERATIONS,
) -> EncryptedKv:
    """``EncryptedKv.open(inner, ...)`` with WebCrypto: ``key`` may also be an app's
    CryptoKey (or a Uint8Array of 32 bytes). Closes ``inner`` if it fails (WrongKeyError:
    nothing was written)."""
    try:
        crypto = await WebCrypto.load()
        return await EncryptedKv.open(
            inner,
            passphrase=passphrase,
            key=_secret_key(crypto, key),
            crypto=crypto,
            iterations=iterations,
        )
    except BaseException:
        await inner.close()
        raise


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


class JsTokenCounter:
    """o200k_base counts from the worker (``worker/tiktoken.mjs``, over js-tiktoken's
    ranks), the same counts as ``TiktokenCounter`` in CPython. Counting is synchronous, so
    the worker serves a call only once the ranks are parsed (it is ``ready`` before)."""

    name = "o200k_base"

    def __init__(self) -> None:
        import pymemory_js_tokens  # registered by the worker before it imports this module

        self._count = pymemory_js_tokens.count

    def count(self, text: str) -> int:
        return int(self._count(text))


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
    then an EncryptedKv over IndexedDB (see :class:`~.api.Unlock`). ``passphrase`` /
    ``key`` / ``iterations`` here are the key of calls that bring none."""

    async def kv_factory(name: str) -> IndexedDbKv:
        return await IndexedDbKv.open(name, durability, reserve_bytes=reserve_bytes)

    async def locked_kv_factory(name: str, unlock: Unlock) -> EncryptedKv:
        inner = await IndexedDbKv.open(name, durability, reserve_bytes=reserve_bytes)
        return await open_encrypted(
            inner, passphrase=unlock.passphrase, key=unlock.key, iterations=unlock.iterations
        )

    if "token_counter" not in memory_options:
        # A worker without worker/tiktoken.mjs falls back to the heuristic counter.
        with contextlib.suppress(ImportError):
            memory_options["token_counter"] = JsTokenCounter()
    api = RpcApi(kv_factory, **memory_options)
    api.locked_kv_factory = locked_kv_factory
    api.parse_unlock = unlock_from_js  # type: ignore[method-assign]
    if passphrase is not None or key is not None:
        api.default_unlock = Unlock("default", passphrase, key, iterations)
    ort_bridge = getattr(bridge, "ort", None)  # worker/ort-bridge.mjs, when the worker has it
    if ort_bridge is not None:
        runtime = OrtWebRuntime(ort_bridge)
        api.embedder_factory = lambda: load_minilm_web(runtime)
        api.refiner_factory = lambda: load_smollm2_web(runtime)
    return api


# --- inference: onnxruntime-web through worker/ort-bridge.mjs ----------------------------

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


def _tensor_js(name: str, value: Any) -> Any:
    arr = np.ascontiguousarray(value)
    ort_type = _ORT_TYPES.get(arr.dtype.name)
    if ort_type is None:
        raise ValidationError(
            f"input {name}: dtype {arr.dtype} is not supported by onnxruntime-web"
        )
    return js.Object.fromEntries(
        to_js([["type", ort_type], ["dims", list(arr.shape)], ["bytes", _to_uint8(arr.tobytes())]])
    )


def _tensor_py(name: str, tensor: Any) -> np.ndarray:
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
        js_feeds = js.Object.fromEntries(to_js([[k, _tensor_js(k, v)] for k, v in feeds.items()]))
        try:
            res = await self._h.run(js_feeds, to_js(names), PRIORITY.get())
        except JsException as exc:
            raise RuntimeError(f"onnxruntime-web could not run {self.url}: {exc}") from None
        got = res.names.to_py()
        return {n: _tensor_py(n, res.outputs[i]) for i, n in enumerate(got)}


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


async def load_minilm_web(runtime: OrtWebRuntime, model_url: str | None = None) -> Any:
    """The MiniLM embedder on onnxruntime-web (the model folder defaults to /models/minilm/)."""
    from ..models import load_minilm

    return await load_minilm(runtime, model_url or runtime.models_url + "minilm/")


async def load_smollm2_web(runtime: OrtWebRuntime, model_url: str | None = None) -> Any:
    """The SmolLM2 summarizer (Encoder stage 2) over onnxruntime-web, from the site's
    ``/models/smollm2/`` (kept in Cache Storage after the first visit)."""
    from ..encoder.smollm2 import load_smollm2_refiner

    return await load_smollm2_refiner(runtime, model_url or runtime.models_url + "smollm2/")
