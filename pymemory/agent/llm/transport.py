"""HTTP for the model adapters: one small protocol, two implementations.

- :class:`HttpxTransport`: CPython, on an ``httpx.AsyncClient`` (imported when first used).
- :class:`FetchTransport`: Pyodide, on the browser's ``fetch`` through
  ``pyodide.http.pyfetch`` (imported only inside the call, so CPython never imports it).

:func:`default_transport` picks the one that fits the running interpreter. A transport
raises :class:`~.base.LlmError` (``status=None``) when no response arrives; it returns
every response, error statuses included: the adapters decide what a status means.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ...item import check_json_depth
from .base import LlmError, excerpt

# Nesting an LLM server's JSON reply may have (checked before parsing).
MAX_REPLY_DEPTH = 256

DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


@runtime_checkable
class HttpTransport(Protocol):
    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None = None,
    ) -> HttpResponse:
        """Send one request and return the whole response."""
        ...

    async def close(self) -> None:
        """Release connections. Idempotent."""
        ...


class HttpxTransport:
    """CPython transport on ``httpx.AsyncClient``. Pass ``client`` to share one (it is then
    not closed by :meth:`close`); otherwise one is created on the first request."""

    def __init__(self, client: Any = None, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self._client = client
        self._owns_client = client is None
        self._timeout = timeout

    def _get_client(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=self._timeout)
        return self._client

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None = None,
    ) -> HttpResponse:
        import httpx

        client = self._get_client()
        try:
            response = await client.request(
                method,
                url,
                headers=dict(headers),
                content=body,
                timeout=timeout if timeout is not None else self._timeout,
            )
        except httpx.HTTPError as exc:
            raise LlmError(f"{method} {url} failed: {type(exc).__name__}: {exc}") from exc
        return HttpResponse(response.status_code, response.content, dict(response.headers))

    async def close(self) -> None:
        if self._client is not None and self._owns_client:
            client, self._client = self._client, None
            await client.aclose()


class FetchTransport:
    """Pyodide transport on the browser's ``fetch`` (via ``pyodide.http.pyfetch``).

    A timeout cancels the Python side, and pyfetch then aborts the browser request.
    """

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self._timeout = timeout

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None = None,
    ) -> HttpResponse:
        from pyodide.http import pyfetch  # only ever imported in the browser

        options: dict[str, Any] = {"method": method, "headers": dict(headers)}
        if body is not None:
            options["body"] = body.decode("utf-8")
        limit = timeout if timeout is not None else self._timeout
        try:
            response = await asyncio.wait_for(pyfetch(url, **options), limit)
            data = await asyncio.wait_for(response.bytes(), limit)
        except TimeoutError as exc:
            raise LlmError(f"{method} {url} timed out after {limit}s") from exc
        except Exception as exc:  # JsException, OSError, AbortError: no response
            raise LlmError(f"{method} {url} failed: {type(exc).__name__}: {exc}") from exc
        return HttpResponse(int(response.status), bytes(data), dict(response.headers))

    async def close(self) -> None:
        return None


async def post_json(
    transport: HttpTransport,
    url: str,
    payload: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    provider: str,
    timeout: float | None = None,
) -> Any:
    """POST ``payload`` as JSON and return the decoded JSON reply.

    Raises :class:`LlmError` for a status >= 400 (with the provider's error message when it
    sent one) and for a reply that is not JSON.
    """
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    sent = {"content-type": "application/json", **headers}
    response = await transport.request("POST", url, headers=sent, body=body, timeout=timeout)
    text = response.text()
    if response.status >= 400:
        detail = _error_message(text)
        raise LlmError(
            f"{provider} returned HTTP {response.status}" + (f": {detail}" if detail else ""),
            status=response.status,
            body=excerpt(text),
            provider=provider,
        )
    try:
        check_json_depth(text, MAX_REPLY_DEPTH)  # deeper would exhaust the parser's stack
        return json.loads(text)
    except (ValueError, RecursionError):
        raise LlmError(
            f"{provider} returned a reply that is not JSON",
            status=response.status,
            body=excerpt(text),
            provider=provider,
        ) from None


def _error_message(text: str) -> str:
    """``error.message`` of an OpenAI- or Anthropic-shaped error body, else ""."""
    try:
        check_json_depth(text, MAX_REPLY_DEPTH)
        data = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return excerpt(error["message"], 200)
    if isinstance(error, str):
        return excerpt(error, 200)
    return ""


def in_browser() -> bool:
    """True under Pyodide (Emscripten)."""
    return sys.platform == "emscripten"


def default_transport() -> HttpTransport:
    """:class:`FetchTransport` under Pyodide, :class:`HttpxTransport` elsewhere."""
    return FetchTransport() if in_browser() else HttpxTransport()


__all__ = [
    "FetchTransport",
    "HttpResponse",
    "HttpTransport",
    "HttpxTransport",
    "default_transport",
    "in_browser",
    "post_json",
]


class HttpChatModel:
    """The HTTP plumbing the provider adapters share: post the payload the subclass builds,
    parse the reply with its ``_parse``, close a transport it made itself."""

    url: str
    provider: str
    timeout: float | None
    _headers: dict[str, str]
    _transport: HttpTransport
    _owns_transport: bool

    def build_payload(self, request: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, data: Any) -> Any:
        raise NotImplementedError

    async def __call__(self, request: Any) -> Any:
        data = await post_json(
            self._transport,
            self.url,
            self.build_payload(request),
            headers=self._headers,
            provider=self.provider,
            timeout=self.timeout,
        )
        return self._parse(data)

    async def close(self) -> None:
        if self._owns_transport:
            await self._transport.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
