"""Change notifications: an optional KvBackend capability, and the watch a Memory keeps.

A backend that can tell when another instance commits through the change log offers::

    kv.watch_changes(callback) -> stop     # callback() soon after such a commit

(PostgresKv does, with LISTEN/NOTIFY). Nothing else needs it: every read still checks the
change log first. It only lets an idle instance catch up, and tell its listeners, without
waiting for its next read or its background poll. :class:`ChangeWatch` finds the
capability through wrappers (``EncryptedKv.inner``) and runs an async job (the Memory's
catch-up) after notifications, one run at a time, coalescing those that arrive meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from ..errors import StoreClosedError
from .base import KvBackend

log = logging.getLogger("pymemory")


@runtime_checkable
class WatchesChanges(Protocol):
    def watch_changes(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` after commits through the change log; returns its stopper."""
        ...


def change_feed(kv: object) -> WatchesChanges | None:
    """The backend under ``kv`` (through wrappers' ``inner``) that watches changes."""
    for _ in range(8):
        if isinstance(kv, WatchesChanges):
            return kv
        kv = getattr(kv, "inner", None)
        if kv is None:
            return None
    return None


class ChangeWatch:
    """Runs ``job`` after change notifications: ``delay_s`` after the first of a burst
    (so a burst of other writers' commits costs one catch-up), one run at a time."""

    def __init__(self, job: Callable[[], Awaitable[None]], delay_s: float = 0.05) -> None:
        self._job = job
        self._delay_s = delay_s
        self._stop_feed: Callable[[], None] = lambda: None
        self._again = False
        self._task: asyncio.Task[None] | None = None
        self.runs = 0  # how many times the job ran (for tests and stats)

    @classmethod
    def start(cls, kv: KvBackend, job: Callable[[], Awaitable[None]]) -> ChangeWatch | None:
        """Watch ``kv`` (None when its backend sends no notifications)."""
        feed = change_feed(kv)
        if feed is None:
            return None
        watch = cls(job)
        watch._stop_feed = feed.watch_changes(watch._poke)
        return watch

    def _poke(self) -> None:
        self._again = True
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._again:
            await asyncio.sleep(self._delay_s)
            self._again = False
            self.runs += 1
            try:
                await self._job()
            except StoreClosedError:
                return
            except Exception:
                log.warning("catching up after a change notification failed", exc_info=True)

    async def stop(self) -> None:
        self._stop_feed()
        self._again = False
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
