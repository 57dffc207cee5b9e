"""Connections: up to ``max_size`` autocommit connections, made by the call that needs one.

A call takes an idle connection (the most recently returned) or, when none is idle and
fewer than ``max_size`` are open, connects itself, right then, bounded by
``connect_timeout_s``; otherwise it waits (bounded too) for one to come back. There is
no background reconnection and no backoff: while the server is down a call fails at once
with what connecting said (retryable), and the first call after it is back connects and
succeeds. A connection that comes back broken, closed or inside a transaction is closed
and its slot freed; :meth:`Connections.discard_idle` drops every idle one after one
turned out dead (a server restart kills them all). Idle connections beyond ``min_size``
unused for :data:`MAX_IDLE_S`, and any older than :data:`MAX_LIFETIME_S`, are closed
when the pool is next used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .errors import ServerUnavailableError, closed_error, connect_error

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    Conn = AsyncConnection[Any]

log = logging.getLogger("pymemory")

MAX_IDLE_S = 600.0
MAX_LIFETIME_S = 3600.0


class Connections:
    """The connections of one database (see the module docstring)."""

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int,
        max_size: int,
        connect_timeout_s: float,
        configure: Callable[[Conn], Awaitable[None]],
    ) -> None:
        self._conninfo = conninfo
        self._min = min_size
        self._max = max_size
        self.connect_timeout_s = connect_timeout_s
        self._configure = configure
        self._idle: deque[tuple[Conn, float]] = deque()  # (connection, returned at)
        self._expires: dict[int, float] = {}  # id(connection) -> when to retire it
        self._size = 0  # open or being opened
        self._waiters: deque[asyncio.Future[Conn | None]] = deque()
        self.closed = False

    async def connect(self, timeout_s: float) -> Conn:
        """A new configured connection, not counted in the pool (see :meth:`adopt`)."""
        import psycopg

        async def attempt() -> Conn:
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo,
                autocommit=True,
                client_encoding="UTF8",
                connect_timeout=max(2, round(timeout_s)),  # libpq: whole seconds, >= 2
            )
            try:
                await self._configure(conn)
            except BaseException:
                await conn.close()
                raise
            return conn

        try:
            return await asyncio.wait_for(attempt(), max(0.001, timeout_s))
        except TimeoutError:
            raise ServerUnavailableError(
                f"PostgreSQL did not accept a connection within {timeout_s:.1f} s"
                " (connect_timeout_s); nothing was written. Retry when it is reachable."
            ) from None
        except (psycopg.Error, OSError) as exc:
            raise connect_error(exc) from None

    def adopt(self, conn: Conn) -> None:
        """Keep ``conn`` (from :meth:`connect`) as an idle connection of the pool."""
        self._size += 1
        self._expire_at(conn)
        self._idle.append((conn, time.monotonic()))

    def _expire_at(self, conn: Conn) -> None:
        self._expires[id(conn)] = time.monotonic() + MAX_LIFETIME_S * random.uniform(0.9, 1.0)

    async def acquire(self) -> Conn:
        """A live-looking connection: idle, new, or returned by another call within
        ``connect_timeout_s`` (ServerUnavailableError otherwise; StoreClosedError once
        closed). Give it back with :meth:`release`."""
        deadline = time.monotonic() + self.connect_timeout_s
        while True:
            if self.closed:
                raise closed_error("connecting")
            await self._prune()
            if self._idle:
                return self._idle.pop()[0]
            if self._size < self._max:
                self._size += 1
                try:
                    conn = await self.connect(deadline - time.monotonic())
                except BaseException:
                    self._free_slot()
                    raise
                self._expire_at(conn)
                if self.closed:
                    await self._close(conn)
                    self._free_slot()
                    raise closed_error("connecting")
                return conn
            conn = await self._wait(deadline)
            if conn is not None:
                return conn

    async def _wait(self, deadline: float) -> Conn | None:
        """Wait for a returned connection (or a freed slot: None) until ``deadline``."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServerUnavailableError(
                f"PostgreSQL: all {self._max} connections stayed busy for"
                f" {self.connect_timeout_s:g} s (connect_timeout_s); nothing was written."
                " Retry, or raise max_connections."
            )
        waiter: asyncio.Future[Conn | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait({waiter}, timeout=remaining)
        except BaseException:
            # Cancelled: a connection handed over meanwhile goes back to the pool.
            if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                await self.release(waiter.result())
            waiter.cancel()
            raise
        if waiter.done():
            return waiter.result()
        waiter.cancel()  # timed out; release() skips it
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)
        return None

    def _hand_over(self, conn: Conn | None) -> bool:
        """Give ``conn`` (None: a free slot) to the longest waiting call, if any."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False

    def _free_slot(self) -> None:
        self._size -= 1
        self._hand_over(None)  # a waiter may connect in its place

    async def release(self, conn: Conn) -> None:
        """Take back a connection from :meth:`acquire`: kept if it is usable and idle
        (no transaction open), closed otherwise."""
        from psycopg.pq import TransactionStatus

        usable = (
            not self.closed
            and not conn.closed
            and not conn.broken
            and conn.pgconn.transaction_status == TransactionStatus.IDLE
            and self._expires.get(id(conn), 0.0) > time.monotonic()
        )
        if not usable:
            await self._close(conn)
            self._free_slot()
            return
        if not self._hand_over(conn):
            self._idle.append((conn, time.monotonic()))

    async def discard_idle(self) -> int:
        """Close every idle connection (after one was found dead); how many."""
        doomed = [conn for conn, _ in self._idle]
        self._idle.clear()
        for conn in doomed:
            await self._close(conn)
            self._free_slot()
        return len(doomed)

    async def _prune(self) -> None:
        """Close idle connections past their lifetime, or idle too long beyond min_size."""
        now = time.monotonic()
        while self._idle:
            conn, since = self._idle[0]  # the longest idle
            old = self._expires.get(id(conn), 0.0) <= now or conn.closed
            if not old and not (self._size > self._min and now - since > MAX_IDLE_S):
                break
            self._idle.popleft()
            await self._close(conn)
            self._free_slot()

    async def _close(self, conn: Conn) -> None:
        self._expires.pop(id(conn), None)
        with contextlib.suppress(Exception):
            await conn.close()

    async def close(self) -> None:
        """Close the idle connections (those in use close when they come back) and wake
        every waiting call (StoreClosedError)."""
        self.closed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
        await self.discard_idle()
