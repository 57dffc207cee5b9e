"""Sync for a ``Memory``: one round on request, or rounds in the background.

:class:`SyncHost` is what ``Memory.sync`` delegates to. A round runs under a lock (two
rounds of one memory never overlap); after it, the memory catches up with what was
pulled (``after``). :class:`LiveSync` repeats rounds every ``interval_s`` in a task of
its own, off every caller's path: a failed round is logged and retried after an
exponential backoff (with jitter, up to ``max_backoff_s``); ``stop()`` cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pymemory.sync.local as L

from ..errors import PymemoryError, ValidationError
from ..storage import KvBackend, changes
from .couch import Auth, split_url
from .replicator import Progress, SyncResult, sync_store
from .transport import Transport

log = logging.getLogger("pymemory")

DEFAULT_INTERVAL_S = 5.0
MAX_BACKOFF_S = 300.0


class LiveSync:
    """Background rounds against one hub. ``stop()`` to end them (idempotent)."""

    def __init__(
        self,
        run: Callable[[], Awaitable[SyncResult]],
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        max_backoff_s: float = MAX_BACKOFF_S,
    ) -> None:
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)):
            raise ValidationError("interval_s must be a number of seconds > 0")
        if not interval_s > 0:
            raise ValidationError("interval_s must be a number of seconds > 0")
        self._run = run
        self.interval_s = float(interval_s)
        self.max_backoff_s = max(float(max_backoff_s), self.interval_s)
        self.failures = 0
        self.rounds = 0
        self.last: SyncResult | None = None
        self.last_error: str | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> LiveSync:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def wake(self) -> None:
        """Run the next round now (e.g. after a local write)."""
        self._wake.set()

    def delay(self) -> float:
        if not self.failures:
            return self.interval_s
        base = min(self.max_backoff_s, self.interval_s * 2 ** min(self.failures, 20))
        return random.uniform(base / 2, base)

    async def _loop(self) -> None:
        task = asyncio.current_task()
        while True:
            # A cancellation that a library swallowed on its way (Python 3.11's wait_for
            # can lose one that races a completion, and an HTTP client can turn one into
            # a timeout) still ends the loop, or closing the event loop waits forever.
            if task is not None and task.cancelling():
                raise asyncio.CancelledError
            try:
                self.last = await self._run()
                self.failures, self.last_error = 0, None
            except asyncio.CancelledError:
                raise
            except PymemoryError as exc:
                self.failures += 1
                self.last_error = f"{exc.code}: {exc}"
                log.warning("background sync failed (%d in a row): %s", self.failures, exc)
            except Exception as exc:  # a bug: logged, and the loop keeps going
                self.failures += 1
                self.last_error = f"internal: {exc}"
                log.exception("background sync failed")
            self.rounds += 1
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.delay())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def status(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "rounds": self.rounds,
            "failures": self.failures,
            "lastError": self.last_error,
        }


class SyncHost:
    """A memory's sync: its rounds (one at a time) and its background loops."""

    def __init__(
        self,
        kv: KvBackend,
        after: Callable[[], Awaitable[None]],
        transport: Callable[[], Transport] | None = None,
    ) -> None:
        self.kv = kv
        self._after = after
        self._lock = asyncio.Lock()
        self._live: list[LiveSync] = []
        #: The runtime's transport factory (the browser's worker sets a fetch one).
        self.transport = transport
        #: The round running now (None between rounds), as it goes.
        self.progress: Progress | None = None

    async def round(self, url: str, auth: Auth) -> SyncResult:
        async with self._lock:
            transport = None if self.transport is None else self.transport()
            self.progress = progress = Progress()
            try:
                result = await sync_store(
                    self.kv, url, auth=auth, transport=transport, progress=progress
                )
            finally:
                self.progress = None
                if transport is not None:
                    await transport.close()
        await self._after()
        return result

    async def run(
        self, url: str, auth: Auth, *, live: bool, interval_s: float = DEFAULT_INTERVAL_S
    ) -> SyncResult | LiveSync:
        split_url(url, auth)  # bad arguments fail here, on the caller's path
        if not isinstance(live, bool):
            raise ValidationError("live must be a bool")
        if not live:
            return await self.round(url, auth)
        loop = LiveSync(lambda: self.round(url, auth), interval_s=interval_s).start()
        self._live.append(loop)
        return loop

    async def stop(self) -> None:
        loops, self._live = self._live, []
        for loop in loops:
            await loop.stop()

    async def status(self) -> dict[str, Any]:
        """When this store last synced (any instance), how many local commits wait, and
        this memory's round running now (``round``: None, or its phase and counts)."""
        running = None if self.progress is None else self.progress.to_dict()
        live = [x.status() for x in self._live]
        raw = self.kv.inner if hasattr(self.kv, "inner") else self.kv
        last = L.decode(await raw.get(L.LAST_KEY))
        if not isinstance(last, dict):
            return {"lastSyncMs": None, "pending": None, "live": live, "round": running}
        point = L.decode(await raw.get(L.hub_key(str(last.get("hub"))))) or {}
        pending = await changes.read_seq(raw) - int(point.get("pushed", 0))
        return {
            "lastSyncMs": last.get("at"),
            "lastRound": {
                "pushed": last.get("pushed"),
                "pulled": last.get("pulled"),
                "conflicts": last.get("conflicts"),
                "conflictItems": last.get("conflictItems", []),
            },
            "pending": max(0, pending),
            "live": live,
            "round": running,
        }


__all__ = ["LiveSync", "SyncHost"]
