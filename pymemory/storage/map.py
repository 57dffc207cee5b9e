"""MapKv: the KvBackend in a Python dict, for tests and throwaway stores."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from ..errors import StoreClosedError
from .base import TransactFn, check_items, check_key, check_prefixes, check_writes


class MapKv:
    """In-memory KvBackend. Batches are atomic because they are validated before any write.

    ``transact`` reads, calls its function and writes without yielding to the event loop;
    it writes through ``put_many``, so a subclass that instruments ``put_many`` sees every
    batch (and one that fails there fails the transaction, which then writes nothing).
    """

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._keys: list[str] = []  # sorted
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this MapKv is closed")

    async def get(self, key: str) -> bytes | None:
        self._check_open()
        return self._data.get(check_key(key))

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        self._check_open()
        return [self._data.get(k) for k in [check_key(k) for k in keys]]

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        self._check_open()
        pairs = check_items(items)
        doomed = [check_key(k) for k in deletes]
        for key in doomed:
            self._remove(key)
        for key, value in pairs:
            if key not in self._data:
                bisect.insort(self._keys, key)
            self._data[key] = value

    async def delete_many(self, keys: Sequence[str]) -> None:
        self._check_open()
        for key in [check_key(k) for k in keys]:
            self._remove(key)

    def _remove(self, key: str) -> None:
        if self._data.pop(key, None) is not None:
            del self._keys[bisect.bisect_left(self._keys, key)]

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        self._check_open()
        if not isinstance(prefix, str):
            check_key(prefix)
        if start_after is not None and start_after >= prefix:
            i = bisect.bisect_right(self._keys, start_after)
        else:
            i = bisect.bisect_left(self._keys, prefix)
        out: list[tuple[str, bytes]] = []
        while i < len(self._keys) and (limit is None or len(out) < limit):
            key = self._keys[i]
            if not key.startswith(prefix):
                break
            out.append((key, self._data[key]))
            i += 1
        return out

    async def transact(
        self, keys: Sequence[str], fn: TransactFn, *, list_prefixes: Sequence[str] = ()
    ) -> Any:
        self._check_open()
        keys = [check_key(k) for k in keys]
        prefixes = check_prefixes(list_prefixes)
        values = [self._data.get(k) for k in keys]
        listed = [self._keys_under(p) for p in prefixes]
        writes = fn(values, listed)
        puts, deletes = check_writes(writes)
        if puts or deletes:
            await self.put_many(puts, deletes=deletes)
        return writes.result

    def _keys_under(self, prefix: str) -> list[str]:
        i = bisect.bisect_left(self._keys, prefix)
        out = []
        while i < len(self._keys) and self._keys[i].startswith(prefix):
            out.append(self._keys[i])
            i += 1
        return out

    async def purge(self) -> None:
        self._check_open()  # a dict keeps nothing it deleted

    async def close(self) -> None:
        self._closed = True
