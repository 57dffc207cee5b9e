"""Encoder stage 2 in the background: one item at a time through a :class:`Refiner`.

``add()`` never waits for the model: it queues the item here and returns. The loop hands
the item's text and stage-1 summary to the refiner and, if it proposes a summary, asks
the facade to store it, but only while the item still holds what stage 1 wrote (a user
edit in the meantime wins). Failures are logged and keep stage 1; deleting an item
cancels its refinement.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..item import MemoryItem
from ..models.runtime import yield_to_calls

if TYPE_CHECKING:
    from . import Refiner

log = logging.getLogger("pymemory")


class RefineWorker:
    """The background refine loop of one memory.

    ``get(id)`` reads the live item, ``lock`` is the memory's write lock and
    ``write(before, refined)`` persists a refined item (called with the lock held) if the
    stored item still holds what ``before`` held, returning whether it did (another
    process may have edited the item meanwhile); ``on_refined(id)`` runs after a write.
    """

    def __init__(
        self,
        refiner: Refiner,
        *,
        get: Callable[[str], MemoryItem | None],
        lock: asyncio.Lock,
        write: Callable[[MemoryItem, MemoryItem], Awaitable[bool]],
        on_refined: Callable[[str], None],
    ) -> None:
        self.refiner = refiner
        self._get = get
        self._lock = lock
        self._write = write
        self._on_refined = on_refined
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        # The item being refined and the job refining it (cancelled if the item goes).
        self.current: tuple[str, asyncio.Task[str | None]] | None = None
        self._task: asyncio.Task[None] = asyncio.ensure_future(self._loop())

    def queue(self, item: MemoryItem) -> None:
        if item.content_method != "given":
            self._queue.put_nowait(item.id)

    def cancel(self, item_id: str) -> None:
        if self.current is not None and self.current[0] == item_id:
            self.current[1].cancel()

    async def idle(self) -> None:
        await self._queue.join()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _loop(self) -> None:
        while True:
            item_id = await self._queue.get()
            try:
                await self._refine_one(item_id)
            except Exception:
                log.exception("background refinement of %s failed; keeping stage 1", item_id)
            finally:
                self.current = None
                self._queue.task_done()

    async def _refine_one(self, item_id: str) -> None:
        item = self._get(item_id)
        if item is None or item.content_method in ("given", self.refiner.method):
            return  # deleted, archived, written by the user, or already refined
        job = asyncio.ensure_future(self.refiner.refine(item.text, item.content, type=item.type))
        self.current = (item_id, job)
        try:
            content = await job
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # stop(): end the loop
            return  # the item was deleted while the model worked
        if not content:
            return
        await yield_to_calls()  # the write is this thread's work: not during a call
        async with self._lock:
            current = self._get(item_id)
            # Only replace what stage 1 wrote: a user edit in the meantime wins.
            if current is None or current.content != item.content or current.text != item.text:
                return
            try:
                refined = replace(current, content=content, content_method=self.refiner.method)
            except ValidationError as exc:
                log.warning("refiner output for %s rejected: %s", item_id, exc)
                return
            if not await self._write(current, refined):
                return
        self._on_refined(item_id)
