"""The HTTP seam: the replicator speaks to the hub only through a :class:`Transport`.

CPython uses :class:`HttpxTransport`; the browser's worker passes a fetch-based one
(``pymemory.browser.pyodide.sync_fetch``), so nothing here knows which runtime it is in.
A transport raises :class:`~pymemory.errors.SyncError` for a network failure or a
timeout; HTTP status codes are the client's business (``couch.py``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import SyncError

if TYPE_CHECKING:  # ssl is not in Pyodide's standard library (the browser uses fetch)
    import ssl

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
    """CPython's transport: one ``httpx.AsyncClient`` (keep-alive) per replicator.
    ``timeout_s`` bounds each request whole, from sending it to its last byte (httpx's
    own timeouts bound each read, so a hub trickling bytes would hold a round far
    longer)."""

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        import httpx

        self._httpx = httpx
        self.timeout_s = timeout_s
        self._client = httpx.AsyncClient(timeout=timeout_s, verify=_tls_context())

    async def request(
        self, method: str, url: str, *, body: bytes | None, headers: dict[str, str]
    ) -> Response:
        httpx = self._httpx
        call = self._client.request(method, url, content=body, headers=headers)
        try:
            answer = await asyncio.wait_for(call, self.timeout_s)
        except TimeoutError:
            message = f"the sync server timed out after {self.timeout_s:g}s"
            raise SyncError(message, retryable=True) from None
        except httpx.TimeoutException as exc:
            message = f"the sync server timed out ({type(exc).__name__})"
            raise SyncError(message, retryable=True) from None
        except httpx.HTTPError as exc:
            raise SyncError(f"cannot reach the sync server: {exc}", retryable=True) from None
        return Response(answer.status_code, answer.content)

    async def close(self) -> None:
        await self._client.aclose()


_TLS: list[ssl.SSLContext] = []


def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CAs), made once per process: loading the CA
    file costs about 45 ms, which every round paid when each client made its own."""
    if not _TLS:
        import httpx

        _TLS.append(httpx.create_ssl_context())
    return _TLS[0]


def default_transport() -> Transport:
    """The runtime's transport: httpx in CPython (Pyodide passes its own)."""
    return HttpxTransport()
