"""The sealed-value format (AES-256-GCM, the key name as associated data), the runtime's
crypto protocols and the CPython implementation."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ...errors import (
    CorruptValueError,
    StorageError,
    ValidationError,
)

log = logging.getLogger("pymemory")

FORMAT = 1
HEADER = struct.Struct(">BI")  # format version, data key id
NONCE_BYTES = 12
TAG_BYTES = 16
OVERHEAD = HEADER.size + NONCE_BYTES + TAG_BYTES
KEY_BYTES = 32
SALT_BYTES = 16
WRAP_AAD = b"pymemory-data-key"

KEYRING_KEY = "meta:enc"
ROTATION_KEY = "meta:enc:rotation"
HIDDEN_KEYS = frozenset({KEYRING_KEY, ROTATION_KEY})
SYNC_PREFIX = "sync:"


class _ClearKeys(frozenset):
    """``meta:seq`` and the replicator's ``sync:`` records (clocks, digests of sealed
    values, revisions, checkpoints: no content; pymemory/sync/) are stored as is."""

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key) or (isinstance(key, str) and key.startswith(SYNC_PREFIX))


CLEAR_KEYS = _ClearKeys({"meta:seq"})

PBKDF2 = "pbkdf2-hmac-sha256"
DEFAULT_ITERATIONS = 600_000
MIN_ITERATIONS = 1_000  # low counts are for tests only
MAX_ITERATIONS = 100_000_000
MAX_ATTEMPTS = 64
ROTATION_BATCH = 256


class ContentionError(StorageError):
    """An EncryptedKv transact (or rotation batch) kept finding that other writers had
    changed what it read, and gave up after :data:`MAX_ATTEMPTS` attempts. Nothing was
    written by it; retrying later is safe."""


class TagMismatch(Exception):
    """Raised by :meth:`AeadKey.decrypt` when the authentication tag does not verify."""


class UnknownKeyError(CorruptValueError):
    """A value names a data key id this instance does not hold."""


# --- what a runtime supplies ----------------------------------------------------------


@runtime_checkable
class AeadKey(Protocol):
    """One AES-256-GCM key, as a handle (CPython: an ``AESGCM``; the browser: a WebCrypto
    ``CryptoKey`` behind the JS bridge). 12-byte nonces, 16-byte tags appended."""

    async def encrypt(self, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
        """Ciphertext followed by the tag."""
        ...

    async def decrypt(self, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
        """The plaintext; :class:`TagMismatch` if the tag does not verify."""
        ...


#: (nonce, data, associated data) of one value, for a key's optional batch methods.
AeadItem = tuple[bytes, bytes, bytes]


class BatchAeadKey(AeadKey, Protocol):
    """An AeadKey that also takes many values in one call (the browser's: one crossing
    into WebCrypto instead of one per value, whose awaits dominate). Optional: the
    cipher uses these when a key has them."""

    async def encrypt_many(self, items: Sequence[AeadItem]) -> list[bytes]:
        """Each item's ciphertext followed by its tag."""
        ...

    async def decrypt_many(self, items: Sequence[AeadItem]) -> list[bytes | None]:
        """Each item's plaintext, None where its tag does not verify."""
        ...


@runtime_checkable
class Crypto(Protocol):
    """A runtime's key primitives: the only part that differs between CPython and the
    browser. Everything else (formats, key record, rotation) is shared Python."""

    async def import_key(self, raw: bytes) -> AeadKey:
        """A handle for 32 raw key bytes."""
        ...

    async def derive_key(self, passphrase: bytes, salt: bytes, iterations: int) -> AeadKey:
        """PBKDF2-HMAC-SHA256(passphrase, salt, iterations) -> 32 bytes, as a handle."""
        ...


class _CpythonKey:
    def __init__(self, aead: Any, invalid_tag: type[Exception]) -> None:
        self._aead = aead
        self._invalid_tag = invalid_tag

    async def encrypt(self, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
        return self._aead.encrypt(nonce, plaintext, aad)

    async def decrypt(self, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
        try:
            return self._aead.decrypt(nonce, ciphertext, aad)
        except self._invalid_tag:
            raise TagMismatch() from None


class CpythonCrypto:
    """CPython's primitives: AES-256-GCM from the ``cryptography`` package (the
    ``encryption`` extra), PBKDF2 from ``hashlib`` (run off the event loop)."""

    def __init__(self) -> None:
        try:
            from cryptography.exceptions import InvalidTag
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError:
            raise ImportError(
                "encrypted stores need the 'cryptography' package in CPython: "
                "pip install 'pymemory-agent[encryption]'"
            ) from None
        self._aesgcm = AESGCM
        self._invalid_tag = InvalidTag

    async def import_key(self, raw: bytes) -> AeadKey:
        if len(raw) != KEY_BYTES:
            raise ValidationError(f"an AES-256 key is {KEY_BYTES} bytes, got {len(raw)}")
        return _CpythonKey(self._aesgcm(bytes(raw)), self._invalid_tag)

    async def derive_key(self, passphrase: bytes, salt: bytes, iterations: int) -> AeadKey:
        raw = await asyncio.to_thread(
            hashlib.pbkdf2_hmac, "sha256", passphrase, salt, iterations, KEY_BYTES
        )
        return await self.import_key(raw)


# --- the value format ------------------------------------------------------------------


class Cipher(Protocol):
    """What EncryptedKv calls per value: seal ``plaintext`` for ``key_name``, and open
    what was sealed for it (CorruptValueError when it does not verify). A cipher may also
    have ``seal_many`` / ``open_many`` (lists of ``(key_name, bytes)`` -> a list of
    results, as :class:`AesGcmCipher`), which EncryptedKv then uses for batches."""

    async def seal(self, key_name: str, plaintext: bytes) -> bytes: ...

    async def open(self, key_name: str, sealed: bytes) -> bytes: ...


def sealed_key_id(sealed: bytes) -> int | None:
    """The data key id in a format-1 value's header, or None if it is not one."""
    if len(sealed) < OVERHEAD or sealed[0] != FORMAT:
        return None
    return HEADER.unpack_from(sealed)[1]


class AesGcmCipher:
    """The format-1 :class:`Cipher` over a set of data keys by id (any runtime's
    :class:`AeadKey`); new values are sealed with ``write_id``."""

    def __init__(self, keys: Mapping[int, AeadKey], write_id: int) -> None:
        if write_id not in keys:
            raise ValidationError(f"no data key with id {write_id}")
        self._keys = dict(keys)
        self.write_id = write_id

    @classmethod
    async def from_key(
        cls, raw: bytes, *, key_id: int = 1, crypto: Crypto | None = None
    ) -> AesGcmCipher:
        """One fixed data key (for ``EncryptedKv(inner, cipher)``: no key record, no
        key check, no rotation; :meth:`EncryptedKv.open` is the usual way)."""
        crypto = crypto or CpythonCrypto()
        return cls({key_id: await crypto.import_key(check_raw_key(raw))}, key_id)

    @property
    def key_ids(self) -> frozenset[int]:
        return frozenset(self._keys)

    async def seal(self, key_name: str, plaintext: bytes) -> bytes:
        head = HEADER.pack(FORMAT, self.write_id)
        nonce = os.urandom(NONCE_BYTES)
        body = await self._keys[self.write_id].encrypt(
            nonce, plaintext, head + key_name.encode("utf-8")
        )
        return head + nonce + body

    async def open(self, key_name: str, sealed: bytes) -> bytes:
        key, item = self._parse(key_name, sealed)
        try:
            return await key.decrypt(*item)
        except TagMismatch:
            raise _tag_error(key_name) from None

    def _parse(self, key_name: str, sealed: bytes) -> tuple[AeadKey, AeadItem]:
        """The data key that sealed ``sealed`` and its (nonce, ciphertext, aad)."""
        if len(sealed) < OVERHEAD or sealed[0] != FORMAT:
            first = f"0x{sealed[0]:02x}" if sealed else "nothing"
            raise CorruptValueError(
                f"the value under {key_name!r} is not an encrypted value of format {FORMAT} "
                f"({len(sealed)} bytes, starting with {first}): altered, written "
                "unencrypted, or by a newer pymemory"
            )
        key_id = HEADER.unpack_from(sealed)[1]
        key = self._keys.get(key_id)
        if key is None:
            raise UnknownKeyError(
                f"the value under {key_name!r} was sealed with data key {key_id}, which "
                "this store does not hold (altered, or from another store)"
            )
        head, nonce = sealed[: HEADER.size], sealed[HEADER.size : HEADER.size + NONCE_BYTES]
        return key, (nonce, sealed[HEADER.size + NONCE_BYTES :], head + key_name.encode("utf-8"))

    async def seal_many(self, pairs: Sequence[tuple[str, bytes]]) -> list[bytes]:
        """:meth:`seal` of each ``(key_name, plaintext)``, in one batch when the write key
        has ``encrypt_many``."""
        key = self._keys[self.write_id]
        batch = getattr(key, "encrypt_many", None)
        if batch is None or len(pairs) < 2:
            return [await self.seal(name, value) for name, value in pairs]
        head = HEADER.pack(FORMAT, self.write_id)
        nonces = [os.urandom(NONCE_BYTES) for _ in pairs]
        items = [
            (nonce, value, head + name.encode("utf-8"))
            for nonce, (name, value) in zip(nonces, pairs, strict=True)
        ]
        bodies = await batch(items)
        return [head + n + body for n, body in zip(nonces, bodies, strict=True)]

    async def open_many(self, pairs: Sequence[tuple[str, bytes]]) -> list[bytes]:
        """:meth:`open` of each ``(key_name, sealed)`` (any failure raises, as there), in
        one batch per data key when the keys have ``decrypt_many``."""
        parsed = [self._parse(name, sealed) for name, sealed in pairs]
        out: list[bytes | None] = [None] * len(pairs)
        by_key: dict[int, list[int]] = {}
        for i, (key, _) in enumerate(parsed):
            by_key.setdefault(id(key), []).append(i)
        for indexes in by_key.values():
            key = parsed[indexes[0]][0]
            batch = getattr(key, "decrypt_many", None)
            if batch is None or len(indexes) < 2:
                for i in indexes:
                    try:
                        out[i] = await key.decrypt(*parsed[i][1])
                    except TagMismatch:
                        raise _tag_error(pairs[i][0]) from None
                continue
            for i, plain in zip(indexes, await batch([parsed[i][1] for i in indexes]), strict=True):
                if plain is None:
                    raise _tag_error(pairs[i][0])
                out[i] = plain
        return out  # type: ignore[return-value]


def _tag_error(key_name: str) -> CorruptValueError:
    return CorruptValueError(
        f"the value under {key_name!r} failed its integrity check: it was altered, "
        "or moved from another key"
    )


def check_raw_key(raw: object) -> bytes:
    """``raw`` as bytes if it is a raw AES-256 key (``KEY_BYTES`` long)."""
    if not isinstance(raw, (bytes, bytearray, memoryview)) or len(raw) != KEY_BYTES:
        raise ValidationError(f"key must be {KEY_BYTES} bytes (AES-256)")
    return bytes(raw)
