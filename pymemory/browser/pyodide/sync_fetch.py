"""FetchTransport: the sync replicator's HTTP (:class:`~pymemory.sync.Transport`) over the
browser's ``fetch``, for ``Memory.sync`` in Pyodide (a worker or a page).

The hub is on another origin than the page, so it must answer CORS (docs/sync.md): every
call sends ``Content-Type: application/json`` (and usually ``Authorization``), which makes
the browser ask with a preflight first. Responses are never cached (``cache: "no-store"``:
a cached ``_changes`` page would hide others' writes); credentials travel only in the
``Authorization`` header, never as cookies (``credentials: "omit"``). A timeout aborts
the request (an ``AbortController``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import js
from pyodide.ffi import JsException, to_js

from ...errors import SyncError
from ...sync.transport import DEFAULT_TIMEOUT_S, Response


class FetchTransport:
    """One replicator's transport on ``fetch``; SyncError(retryable) when no answer comes."""

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s

    async def request(
        self, method: str, url: str, *, body: bytes | None, headers: dict[str, str]
    ) -> Response:
        abort = js.AbortController.new()
        init: dict[str, Any] = {
            "method": method,
            "headers": js.Object.fromEntries(to_js(list(headers.items()))),
            "cache": "no-store",
            "credentials": "omit",
            "signal": abort.signal,
        }
        if body is not None:
            init["body"] = to_js(body)  # a Uint8Array: the bytes as the replicator made them
        options = js.Object.fromEntries(to_js(list(init.items())))
        try:
            answer = await asyncio.wait_for(self._fetch(url, options), self.timeout_s)
        except TimeoutError:
            abort.abort()
            raise SyncError(
                f"the sync server timed out after {self.timeout_s:g}s", retryable=True
            ) from None
        except JsException as exc:  # fetch rejects with a TypeError: network, DNS, CORS
            raise SyncError(
                f"cannot reach the sync server: {exc} (a hub on another origin must allow "
                "this page's origin in its CORS settings, see docs/sync.md)",
                retryable=True,
            ) from None
        return answer

    @staticmethod
    async def _fetch(url: str, options: Any) -> Response:
        answer = await js.fetch(url, options)
        data = await answer.arrayBuffer()
        return Response(int(answer.status), data.to_bytes())

    async def close(self) -> None:
        """Nothing to release (the browser pools connections)."""
        return None


def fetch_transport(*, timeout_s: float = DEFAULT_TIMEOUT_S) -> FetchTransport:
    """The factory ``SyncHost.transport`` takes in the browser (``timeout_s``: each
    request's bound; the JS client's ``sync.timeoutMs``)."""
    return FetchTransport(timeout_s=timeout_s)


__all__ = ["FetchTransport", "fetch_transport"]
