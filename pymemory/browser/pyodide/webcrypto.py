"""WebCrypto: the browser's Crypto for encrypted stores, with its JS half ``webcrypto.mjs``.

AES-256-GCM and PBKDF2-SHA256 in ``crypto.subtle``; keys stay non-extractable CryptoKeys.
Values are sealed and opened in batches (one JS call per batch: an await of a JS promise
costs far more than the cipher). :func:`open_encrypted` wraps a store in an EncryptedKv.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyodide.ffi import JsBuffer, JsException, JsProxy, to_js

from ...errors import StorageError, ValidationError
from ...storage.base import KvBackend
from ...storage.encrypted import DEFAULT_ITERATIONS, AeadKey, EncryptedKv, TagMismatch
from ...storage.encrypted.cipher import AeadItem
from .bridge import load_bridge, split_values, to_uint8

#: The JS half of WebCrypto, package data beside this module.
CRYPTO_BRIDGE_FILE = "webcrypto.mjs"


async def crypto_bridge() -> Any:
    """The WebCrypto bridge module (``webcrypto.mjs`` from the wheel), imported once per
    interpreter through a Blob URL like ``idb_kv.mjs``."""
    return await load_bridge(CRYPTO_BRIDGE_FILE)


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
                self.handle, to_uint8(nonce), to_uint8(plaintext), to_uint8(aad)
            )
        except JsException as exc:
            raise _crypto_error("encrypt", exc) from None
        return out.to_bytes()

    async def decrypt(self, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
        try:
            out = await self._bridge.decrypt(
                self.handle, to_uint8(nonce), to_uint8(ciphertext), to_uint8(aad)
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
            res = await getattr(self._bridge, method)(self.handle, to_uint8(blob), to_js(lengths))
        except JsException as exc:
            raise _crypto_error(method, exc) from None
        return split_values(res.blob.to_bytes(), res.lengths.to_py())

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
            handle = await self._bridge.importKey(to_uint8(bytes(raw)))
        except JsException as exc:
            raise _crypto_error("importKey", exc) from None
        return WebCryptoKey(handle, self._bridge)

    async def derive_key(self, passphrase: bytes, salt: bytes, iterations: int) -> WebCryptoKey:
        try:
            handle = await self._bridge.deriveKey(
                to_uint8(passphrase), to_uint8(salt), int(iterations)
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
