"""The HTTP seam: the replicator speaks to the hub only through a :class:`Transport`.

CPython uses :class:`HttpxTransport`; the browser's worker passes a fetch-based one
(``pymemory.browser.pyodide.sync_fetch``), so nothing here knows which runtime it is in.
A transport raises :class:`~pymemory.errors.SyncError` for a network failure or a
timeout; HTTP status codes are the client's business (``couch.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..errors import SyncError

DEFAULT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Response:
    """An HTTP answer: its status and body bytes."""

    status: int
    body: bytes


@runtime_checkable
class Transport(Protocol):
    async def request(
        self, method: str, url: str, *, body: bytes | None, headers: dict[str, str]
    ) -> Response:
        """Send one request; SyncError(retryable=True) on a network error or timeout."""
        ...

    async def close(self) -> None:
        """Release connections. Idempotent."""
        ...


@dataclass
class WireCount:
    """Bytes and requests on the wire (bodies only; headers are not counted)."""

    requests: int = 0
    sent: int = 0
    received: int = 0
    by_path: dict[str, int] = field(default_factory=dict)


class HttpxTransport:
    """CPython's transport: one ``httpx.AsyncClient`` (keep-alive) per replicator."""

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        import httpx

        self._httpx = httpx
        self._client = httpx.AsyncClient(timeout=timeout_s)

    async def request(
        self, method: str, url: str, *, body: bytes | None, headers: dict[str, str]
    ) -> Response:
        httpx = self._httpx
        try:
            answer = await self._client.request(method, url, content=body, headers=headers)
        except httpx.TimeoutException as exc:
            message = f"the sync server timed out ({type(exc).__name__})"
            raise SyncError(message, retryable=True) from None
        except httpx.HTTPError as exc:
            raise SyncError(f"cannot reach the sync server: {exc}", retryable=True) from None
        return Response(answer.status_code, answer.content)

    async def close(self) -> None:
        await self._client.aclose()


def default_transport() -> Transport:
    """The runtime's transport: httpx in CPython (Pyodide passes its own)."""
    return HttpxTransport()
