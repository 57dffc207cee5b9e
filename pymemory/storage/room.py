"""Room left for writes: refuse a write before the disk or the browser's quota runs out.

A store that hits the real limit is in trouble: SQLite needs free pages to delete (its
write-ahead log grows before the file shrinks), and Chromium's IndexedDB (LevelDB) needs
room to compact, so at the limit even a delete fails and the app can no longer free room.
So a backend keeps a *reserve*: a write that would leave less than ``reserve_bytes`` free
is refused with QuotaExceededError before anything is written, while a batch that frees
room (it deletes keys and writes no more than a little bookkeeping per deleted key: a
delete, ``clear``, ``sweep``) may use the reserve.

The room is measured by the backend (``os.statvfs`` of the SQLite file's folder;
``navigator.storage.estimate()`` in the browser) and, between measurements, decreased by
what this process wrote, counted ``write_factor`` times (a value lands in a log first and
in the tables later).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import QuotaExceededError, ValidationError

#: Bookkeeping a freeing batch may write per key it deletes (a change-log entry, a
#: tombstone); far below any memory's size.
FREEING_BYTES_PER_DELETE = 1024
MIB = 1024 * 1024


@dataclass(frozen=True)
class RoomReading:
    """One measurement: bytes the store may still use (``available``), and, where the
    backend knows them, what it uses and its ceiling. None: unknown here."""

    available: int
    usage: int | None = None
    quota: int | None = None


@runtime_checkable
class ReportsRoom(Protocol):
    """A backend that knows the room left (SqliteKv, IndexedDbKv)."""

    async def room(self) -> dict[str, Any]:
        """``{"available_bytes", "usage_bytes", "quota_bytes", "reserve_bytes"}`` (None
        where unknown)."""
        ...


def check_reserve(reserve_bytes: object) -> int:
    if isinstance(reserve_bytes, bool) or not isinstance(reserve_bytes, int):
        raise ValidationError("reserve_bytes must be an int")
    if not 0 <= reserve_bytes <= 2**53:
        raise ValidationError("reserve_bytes must be between 0 and 2**53")
    return reserve_bytes


def batch_bytes(puts: Sequence[tuple[str, bytes]]) -> int:
    return sum(len(k) + len(v) for k, v in puts)


def frees_room(puts: Sequence[tuple[str, bytes]], deletes: Sequence[str]) -> bool:
    """True for a batch that deletes and writes at most bookkeeping: allowed into the
    reserve, so room can always be freed."""
    return bool(deletes) and batch_bytes(puts) <= FREEING_BYTES_PER_DELETE * len(deletes)


class RoomGuard:
    """The reserve of one backend. ``measure`` returns a RoomReading (None: this runtime
    cannot tell, and the guard lets writes through); readings are reused for ``max_age_s``
    while the room stays well above the reserve, and taken before every write near it."""

    def __init__(
        self,
        reserve_bytes: int,
        measure: Callable[[], Awaitable[RoomReading | None]],
        *,
        write_factor: int = 2,
        max_age_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reserve_bytes = check_reserve(reserve_bytes)
        self._measure = measure
        self._factor = write_factor
        self._max_age = max_age_s
        self._clock = clock
        self._reading: RoomReading | None = None
        self._taken = -float("inf")
        self._written = 0  # bytes counted since the reading

    @property
    def available(self) -> int | None:
        """Room left as far as known now (the last reading less what was written since)."""
        if self._reading is None:
            return None
        return self._reading.available - self._written

    async def refresh(self, *, force: bool = False) -> None:
        """Take a new reading if the last one is stale or the room is near the reserve."""
        if not self.reserve_bytes and not force:
            return
        left = self.available
        stale = self._clock() - self._taken > self._max_age
        near = left is not None and left - self.reserve_bytes < 16 * MIB
        if force or stale or near:
            self._reading = await self._measure()
            self._taken = self._clock()
            self._written = 0

    def forget(self) -> None:
        """Drop the reading (after a failed write): the next :meth:`refresh` measures."""
        self._taken = -float("inf")

    def check(self, puts: Sequence[tuple[str, bytes]], deletes: Sequence[str]) -> None:
        """Raise QuotaExceededError if ``puts`` would leave less than the reserve (call
        after :meth:`refresh`; synchronous, so it can run inside a transaction)."""
        left = self.available
        if not self.reserve_bytes or left is None or not puts or frees_room(puts, deletes):
            return
        need = batch_bytes(puts) * self._factor
        if left - need < self.reserve_bytes:
            raise QuotaExceededError(
                f"this write needs about {need:,} bytes and would leave {max(left - need, 0):,}"
                f" of the {self.reserve_bytes:,}-byte reserve the store keeps to stay"
                " healthy; nothing was written. Delete or clear memories (or free disk"
                " space) and retry."
            )

    def wrote(self, puts: Sequence[tuple[str, bytes]]) -> None:
        """Count a batch that landed against the room until the next reading."""
        self._written += batch_bytes(puts) * self._factor

    def report(self) -> dict[str, Any]:
        reading = self._reading
        return {
            "available_bytes": self.available,
            "usage_bytes": None if reading is None else reading.usage,
            "quota_bytes": None if reading is None else reading.quota,
            "reserve_bytes": self.reserve_bytes,
        }
