"""What the JS client's sync relies on in the worker's API, in CPython over MapKv with
httpx against the session's hub: errors carry ``retryable``, ``timeoutMs`` bounds each
request (a server that accepts and never answers), and ``syncStatus`` (polled during a
round for ``status.sync.round``) never opens a database nor answers a caller without
its key."""

from __future__ import annotations

import socket
import threading
import time

from test_rpc_sync import FAST, PASS, call
from test_rpc_sync import shared_api as make_api

from pymemory.storage import MapKv


def silent_server() -> tuple[socket.socket, str]:
    """A loopback socket that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(sock.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}/memory"


async def test_errors_say_retryable_and_timeout_ms_bounds_a_silent_hub(hub: str) -> None:
    api = make_api({})
    sock, silent = silent_server()
    try:
        down = await call(api, "sync", {"url": "http://127.0.0.1:9/memory"})
        assert down["error"]["code"] == "sync_failed" and down["error"]["retryable"] is True
        refused = await call(api, "sync", {"url": hub, "auth": {"username": "u", "password": "p"}})
        assert refused["error"]["code"] == "sync_failed" and refused["error"]["retryable"] is False
        # an error that does not say keeps the old shape
        assert set((await call(api, "get", {"id": "nope"}))["error"]) == {"code", "message"}
        t0 = time.monotonic()
        hung = await call(api, "sync", {"url": silent, "timeoutMs": 300})
        assert time.monotonic() - t0 < 5
        assert hung["error"]["code"] == "sync_failed" and hung["error"]["retryable"] is True
        assert "timed out" in hung["error"]["message"]
        at_open = await call(api, "sync", {"url": silent, "timeoutMs": 300, "atOpen": True})
        assert at_open["result"]["error"]["retryable"] is True
        for bad in (0, 1.5, "300", True, 2**31):
            answer = await call(api, "sync", {"url": hub, "timeoutMs": bad})
            assert answer["error"]["code"] == "invalid_input", bad
            assert "timeoutMs" in answer["error"]["message"]
    finally:
        sock.close()
        await api.close_all()


async def test_sync_status_never_opens_a_database_nor_answers_without_the_key(hub: str) -> None:
    stores: dict[str, MapKv] = {}
    api = make_api(stores)
    key = {"id": "client-1", "passphrase": PASS, "iterations": FAST}
    try:
        # not open yet (a new encrypted device's first pull): nothing, and nothing made
        assert (await call(api, "syncStatus", {}, key))["result"] is None
        assert (await call(api, "syncStatus", {}))["result"] is None
        assert "db" not in stores or not await stores["db"].scan("")
        assert (await call(api, "sync", {"url": hub, "atOpen": True}, key))["ok"]
        status = (await call(api, "syncStatus", {}, key))["result"]
        assert status["round"] is None and status["lastSyncMs"] > 0, status
        other = {"id": "client-2", "passphrase": "another passphrase", "iterations": FAST}
        assert (await call(api, "syncStatus", {}, other))["result"] is None  # not admitted
        assert (await call(api, "syncStatus", {}))["result"] is None  # no key
    finally:
        await api.close_all()
