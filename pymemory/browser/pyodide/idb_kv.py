"""IndexedDbKv: the KvBackend over IndexedDB, with its JS half ``idb_kv.mjs`` beside it.

The JS half runs each batch in one IndexedDB transaction (``transact`` calls back into
Python while its transaction is active); this half checks keys and values, keeps room
under the origin's quota (:mod:`pymemory.storage.room`) and types the browser's failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import js
from pyodide.ffi import JsException, create_proxy, to_js

from ...errors import QuotaExceededError, StorageError, StoreClosedError, ValidationError, shown
from ...storage.base import TransactFn, check_items, check_key, check_prefixes, check_writes
from ...storage.room import MIB, RoomGuard, RoomReading, check_reserve, frees_room
from .bridge import load_bridge, split_values, to_uint8

#: The JS half of IndexedDbKv, package data beside this module.
IDB_BRIDGE_FILE = "idb_kv.mjs"


async def idb_bridge() -> Any:
    """The IndexedDB bridge module (``idb_kv.mjs`` from the wheel), imported once per
    interpreter through a Blob URL. Raises StorageError if this JS realm cannot import it."""
    return await load_bridge(IDB_BRIDGE_FILE)


#: The bridge methods that write: after one fails, IndexedDbKv checks the database.
_WRITES = frozenset({"putMany", "deleteMany", "transact"})

#: Room an IndexedDbKv leaves under the origin's quota by default: LevelDB needs free disk
#: to compact, and a write that fails at the disk's limit can cost the whole database.
DEFAULT_RESERVE_BYTES = 32 * MIB


class IndexedDbKv:
    """KvBackend over one IndexedDB object store (binary UTF-8 keys, so the store's byte
    order is code point order). Each put_many / delete_many is one transaction. Writes
    keep ``reserve_bytes`` under the origin's quota (``navigator.storage.estimate()``; see
    :mod:`pymemory.storage.room`)."""

    def __init__(
        self, handle: Any, name: str, bridge: Any, reserve_bytes: int = DEFAULT_RESERVE_BYTES
    ) -> None:
        self._h = handle
        self.name = name
        self._closed = False
        self._bridge = bridge
        self._room = RoomGuard(reserve_bytes, self._measure)
        self._persisted: bool | None = None
        self._room_kept = False  # the room value for deletes is stored (idb_kv.mjs)

    @classmethod
    async def open(
        cls, name: str, durability: str = "strict", *, reserve_bytes: int = DEFAULT_RESERVE_BYTES
    ) -> IndexedDbKv:
        """Open (creating if needed) the IndexedDB database ``name``. ``durability`` is
        ``"strict"`` (a write resolves once it is on disk) or ``"relaxed"``.
        ``reserve_bytes``: room under the origin's quota writes leave (0: none)."""
        if not isinstance(name, str) or not name:
            raise ValidationError("the IndexedDB database name must be a non-empty string")
        if durability not in ("strict", "relaxed"):
            raise ValidationError(
                f"durability must be 'strict' or 'relaxed', not {shown(durability)}"
            )
        check_reserve(reserve_bytes)
        bridge = await idb_bridge()
        if getattr(js, "indexedDB", None) is None:
            raise StorageError("this JS runtime has no IndexedDB (a browser page or worker has)")
        try:
            handle = await bridge.open(name, durability)
        except JsException as exc:
            raise StorageError(f"cannot open IndexedDB database {name!r}: {exc}") from None
        kv = cls(handle, name, bridge, reserve_bytes)
        await kv._keep_room()
        return kv

    async def _measure(self) -> RoomReading | None:
        try:
            est = await self._bridge.estimate()
        except JsException as exc:
            raise StorageError(f"navigator.storage.estimate() failed: {exc}") from None
        if est is None:
            return None
        persisted = est.persisted  # JS null (no StorageManager.persisted) is not a bool
        self._persisted = persisted if isinstance(persisted, bool) else None
        usage, quota = int(est.usage), int(est.quota)
        return RoomReading(available=max(quota - usage, 0), usage=usage, quota=quota)

    async def room(self) -> dict[str, Any]:
        """The origin's usage and quota as the browser estimates them, the reserve, and
        ``persisted``: whether the browser keeps this origin's storage under storage
        pressure (``navigator.storage.persisted()``; None where unknown)."""
        await self._room.refresh(force=True)
        return {**self._room.report(), "persisted": self._persisted}

    async def _call(self, method: str, *args: Any) -> Any:
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        try:
            return await getattr(self._h, method)(*args)
        except JsException as exc:
            failure = str(exc)
        if method in _WRITES:
            failure += await self._check_after_failed_write(method, failure)
        if "QuotaExceededError" in failure:
            raise QuotaExceededError(
                f"IndexedDB {method}: the browser's storage is full ({failure}); nothing was"
                " written. Delete or clear memories and retry."
            )
        raise StorageError(f"IndexedDB {method} failed: {failure}")

    async def _check_after_failed_write(self, method: str, failure: str) -> str:
        """A write failed (an aborted transaction writes nothing): check that the database
        still opens and answers a read (``idb_kv.mjs`` reopens a connection the browser
        closed, as Chromium does after an I/O error). When the disk runs short Chromium
        deletes a best-effort origin's data: say so instead of writing on into an empty
        store. Returns what to add to the error message."""
        self._room.forget()  # measure again before the next write
        try:
            records = int(await self._h.verify())
        except JsException as exc:
            raise StorageError(
                f"IndexedDB {method} failed ({failure}) and the database {self.name!r} no"
                f" longer exists ({exc}): the browser deleted it, as Chromium does to a"
                " best-effort origin's storage when the disk runs short. Ask for"
                " persistent storage (createAgentMemory({ persist: true })) to prevent it."
            ) from None
        if records < 0:
            return (
                "; the browser closed the database and cannot reopen it now (a full disk?):"
                " calls work again once there is room"
            )
        return ""

    async def get(self, key: str) -> bytes | None:
        return (await self.get_many([key]))[0]

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = [check_key(k) for k in keys]
        if not keys:
            if self._closed:
                raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
            return []
        res = await self._call("getMany", to_js(keys))
        return split_values(res.blob.to_bytes(), res.lengths.to_py())

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        pairs = check_items(items)
        doomed = [check_key(k) for k in deletes]
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        if not pairs and not doomed:
            return
        await self._room.refresh()
        self._room.check(pairs, doomed)
        blob = b"".join(v for _, v in pairs)

        async def put() -> None:
            await self._call(
                "putMany",
                to_js([k for k, _ in pairs]),
                to_uint8(blob),
                to_js([len(v) for _, v in pairs]),
                to_js(doomed),
            )

        try:
            await put()
        except QuotaExceededError:
            if not (frees_room(pairs, doomed) and await self._release_room()):
                raise
            await put()  # nothing of it was written: all of it, once more
        self._room.wrote(pairs)
        if doomed and not self._room_kept:
            await self._keep_room()

    async def _release_room(self) -> int:
        """Free the room value ``idb_kv.mjs`` keeps for deletes; the bytes freed (0: none
        was left). Called when the browser refused a batch that frees room for the quota."""
        self._room_kept = False
        try:
            return int(await self._h.releaseRoom())
        except JsException:
            return 0

    async def _keep_room(self) -> None:
        """Store the room value again if there is room (after a batch that deleted)."""
        try:
            self._room_kept = bool(await self._h.keepRoom())
        except JsException:
            self._room_kept = False

    async def delete_many(self, keys: Sequence[str]) -> None:
        doomed = [check_key(k) for k in keys]
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")
        if doomed:
            await self._call("deleteMany", to_js(doomed))
            if not self._room_kept:
                await self._keep_room()

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        if not isinstance(prefix, str):
            check_key(prefix)
        res = await self._call("scan", prefix, start_after, -1 if limit is None else int(limit))
        keys = res.keys.to_py()
        values = split_values(res.blob.to_bytes(), res.lengths.to_py())
        return list(zip(keys, values, strict=True))  # type: ignore[arg-type]

    async def transact(
        self, keys: Sequence[str], fn: TransactFn, *, list_prefixes: Sequence[str] = ()
    ) -> Any:
        keys = [check_key(k) for k in keys]
        prefixes = check_prefixes(list_prefixes)
        await self._room.refresh()
        outcome: dict[str, Any] = {}

        def run(blob: Any, lengths: Any, listed: Any) -> Any:
            # Called by idb-kv.mjs inside the IndexedDB transaction. Never raises into JS:
            # an exception is kept here and re-raised once the transaction has aborted.
            try:
                values = split_values(blob.to_bytes(), lengths.to_py())
                writes = fn(values, [list(ks) for ks in listed.to_py()])
                puts, deletes = check_writes(writes)
                self._room.check(puts, deletes)
            except BaseException as exc:  # re-raised below, unchanged
                outcome["error"] = exc
                return None
            outcome["result"] = writes.result
            outcome["puts"] = puts
            outcome["deletes"] = deletes
            outcome["replay"] = (values, [list(ks) for ks in listed.to_py()], writes)
            return to_js(
                [
                    [k for k, _ in puts],
                    to_uint8(b"".join(v for _, v in puts)),
                    [len(v) for _, v in puts],
                    deletes,
                ]
            )

        proxy = create_proxy(run)
        try:
            await self._call("transact", to_js(keys), to_js(prefixes), proxy)
        except StorageError as exc:
            if "error" in outcome:
                raise outcome["error"] from None
            replay = outcome.get("replay")
            if not (
                isinstance(exc, QuotaExceededError)
                and replay is not None
                and frees_room(outcome["puts"], outcome["deletes"])
                and await self._release_room()
            ):
                raise
        else:
            replay = None
        finally:
            proxy.destroy()
        if "error" in outcome:
            raise outcome["error"]
        if replay is not None:
            # The browser refused this freeing batch for the quota and the room value is
            # released: the same writes once more, if what they were computed from is
            # still what is stored (nothing of the batch was written).
            read, listed, writes = replay

            def again(values: list[bytes | None], now: list[list[str]]) -> Any:
                if values != read or now != listed:
                    raise StorageError(
                        "the store changed while room was made for this write; nothing"
                        " was written, retry"
                    )
                return writes

            return await self.transact(keys, again, list_prefixes=prefixes)
        self._room.wrote(outcome.get("puts", ()))
        if outcome.get("deletes") and not self._room_kept:
            await self._keep_room()  # this batch deleted: there may be room for it again
        return outcome.get("result")

    async def purge(self) -> None:
        # IndexedDB gives no control over its files: the browser compacts them (Chrome's
        # LevelDB, Firefox's and Safari's SQLite) on its own schedule. Nothing to do.
        if self._closed:
            raise StoreClosedError(f"the IndexedDB store {self.name!r} is closed")

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._h.close()

    async def destroy(self) -> None:
        """Close and delete the whole database (used by diagnostics and tests)."""
        self._closed = True
        await self._h.destroy()
