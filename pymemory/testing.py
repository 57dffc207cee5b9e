"""Seed, inspect and reset the pymemory database of a page under test (Playwright).

For apps' own end-to-end tests with pytest-playwright (sync API)::

    from pymemory.testing import PageMemory

    def test_agent_remembers(page):
        page.goto("http://localhost:5173/")
        memory = PageMemory(page, db_name="my-app")
        memory.reset()
        memory.seed([{"text": "The user prefers metric units", "type": "user_preference"}])
        ...  # drive the app
        assert any("metric" in m["content"] for m in memory.list(scope=None))

It works on any page that loaded pymemory's JS client (``web/agent-memory.mjs``); calls
go through the page's own worker, so the app's hooks see the changes at once. Errors
raise ``PageMemoryError`` with the client's error ``code``.
"""

from __future__ import annotations

import json
from typing import Any

_CALL = """async ([dbName, method, args]) => {
  const registry = globalThis.__pymemory;
  if (!registry) return { ok: false, error: { code: "no_client",
    message: "this page has not loaded pymemory's client (web/agent-memory.mjs)" } };
  const client = registry.open(dbName);
  try {
    await client.ready;
    return { ok: true, result: await client[method](...args) };
  } catch (e) {
    return { ok: false, error: { code: e.code ?? "internal", message: String(e.message ?? e) } };
  }
}"""


class PageMemoryError(AssertionError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code


class PageMemory:
    def __init__(self, page: Any, db_name: str = "pymemory", *, timeout_ms: float = 60_000):
        self.page = page
        self.db_name = db_name
        self.timeout_ms = timeout_ms

    def _call(self, method: str, *args: Any) -> Any:
        self.page.wait_for_function("() => globalThis.__pymemory", timeout=self.timeout_ms)
        answer = self.page.evaluate(_CALL, [self.db_name, method, json.loads(json.dumps(args))])
        if not answer["ok"]:
            raise PageMemoryError(answer["error"]["code"], answer["error"]["message"])
        return answer["result"]

    def wait_ready(self) -> dict[str, Any]:
        """Wait for the worker to boot; returns the database's stats."""
        return self._call("stats")

    def seed(self, memories: list[dict[str, Any] | str], *, scope: str = "conversation") -> list:
        """Add memories (strings or addMemory inputs) in one atomic batch."""
        entries = [{"text": m} if isinstance(m, str) else m for m in memories]
        return self._call("addMany", [{"scope": scope, **e} for e in entries])

    def list(self, *, scope: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Stored memories, newest first; ``scope=None`` lists every scope."""
        return self._call("list", {"scope": scope, **filters})

    def retrieve(self, query: str, **options: Any) -> dict[str, Any]:
        return self._call("retrieve", query, options)

    def stats(self) -> dict[str, Any]:
        return self._call("stats")

    def export(self) -> str:
        return self._call("exportJsonl")

    def reset(self) -> int:
        """Delete every memory and the archive. Returns how many records went."""
        return self._call("clear", {"all": True})
