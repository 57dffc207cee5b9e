"""The key record (``meta:enc``): wrapped data keys, the KDF, rotation progress, secrets."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import (
    CorruptValueError,
    SchemaError,
    ValidationError,
    WrongKeyError,
)
from .cipher import (
    FORMAT,
    HEADER,
    KEY_BYTES,
    KEYRING_KEY,
    MAX_ATTEMPTS,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    NONCE_BYTES,
    PBKDF2,
    ROTATION_KEY,
    SALT_BYTES,
    TAG_BYTES,
    WRAP_AAD,
    AeadKey,
    Crypto,
    TagMismatch,
    _check_raw_key,
)

log = logging.getLogger("pymemory")

# --- the key record ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Ring:
    """The parsed ``meta:enc`` and the bytes it was parsed from."""

    raw: bytes
    kdf: dict[str, Any] | None
    wrapped: dict[int, bytes]
    write_id: int


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise CorruptValueError(f"{KEYRING_KEY}: {what} is not base64 text")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CorruptValueError(f"{KEYRING_KEY}: {what} is not base64 text") from None


def _encode_ring(kdf: dict[str, Any] | None, wrapped: Mapping[int, bytes], write_id: int) -> bytes:
    record = {
        "format": FORMAT,
        "cipher": "aes-256-gcm",
        "kdf": kdf,
        "keys": {str(k): _b64(v) for k, v in sorted(wrapped.items())},
        "write": write_id,
    }
    return json.dumps(record, separators=(",", ":"), sort_keys=True).encode()


def _parse_ring(raw: bytes) -> _Ring:
    try:
        record = json.loads(raw)
    except ValueError:
        raise CorruptValueError(f"{KEYRING_KEY} is not JSON: the key record is damaged") from None
    if not isinstance(record, dict):
        raise CorruptValueError(f"{KEYRING_KEY} is not a JSON object")
    version = record.get("format")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:
        raise SchemaError(
            f"this store is encrypted in format {version}, newer than this pymemory "
            f"understands ({FORMAT}); upgrade pymemory to open it"
        )
    if version != FORMAT or record.get("cipher") != "aes-256-gcm":
        raise CorruptValueError(f"{KEYRING_KEY}: unknown format or cipher")
    kdf = record.get("kdf")
    if kdf is not None:
        if not isinstance(kdf, dict) or kdf.get("name") != PBKDF2:
            raise CorruptValueError(f"{KEYRING_KEY}: unknown key derivation {kdf!r:.80}")
        salt = _unb64(kdf.get("salt"), "the salt")
        iterations = kdf.get("iterations")
        if (
            isinstance(iterations, bool)
            or not isinstance(iterations, int)
            or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS
            or len(salt) < SALT_BYTES
        ):
            raise CorruptValueError(f"{KEYRING_KEY}: bad PBKDF2 parameters")
    keys = record.get("keys")
    if not isinstance(keys, dict) or not keys:
        raise CorruptValueError(f"{KEYRING_KEY}: no data keys")
    wrapped: dict[int, bytes] = {}
    for name, text in keys.items():
        if not (isinstance(name, str) and name.isdigit() and 0 < int(name) < 2**32):
            raise CorruptValueError(f"{KEYRING_KEY}: bad data key id {name!r:.40}")
        blob = _unb64(text, f"data key {name}")
        if len(blob) != NONCE_BYTES + KEY_BYTES + TAG_BYTES:
            raise CorruptValueError(f"{KEYRING_KEY}: data key {name} has a wrong size")
        wrapped[int(name)] = blob
    write_id = record.get("write")
    if isinstance(write_id, bool) or not isinstance(write_id, int) or write_id not in wrapped:
        raise CorruptValueError(f"{KEYRING_KEY}: the write key is not among the data keys")
    return _Ring(bytes(raw), kdf, wrapped, write_id)


def _wrap_aad(key_id: int) -> bytes:
    return WRAP_AAD + HEADER.pack(FORMAT, key_id)


async def _wrap(kek: AeadKey, key_id: int, raw: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + await kek.encrypt(nonce, raw, _wrap_aad(key_id))


async def _unwrap_raw(kek: AeadKey, key_id: int, blob: bytes) -> bytes:
    """The raw data key; TagMismatch if ``kek`` is not the key that wrapped it."""
    return await kek.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], _wrap_aad(key_id))


@dataclass(frozen=True)
class _Progress:
    raw: bytes
    source: tuple[int, ...] | None  # data key ids being retired; None: plaintext
    after: str | None


def _encode_progress(source: Sequence[int] | None, after: str | None) -> bytes:
    record = {"from": "plain" if source is None else sorted(source), "after": after}
    return json.dumps(record, separators=(",", ":"), sort_keys=True).encode()


def _parse_progress(raw: bytes) -> _Progress:
    try:
        record = json.loads(raw)
        source, after = record["from"], record["after"]
    except (ValueError, KeyError, TypeError):
        raise CorruptValueError(f"{ROTATION_KEY} is damaged") from None
    if after is not None and not isinstance(after, str):
        raise CorruptValueError(f"{ROTATION_KEY}: bad cursor")
    if source == "plain":
        return _Progress(bytes(raw), None, after)
    if not isinstance(source, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in source
    ):
        raise CorruptValueError(f"{ROTATION_KEY}: bad key ids")
    return _Progress(bytes(raw), tuple(source), after)


# --- secrets ---------------------------------------------------------------------------


def _passphrase_bytes(passphrase: object) -> bytes:
    if not isinstance(passphrase, str) or not passphrase:
        raise ValidationError("passphrase must be a non-empty str")
    try:
        return unicodedata.normalize("NFC", passphrase).encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("passphrase must not contain lone surrogates") from None


def _check_iterations(iterations: object) -> int:
    if (
        isinstance(iterations, bool)
        or not isinstance(iterations, int)
        or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS
    ):
        raise ValidationError(f"iterations must be an int in {MIN_ITERATIONS}..{MAX_ITERATIONS}")
    return iterations


@dataclass(frozen=True)
class _Secret:
    passphrase: bytes | None = None
    key: bytes | AeadKey | None = None


def _secret(passphrase: object, key: object) -> _Secret:
    if (passphrase is None) == (key is None):
        raise ValidationError("pass exactly one of passphrase= or key=")
    if passphrase is not None:
        return _Secret(passphrase=_passphrase_bytes(passphrase))
    if isinstance(key, (bytes, bytearray, memoryview)):
        return _Secret(key=_check_raw_key(key))
    if isinstance(key, AeadKey):
        return _Secret(key=key)
    raise ValidationError(f"key must be {KEY_BYTES} bytes or an AeadKey handle")


async def _new_kek(
    crypto: Crypto, secret: _Secret, iterations: int
) -> tuple[AeadKey, dict[str, Any] | None]:
    """A fresh KEK for ``secret`` and the kdf record to store (a new salt)."""
    if secret.passphrase is not None:
        salt = os.urandom(SALT_BYTES)
        kek = await crypto.derive_key(secret.passphrase, salt, iterations)
        return kek, {"name": PBKDF2, "salt": _b64(salt), "iterations": iterations}
    return await _key_handle(crypto, secret), None


async def _key_handle(crypto: Crypto, secret: _Secret) -> AeadKey:
    key = secret.key
    return await crypto.import_key(key) if isinstance(key, bytes) else key  # type: ignore[return-value]


async def _kek_for(crypto: Crypto, ring: _Ring, secret: _Secret) -> AeadKey:
    """The KEK ``secret`` gives under the store's recorded parameters."""
    if ring.kdf is None:
        if secret.passphrase is not None:
            raise WrongKeyError("this store is locked with a raw key, not a passphrase")
        return await _key_handle(crypto, secret)
    if secret.passphrase is None:
        raise WrongKeyError("this store is locked with a passphrase; pass passphrase=")
    salt = base64.b64decode(ring.kdf["salt"])
    return await crypto.derive_key(secret.passphrase, salt, ring.kdf["iterations"])


async def _unwrap_all(crypto: Crypto, kek: AeadKey, ring: _Ring, what: str) -> dict[int, bytes]:
    raws = {}
    for key_id, blob in ring.wrapped.items():
        try:
            raws[key_id] = await _unwrap_raw(kek, key_id, blob)
        except TagMismatch:
            raise WrongKeyError(what) from None
    return raws


_PLAIN_DATA = (
    "this store already holds unencrypted data: open it with migrate=True to encrypt it "
    "in place (stop other writers first), or export it and import into a new store"
)
_CONTENDED = (
    f"gave up after {MAX_ATTEMPTS} attempts: other writers kept changing what this "
    "EncryptedKv read; nothing was written by it, retry later"
)


def _check_batch(batch_size: object) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError("batch_size must be an int >= 1")
    return batch_size
