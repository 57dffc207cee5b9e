"""Many users in one server process: a bounded pool of per-user ``Memory`` instances.

A web server holds one :class:`MemoryPool` and leases a user's memory per request::

    pool = await MemoryPool.on_postgres(dsn, max_open=200, idle_s=600)
    async with pool.user("user-42") as memory:     # opened on first use, then reused
        hits = await memory.retrieve(question)
    await pool.close()                             # at shutdown

A user's memory is opened on demand (from its index snapshot, so even a large one opens
in a fraction of a second), kept while recently used, and closed (its pending feedback
and snapshot written) when it has been idle for ``idle_s`` or when more than
``max_open`` are open, least recently used first. A memory in use by a request is never
closed under it: ``max_open`` is then exceeded while more users than that are served at
once, and restored as their leases end (never more than ``max_open`` idle). Each user's
memory is a separate namespace of the store, so nothing one user does (ids, ``clear``,
imports) reaches another's. Other processes (other app servers) may serve the same users
at the same time: the change log keeps every instance in step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import StoreClosedError, ValidationError
from ..memory import Memory

if TYPE_CHECKING:
    from ..storage.postgres import PostgresDatabase

log = logging.getLogger("pymemory")

MAX_USER_CHARS = 200


@dataclass
class _Entry:
    opening: asyncio.Future[Memory]
    leases: int = 0
    last_used: float = field(default_factory=time.monotonic)


def _failed(opening: asyncio.Future[Memory]) -> bool:
    return opening.done() and (opening.cancelled() or opening.exception() is not None)


def check_user(user: object) -> str:
    if not isinstance(user, str) or not user or len(user) > MAX_USER_CHARS or "\x00" in user:
        raise ValidationError(f"a user id must be a str of 1..{MAX_USER_CHARS} characters")
    return user


def _check_bounds(max_open: object, idle_s: object) -> None:
    if isinstance(max_open, bool) or not isinstance(max_open, int) or max_open < 1:
        raise ValidationError("max_open must be an int >= 1")
    if isinstance(idle_s, bool) or not isinstance(idle_s, (int, float)) or not idle_s > 0:
        raise ValidationError("idle_s must be a number of seconds > 0")


async def close_memory(memory: Memory) -> None:
    """Close ``memory`` and its KV store (a store passed to ``Memory.open`` stays open
    when the memory closes; a pooled one must not)."""
    try:
        await memory.close()
    finally:
        await memory.kv.close()


class MemoryPool:
    """Per-user memories opened by ``open_memory(user)`` (see the module docstring)."""

    def __init__(
        self,
        open_memory: Callable[[str], Awaitable[Memory]],
        *,
        max_open: int = 100,
        idle_s: float = 300.0,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        _check_bounds(max_open, idle_s)
        self._open_memory = open_memory
        self.max_open = max_open
        self.idle_s = float(idle_s)
        self._on_close = on_close
        self.database: PostgresDatabase | None = None  # set by on_postgres()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._reaper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    @classmethod
    async def on_postgres(
        cls,
        dsn: str,
        *,
        max_open: int = 100,
        idle_s: float = 300.0,
        database_options: Mapping[str, Any] | None = None,
        **memory_options: Any,
    ) -> MemoryPool:
        """A pool over one PostgreSQL database (one connection pool for every user; each
        user is the namespace of its id). ``memory_options`` go to ``Memory.open``;
        ``database_options`` to ``PostgresDatabase.open``. Bad arguments (a DSN that is
        not a str, ``max_open`` < 1, ...) raise ValidationError before connecting."""
        from ..storage.postgres import PostgresDatabase

        _check_bounds(max_open, idle_s)
        if database_options is not None and not isinstance(database_options, Mapping):
            raise ValidationError("database_options must be a mapping of option names")
        database = await PostgresDatabase.open(dsn, **dict(database_options or {}))

        async def open_memory(user: str) -> Memory:
            return await Memory.open(database.kv(user), **memory_options)

        pool = cls(open_memory, max_open=max_open, idle_s=idle_s, on_close=database.close)
        pool.database = database
        return pool

    def open_users(self) -> list[str]:
        """The users whose memory is open (or opening), least recently used first."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.asynccontextmanager
    async def user(self, user: str) -> AsyncIterator[Memory]:
        """Lease ``user``'s memory for the ``async with`` block (opening it if needed)."""
        user = check_user(user)
        if self._closed:
            raise StoreClosedError("this MemoryPool is closed")
        entry = self._entries.get(user)
        if entry is None:
            entry = _Entry(asyncio.ensure_future(self._open_memory(user)))
            self._entries[user] = entry
            # An open whose callers all gave up ends with no lease: evict then too.
            entry.opening.add_done_callback(lambda _opening: self._evict())
            self._start_reaper()
        self._entries.move_to_end(user)
        entry.leases += 1
        try:
            # Shielded: one caller giving up does not cancel an open others wait for.
            memory = await asyncio.shield(entry.opening)
        except BaseException:
            entry.leases -= 1
            if self._entries.get(user) is entry and _failed(entry.opening):
                del self._entries[user]  # the next lease tries again
            raise
        try:
            self._evict()
            yield memory
        finally:
            entry.leases -= 1
            entry.last_used = time.monotonic()
            self._evict()  # a burst's memories beyond max_open close as their leases end

    def _evict(self) -> None:
        """Close least recently used, unleased memories beyond ``max_open`` (so at most
        ``max_open`` stay open once no request holds them)."""
        if self._closed:
            return  # close() retires every entry itself
        excess = len(self._entries) - self.max_open
        for user, entry in list(self._entries.items()):
            if excess <= 0:
                break
            if entry.leases == 0 and entry.opening.done():
                self._retire(user)
                excess -= 1

    def _retire(self, user: str) -> None:
        entry = self._entries.pop(user)
        if _failed(entry.opening):
            return
        task = asyncio.ensure_future(self._close_entry(user, entry.opening.result()))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close_entry(self, user: str, memory: Memory) -> None:
        try:
            await close_memory(memory)
        except Exception:
            log.exception("closing the memory of user %r failed", user)

    async def close_idle(self) -> int:
        """Close the memories unused for ``idle_s``; how many."""
        now = time.monotonic()
        idle = [
            u
            for u, e in self._entries.items()
            if e.leases == 0 and e.opening.done() and now - e.last_used >= self.idle_s
        ]
        for user in idle:
            self._retire(user)
        await self._settle()
        return len(idle)

    async def _settle(self) -> None:
        """Wait for the closes under way (a cancelled wait leaves them running: a
        memory is never left half closed)."""
        while self._closing:
            await asyncio.wait(list(self._closing))

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.ensure_future(self._reap())

    async def _reap(self) -> None:
        while self._entries and not self._closed:
            await asyncio.sleep(max(0.05, self.idle_s / 4))
            try:
                await self.close_idle()
            except Exception:
                log.exception("closing idle memories failed")

    async def close(self) -> None:
        """Close every memory (waiting for leases to end is the caller's business: a
        memory still leased is closed too), then the database."""
        if self._closed:
            return
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        # An open under way finishes first, then closes with the rest.
        await asyncio.gather(*(e.opening for e in self._entries.values()), return_exceptions=True)
        for user in list(self._entries):
            self._retire(user)
        await self._settle()
        if self._on_close is not None:
            await self._on_close()
