"""End to end in Chromium: a scripted agent loop (web/pages/test/agent-loop.html) against a real
local model server speaking OpenAI Chat Completions. The page runs the model's tool calls
through the client (core memory, the /memories file tool, memory_kv), notes each step to
the worker's observer (whose OpenAI model is the same server, reached by Pyodide's fetch)
and checkpoints each step; then the page reloads and the run resumes from its latest
checkpoint with its memory, and finishes."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from browserkit import watch_errors

OBSERVER_SYSTEM_START = "You compress an AI agent's working history"
TOOL_NAMES = ["core_memory_append", "core_memory_replace", "memory", "memory_kv"]
APPENDED = "Prefers metric units; travelling to Lyon in May."
NOTES = "# Trip notes\n- Day 1: Lyon old town\n"
FINAL = "Your Lyon trip is planned; the notes are in /memories/notes.md."

# The agent's turns, by how many assistant turns the request already holds.
AGENT_SCRIPT: list[list[tuple[str, dict[str, Any]]] | str] = [
    [("core_memory_append", {"label": "human", "content": APPENDED})],
    [("memory", {"command": "create", "path": "/memories/notes.md", "file_text": NOTES})],
    [
        ("memory", {"command": "view", "path": "/memories/notes.md"}),
        ("memory_kv", {"operation": "write", "key": "trip:status", "text": "itinerary drafted"}),
    ],
    FINAL,
]


def chat_reply(text: str | None, calls: list[tuple[str, dict[str, Any]]] = ()) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]  # fmt: skip
    return {
        "id": "chatcmpl-e2e",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class ModelServer:
    """A stateless scripted model on 127.0.0.1, reachable from a cross-origin-isolated page
    and its worker: it answers CORS preflights and marks every response CORS and CORP."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _cors(self) -> None:
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Cross-Origin-Resource-Policy", "cross-origin")

            def _record(self, body: Any) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server.lock:
                    server.requests.append(
                        {"method": self.command, "path": self.path, "headers": headers,
                         "body": body}
                    )  # fmt: skip

            def do_OPTIONS(self) -> None:
                self._record(None)
                self.send_response(204)
                self._cors()
                self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
                asked = self.headers.get("Access-Control-Request-Headers", "")
                self.send_header("Access-Control-Allow-Headers", asked or "content-type")
                self.send_header("Access-Control-Max-Age", "600")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                body = json.loads(raw)
                self._record(body)
                status, reply = server.answer(self.path, body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self._cors()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}"}}
        if body.get("model") == "agent-model":
            turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
            if turn >= len(AGENT_SCRIPT):
                return 400, {"error": {"message": "the script is over"}}
            step = AGENT_SCRIPT[turn]
            return 200, chat_reply(step) if isinstance(step, str) else chat_reply(None, step)
        if body.get("model") == "observer-model":
            transcript = body["messages"][-1]["content"]
            first, last = re.search(r"Steps (\d+)-(\d+) of the session", transcript).groups()
            used = re.findall(r"called (\w+)\(", transcript)
            text = f"Steps {first}-{last}: the agent used {', '.join(used) or 'no tools'}."
            return 200, chat_reply(json.dumps({"priority": "medium", "text": text}))
        return 400, {"error": {"message": f"unknown model {body.get('model')!r}"}}

    def posts(self, model: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r["body"] for r in self.requests if r["body"] and r["body"]["model"] == model]

    def start(self) -> ModelServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def model_server():
    server = ModelServer().start()
    yield server
    server.stop()


def open_loop_page(page, base_url: str) -> None:
    page.goto(f"{base_url}/web/pages/test/agent-loop.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")


def run(page, **options) -> dict[str, Any]:
    return page.evaluate("(options) => window.agentLoop.run(options)", options)


def tool_turns(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_agent_loop_survives_a_reload(context, base_url, model_server):
    page = context.new_page()
    errors = watch_errors(page)
    options = {"modelUrl": model_server.url, "dbName": "agent-e2e", "runId": "trip-1"}

    open_loop_page(page, base_url)
    first = run(page, **options, stopAfterSteps=2)
    assert first["resumedFromSeq"] is None and first["blocksCreated"] is True
    assert first["steps"] == 2 and first["state"]["step"] == 2 and not first["state"]["done"]
    assert [r["isError"] for r in first["toolResults"]] == [False, False]
    assert first["toolResults"][1]["artifact"]["outcome"] == "created"
    assert [c["seq"] for c in first["checkpoints"]] == [1, 2]

    # The page goes away mid-run: a new page, a new worker, the same IndexedDB.
    page.reload()
    page.wait_for_function("document.body.dataset.loaded === '1'")
    second = run(page, **options)

    # It resumed from checkpoint 2, with its memory.
    assert second["resumedFromSeq"] == 2 and second["blocksCreated"] is False
    at_resume = second["atResume"]
    assert f"<value>\n{APPENDED}\n</value>" in at_resume["render"]
    assert (
        at_resume["notes"]["isError"] is False
        and "Day 1: Lyon old town" in at_resume["notes"]["content"]
    )
    assert [o["coversSteps"] for o in at_resume["observations"]] == [
        {"from": 1, "to": 1},
        {"from": 2, "to": 2},
    ]
    assert at_resume["observations"][0]["text"] == "Steps 1-1: the agent used core_memory_append."

    # ...and finished.
    state = second["state"]
    assert second["steps"] == 2 and state["step"] == 4 and state["done"] is True
    assert state["finalText"] == FINAL
    assert [r["name"] for r in second["toolResults"]] == ["memory", "memory_kv"]
    assert "Day 1: Lyon old town" in second["toolResults"][0]["content"]
    assert second["kv"]["content"] == "itinerary drafted"
    final = second["final"]
    assert APPENDED in final["render"]
    observations = final["observations"]
    assert [o["coversSteps"]["from"] for o in observations] == [1, 2, 3, 4]  # numbered on
    assert [o["seqId"] for o in observations] == [1, 2, 3, 4]
    assert observations[2]["text"] == "Steps 3-3: the agent used memory, memory_kv."
    assert observations[3]["text"] == "Steps 4-4: the agent used no tools."
    assert second["observerStatus"]["observations"] == 4
    assert second["observerStatus"]["lastError"] is None
    assert second["prompt"].startswith("# Observations\n- [medium] (steps 1-1)")
    checkpoints = second["checkpoints"]
    assert [c["seq"] for c in checkpoints] == [1, 2, 3, 4]
    assert [c["metadata"]["status"] for c in checkpoints] == ["running"] * 3 + ["done"]

    # What the model server received from the page: four agent turns, each with the
    # system prompt, then the memory blocks as one user message, then the conversation.
    agent = model_server.posts("agent-model")
    assert len(agent) == 4
    for body in agent:
        assert [t["function"]["name"] for t in body["tools"]] == TOOL_NAMES
        system, blocks, task = body["messages"][:3]
        assert system["role"] == "system" and "travel-planning assistant" in system["content"]
        assert blocks["role"] == "user" and blocks["content"].startswith("<memory_blocks>")
        assert task == {"role": "user", "content": first["state"]["messages"][0]["content"]}
    assert APPENDED not in agent[0]["messages"][1]["content"]
    for body in agent[1:]:  # the append shows in every later turn, across the reload
        assert f"<value>\n{APPENDED}\n</value>" in body["messages"][1]["content"]
    assert tool_turns(agent[0]["messages"]) == []
    [appended] = tool_turns(agent[1]["messages"])
    assert appended.startswith("Appended to memory block 'human'")
    # The first request after the reload carries the checkpointed conversation.
    resumed = tool_turns(agent[2]["messages"])
    assert resumed == [appended, "File created successfully at: /memories/notes.md"]
    call = agent[2]["messages"][-2]["tool_calls"][0]
    assert call["function"]["name"] == "memory"
    assert json.loads(call["function"]["arguments"])["path"] == "/memories/notes.md"
    last = tool_turns(agent[3]["messages"])
    assert len(last) == 4 and "Day 1: Lyon old town" in last[2]
    assert last[3] == "Saved memory 'trip:status' (17 chars)."

    # ...and from the worker: the observer's own HTTP calls (Pyodide's fetch), one per step.
    observer = model_server.posts("observer-model")
    steps = [re.search(r"Steps \d+-\d+", b["messages"][-1]["content"])[0] for b in observer]
    assert steps == ["Steps 1-1", "Steps 2-2", "Steps 3-3", "Steps 4-4"]
    for body in observer:
        assert body["messages"][0]["role"] == "system"
        assert body["messages"][0]["content"].startswith(OBSERVER_SYSTEM_START)
        assert body["temperature"] == 0 and "tools" not in body
    assert (
        "tool result (memory): File created successfully" in observer[1]["messages"][1]["content"]
    )
    with model_server.lock:
        requests = list(model_server.requests)
    auth = {r["headers"].get("authorization") for r in requests if r["method"] == "POST"}
    assert auth == {"Bearer sk-local-test", "Bearer sk-observer"}
    assert any(r["method"] == "OPTIONS" for r in requests)  # CORS preflights were answered

    # A finished run resumes as finished: no more model calls.
    before = len(model_server.posts("agent-model"))
    again = run(page, **options)
    assert again["resumedFromSeq"] == 4 and again["steps"] == 0 and again["state"]["done"]
    assert len(model_server.posts("agent-model")) == before
    assert errors == []
