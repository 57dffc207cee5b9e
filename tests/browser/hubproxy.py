"""A misbehaving hub for the browser's sync tests: a real HTTP server (the standard
library's, in a thread, on loopback) in front of the session's pouchdb-server. It forwards
every request as it came (CORS preflights included, so the browser sees the real hub's
CORS answers) unless a rule of the test says otherwise: answer a status or a body of its
own (with the CORS header pouchdb-server sends, ``Access-Control-Allow-Origin: *``), hang
without answering, or forward after a delay or once the test lets it go.

    proxy = HubProxy(hub_root).start()
    proxy.rules = [Rule("GET", "/_changes", status=500)]   # the first matching rule wins
    ...
    proxy.rules = []                                       # pass-through again
    proxy.stop()
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}
MAX_HOLD_S = 120.0  # a hung or held request gives up after this (the test failed anyway)


@dataclass
class Rule:
    """What to do with requests of ``method`` (None: any but OPTIONS) whose path matches
    the regex ``path``: answer ``status`` with ``body``, ``hang`` (never answer), forward
    after ``delay_s`` seconds, or ``hold`` (forward once :meth:`HubProxy.release` is
    called; :attr:`HubProxy.held` is set when one arrives). ``nth``: only the n-th match
    (1-based), counted from when the rule was set; ``times`` (with ``nth`` None): only
    the first that many."""

    method: str | None
    path: str
    status: int | None = None
    body: bytes = b""
    content_type: str = "application/json"
    hang: bool = False
    delay_s: float = 0.0
    hold: bool = False
    nth: int | None = None
    times: int | None = None
    matched: int = field(default=0, init=False)

    def applies(self, method: str, path: str) -> bool:
        if method == "OPTIONS" or (self.method is not None and self.method != method):
            return False
        if not re.search(self.path, path):
            return False
        self.matched += 1
        if self.nth is not None:
            return self.matched == self.nth
        return self.times is None or self.matched <= self.times


class HubProxy:
    """The server; :attr:`url` is its root (``http://127.0.0.1:<port>``)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.rules: list[Rule] = []
        self.seen: list[tuple[str, str, str]] = []  # (method, path, what was done)
        self.held = threading.Event()  # a `hold` request arrived
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> HubProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                proxy.handle(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_OPTIONS = _serve

            def log_message(self, *args: object) -> None:  # quiet
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def set_rules(self, *rules: Rule) -> None:
        """Replace the rules (their counts start from zero) and re-arm ``held``."""
        with self._lock:
            self.held.clear()
            self._release.clear()
            self.rules = list(rules)

    def release(self) -> None:
        """Let held (and hung) requests go: held ones are forwarded, hung ones dropped."""
        self._release.set()

    def stop(self) -> None:
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # --- one request ---------------------------------------------------------------

    def handle(self, req: BaseHTTPRequestHandler) -> None:
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else None
        with self._lock:
            rule = next((r for r in self.rules if r.applies(req.command, req.path)), None)
        what = "forward" if rule is None else self._describe(rule)
        self.seen.append((req.command, req.path, what))
        try:
            if rule is not None and rule.hang:
                self._release.wait(MAX_HOLD_S)
                req.close_connection = True
                return  # no answer at all: the socket closes when the handler returns
            if rule is not None and rule.status is not None:
                self._answer(req, rule.status, rule.body, rule.content_type)
                return
            if rule is not None and rule.hold:
                self.held.set()
                self._release.wait(MAX_HOLD_S)
            elif rule is not None and rule.delay_s:
                time.sleep(rule.delay_s)
            self._forward(req, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page went (a tab closed mid-request)

    @staticmethod
    def _describe(rule: Rule) -> str:
        if rule.hang:
            return "hang"
        if rule.status is not None:
            return f"answer {rule.status}"
        return "hold" if rule.hold else f"delay {rule.delay_s}"

    @staticmethod
    def _answer(req: BaseHTTPRequestHandler, status: int, body: bytes, kind: str) -> None:
        req.send_response(status)
        req.send_header("Access-Control-Allow-Origin", "*")  # as pouchdb-server's answers
        req.send_header("Content-Type", kind)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)

    def _forward(self, req: BaseHTTPRequestHandler, body: bytes | None) -> None:
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {k: v for k, v in req.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Host"] = f"{self.upstream[0]}:{self.upstream[1]}"
            conn.request(req.command, req.path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            req.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                    req.send_header(name, value)
            req.send_header("Content-Length", str(len(data)))
            req.end_headers()
            req.wfile.write(data)
        finally:
            conn.close()
