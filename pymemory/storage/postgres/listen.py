"""One connection per database that LISTENs for its namespaces' change notifications.

PostgresKv sends ``pg_notify(channel(namespace), seq)`` inside every transaction that
commits through the change log (it writes ``meta:seq``); PostgreSQL delivers it when, and
only if, that transaction commits. The :class:`Listener` runs one task on one dedicated
autocommit connection: it LISTENs to the channels someone watches and calls their
callbacks. After (re)connecting, and after LISTENing to a new channel, it calls that
channel's callbacks once, because a commit may have slipped by while nobody listened:
a callback means "look at the change log now", never "this exact change happened".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .connections import discard, libpq_timeout

if TYPE_CHECKING:
    from psycopg import AsyncConnection

log = logging.getLogger("pymemory")

Callback = Callable[[], None]
CLOSE_WAIT_S = 5.0
#: The longest wait between two attempts to reconnect: an idle Memory catches up within
#: about this long after the server is back.
MAX_RETRY_S = 1.0


class Listener:
    def __init__(self, conninfo: str, *, connect_timeout_s: float, poll_s: float = 0.2) -> None:
        self._conninfo = conninfo
        self._connect_timeout_s = connect_timeout_s
        self._poll_s = poll_s  # how soon a newly watched channel is LISTENed to
        self._callbacks: dict[str, list[Callback]] = {}
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def add(self, channel: str, callback: Callback) -> Callable[[], None]:
        """Call ``callback`` after commits on ``channel``; returns its remover."""
        self._callbacks.setdefault(channel, []).append(callback)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

        def remove() -> None:
            found = self._callbacks.get(channel, [])
            with contextlib.suppress(ValueError):
                found.remove(callback)
            if not found:
                self._callbacks.pop(channel, None)

        return remove

    def _fire(self, channels: set[str]) -> None:
        for name in channels:
            for callback in list(self._callbacks.get(name, ())):
                try:
                    callback()
                except Exception:
                    log.exception("a change-notification callback failed")

    async def _run(self) -> None:
        import psycopg

        delay = 0.1
        down_since: float | None = None  # warned once per outage, not per attempt
        while not self._closed:  # idles on its connection once nobody watches
            try:
                # psycopg bounds connecting itself (no wait_for: on Python 3.11 it can
                # swallow the cancellation that close() sends).
                conn = await psycopg.AsyncConnection.connect(
                    self._conninfo,
                    autocommit=True,
                    connect_timeout=libpq_timeout(self._connect_timeout_s),
                )
            except (psycopg.Error, OSError) as exc:
                if down_since is None:
                    down_since = time.monotonic()
                    log.warning("change notifications: cannot connect (%s); retrying", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_RETRY_S)
                continue
            if down_since is not None:
                log.info("change notifications: reconnected after %.1f s",
                         time.monotonic() - down_since)  # fmt: skip
                down_since = None
            delay = 0.1
            try:
                await self._serve(conn)
            except (psycopg.Error, OSError) as exc:
                log.warning("change notifications: connection lost (%s); reconnecting", exc)
                down_since = time.monotonic()
            finally:
                discard(conn)  # no round trip: a cancelled close() must not wait here

    async def _serve(self, conn: AsyncConnection[Any]) -> None:
        listening: set[str] = set()
        while not self._closed:
            wanted = set(self._callbacks)
            new = wanted - listening
            for name in sorted(new):
                await conn.execute(f'LISTEN "{name}"')
            for name in sorted(listening - wanted):
                await conn.execute(f'UNLISTEN "{name}"')
            listening = wanted
            self._fire(new)  # what committed before the LISTEN took effect
            async with contextlib.aclosing(conn.notifies(timeout=self._poll_s)) as notes:
                async for note in notes:
                    self._fire({note.channel})
                    if set(self._callbacks) != listening:
                        break

    async def close(self) -> None:
        self._closed = True
        self._callbacks.clear()
        if self._task is not None:
            self._task.cancel()
            # Bounded: a connection stuck in a driver call must not hang close() forever.
            done, _ = await asyncio.wait({self._task}, timeout=CLOSE_WAIT_S)
            if not done:
                log.warning("change notifications: the listener did not stop in %s s", CLOSE_WAIT_S)
            elif not self._task.cancelled() and self._task.exception() is not None:
                log.warning("change notifications: the listener failed: %r", self._task.exception())
