"""The KvBackend protocol: the one storage interface every backend implements.

Keys are ``str``; values are ``bytes``. Scans return keys in Unicode code point order
(what SQLite's BINARY collation gives for UTF-8). Writes are atomic per call: a
``put_many`` either lands whole or not at all, and once it returns the batch is durable
to the backend's ability (a file for SQLite, a committed transaction for IndexedDB).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Protocol, runtime_checkable

from ..errors import ValidationError

MAX_KEY_CHARS = 1024


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
