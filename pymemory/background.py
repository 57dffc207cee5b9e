"""A memory's background work, off every caller's path: the upkeep loop (flush feedback,
follow other writers' changes while idle, sweep expired items, auto-archive) and the model
workers (Encoder stage 2 and the embedder). A failing job is logged and retried; it never
reaches a caller."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from .checks import (
    check_callable,
    check_choice,
    check_instance,
    check_protocol,
    has_members,
    type_name,
)
from .encoder import Encoder, Refiner
from .encoder.refine import RefineWorker
from .errors import ValidationError
from .item import MemoryItem
from .models.embedding import Embedder
from .models.runtime import CALLS, background
from .retrieval.dense import DenseIndex
from .retrieval.tokens import TokenCounter
from .retrieval.vectors_kv import KvVectorStore
from .retrieval.writer import StoreWriter

log = logging.getLogger("pymemory")
T = TypeVar("T")

Job = Callable[[], Awaitable[Any]]
ARCHIVE_EVERY_S = 3600.0


def foreground(*names: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: the named async methods are the user's calls. While one is in
    flight, background inference pauses between steps (:class:`~.models.runtime.CallGate`)."""

    def wrap(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            with CALLS.call():
                return await method(*args, **kwargs)

        return call

    def decorate(cls: type[T]) -> type[T]:
        for name in names:
            setattr(cls, name, wrap(getattr(cls, name)))
        return cls

    return decorate


def notify(listeners: list[Callable[[str, str], object]], kind: str, item_id: str) -> None:
    """Tell each change listener; one that raises is logged and the rest still hear."""
    for fn in list(listeners):
        try:
            fn(kind, item_id)
        except Exception:
            log.exception("change listener failed")


class Upkeep:
    """Runs ``flush`` and ``sync`` every round (``min(flush_s, sweep_s)`` apart), ``sweep``
    every ``sweep_s`` and, when ``archive`` is given, ``archive`` at start and hourly."""

    def __init__(
        self,
        *,
        flush: Job,
        sync: Job,
        sweep: Job,
        archive: Job | None,
        flush_s: float,
        sweep_s: float,
    ) -> None:
        self._flush, self._sync, self._sweep, self._archive = flush, sync, sweep, archive
        self._flush_s, self._sweep_s = flush_s, sweep_s
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def of(cls, memory: Any, flush_s: float, sweep_s: float, archive_days: float | None) -> Upkeep:
        """The upkeep of a ``Memory`` (its flush, catch-up, sweep and auto-archive)."""
        archive = None
        if archive_days is not None:
            archive = lambda: memory.archive_older_than(archive_days)  # noqa: E731
        return cls(
            flush=memory.flush,
            sync=memory._sync,
            sweep=memory.sweep,
            archive=archive,
            flush_s=flush_s,
            sweep_s=sweep_s,
        )

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        next_sweep = loop.time() + self._sweep_s
        next_archive = loop.time()
        while True:
            jobs: list[tuple[str, Job]] = [
                ("feedback flush", self._flush),
                ("change-log sync", self._sync),  # drops what others forgot, even when idle
            ]
            if loop.time() >= next_sweep:
                jobs.append(("TTL sweep", self._sweep))
                next_sweep = loop.time() + self._sweep_s
            if self._archive is not None and loop.time() >= next_archive:
                jobs.append(("auto-archive", self._archive))
                next_archive = loop.time() + ARCHIVE_EVERY_S
            for name, job in jobs:
                try:
                    await job()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("background %s failed; will retry", name)
            await asyncio.sleep(min(self._flush_s, self._sweep_s))


VECTOR_DTYPES = ("int8", "float16", "float32")


def check_embedder(embedder: object, vector_dtype: object, *, optional: bool = False) -> None:
    """An embedder (or None when ``optional``) and the dtype its vectors are stored in."""
    if not (optional and embedder is None):
        what = "an Embedder (name, dim and an async embed())"
        check_instance("embedder", embedder, Embedder, what)
    check_choice("vector_dtype", vector_dtype, VECTOR_DTYPES)


def check_collaborators(
    encoder: object,
    token_counter: object,
    clock: object,
    refiner: object,
    embedder: object,
    vector_dtype: object,
) -> None:
    """``Memory.open``'s collaborators (None: the default one, or none)."""
    if encoder is not None and (isinstance(encoder, str) or not isinstance(encoder, Encoder)):
        got = type_name(encoder)
        raise ValidationError(f"encoder must be an Encoder (an async encode()), got {got}")
    if token_counter is not None:
        what = "a TokenCounter (name and count())"
        check_instance("token_counter", token_counter, TokenCounter, what)
    check_callable("clock", clock, "giving epoch ms")
    if refiner is not None:
        check_refiner(refiner)
    check_embedder(embedder, vector_dtype, optional=True)


def check_refiner(refiner: object) -> None:
    ok = has_members(refiner, strs=("method",), methods=("refine",))
    what = "a Refiner (a str method and an async refine())"
    check_protocol("refiner", refiner, lambda _v: ok, what)


class ModelWork:
    """The model workers of one memory, each off until attached: the refiner rewrites new
    items' content, the dense index embeds items; both queue by item id."""

    def __init__(self, writer: StoreWriter, on_refined: Callable[[str], None]) -> None:
        self._writer = writer
        self._on_refined = on_refined
        self.refine: RefineWorker | None = None
        self.dense: DenseIndex | None = None

    async def attach_embedder(
        self, embedder: Embedder, vector_dtype: Literal["int8", "float16", "float32"]
    ) -> None:
        # Its loop is created in background(): it yields to the user's calls.
        with background():
            # Assigned with no await after the locked catch-up in DenseIndex.open.
            self.dense = await DenseIndex.open(self._writer, embedder, vector_dtype)

    def attach_refiner(self, refiner: Refiner) -> None:
        with background():
            self.refine = RefineWorker(
                refiner,
                get=self._writer.view.catalog.get,
                lock=self._writer.lock,
                write=self._writer.store_refined,
                on_refined=self._on_refined,
            )

    def check_free(self, which: Literal["refiner", "embedder"]) -> None:
        """ValidationError if that worker is attached already."""
        if (self.refine if which == "refiner" else self.dense) is not None:
            raise ValidationError(f"an {which} is already attached")

    @property
    def vectors(self) -> KvVectorStore | None:
        """The dense index's vectors (None: no embedder, or one the store left: stale)."""
        if self.dense is None or self.dense.vectors.stale:
            return None
        return self.dense.vectors

    def stats(self, items: int) -> dict[str, Any]:
        """For ``stats()``: ``background`` (steps taken, waited, overlapped) and
        ``embedding`` (the embedder's name, or None, and how many of ``items`` it embedded)."""
        embedding = {"model": None, "embedded": 0, "items": items}
        if self.dense is not None:
            embedding = self.dense.progress()
        return {"background": CALLS.stats(), "embedding": embedding}

    def queue(self, items: list[MemoryItem], *, refine: bool = True) -> None:
        """New or changed items: refine them (when ``refine``) and embed them."""
        for item in items:
            if refine and self.refine is not None:
                self.refine.queue(item)
            if self.dense is not None:
                self.dense.queue(item.id)

    def drop(self, item_id: str) -> None:
        """An item is gone from the store: cancel its queued refining, drop its vector."""
        if self.refine is not None:
            self.refine.cancel(item_id)
        if self.dense is not None:
            self.dense.forget([item_id])

    async def idle(self, which: Literal["refine", "dense"]) -> None:
        worker = self.refine if which == "refine" else self.dense
        if worker is not None:
            await worker.idle()

    async def stop(self) -> None:
        for worker in (self.refine, self.dense):
            if worker is not None:
                await worker.stop()
