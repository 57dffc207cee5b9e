"""A real local HTTP server for the model adapter tests.

``http.server`` on 127.0.0.1 (a free port) in a background thread. Each request is recorded
(method, path, lower-cased headers, decoded JSON body) and answered with the next queued
reply; with none queued it answers 500. Use the ``llm_server`` fixture, registered by ``pytest_plugins = ["llm_server"]`` in a test module::

    def test_x(llm_server):
        llm_server.reply_openai("Hello")
        ... requests to llm_server.url ...
        assert llm_server.requests[0].body["model"] == "gpt-4.1-mini"
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw)


class LlmServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: deque[tuple[int, bytes, str]] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(Recorded("POST", self.path, headers, raw))
                    reply = server._replies.popleft() if server._replies else None
                status, body, ctype = reply or (500, b'{"error": "no reply queued"}', "json")
                self.send_response(status)
                self.send_header("content-type", f"application/{ctype}")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, body: Any, status: int = 200) -> None:
        """Queue one JSON reply."""
        self.reply_raw(json.dumps(body).encode(), status)

    def reply_openai(
        self, text: str | None = None, tool_calls: list[tuple[str, str, Any]] | None = None
    ) -> None:
        """Queue a Chat Completions reply (see :func:`openai_reply`)."""
        self.reply(openai_reply(text, tool_calls))

    def reply_anthropic(self, blocks: list[dict[str, Any]], stop_reason: str = "end_turn") -> None:
        """Queue a Messages API reply."""
        self.reply(anthropic_reply(blocks, stop_reason))

    def reply_raw(self, body: bytes, status: int = 200, ctype: str = "json") -> None:
        """Queue one reply with a body sent as is."""
        with self._lock:
            self._replies.append((status, body, ctype))

    def start(self) -> LlmServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def llm_server():
    server = LlmServer().start()
    yield server
    server.stop()


# -- canned provider replies -----------------------------------------------------------------


def openai_reply(
    text: str | None = None, tool_calls: list[tuple[str, str, Any]] | None = None
) -> dict[str, Any]:
    """A Chat Completions reply; ``tool_calls`` are (id, name, arguments) with arguments
    a dict (JSON-encoded as the API does) or a raw string."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for call_id, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def anthropic_reply(blocks: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": blocks,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
