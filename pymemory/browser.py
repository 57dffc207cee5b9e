"""The browser boundary: the one module that knows it runs in Pyodide.

``IndexedDbKv`` is the KvBackend over the JS bridge in ``worker/idb-kv.mjs``. Batches
cross the boundary as one Uint8Array of concatenated values plus a list of lengths, so a
1000-item batch is one conversion, not 1000. ``create_api(bridge)`` builds the RpcApi the
worker exposes to pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import js
from pyodide.ffi import JsException, to_js

from .errors import StorageError, StoreClosedError
from .kv.base import check_items, check_key
from .rpc import RpcApi


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


class IndexedDbKv:
    """KvBackend over one IndexedDB object store (binary UTF-8 keys, so the store's byte
    order is code point order). Each put_many / delete_many is one transaction."""

    def __init__(self, handle: Any, name: str) -> None:
        self._h = handle
        self.name = name
        self._closed = False

    @classmethod
    async def open(cls, bridge: Any, name: str, durability: str = "strict") -> IndexedDbKv:
        try:
            handle = await bridge.open(name, durability)
        except JsException as exc:
            raise StorageError(f"cannot open IndexedDB database {name!r}: {exc}") from None
        return cls(handle, name)

    async def _call(self, method: str, *args: Any) -> Any:
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        try:
            return await getattr(self._h, method)(*args)
        except JsException as exc:
            raise StorageError(f"IndexedDB {method} failed: {exc}") from None

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
        blob = b"".join(v for _, v in pairs)
        await self._call(
            "putMany",
            to_js([k for k, _ in pairs]),
            _to_uint8(blob),
            to_js([len(v) for _, v in pairs]),
            to_js(doomed),
        )

    async def delete_many(self, keys: Sequence[str]) -> None:
        doomed = [check_key(k) for k in keys]
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        if doomed:
            await self._call("deleteMany", to_js(doomed))

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        if not isinstance(prefix, str):
            check_key(prefix)
        res = await self._call("scan", prefix, start_after, -1 if limit is None else int(limit))
        keys = res.keys.to_py()
        values = _split(res.blob.to_bytes(), res.lengths.to_py())
        return list(zip(keys, values, strict=True))  # type: ignore[arg-type]

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._h.close()

    async def destroy(self) -> None:
        """Close and delete the whole database (used by diagnostics and tests)."""
        self._closed = True
        await self._h.destroy()


def create_api(bridge: Any, *, durability: str = "strict", **memory_options: Any) -> RpcApi:
    """The API the worker exposes: one Memory per IndexedDB database name."""

    async def kv_factory(name: str) -> IndexedDbKv:
        return await IndexedDbKv.open(bridge, name, durability)

    return RpcApi(kv_factory, **memory_options)
