"""Seed, inspect and reset the pymemory database of a page under test (Playwright), and a
pytest plugin that points pytest-playwright at a local Chromium.

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
raise ``PageMemoryError`` with the client's error ``code``, or ``no_client`` / ``timeout``
when the page has no client or it does not answer within ``timeout_ms``.

The plugin (the wheel registers it with pytest through the ``pytest11`` entry point; it
acts only where pytest-playwright is installed: ``pip install "pymemory-agent[testing]"``)
adds two options to pytest:

``--chromium-path PATH`` (or ``$PYMEMORY_CHROMIUM``)
    launch this Chromium or Chrome (``auto``: the first of chromium, chromium-browser,
    google-chrome on PATH) instead of Playwright's own browser download, adding
    ``--no-sandbox`` when the tests run as root (Chromium refuses to start otherwise);
``--chromium-arg SWITCH``
    one more command-line switch for that browser (repeatable).

Both extend pytest-playwright's ``browser_type_launch_args``; a ``conftest.py`` that
overrides that fixture still wins.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import types
from pathlib import Path
from typing import Any

CHROMIUM_ENV = "PYMEMORY_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

_CALL = """async ([dbName, method, args, timeoutMs, options]) => {
  const started = Date.now();
  while (!globalThis.__pymemory) {
    if (Date.now() - started >= timeoutMs) return { ok: false, noClient: true };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  let client;
  try {
    client = globalThis.__pymemory.open(dbName, options);
  } catch (e) {
    return { ok: false, error: { code: e.code ?? "internal", message: String(e.message ?? e) } };
  }
  let timer;
  const expired = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, timeout: true, status: client.status ?? null }),
                       Math.max(0, timeoutMs - (Date.now() - started)));
  });
  const work = (async () => {
    try {
      await client.ready;
      return { ok: true, result: await client[method](...args) };
    } catch (e) {
      return { ok: false, error: { code: e.code ?? "internal", message: String(e.message ?? e) } };
    }
  })();
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}"""


class PageMemoryError(AssertionError):
    """A PageMemory call failed; ``code`` is the client's error code, or ``no_client`` (the
    page has no pymemory client) or ``timeout`` (it did not answer in time)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code


class PageMemory:
    """The pymemory database ``db_name`` of a Playwright (sync API) ``page``. Every call
    gives up after ``timeout_ms`` (default 60 s, enough for a cold Pyodide boot) with a
    ``PageMemoryError`` that says what the worker was doing."""

    def __init__(
        self,
        page: Any,
        db_name: str = "pymemory",
        *,
        timeout_ms: float = 60_000,
        options: dict[str, Any] | None = None,
    ):
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)):
            raise TypeError("timeout_ms must be a number of milliseconds")
        if timeout_ms <= 0:
            raise ValueError("timeout_ms must be > 0")
        if options is not None and not isinstance(options, dict):
            raise TypeError("options must be a dict of createAgentMemory options")
        self.page = page
        self.db_name = db_name
        self.timeout_ms = timeout_ms
        # createAgentMemory's options (camelCase, e.g. {"assetsUrl": "/pymemory/"}). Left
        # out, the page's own client's connection options are used: PageMemory attaches to
        # the app's worker and reports its failure rather than starting one of its own.
        self.options = dict(options or {})

    def _call(self, method: str, *args: Any) -> Any:
        answer = self.page.evaluate(
            _CALL,
            [self.db_name, method, json.loads(json.dumps(args)), self.timeout_ms, self.options],
        )
        seconds = f"{self.timeout_ms / 1000:g} s"
        if answer.get("noClient"):
            raise PageMemoryError(
                "no_client",
                f"{self.page.url} has not loaded pymemory's JS client (web/agent-memory.mjs, "
                f"which sets globalThis.__pymemory) within {seconds}",
            )
        if answer.get("timeout"):
            raise PageMemoryError("timeout", self._timeout_message(method, answer["status"]))
        if not answer["ok"]:
            raise PageMemoryError(answer["error"]["code"], answer["error"]["message"])
        return answer["result"]

    def _timeout_message(self, method: str, status: dict[str, Any] | None) -> str:
        status = status or {}
        state = f"{status.get('phase', '?')} {round(100 * (status.get('progress') or 0))}%"
        error = status.get("error")
        if error:
            state += f", error [{error.get('code')}] {error.get('message')}"
        return (
            f"database {self.db_name!r} on {self.page.url} did not answer {method}() within "
            f"{self.timeout_ms / 1000:g} s (PageMemory(timeout_ms=...)); the worker's status "
            f"is {state}. A worker stuck at 'starting' was not found or failed to load: check "
            "the page's console and network for its URL."
        )

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


# --- the pytest plugin ------------------------------------------------------------------


def find_chromium(value: str | None) -> str | None:
    """The browser executable that ``--chromium-path`` / ``$PYMEMORY_CHROMIUM`` names (a path
    or a command on PATH; ``auto`` searches CHROMIUM_NAMES), None if neither is set.
    Raises ValueError if the named browser does not exist."""
    value = value or os.environ.get(CHROMIUM_ENV) or None
    if value is None:
        return None
    if value == "auto":
        found = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
        if found is None:
            raise ValueError(f"--chromium-path auto: none of {', '.join(CHROMIUM_NAMES)} is on "
                             "PATH (Debian: apt-get install chromium)")  # fmt: skip
        return found
    path = shutil.which(value) or shutil.which(str(Path(value).expanduser()))
    if path is None:
        raise ValueError(f"--chromium-path {value}: no such executable")
    return path


def launch_args(
    base: dict[str, Any], executable: str | None, switches: list[str], *, root: bool
) -> dict[str, Any]:
    """pytest-playwright's launch options ``base`` with the plugin's additions."""
    options = dict(base)
    args = list(options.get("args") or [])
    if executable is not None:
        options.setdefault("executable_path", executable)
        if root and "--no-sandbox" not in args:
            args.append("--no-sandbox")
    args += [s for s in switches if s not in args]
    if args:
        options["args"] = args
    return options


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("pymemory", "pymemory: Playwright with a local Chromium")
    group.addoption(
        "--chromium-path", metavar="PATH", default=None,
        help=f"launch this Chromium/Chrome for pytest-playwright (default: ${CHROMIUM_ENV}; "
        "'auto': the first chromium or chrome on PATH), with --no-sandbox when root",
    )  # fmt: skip
    group.addoption(
        "--chromium-arg", metavar="SWITCH", action="append", default=[],
        help="one more command-line switch for the browser (repeatable)",
    )  # fmt: skip


def pytest_configure(config: Any) -> None:
    import pytest

    try:
        executable = find_chromium(config.getoption("chromium_path"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    switches = list(config.getoption("chromium_arg"))
    wanted = executable is not None or bool(switches)
    playwright = config.pluginmanager.has_plugin("playwright") or (
        "pytest_playwright.pytest_playwright" in sys.modules
    )
    if not playwright:
        if wanted:
            raise pytest.UsageError(
                "--chromium-path/--chromium-arg configure pytest-playwright, which is not "
                'installed: pip install "pymemory-agent[testing]"'
            )
        return
    root = hasattr(os, "geteuid") and os.geteuid() == 0

    def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
        return launch_args(browser_type_launch_args, executable, switches, root=root)

    if wanted:
        # Registered after pytest-playwright, so this fixture overrides its fixture of the
        # same name and extends the value that one computes (--headed, --browser-channel...).
        plugin = types.ModuleType("pymemory.testing.local_chromium")
        plugin.browser_type_launch_args = pytest.fixture(  # type: ignore[attr-defined]
            browser_type_launch_args, scope="session"
        )
        config.pluginmanager.register(plugin, "pymemory-local-chromium")
