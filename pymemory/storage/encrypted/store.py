"""The wrapper itself: :class:`EncryptedKv`, its optimistic transactions and key rotation."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import (
    SchemaError,
    StoreClosedError,
    ValidationError,
    WrongKeyError,
)
from ..base import (
    KvBackend,
    TransactFn,
    Writes,
    check_items,
    check_key,
    check_prefixes,
    check_writes,
)
from .cipher import (
    CLEAR_KEYS,
    DEFAULT_ITERATIONS,
    FORMAT,
    HIDDEN_KEYS,
    KEY_BYTES,
    KEYRING_KEY,
    MAX_ATTEMPTS,
    PBKDF2,
    ROTATION_BATCH,
    ROTATION_KEY,
    AeadKey,
    AesGcmCipher,
    Cipher,
    ContentionError,
    CpythonCrypto,
    Crypto,
    TagMismatch,
    UnknownKeyError,
)
from .keyring import (
    Ring,
    Secret,
    check_iterations,
    encode_ring,
    fresh_kek,
    kek_for,
    parse_ring,
    passphrase_bytes,
    secret_of,
    unwrap_data_key,
    unwrap_data_keys,
    wrap_data_key,
)
from .rotation import (
    Progress,
    check_batch_size,
    encode_progress,
    parse_progress,
    reseal_page,
    retire_old_keys,
)

_PLAIN_DATA = (
    "this store already holds unencrypted data: open it with migrate=True to encrypt it "
    "in place (stop other writers first), or export it and import into a new store"
)
_CONTENDED = (
    f"gave up after {MAX_ATTEMPTS} attempts: other writers kept changing what this "
    "EncryptedKv read; nothing was written by it, retry later"
)


async def _backoff(attempt: int) -> None:
    await asyncio.sleep(random.uniform(0, min(0.05, 0.0005 * 2**attempt)))


_RETRY = object()
_DONE = object()
_UNREAD = object()


def _snapshot(values: list[bytes | None], listed: list[list[str]]) -> Writes:
    return Writes(result=(values, listed))


def _if_ring(expected: bytes, puts: list[tuple[str, bytes]], deletes: list[str]) -> TransactFn:
    """Write ``puts``/``deletes`` only if the key record is still ``expected``; result
    _DONE, else ``(the record found,)``."""

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        if values[0] != expected:
            return Writes(result=(values[0],))
        return Writes(puts, deletes, result=_DONE)

    return write


def _refuse_hidden(keys: Sequence[str]) -> None:
    for key in keys:
        if key in HIDDEN_KEYS:
            raise ValidationError(f"{key!r} is reserved by EncryptedKv")


# --- the wrapper -------------------------------------------------------------------------


class EncryptedKv:
    """A KvBackend sealing every value (but ``meta:seq``) with AES-256-GCM over ``inner``.

    ``EncryptedKv(inner, cipher)`` is the low-level form: values sealed with ``cipher``,
    no key record, no key check, no rotation. :meth:`open` is the usual way in. The
    wrapper owns ``inner``: ``close()`` closes it.
    """

    def __init__(self, inner: KvBackend, cipher: Cipher) -> None:
        self.inner = inner
        self.cipher = cipher
        self.batch_size = ROTATION_BATCH
        self._crypto: Crypto | None = None
        self._kek: AeadKey | None = None
        self._ring: Ring | None = None
        self._keys: dict[int, AeadKey] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    # --- opening ---------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        inner: KvBackend,
        *,
        passphrase: str | None = None,
        key: bytes | AeadKey | None = None,
        crypto: Crypto | None = None,
        migrate: bool = False,
        iterations: int = DEFAULT_ITERATIONS,
        batch_size: int = ROTATION_BATCH,
    ) -> EncryptedKv:
        """Unlock ``inner`` with a passphrase or a raw 32-byte key (or an AeadKey handle).

        A store without a key record gets one (a new data key, wrapped; PBKDF2 with
        ``iterations`` for a passphrase). An existing one is checked: a wrong passphrase
        or key raises WrongKeyError and nothing is written. A store already holding
        unencrypted data raises SchemaError unless ``migrate``: then every value is
        encrypted in place, in atomic batches of ``batch_size`` keys, resumable. An
        unfinished rotation or migration is finished before this returns.
        ``crypto``: the runtime's primitives (default: CPython's)."""
        if not isinstance(migrate, bool):
            raise ValidationError("migrate must be a bool")
        secret = secret_of(passphrase, key)
        iterations = check_iterations(iterations)
        batch_size = check_batch_size(batch_size)
        crypto = crypto or CpythonCrypto()
        raw = await inner.get(KEYRING_KEY)
        ours: tuple[AeadKey, bytes] | None = None
        if raw is None:
            raw, ours = await cls._create(inner, crypto, secret, iterations, migrate)
        ring = parse_ring(raw)
        if ours is not None:  # the record this call wrote: no second derivation
            kek, raws = ours[0], {ring.write_id: ours[1]}
        else:
            kek = await kek_for(crypto, ring, secret)
            what = "wrong passphrase" if secret.passphrase is not None else "wrong key"
            raws = await unwrap_data_keys(
                crypto, kek, ring, f"{what}: this store's key check failed"
            )
        keys = {i: await crypto.import_key(raws[i]) for i in ring.wrapped}
        kv = cls(inner, AesGcmCipher(keys, ring.write_id))
        kv.batch_size = batch_size
        kv._crypto, kv._kek, kv._keys, kv._ring = crypto, kek, keys, ring
        await kv._finish_rotation()
        return kv

    @staticmethod
    async def _create(
        inner: KvBackend, crypto: Crypto, secret: Secret, iterations: int, migrate: bool
    ) -> tuple[bytes, tuple[AeadKey, bytes] | None]:
        """Write a key record unless another writer did first: (the record, and (KEK,
        data key) if it is the one written here)."""
        if not migrate and await inner.scan("", limit=1):
            raise SchemaError(_PLAIN_DATA)
        kek, kdf = await fresh_kek(crypto, secret, iterations)
        data_key = os.urandom(KEY_BYTES)
        record = encode_ring(kdf, {1: await wrap_data_key(kek, 1, data_key)}, 1)

        def create(values: list[bytes | None], listed: list[list[str]]) -> Writes:
            if values[0] is not None:
                return Writes(result=values[0])  # another writer created it meanwhile
            if not listed[0]:
                return Writes([(KEYRING_KEY, record)], result=record)
            if not migrate:
                return Writes(result=None)
            puts = [(KEYRING_KEY, record), (ROTATION_KEY, encode_progress(None, None))]
            return Writes(puts, result=record)

        raw = await inner.transact([KEYRING_KEY], create, list_prefixes=[""])
        if raw is None:
            raise SchemaError(_PLAIN_DATA)
        return raw, (kek, data_key) if raw == record else None

    async def _adopt(self, ring: Ring, raws: Mapping[int, bytes]) -> None:
        """Take ``ring`` as current, with handles for the raw data keys given (ids
        already held keep their handle)."""
        assert self._crypto is not None
        keys = {}
        for key_id in ring.wrapped:
            if key_id in self._keys:
                keys[key_id] = self._keys[key_id]
            else:
                keys[key_id] = await self._crypto.import_key(raws[key_id])
        self._keys, self._ring = keys, ring
        self.cipher = AesGcmCipher(keys, ring.write_id)

    async def _reload(self, raw: bytes | object | None = _UNREAD) -> None:
        """Follow a key record another instance changed (``raw``: its bytes, if read)."""
        if self._ring is None or self._kek is None:
            return
        if raw is _UNREAD:
            raw = await self.inner.get(KEYRING_KEY)
        if raw == self._ring.raw:
            return
        if raw is None:
            raise WrongKeyError(f"{KEYRING_KEY} is gone: the store was replaced; reopen it")
        assert isinstance(raw, bytes)
        ring = parse_ring(raw)
        raws = {}
        for key_id, blob in ring.wrapped.items():
            if key_id in self._keys:
                continue
            try:
                raws[key_id] = await unwrap_data_key(self._kek, key_id, blob)
            except TagMismatch:
                raise WrongKeyError(
                    "another instance changed this store's key; reopen it with the new "
                    "key or passphrase"
                ) from None
        await self._adopt(ring, raws)

    # --- values ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this EncryptedKv is closed")

    async def _seal(self, key: str, value: bytes) -> bytes:
        if key in CLEAR_KEYS:
            return value
        return await self.cipher.seal(key, value)

    async def _open_value(self, key: str, raw: bytes | None) -> bytes | None:
        if raw is None or key in HIDDEN_KEYS:
            return None
        if key in CLEAR_KEYS:
            return raw
        try:
            return await self.cipher.open(key, raw)
        except UnknownKeyError:
            if self._ring is None:
                raise
            await self._reload()  # sealed under a key another instance added
            return await self.cipher.open(key, raw)

    async def _open_values(
        self, keys: Sequence[str], raws: Sequence[bytes | None]
    ) -> list[bytes | None]:
        """:meth:`_open_value` of each, the sealed ones in one batch when the cipher takes
        batches (``open_many``: in the browser one WebCrypto call instead of one await
        per value, which dominates the cost there)."""
        batch = getattr(self.cipher, "open_many", None)
        if batch is None:
            return [await self._open_value(k, r) for k, r in zip(keys, raws, strict=True)]
        out: list[bytes | None] = []
        sealed: list[tuple[int, tuple[str, bytes]]] = []
        for key, raw in zip(keys, raws, strict=True):
            if raw is None or key in HIDDEN_KEYS or key in CLEAR_KEYS:
                out.append(await self._open_value(key, raw))
            else:
                sealed.append((len(out), (key, raw)))
                out.append(None)
        if sealed:
            pairs = [pair for _, pair in sealed]
            try:
                plains = await batch(pairs)
            except UnknownKeyError:
                if self._ring is None:
                    raise
                await self._reload()  # sealed under a key another instance added
                plains = await self.cipher.open_many(pairs)  # type: ignore[attr-defined]
            for (i, _), plain in zip(sealed, plains, strict=True):
                out[i] = plain
        return out

    async def _seal_values(self, pairs: Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
        """:meth:`_seal` of each, in one batch when the cipher takes batches."""
        batch = getattr(self.cipher, "seal_many", None)
        if batch is None:
            return [(k, await self._seal(k, v)) for k, v in pairs]
        out = list(pairs)  # clear keys stay as they are
        todo = [i for i, (key, _) in enumerate(pairs) if key not in CLEAR_KEYS]
        if todo:
            values = await batch([pairs[i] for i in todo])
            for i, value in zip(todo, values, strict=True):
                out[i] = (pairs[i][0], value)
        return out

    async def get(self, key: str) -> bytes | None:
        self._check_open()
        key = check_key(key)
        return await self._open_value(key, await self.inner.get(key))

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        self._check_open()
        keys = [check_key(k) for k in keys]
        raws = await self.inner.get_many(keys)
        return await self._open_values(keys, raws)

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        self._check_open()
        if not isinstance(prefix, str):
            check_key(prefix)
        ask = None if limit is None else max(0, int(limit)) + len(HIDDEN_KEYS)
        rows = await self.inner.scan(prefix, start_after=start_after, limit=ask)
        rows = [(key, raw) for key, raw in rows if key not in HIDDEN_KEYS]
        if limit is not None:
            rows = rows[: max(0, int(limit))]
        values = await self._open_values([k for k, _ in rows], [r for _, r in rows])
        return list(zip([k for k, _ in rows], values, strict=True))  # type: ignore[arg-type]

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        self._check_open()
        pairs = check_items(items)
        doomed = [check_key(k) for k in deletes]
        _refuse_hidden([k for k, _ in pairs])
        _refuse_hidden(doomed)
        if not pairs or self._ring is None:
            sealed = await self._seal_values(pairs)
            await self.inner.put_many(sealed, deletes=doomed)
            return
        for attempt in range(MAX_ATTEMPTS):
            sealed = await self._seal_values(pairs)
            write = _if_ring(self._ring.raw, sealed, doomed)
            out = await self.inner.transact([KEYRING_KEY], write)
            if out is _DONE:
                return
            await self._reload(out[0])  # rotated meanwhile: seal again with the new key
            await _backoff(attempt)
        raise ContentionError(_CONTENDED)

    async def delete_many(self, keys: Sequence[str]) -> None:
        self._check_open()
        doomed = [check_key(k) for k in keys]
        _refuse_hidden(doomed)
        await self.inner.delete_many(doomed)

    # --- transactions ----------------------------------------------------------------

    async def transact(
        self, keys: Sequence[str], fn: TransactFn, *, list_prefixes: Sequence[str] = ()
    ) -> Any:
        """Optimistic read-modify-write (module docstring): ``fn`` may run once per
        attempt; the writes of the attempt whose reads were still current land, in one
        inner transaction. ContentionError after MAX_ATTEMPTS."""
        self._check_open()
        keys = [check_key(k) for k in keys]
        prefixes = check_prefixes(list_prefixes)
        async with self._lock:  # this instance's transacts never race each other
            for attempt in range(MAX_ATTEMPTS):
                self._check_open()
                done, result = await self._attempt(keys, fn, prefixes)
                if done:
                    return result
                await _backoff(attempt)
        raise ContentionError(_CONTENDED)

    async def _attempt(
        self, keys: list[str], fn: TransactFn, prefixes: list[str]
    ) -> tuple[bool, Any]:
        ring = [KEYRING_KEY] if self._ring is not None else []
        read = ring + keys
        if prefixes:  # key lists come only from a transaction (a consistent snapshot)
            raw_values, raw_listed = await self.inner.transact(
                read, _snapshot, list_prefixes=prefixes
            )
        else:
            raw_values, raw_listed = await self.inner.get_many(read), []
        if ring:
            await self._reload(raw_values[0])
        values = await self._open_values(keys, raw_values[len(ring) :])
        listed = [[k for k in found if k not in HIDDEN_KEYS] for found in raw_listed]

        def current(now: list[bytes | None], now_listed: list[list[str]]) -> bool:
            return now == raw_values and now_listed == raw_listed

        try:
            writes = fn(values, listed)
        except Exception:
            # Raise only what fn concluded from a state that is still the store's.
            unchanged = await self.inner.transact(
                read, lambda v, ls: Writes(result=current(v, ls)), list_prefixes=prefixes
            )
            if unchanged:
                raise
            return False, None
        puts, deletes = check_writes(writes)
        _refuse_hidden([k for k, _ in puts])
        _refuse_hidden(deletes)
        sealed = await self._seal_values(puts)

        def commit(now: list[bytes | None], now_listed: list[list[str]]) -> Writes:
            if not current(now, now_listed):
                return Writes(result=_RETRY)
            return Writes(sealed, deletes, result=_DONE)

        out = await self.inner.transact(read, commit, list_prefixes=prefixes)
        return (True, writes.result) if out is _DONE else (False, None)

    # --- keys ----------------------------------------------------------------------------

    def _need_ring(self) -> tuple[Ring, Crypto, AeadKey]:
        self._check_open()
        if self._ring is None or self._crypto is None or self._kek is None:
            raise ValidationError("open the store with EncryptedKv.open to manage its keys")
        return self._ring, self._crypto, self._kek

    async def change_passphrase(self, old: str, new: str, *, iterations: int | None = None) -> None:
        """Re-wrap the data keys under a KEK from ``new`` (a new salt; ``iterations``:
        default the store's current count). Values are not touched. WrongKeyError if
        ``old`` is not the store's passphrase (nothing written). Other instances already
        open keep working; every later open needs ``new``."""
        ring, crypto, _ = self._need_ring()
        if ring.kdf is None:
            raise ValidationError("this store is locked with a raw key; use rotate(key=...)")
        old_secret, new_secret = Secret(passphrase_bytes(old)), Secret(passphrase_bytes(new))
        for attempt in range(MAX_ATTEMPTS):
            await self._reload()
            ring = self._ring
            assert ring is not None and ring.kdf is not None
            count = ring.kdf["iterations"] if iterations is None else check_iterations(iterations)
            old_kek = await kek_for(crypto, ring, old_secret)
            raws = await unwrap_data_keys(crypto, old_kek, ring, "the old passphrase is wrong")
            kek, kdf = await fresh_kek(crypto, new_secret, count)
            wrapped = {i: await wrap_data_key(kek, i, raw) for i, raw in raws.items()}
            record = encode_ring(kdf, wrapped, ring.write_id)
            if await self._swap_ring(ring.raw, record):
                self._kek = kek
                await self._adopt(parse_ring(record), {})
                return
            await _backoff(attempt)
        raise ContentionError(_CONTENDED)

    async def _swap_ring(self, expected: bytes, record: bytes, *extra: tuple[str, bytes]) -> bool:
        """Replace the key record if it is still ``expected`` (and write ``extra``)."""

        def swap(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
            if values[0] != expected:
                return Writes(result=False)
            return Writes([(KEYRING_KEY, record), *extra], result=True)

        return await self.inner.transact([KEYRING_KEY], swap)

    async def rotate(
        self,
        *,
        key: bytes | AeadKey | None = None,
        passphrase: str | None = None,
        iterations: int | None = None,
        batch_size: int | None = None,
    ) -> int:
        """Seal every value under a new data key, in atomic batches of ``batch_size`` keys,
        then drop the old data keys and ``purge()`` the inner store. With ``key`` or
        ``passphrase`` the KEK changes too (from then on only the new one opens the
        store, even if this is interrupted). Resumable: an interrupted rotation is
        finished by the next ``open`` or ``rotate``. Returns the values re-encrypted."""
        ring, crypto, kek = self._need_ring()
        if batch_size is not None:
            self.batch_size = check_batch_size(batch_size)
        new_secret = None if key is None and passphrase is None else secret_of(passphrase, key)
        moved = await self._finish_rotation()
        for attempt in range(MAX_ATTEMPTS):
            ring = self._ring
            assert ring is not None
            raws = await unwrap_data_keys(
                crypto, kek, ring, "this instance's key no longer opens the store"
            )
            new_kek, kdf = kek, ring.kdf
            if new_secret is not None:
                count = DEFAULT_ITERATIONS if iterations is None else check_iterations(iterations)
                if ring.kdf is not None and iterations is None:
                    count = ring.kdf["iterations"]
                new_kek, kdf = await fresh_kek(crypto, new_secret, count)
            new_id = max(ring.wrapped) + 1
            raws[new_id] = os.urandom(KEY_BYTES)
            wrapped = {i: await wrap_data_key(new_kek, i, raw) for i, raw in raws.items()}
            record = encode_ring(kdf, wrapped, new_id)
            progress = (ROTATION_KEY, encode_progress(sorted(ring.wrapped), None))
            if await self._swap_ring(ring.raw, record, progress):
                self._kek = kek = new_kek
                await self._adopt(parse_ring(record), raws)
                return moved + await self._finish_rotation()
            await self._reload()
            moved += await self._finish_rotation()
            await _backoff(attempt)
        raise ContentionError(_CONTENDED)

    async def _finish_rotation(self) -> int:
        """Run the recorded rotation or migration, if any, to its end; values moved."""
        moved = conflicts = 0
        while True:
            raw_progress = await self.inner.get(ROTATION_KEY)
            if raw_progress is None:
                return moved
            progress = parse_progress(raw_progress)
            await self._reload()
            ring = self._ring
            assert ring is not None
            page = await self.inner.scan("", start_after=progress.after, limit=self.batch_size)
            if page:
                step = await reseal_page(self.inner, self.cipher, ring, progress, page)
            else:
                step = await self._retire_old_keys(ring, progress)
            if step is None:
                conflicts += 1
                if conflicts >= MAX_ATTEMPTS:
                    raise ContentionError(_CONTENDED)
                await _backoff(conflicts)
                continue
            conflicts = 0
            moved += step

    async def _retire_old_keys(self, ring: Ring, progress: Progress) -> int | None:
        """End a rotation: retire the old data keys and the progress record, then purge
        the inner store; None if it raced."""
        record = await retire_old_keys(self.inner, ring, progress)
        if record is None:
            return None
        await self._adopt(parse_ring(record), {})
        await self.inner.purge()  # the old ciphertexts (or plaintexts) out of the files
        return 0

    def key_info(self) -> dict[str, Any]:
        """What the key record says (no secrets): kdf parameters, data key ids, the write key."""
        ring, _, _ = self._need_ring()
        kdf = None if ring.kdf is None else {"name": PBKDF2, "iterations": ring.kdf["iterations"]}
        return {
            "format": FORMAT,
            "kdf": kdf,
            "key_ids": sorted(ring.wrapped),
            "write_id": ring.write_id,
        }

    # --- the rest of the protocol --------------------------------------------------------

    def peek(self, key: str) -> bytes | None:
        """The inner store's ``peek`` for the clear ``meta:seq``; BlockingIOError for
        anything else or an inner store without ``peek`` (then use ``get``)."""
        inner_peek = getattr(self.inner, "peek", None)
        if self._closed:
            raise StoreClosedError("this EncryptedKv is closed")
        if key not in CLEAR_KEYS or inner_peek is None:
            raise BlockingIOError("EncryptedKv.peek only reads clear records")
        return inner_peek(key)

    async def room(self) -> dict[str, Any]:
        """The inner store's room (see :mod:`.room`); None where it cannot tell."""
        self._check_open()
        inner_room = getattr(self.inner, "room", None)
        if inner_room is None:
            return dict.fromkeys(("available_bytes", "usage_bytes", "quota_bytes", "reserve_bytes"))
        return await inner_room()

    async def purge(self) -> None:
        self._check_open()
        await self.inner.purge()

    async def close(self) -> None:
        """Close this wrapper and the inner store. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._keys.clear()
        await self.inner.close()
