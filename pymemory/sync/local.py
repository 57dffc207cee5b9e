"""The device's side of sync: which backend the replicator reads and writes, the seal it
stamps with, and its own records under ``sync:`` (never synced, never logged)::

    sync:device      {"id": "<random>"}            this replica's id (made at its first sync)
    sync:clock       {"h": N}                      the last hybrid-logical-clock value used
    sync:hub:<hub>   {"since": ..., "pushed": N}   the hub's feed position, the local log's
    sync:k:<key>     {"h", "d", "x", "r"}          a key's last synced clock and device, the
                                                   digest of the local value then, the hub's rev
                                                   (``"gone": true``: the hub lost it)
    sync:unlogged    {"keys": [...]}               pulled keys not yet in the change log
    sync:repush      {"keys": [...]}               keys the hub lost (deleted at the CouchDB
                                                   level): pushed again as they were
    sync:last        {"at", "pushed", "pulled", "conflicts", "hub", "since"}   the last round
    sync:lost:<d>    {"k", "v"}                    a conflict's loser on its way to history
                                                   (losers.py)

Over an :class:`~pymemory.storage.EncryptedKv` the replicator works on its inner backend
(sealed bytes) and stamps with the store's cipher (:class:`CipherSealer`): it never holds
key material. ``sync:`` values are stored in the clear (they hold no content).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import CorruptValueError, SyncIntegrityError
from ..storage import EncryptedKv, KvBackend
from .records import KEY_RECORD

SYNC = "sync:"
DEVICE_KEY = "sync:device"
CLOCK_KEY = "sync:clock"
UNLOGGED_KEY = "sync:unlogged"
LAST_KEY = "sync:last"
REPUSH_KEY = "sync:repush"
META_PREFIX = "sync:k:"


def hub_key(hub: str) -> str:
    return f"sync:hub:{hub}"


def meta_key(key: str) -> str:
    return META_PREFIX + key


def encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def decode(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None  # a damaged sync record reads as absent: the key is re-synced


def new_device_id() -> str:
    return secrets.token_hex(8)


class Sealer(Protocol):
    """Seals and opens short records with the store's key, bound to a name."""

    async def seal(self, name: str, data: bytes) -> bytes: ...

    async def open(self, name: str, sealed: bytes) -> bytes: ...


class CipherSealer:
    """The stamps of an encrypted store, sealed by its EncryptedKv's cipher."""

    def __init__(self, kv: EncryptedKv) -> None:
        self._kv = kv

    async def seal(self, name: str, data: bytes) -> bytes:
        return await self._kv.cipher.seal(name, data)

    async def open(self, name: str, sealed: bytes) -> bytes:
        try:
            return await self._kv.cipher.open(name, sealed)
        except CorruptValueError:
            raise SyncIntegrityError(
                f"the hub's record {name[len(SYNC) :]!r} fails its seal: it was altered or "
                "moved from another key; nothing of its batch was written"
            ) from None

    async def seal_many(self, pairs: Sequence[tuple[str, bytes]]) -> list[bytes]:
        batch = getattr(self._kv.cipher, "seal_many", None)
        if batch is not None:
            return await batch(pairs)
        return [await self.seal(n, d) for n, d in pairs]


@dataclass(frozen=True)
class Local:
    """Where a round reads and writes: ``raw`` holds the bytes that travel, ``host`` is
    the store the change log is written through (the EncryptedKv, so the log stays
    sealed), ``sealer`` stamps records (encrypted stores with their key only)."""

    raw: KvBackend
    host: KvBackend
    sealer: Sealer | None
    encrypted: bool

    @classmethod
    async def of(cls, kv: KvBackend) -> Local:
        if isinstance(kv, EncryptedKv):
            return cls(kv.inner, kv, CipherSealer(kv), True)
        encrypted = await kv.get(KEY_RECORD) is not None  # an encrypted store, opened raw
        return cls(kv, kv, None, encrypted)

    @property
    def can_push(self) -> bool:
        """An encrypted store opened without its key only pulls (a new device's first
        sync): its pushes could not be stamped."""
        return not self.encrypted or self.sealer is not None
