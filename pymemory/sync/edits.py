"""When each local change was made: the clocks a round pushes and decides conflicts with.

A local version's clock is the one its edit got in the change log
(pymemory/storage/changes.py: ``chg:<n>`` ``{"keys", "h"}``), so a sync never re-stamps
an edit: the later edit wins whichever device syncs first. :class:`EditClocks` reads the
log once per round (from the last pushed position; the whole retained log only when a
change older than that is pending) and keeps what it found for the round. Fallbacks:

- a record written without the log (blocks, structured memory, files, checkpoints) gets
  the round's clock the first time the round needs it (its edit time is not recorded);
- a logged record whose commit the log no longer holds (over ``changes.RETAIN`` commits
  ago) counts as made at the oldest commit the log still holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..storage import KvBackend, changes
from .records import LOGGED_PREFIXES, Clock


class EditClocks:
    """The edit clocks of one round's local changes."""

    def __init__(self, host: KvBackend | None, after: int, clock: Clock) -> None:
        self._host = host  # None: no readable log (an encrypted store opened raw)
        self._after = after
        self._clock = clock
        self._seen = -1  # the store's seq when the log was last read
        self._whole = False
        self._oldest = 0
        self.known: dict[str, int] = {}
        #: Clocks given this round to changes the log does not date.
        self.given: dict[str, int] = {}

    async def load(self, keys: Sequence[str] = ()) -> None:
        """Read what the log gained since the last read; the whole retained log too if
        one of ``keys`` (logged records) is still not dated."""
        if self._host is None:
            return
        seq = await changes.read_seq(self._host)
        if seq != self._seen:
            start = self._after if self._seen < 0 else self._seen
            found, oldest = await changes.edit_clocks(self._host, start)
            self.known.update(found)
            if start <= 0:
                self._oldest, self._whole = oldest, True
            self._seen = seq
        if any(not self.has(k) for k in keys):
            found, oldest = await changes.edit_clocks(self._host, 0)
            self.known = {**found, **self.known}
            self._oldest, self._whole = oldest, True

    def has(self, key: str) -> bool:
        """Whether :meth:`of` can date ``key`` without reading the whole log."""
        if key in self.given or key in self.known or self._whole or self._host is None:
            return True
        return not key.startswith(LOGGED_PREFIXES)

    def of(self, key: str) -> int:
        """The clock of the local change of ``key`` (after :meth:`load`)."""
        if key in self.given:
            return self.given[key]
        if key in self.known:
            return self.known[key]
        if key.startswith(LOGGED_PREFIXES) and self._oldest:
            return self._oldest
        self.given[key] = self._clock.tick()
        return self.given[key]
