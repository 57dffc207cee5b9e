"""Shared test helpers: a settable clock, time constants, memories on one SQLite file."""

import datetime as dt

from pymemory import Memory
from pymemory.storage import SqliteKv

T0 = 1_780_000_000_000  # a fixed "now" in epoch ms
HOUR = 3_600_000
DAY = 24 * HOUR


class Clock:
    """A settable clock for Memory(clock=...)."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


async def open_on(path, **kw) -> Memory:
    """A Memory on its own connection to the SQLite file ``path`` (one per process)."""
    return await Memory.open(await SqliteKv.open(path), feedback_flush_s=3600, **kw)


async def close(*memories: Memory) -> None:
    for m in memories:
        await m.close()
        await m.kv.close()


def window_days(window: tuple[int, int] | None) -> tuple[str, str] | None:
    """A time window (epoch ms) as its first and last UTC dates, ISO."""
    if window is None:
        return None
    first, last = (dt.datetime.fromtimestamp(t / 1000, tz=dt.UTC).date() for t in window)
    return first.isoformat(), last.isoformat()
