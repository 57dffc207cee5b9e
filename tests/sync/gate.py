"""A transport that holds one request to the real hub until the test lets it go, so a
test can look at a device (or run another) in the middle of a round."""

from __future__ import annotations

import asyncio

from pymemory.sync import HttpxTransport, Response


class Gate:
    """Passes every request to the hub over httpx, except that the ``nth`` request whose
    URL contains ``path`` waits for :meth:`open` (``reached`` is set when it does).
    ``lose_answer``: that request reaches the hub, which takes it, but its answer never
    arrives: held after the hub answered; once opened it is sent again (to a hub that is
    gone by then, in the tests), and the round gets what that gives."""

    def __init__(self, path: str, nth: int = 1, *, lose_answer: bool = False) -> None:
        self.inner = HttpxTransport()
        self.path, self.nth, self.lose_answer = path, nth, lose_answer
        self.seen = 0
        self.reached = asyncio.Event()
        self._open = asyncio.Event()

    def open(self) -> None:
        self._open.set()

    async def request(
        self, method: str, url: str, *, body: bytes | None, headers: dict[str, str]
    ) -> Response:
        if self.path in url:
            self.seen += 1
            if self.seen == self.nth:
                if self.lose_answer:
                    await self.inner.request(method, url, body=body, headers=headers)
                self.reached.set()
                await self._open.wait()
        return await self.inner.request(method, url, body=body, headers=headers)

    async def close(self) -> None:
        await self.inner.close()


async def held(gate: Gate, task: asyncio.Task[object]) -> None:
    """Wait until ``gate`` holds its request (failing if ``task`` ends first)."""
    reached = asyncio.ensure_future(gate.reached.wait())
    done, _ = await asyncio.wait({reached, task}, timeout=30, return_when="FIRST_COMPLETED")
    if reached not in done:
        reached.cancel()
        raise AssertionError(f"the round never sent request {gate.nth} to {gate.path}: {done}")
