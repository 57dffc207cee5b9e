"""Shared test helpers: a settable clock and time constants."""

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
