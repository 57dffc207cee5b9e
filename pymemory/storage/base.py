"""The KvBackend protocol: the one storage interface every backend implements.

Keys are ``str``; values are ``bytes``. Scans return keys in Unicode code point order
(what SQLite's BINARY collation gives for UTF-8). Writes are atomic per call: a
``put_many`` either lands whole or not at all, and once it returns the batch is durable
to the backend's ability (a file for SQLite, a committed transaction for IndexedDB).

``transact`` is the read-modify-write that several writers need: it reads some keys (and
the key lists of some prefixes), hands them to a synchronous function and applies the
writes that function returns, all in ONE backend transaction (``BEGIN IMMEDIATE`` on
SQLite, one ``readwrite`` transaction on IndexedDB), so no other writer, in this process
or another, can slip in between the read and the write.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import ValidationError

MAX_KEY_CHARS = 1024


@dataclass(frozen=True)
class Writes:
    """What a ``transact`` function returns: one batch (``put_many`` semantics: the put
    wins over a delete of the same key) and a ``result`` handed back to the caller."""

    puts: Sequence[tuple[str, bytes]] = ()
    deletes: Sequence[str] = ()
    result: Any = None


#: ``fn(values, listed) -> Writes``: ``values`` in the order of the keys asked for (None:
#: absent), ``listed[i]`` the keys under the i-th prefix, ascending. It runs inside the
#: transaction, possibly on the backend's own thread: it must only compute (no I/O, no
#: await, no shared mutable state) and is called exactly once per ``transact`` (over an
#: EncryptedKv: once per attempt of its optimistic transact; see storage/encrypted.py).
TransactFn = Callable[[list[bytes | None], list[list[str]]], Writes]


@runtime_checkable
class KvBackend(Protocol):
    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None."""
        ...

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Values in the order of ``keys``; None where a key is absent."""
        ...

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        """Write ``items`` and remove ``deletes`` as one atomic batch.

        When a key appears in both, the put wins. Later duplicates of a key win.
        """
        ...

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove ``keys`` (absent keys are ignored) as one atomic batch."""
        ...

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        """Pairs whose key starts with ``prefix``, ascending, after ``start_after``."""
        ...

    async def transact(
        self, keys: Sequence[str], fn: TransactFn, *, list_prefixes: Sequence[str] = ()
    ) -> Any:
        """Atomic read-modify-write: in one transaction read ``keys`` and the keys under
        each of ``list_prefixes``, call ``fn(values, listed)`` and apply the ``Writes`` it
        returns. Returns ``Writes.result``. If ``fn`` raises, nothing is written and the
        exception propagates unchanged. No other write lands between the read and the
        write, from this process or another."""
        ...

    async def purge(self) -> None:
        """Make deleted data unrecoverable from the backend's own files as far as it can
        (SQLite: deleted records are zeroed by ``secure_delete``; this also checkpoints and
        truncates the write-ahead log). A no-op where the backend cannot (MapKv: nothing
        to do; IndexedDB: the browser compacts its files on its own schedule)."""
        ...

    async def close(self) -> None:
        """Release resources. Further calls raise StoreClosedError. Idempotent."""
        ...


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise ValidationError(f"KV key must be str, got {type(key).__name__}")
    if not key or len(key) > MAX_KEY_CHARS:
        raise ValidationError(f"KV key must be 1..{MAX_KEY_CHARS} characters")
    if "\x00" in key:
        raise ValidationError("KV key must not contain NUL")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("KV key must not contain lone surrogates") from None
    return key


def check_value(value: object) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise ValidationError(f"KV value must be bytes, got {type(value).__name__}")
    return bytes(value)


def check_items(items: Iterable[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    out = []
    for pair in items:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ValidationError("put_many takes (key, value) pairs")
        out.append((check_key(pair[0]), check_value(pair[1])))
    return out


def check_prefixes(prefixes: Iterable[str]) -> list[str]:
    out = []
    for prefix in prefixes:
        if not isinstance(prefix, str):
            raise ValidationError(f"a prefix must be str, got {type(prefix).__name__}")
        if prefix:
            check_key(prefix)
        out.append(prefix)
    return out


def check_writes(writes: object) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The checked puts and deletes of what a transact function returned."""
    if not isinstance(writes, Writes):
        raise ValidationError(
            f"a transact function must return Writes, got {type(writes).__name__}"
        )
    if isinstance(writes.deletes, (str, bytes)):
        raise ValidationError("Writes.deletes must be a sequence of keys")
    return check_items(writes.puts), [check_key(k) for k in writes.deletes]


async def iter_prefix(
    kv: KvBackend, prefix: str, *, page_size: int = 1000
) -> AsyncIterator[tuple[str, bytes]]:
    """Every pair under ``prefix``, fetched page by page."""
    after: str | None = None
    while True:
        page = await kv.scan(prefix, start_after=after, limit=page_size)
        for pair in page:
            yield pair
        if len(page) < page_size:
            return
        after = page[-1][0]
