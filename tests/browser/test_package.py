"""The npm package as an app outside this repository uses it.

`build.py pack`'s tarball is installed with npm in a temporary folder (with react,
react-dom and esbuild from the registry), a tiny app is bundled with esbuild (and a second
one runs with no bundler, through an import map), a plain static server serves the folder,
and Chromium drives boot, add, retrieve and the hook's update. Also: a wrong worker URL
fails loudly, and a second visit boots from the cache, online and offline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tools import pack

REACT = "18.3.1"
ESBUILD = "0.28.2"

APP_JSX = """
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { createAgentMemory } from "pymemory";
import { useAgentMemory } from "pymemory/react";

const assetsUrl = "/node_modules/pymemory/";

function App() {
  const { memories, addMemory, status } = useAgentMemory({ dbName: "app", scope: "user", assetsUrl });
  return (
    <div>
      <p id="status">{status.ready ? "ready" : status.error ? "error " + status.error.code : status.phase}</p>
      <button id="add" onClick={() => addMemory("The user's favourite colour is teal.")}>add</button>
      <ul id="list">{memories.map((m) => <li key={m.id}>{m.content}</li>)}</ul>
    </div>
  );
}

createRoot(document.getElementById("root")).render(<App />);
window.client = createAgentMemory({ dbName: "app", assetsUrl });
"""

PAGE = """<!doctype html><meta charset="utf-8"><title>app</title>
<div id="root"></div>
<script type="module" src="/dist/app.js"></script>
<script>
  if (location.search.includes("sw")) navigator.serviceWorker.register("/sw.mjs", { type: "module" });
</script>
"""

# No bundler: React 18's UMD build from npm, "react" mapped to the package's shim.
IMPORT_MAP_PAGE = """<!doctype html><meta charset="utf-8"><title>app (no bundler)</title>
<script src="/node_modules/react/umd/react.production.min.js"></script>
<script src="/node_modules/react-dom/umd/react-dom.production.min.js"></script>
<script type="importmap">
{ "imports": { "react": "/node_modules/pymemory/react-umd.mjs" } }
</script>
<div id="root"></div>
<script type="module">
  import React from "react";
  import { createAgentMemory } from "/node_modules/pymemory/agent-memory.mjs";
  import { useAgentMemory } from "/node_modules/pymemory/react.mjs";
  const h = React.createElement;
  function App() {
    const { memories, addMemory, status } = useAgentMemory({ dbName: "plain", scope: "user" });
    return h("div", null,
      h("p", { id: "status" }, status.ready ? "ready" : status.phase),
      h("button", { id: "add", onClick: () => addMemory("The user's favourite colour is teal.") }, "add"),
      h("ul", { id: "list" }, memories.map((m) => h("li", { key: m.id }, m.content))));
  }
  ReactDOM.createRoot(document.getElementById("root")).render(h(App));
  window.client = createAgentMemory({ dbName: "plain" });
</script>
"""

WRONG_WORKER_PAGE = """<!doctype html><meta charset="utf-8"><title>wrong worker</title>
<script type="module">
  import { createAgentMemory } from "/node_modules/pymemory/agent-memory.mjs";
  const t0 = performance.now();
  const memory = createAgentMemory({ workerUrl: "/no/such/worker.mjs" });
  memory.ready.then(
    () => { window.outcome = { ok: true }; },
    (err) => { window.outcome = { ok: false, code: err.code, message: err.message,
                                  ms: performance.now() - t0, status: memory.status }; });
</script>
"""


class StaticHandler(SimpleHTTPRequestHandler):
    """A plain static file server (what an app's host does), quiet."""

    extensions_map: ClassVar[dict[str, str]] = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
        ".whl": "application/zip",
    }

    def log_message(self, format: str, *args: object) -> None:
        pass


def npm(*args: str, cwd: Path) -> None:
    exe = shutil.which("npm")
    if exe is None:
        pytest.fail("npm is needed (apt-get install -y npm)", pytrace=False)
    run = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A folder outside the repository with the package installed and the app built."""
    tarball = pack.pack()
    root = tmp_path_factory.mktemp("app")
    assert not root.resolve().is_relative_to(pack.ROOT)
    (root / "package.json").write_text(json.dumps({"name": "app", "private": True}))
    npm("install", "--no-audit", "--no-fund", "--loglevel=error", str(tarball),
        f"react@{REACT}", f"react-dom@{REACT}", f"esbuild@{ESBUILD}", cwd=root)  # fmt: skip
    (root / "src").mkdir()
    (root / "src" / "app.jsx").write_text(APP_JSX)
    esbuild = root / "node_modules" / ".bin" / "esbuild"
    run = subprocess.run(
        [str(esbuild), "src/app.jsx", "--bundle", "--format=esm", "--outfile=dist/app.js",
         "--jsx=automatic", "--loader:.jsx=jsx", "--log-level=error"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (root / "index.html").write_text(PAGE)
    (root / "plain.html").write_text(IMPORT_MAP_PAGE)
    (root / "wrong.html").write_text(WRONG_WORKER_PAGE)
    shutil.copy(root / "node_modules" / "pymemory" / "sw.mjs", root / "sw.mjs")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(StaticHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"root": root, "url": f"http://127.0.0.1:{server.server_address[1]}"}
    server.shutdown()


def _drive(page) -> None:
    """Boot, add through the hook, see the hook's list update, retrieve through a client."""
    page.wait_for_selector("#status:text('ready')")
    page.click("#add")
    page.wait_for_selector("#list li")
    assert "teal" in page.inner_text("#list")
    found = page.evaluate(
        """async () => { await window.client.ready;
             return (await window.client.retrieve("what colour does the user like?")).text; }"""
    )
    assert "teal" in found


def test_bundled_app_boots_adds_retrieves_and_the_hook_updates(context, app):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{app['url']}/index.html")
    _drive(page)
    assert errors == []


def test_app_without_a_bundler_through_an_import_map(context, app):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{app['url']}/plain.html")
    _drive(page)
    assert errors == []


def test_a_wrong_worker_url_rejects_ready_with_boot_failed(context, app):
    page = context.new_page()
    page.goto(f"{app['url']}/wrong.html")
    page.wait_for_function("window.outcome !== undefined", timeout=10_000)  # a hang fails here
    outcome = page.evaluate("window.outcome")
    assert outcome["ok"] is False and outcome["code"] == "boot_failed"
    assert "/no/such/worker.mjs" in outcome["message"]
    assert outcome["status"]["error"]["code"] == "boot_failed"


def test_a_missing_asset_names_its_url(context, app):
    page = context.new_page()
    page.goto(f"{app['url']}/wrong.html")
    outcome = page.evaluate(
        """async () => {
             const { createAgentMemory } = await import("/node_modules/pymemory/agent-memory.mjs");
             const m = createAgentMemory({ dbName: "x", wheelsUrl: "/nowhere/" });
             return m.ready.then(() => ({ ok: true }), (e) => ({ code: e.code, message: e.message }));
           }"""
    )
    assert outcome["code"] == "boot_failed" and "/nowhere/manifest.json" in outcome["message"]


def test_a_second_visit_boots_from_the_cache_and_offline(context, app):
    page = context.new_page()
    page.goto(f"{app['url']}/index.html?sw")
    _drive(page)
    page.wait_for_function("navigator.serviceWorker.controller !== null")
    first = page.evaluate("window.client.status")
    assert {f["source"] for f in first["files"].values()} == {"network"}
    assert first["bytes"]["loaded"] == first["bytes"]["total"] > 10_000_000

    page.reload()
    page.wait_for_selector("#status:text('ready')")
    second = page.evaluate("(async () => (await window.client.ready))()")
    assert {f["source"] for f in second["files"].values()} == {"cache"}
    assert set(second["files"]) == set(first["files"])

    context.set_offline(True)
    try:
        page.reload()
        page.wait_for_selector("#status:text('ready')")
        page.wait_for_selector("#list li")  # the memory added online is still there
        assert "teal" in page.inner_text("#list")
    finally:
        context.set_offline(False)
