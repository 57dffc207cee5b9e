"""SqliteKv: the KvBackend in one SQLite file (WAL), the CPython default.

sqlite3 calls block, so they run on one dedicated thread; the event loop never waits on
disk. Each put_many/delete_many/transact is one ``BEGIN IMMEDIATE`` transaction, so
several processes can share one file: writers queue on SQLite's write lock (up to
``busy_timeout_ms``, then StorageError) and a ``transact`` reads and writes under it.
``secure_delete`` is on: deleted records are overwritten with zeros in the file, and
``purge()`` also checkpoints and truncates the write-ahead log.

Writes keep a reserve of free disk space (``reserve_bytes``, see :mod:`.room`): a write
that would leave less is refused with QuotaExceededError, deletes may use the reserve, and
a disk that fills anyway (``SQLITE_FULL``) gives QuotaExceededError with the file intact.

One read runs on the caller's thread: :meth:`SqliteKv.peek`, which the change log uses to
check its position (a record of a few bytes) before every read of a Memory. It goes
through a second, read-only connection that never waits for a lock, so it costs a few
microseconds instead of a hop to the SQLite thread, and the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

from ..errors import QuotaExceededError, StorageError, StoreClosedError
from .base import TransactFn, check_items, check_key, check_prefixes, check_writes
from .room import MIB, RoomGuard, RoomReading, check_reserve

log = logging.getLogger("pymemory")

T = TypeVar("T")

#: Free disk space a SqliteKv keeps by default: room for the write-ahead log of deletes.
DEFAULT_RESERVE_BYTES = 32 * MIB

_SCHEMA = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (None: no bound)."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:  # skip the surrogate block, never valid in keys
                nxt = 0xE000
            return "".join(chars) + chr(nxt)
    return None


class SqliteKv:
    """KvBackend over a SQLite file. Open with ``await SqliteKv.open(path)``.

    ``synchronous="FULL"`` (default) makes a returned write survive power loss as well as
    a crash of the process; ``"NORMAL"`` survives a process crash only and is faster.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        executor: ThreadPoolExecutor,
        path: str,
        busy_timeout_ms: int = 10_000,
        reserve_bytes: int = DEFAULT_RESERVE_BYTES,
    ) -> None:
        self._conn = conn
        self._executor = executor
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._closed = False
        self._reader: sqlite3.Connection | None = None  # peek()'s, opened on first use
        self._reader_thread: int | None = None
        self._peek_off = path == ":memory:"  # a :memory: store has one connection
        self._room = RoomGuard(0 if path == ":memory:" else reserve_bytes, self._measure)

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        busy_timeout_ms: int = 10_000,
        reserve_bytes: int = DEFAULT_RESERVE_BYTES,
    ) -> SqliteKv:
        """Open (or create) the store. ``busy_timeout_ms``: how long a write waits for
        another connection's write transaction before it fails with StorageError.
        ``reserve_bytes``: free disk space writes leave (0: none; deletes may use it)."""
        check_reserve(reserve_bytes)
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError("synchronous must be 'FULL' or 'NORMAL'")
        if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int):
            raise ValueError("busy_timeout_ms must be an int")
        if busy_timeout_ms < 0:
            raise ValueError("busy_timeout_ms must be >= 0")
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pymemory-sqlite")
        path = str(path)

        def connect() -> sqlite3.Connection:
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            # Forgotten text must not linger in free pages of the file.
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute(_SCHEMA)
            return conn

        loop = asyncio.get_running_loop()
        try:
            conn = await loop.run_in_executor(executor, connect)
        except sqlite3.Error as exc:
            executor.shutdown(wait=False)
            raise StorageError(f"cannot open the SQLite store {path}: {exc}") from None
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(conn, executor, path, busy_timeout_ms, reserve_bytes)

    async def _measure(self) -> RoomReading | None:
        def read() -> RoomReading | None:  # file-system calls: on the SQLite thread
            try:
                st = os.statvfs(Path(self.path).parent)
            except OSError as exc:
                log.warning("cannot measure free space for %s: %s", self.path, exc)
                return None
            usage = 0
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    usage += os.stat(self.path + suffix).st_size
            return RoomReading(available=st.f_bavail * st.f_frsize, usage=usage)

        return await self._run(read)

    async def room(self) -> dict[str, Any]:
        """The free disk space, what the file uses, and the reserve (see :mod:`.room`)."""
        if self.path != ":memory:":
            await self._room.refresh(force=True)
        return self._room.report()

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise StoreClosedError(f"the SQLite store {self.path} is closed")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                raise QuotaExceededError(
                    f"SQLite ({self.path}): the disk is full; nothing was written. Delete or"
                    " clear memories (or free disk space) and retry."
                ) from None
            raise StorageError(f"SQLite ({self.path}): {exc}; nothing was written") from None

    def _transaction(self, body: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLITE_FULL may have rolled it back already
                conn.execute("ROLLBACK")
            raise
        return result

    def _read_many(self, keys: Sequence[str]) -> list[bytes | None]:
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            chunk = unique[i : i + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT key, value FROM kv WHERE key IN ({marks})"
            for k, v in self._conn.execute(sql, chunk):
                found[k] = bytes(v)
        return [found.get(k) for k in keys]

    def _list_keys(self, prefix: str) -> list[str]:
        sql, args = "SELECT key FROM kv WHERE key >= ?", [prefix]
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            sql += " AND key < ?"
            args.append(upper)
        return [k for (k,) in self._conn.execute(sql + " ORDER BY key", args)]

    async def get(self, key: str) -> bytes | None:
        key = check_key(key)

        def run() -> bytes | None:
            row = self._conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(run)

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = [check_key(k) for k in keys]

        return await self._run(lambda: self._read_many(keys))

    async def put_many(
        self, items: Sequence[tuple[str, bytes]], *, deletes: Sequence[str] = ()
    ) -> None:
        pairs = check_items(items)
        doomed = [(check_key(k),) for k in deletes]
        if not pairs and not doomed:
            return
        await self._room.refresh()

        def body(conn: sqlite3.Connection) -> None:
            self._room.check(pairs, doomed)
            if doomed:
                conn.executemany("DELETE FROM kv WHERE key = ?", doomed)
            conn.executemany("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", pairs)

        await self._run(lambda: self._transaction(body))
        self._room.wrote(pairs)

    async def delete_many(self, keys: Sequence[str]) -> None:
        doomed = [(check_key(k),) for k in keys]
        if not doomed:
            return
        await self._run(
            lambda: self._transaction(
                lambda conn: conn.executemany("DELETE FROM kv WHERE key = ?", doomed)
            )
        )

    async def scan(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> list[tuple[str, bytes]]:
        if not isinstance(prefix, str):
            check_key(prefix)
        clauses, args = ["key >= ?"], [prefix]
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            clauses.append("key < ?")
            args.append(upper)
        if start_after is not None:
            clauses.append("key > ?")
            args.append(start_after)
        sql = f"SELECT key, value FROM kv WHERE {' AND '.join(clauses)} ORDER BY key"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"

        def run() -> list[tuple[str, bytes]]:
            return [(k, bytes(v)) for k, v in self._conn.execute(sql, args)]

        return await self._run(run)

    async def transact(
        self, keys: Sequence[str], fn: TransactFn, *, list_prefixes: Sequence[str] = ()
    ) -> Any:
        keys = [check_key(k) for k in keys]
        prefixes = check_prefixes(list_prefixes)
        await self._room.refresh()
        landed: list[tuple[str, bytes]] = []

        def body(conn: sqlite3.Connection) -> Any:
            # Under BEGIN IMMEDIATE: no other connection writes until COMMIT.
            values = self._read_many(keys)
            listed = [self._list_keys(p) for p in prefixes]
            writes = fn(values, listed)
            puts, deletes = check_writes(writes)
            self._room.check(puts, deletes)
            if deletes:
                conn.executemany("DELETE FROM kv WHERE key = ?", [(k,) for k in deletes])
            if puts:
                conn.executemany("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", puts)
            landed[:] = puts
            return writes.result

        result = await self._run(lambda: self._transaction(body))
        self._room.wrote(landed)
        return result

    async def purge(self) -> None:
        """Checkpoint the WAL into the file and truncate it, so deleted records (zeroed in
        the file by ``secure_delete``) do not survive in old WAL frames. Another
        connection reading at that moment keeps the WAL alive: then this logs and returns,
        and the next purge (or the last connection's close) finishes the job."""

        def run() -> None:
            conn = self._conn
            conn.execute("PRAGMA busy_timeout=200")  # never stall a caller on a reader
            try:
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
            if busy:
                log.info("SQLite WAL of %s not truncated: another connection is busy", self.path)

        await self._run(run)

    def peek(self, key: str) -> bytes | None:
        """The value of a small record, read now on the calling thread; BlockingIOError
        if that would mean waiting (a lock held elsewhere, a ``:memory:`` store, another
        thread): then use ``await get(key)``. For tiny, hot records only (the change
        log's position): it never waits, but it does run on the caller's thread."""
        key = check_key(key)
        if self._closed:
            raise StoreClosedError(f"the SQLite store {self.path} is closed")
        if self._peek_off:
            raise BlockingIOError("peek() is off for this store")
        if self._reader is None:
            try:
                uri = Path(self.path).resolve().as_uri() + "?mode=ro"
                reader = sqlite3.connect(uri, uri=True, isolation_level=None)
                reader.execute("PRAGMA busy_timeout=0")  # never wait: fall back instead
            except sqlite3.Error as exc:
                self._peek_off = True  # e.g. a read-only folder without the -shm file
                raise BlockingIOError(f"peek() cannot open a reader: {exc}") from None
            self._reader, self._reader_thread = reader, threading.get_ident()
        try:
            if self._reader_thread != threading.get_ident():
                raise BlockingIOError("peek() is for the thread that first used it")
            row = self._reader.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise BlockingIOError(f"peek() would wait: {exc}") from None
        return None if row is None else bytes(row[0])

    async def close(self) -> None:
        if self._closed:
            return
        if self._reader is not None:
            with contextlib.suppress(sqlite3.Error):
                self._reader.close()
            self._reader = None
        try:
            await self._run(self._conn.close)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)
