"""A hub whose answers get lost (issue 37): tests/browser/hubproxy.py's HubProxy (a real
HTTP server on loopback in front of the session's pouchdb-server) with rules that let
the request REACH the hub, which takes it, and then spoil the answer:

- ``drop``: the connection closes without a byte of answer;
- ``500``: a 500 instead of the hub's answer;
- ``truncate``: the answer's headers promise the whole body, half of it comes, then the
  connection closes;
- ``short``: a complete HTTP answer whose body is the first half of the hub's;
- ``trickle``: (not forwarded) a 27-byte JSON answer, one byte every ``every_s`` seconds.

    proxy = FaultProxy(hub_root).start()
    proxy.lose = [Lose("POST", "/_bulk_docs", "drop")]  # the first match, once
"""

from __future__ import annotations

import http.client
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "browser"))

from hubproxy import HOP_BY_HOP, HubProxy

MODES = ("drop", "500", "truncate", "short")
TRICKLE = b'{"db_name":"x","ok":true} \n'  # 27 bytes


@dataclass
class Lose:
    """Spoil the answer of the first ``times`` requests of ``method`` whose path contains
    ``path`` (after the hub took them), as ``mode`` says."""

    method: str
    path: str
    mode: str
    times: int = 1
    every_s: float = 3.0
    hits: int = field(default=0, init=False)


class FaultProxy(HubProxy):
    """HubProxy plus :class:`Lose` rules (``lose``); ``spoiled`` counts what they did."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.lose: list[Lose] = []
        self.spoiled: list[tuple[str, str, str]] = []
        self._lose_lock = threading.Lock()

    def handle(self, req: BaseHTTPRequestHandler) -> None:
        rule = None
        with self._lose_lock:
            for r in self.lose:
                if req.command == r.method and r.path in req.path and r.hits < r.times:
                    r.hits += 1
                    rule = r
                    break
        if rule is None:
            super().handle(req)
            return
        self.spoiled.append((req.command, req.path, rule.mode))
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else None
        try:
            if rule.mode == "trickle":
                self._trickle(req, rule.every_s)
                return
            status, headers, data = self._to_hub(req, body)  # the hub takes it
            self._spoil(req, rule.mode, status, headers, data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _to_hub(
        self, req: BaseHTTPRequestHandler, body: bytes | None
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {k: v for k, v in req.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Host"] = f"{self.upstream[0]}:{self.upstream[1]}"
            conn.request(req.command, req.path, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            conn.close()

    @staticmethod
    def _spoil(
        req: BaseHTTPRequestHandler,
        mode: str,
        status: int,
        headers: list[tuple[str, str]],
        data: bytes,
    ) -> None:
        req.close_connection = True
        if mode == "drop":
            return  # the socket closes with no answer at all
        if mode == "500":
            body = b'{"error":"internal","reason":"spoiled by the test"}'
            status, data = 500, body
        cut = data[: len(data) // 2]
        req.send_response(status)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                req.send_header(name, value)
        promised = len(data) if mode in ("truncate", "500") else len(cut)
        req.send_header("Content-Length", str(promised))
        req.send_header("Connection", "close")
        req.end_headers()
        req.wfile.write(data if mode == "500" else cut)
        req.wfile.flush()

    @staticmethod
    def _trickle(req: BaseHTTPRequestHandler, every_s: float) -> None:
        req.close_connection = True
        req.send_response(200)
        req.send_header("Access-Control-Allow-Origin", "*")
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(TRICKLE)))
        req.end_headers()
        req.wfile.flush()
        for i in range(len(TRICKLE)):
            req.wfile.write(TRICKLE[i : i + 1])
            req.wfile.flush()
            time.sleep(every_s)
