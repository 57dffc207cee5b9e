"""The key record (``meta:enc``): wrapped data keys, the KDF, and the secrets that unlock it."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import unicodedata
from collections.abc import Mapping
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
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    NONCE_BYTES,
    PBKDF2,
    SALT_BYTES,
    TAG_BYTES,
    WRAP_AAD,
    AeadKey,
    Crypto,
    TagMismatch,
    check_raw_key,
)

log = logging.getLogger("pymemory")

# --- the key record ---------------------------------------------------------------------


@dataclass(frozen=True)
class Ring:
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


def encode_ring(kdf: dict[str, Any] | None, wrapped: Mapping[int, bytes], write_id: int) -> bytes:
    """The key record's bytes: canonical JSON of the KDF, the wrapped keys, the write id."""
    record = {
        "format": FORMAT,
        "cipher": "aes-256-gcm",
        "kdf": kdf,
        "keys": {str(k): _b64(v) for k, v in sorted(wrapped.items())},
        "write": write_id,
    }
    return json.dumps(record, separators=(",", ":"), sort_keys=True).encode()


def parse_ring(raw: bytes) -> Ring:
    """:class:`Ring` from the stored record; CorruptValueError or SchemaError if unreadable."""
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
    return Ring(bytes(raw), kdf, wrapped, write_id)


def _wrap_aad(key_id: int) -> bytes:
    return WRAP_AAD + HEADER.pack(FORMAT, key_id)


async def wrap_data_key(kek: AeadKey, key_id: int, raw: bytes) -> bytes:
    """The raw data key ``key_id`` sealed under ``kek``: nonce + ciphertext + tag."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + await kek.encrypt(nonce, raw, _wrap_aad(key_id))


async def unwrap_data_key(kek: AeadKey, key_id: int, blob: bytes) -> bytes:
    """The raw data key; TagMismatch if ``kek`` is not the key that wrapped it."""
    return await kek.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], _wrap_aad(key_id))


# --- secrets ---------------------------------------------------------------------------


def passphrase_bytes(passphrase: object) -> bytes:
    """The passphrase as the KDF takes it: NFC-normalised UTF-8."""
    if not isinstance(passphrase, str) or not passphrase:
        raise ValidationError("passphrase must be a non-empty str")
    try:
        return unicodedata.normalize("NFC", passphrase).encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("passphrase must not contain lone surrogates") from None


def check_iterations(iterations: object) -> int:
    """``iterations`` (the PBKDF2 count) if it is an int in the accepted range."""
    if (
        isinstance(iterations, bool)
        or not isinstance(iterations, int)
        or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS
    ):
        raise ValidationError(f"iterations must be an int in {MIN_ITERATIONS}..{MAX_ITERATIONS}")
    return iterations


@dataclass(frozen=True)
class Secret:
    """What unlocks a store: passphrase bytes, or a raw key / key handle."""

    passphrase: bytes | None = None
    key: bytes | AeadKey | None = None


def secret_of(passphrase: object, key: object) -> Secret:
    """The one secret given (a passphrase or a key), checked."""
    if (passphrase is None) == (key is None):
        raise ValidationError("pass exactly one of passphrase= or key=")
    if passphrase is not None:
        return Secret(passphrase=passphrase_bytes(passphrase))
    if isinstance(key, (bytes, bytearray, memoryview)):
        return Secret(key=check_raw_key(key))
    if isinstance(key, AeadKey):
        return Secret(key=key)
    raise ValidationError(f"key must be {KEY_BYTES} bytes or an AeadKey handle")


async def fresh_kek(
    crypto: Crypto, secret: Secret, iterations: int
) -> tuple[AeadKey, dict[str, Any] | None]:
    """A fresh KEK for ``secret`` and the kdf record to store (a new salt)."""
    if secret.passphrase is not None:
        salt = os.urandom(SALT_BYTES)
        kek = await crypto.derive_key(secret.passphrase, salt, iterations)
        return kek, {"name": PBKDF2, "salt": _b64(salt), "iterations": iterations}
    return await _key_handle(crypto, secret), None


async def _key_handle(crypto: Crypto, secret: Secret) -> AeadKey:
    key = secret.key
    return await crypto.import_key(key) if isinstance(key, bytes) else key  # type: ignore[return-value]


async def kek_for(crypto: Crypto, ring: Ring, secret: Secret) -> AeadKey:
    """The KEK ``secret`` gives under the store's recorded parameters."""
    if ring.kdf is None:
        if secret.passphrase is not None:
            raise WrongKeyError("this store is locked with a raw key, not a passphrase")
        return await _key_handle(crypto, secret)
    if secret.passphrase is None:
        raise WrongKeyError("this store is locked with a passphrase; pass passphrase=")
    salt = base64.b64decode(ring.kdf["salt"])
    return await crypto.derive_key(secret.passphrase, salt, ring.kdf["iterations"])


async def unwrap_data_keys(crypto: Crypto, kek: AeadKey, ring: Ring, what: str) -> dict[int, bytes]:
    """Every raw data key of ``ring``; WrongKeyError(``what``) if ``kek`` does not open them."""
    raws = {}
    for key_id, blob in ring.wrapped.items():
        try:
            raws[key_id] = await unwrap_data_key(kek, key_id, blob)
        except TagMismatch:
            raise WrongKeyError(what) from None
    return raws
