"""Connections: up to ``max_size`` autocommit connections, made by the call that needs one.

A call takes an idle connection (the most recently returned) or, when none is idle and
fewer than ``max_size`` are open, connects itself, right then (libpq's connect timeout
bounds it); otherwise it waits, until ``connect_timeout_s`` has passed since it asked, for
one to come back or a slot to free. There is no background reconnection and no backoff:
while the server is down a call fails at once with what connecting said, and the first
call after it is back connects and succeeds.

Nothing here waits on the network without a bound, and nothing is left half done by a
cancelled task: giving a connection back (:meth:`Connections.release`) never awaits; one
that comes back broken, closed, inside a transaction or a pipeline (a task cancelled in
the middle of a call) is closed on the spot and its slot handed to the next waiter; a
waiter cancelled just as a connection or a slot was handed to it passes it on. A
:class:`Watchdog` cuts the socket of a call that outlives its bound, so whatever awaits
the server (psycopg's own clean-up after a cancellation included) fails at once.
(``asyncio.wait_for`` is not used: on Python 3.11 it can swallow a cancellation that
arrives as the awaited call finishes, and a task stopped that way never stops.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import socket
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


def libpq_timeout(seconds: float) -> int:
    """libpq's ``connect_timeout``: whole seconds, at least 2."""
    return max(2, math.ceil(seconds))


def discard(conn: Conn) -> None:
    """Close ``conn`` now, without a round trip (the server rolls back what it had open)."""
    with contextlib.suppress(Exception):
        conn.pgconn.finish()


def abort(conn: Conn) -> None:
    """Shut ``conn``'s socket down (not closing its descriptor, which psycopg may be
    waiting on): a pending read sees the end of the stream and fails at once."""
    try:
        copy = os.dup(conn.pgconn.socket)
    except Exception:
        return  # already closed
    try:
        sock = socket.socket(fileno=copy)  # owns ``copy`` from here on
    except OSError:
        os.close(copy)
        return
    with sock, contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class Watchdog:
    """``with Watchdog(conn, seconds):`` cuts ``conn``'s socket (:func:`abort`) if the
    block still runs after ``seconds`` (None: never); ``fired`` tells whether it did."""

    def __init__(self, conn: Conn, seconds: float | None) -> None:
        self.conn = conn
        self.seconds = seconds
        self.fired = False
        self._timer: asyncio.TimerHandle | None = None

    def _fire(self) -> None:
        self.fired = True
        log.warning("PostgreSQL: a call ran past %.1f s; cutting its connection", self.seconds)
        abort(self.conn)

    def __enter__(self) -> Watchdog:
        if self.seconds is not None:
            self._timer = asyncio.get_running_loop().call_later(self.seconds, self._fire)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()


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
        self._size = 0  # open, being opened or lent out
        self._waiters: deque[asyncio.Future[Conn | None]] = deque()
        self.closed = False

    @property
    def size(self) -> int:
        """Connections open, being opened or lent out."""
        return self._size

    @property
    def idle(self) -> int:
        return len(self._idle)

    async def connect(self) -> Conn:
        """A new configured connection, not counted in the pool (see :meth:`adopt`);
        connecting and configuring are each bounded by ``connect_timeout_s``."""
        import psycopg

        try:
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo,
                autocommit=True,
                client_encoding="UTF8",
                connect_timeout=libpq_timeout(self.connect_timeout_s),
            )
        except (psycopg.Error, OSError) as exc:
            raise connect_error(exc) from None
        try:
            with Watchdog(conn, self.connect_timeout_s):
                await self._configure(conn)
        except BaseException as exc:
            discard(conn)
            if isinstance(exc, psycopg.Error):
                raise connect_error(exc) from None
            raise
        return conn

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
            self._prune()
            if self._idle:
                return self._idle.pop()[0]
            if self._size < self._max:
                self._size += 1
                try:
                    conn = await self.connect()
                except BaseException:
                    self._free_slot()
                    raise
                self._expire_at(conn)
                if self.closed:
                    self._drop(conn)
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
            # Cancelled: what was handed over meanwhile goes to the next in line.
            if not waiter.cancel():
                handed = waiter.result()
                if handed is None:
                    self._hand_over(None)
                else:
                    self.release(handed)
            raise
        if not waiter.cancel():  # done: not cancelled
            return waiter.result()
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)  # timed out
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

    def _drop(self, conn: Conn) -> None:
        """Close a connection of the pool and free its slot."""
        self._expires.pop(id(conn), None)
        discard(conn)
        self._free_slot()

    def release(self, conn: Conn) -> None:
        """Take back a connection from :meth:`acquire` (never waits): kept if it is
        usable and idle (no transaction or pipeline open), closed otherwise."""
        from psycopg.pq import PipelineStatus, TransactionStatus

        try:
            usable = (
                not self.closed
                and not conn.closed
                and not conn.broken
                and conn.pgconn.transaction_status == TransactionStatus.IDLE
                and conn.pgconn.pipeline_status == PipelineStatus.OFF
                and not conn.lock.locked()
                and self._expires.get(id(conn), 0.0) > time.monotonic()
            )
        except Exception:
            usable = False
        if not usable:
            self._drop(conn)
        elif not self._hand_over(conn):
            self._idle.append((conn, time.monotonic()))

    def discard_idle(self) -> int:
        """Close every idle connection (after one was found dead); how many."""
        doomed = [conn for conn, _ in self._idle]
        self._idle.clear()
        for conn in doomed:
            self._drop(conn)
        return len(doomed)

    def _prune(self) -> None:
        """Close idle connections past their lifetime, or idle too long beyond min_size."""
        now = time.monotonic()
        while self._idle:
            conn, since = self._idle[0]  # the longest idle
            old = self._expires.get(id(conn), 0.0) <= now or conn.closed
            if not old and not (self._size > self._min and now - since > MAX_IDLE_S):
                break
            self._idle.popleft()
            self._drop(conn)

    def close(self) -> None:
        """Close the idle connections (those lent out close when they come back) and
        wake every waiting call (it raises StoreClosedError)."""
        self.closed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
        self.discard_idle()
