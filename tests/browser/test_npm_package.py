"""The npm package as an app outside this repository uses it.

`build.py pack`'s tarball is installed with npm in a temporary folder (with react,
react-dom and esbuild from the registry), a tiny app is bundled with esbuild (and a second
one runs with no bundler, through an import map), a plain static server serves the folder,
and Chromium drives boot, add, retrieve and the hook's update. Also: a wrong worker URL
fails loudly, and a second visit boots from the cache, online and offline.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tools import pack

REACT = "18.3.1"
ESBUILD = "0.28.2"
TYPESCRIPT = "5.9.3"
TYPES_REACT = "18.3.32"
README = pack.ROOT / "README.md"
DOCS = pack.ROOT / "docs"  # docs/browser.md, docs/storage.md: their examples type-check

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


README_PAGE = """<!doctype html><meta charset="utf-8"><title>README example</title>
<script>
  window.lines = [];
  const log = console.log.bind(console);
  console.log = (...parts) => { window.lines.push(parts.join(" ")); log(...parts); };
</script>
<script type="module">
  import("/dist/readme.js").then(() => { window.done = true; }, (e) => { window.failed = String(e); });
</script>
"""


def readme_block(heading: str, lang: str, index: int = 0, page: Path = README) -> str:
    """The ``index``-th fenced block of ``lang`` after ``heading`` in ``page`` (README.md or
    a docs/ page; lang "" = any)."""
    text = page.read_text()
    rest = text[text.index(heading + "\n") :]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", rest, flags=re.MULTILINE | re.DOTALL)
    found = [body for kind, body in blocks if kind == lang or not lang]
    return found[index]


def bundle(root: Path, entry: str) -> None:
    esbuild = root / "node_modules" / ".bin" / "esbuild"
    out = "dist/" + entry.rsplit(".", 1)[0] + ".js"
    run = subprocess.run(
        [str(esbuild), f"src/{entry}", "--bundle", "--format=esm", f"--outfile={out}",
         "--jsx=automatic", "--loader:.jsx=jsx", "--log-level=error"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


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
        f"react@{REACT}", f"react-dom@{REACT}", f"esbuild@{ESBUILD}",
        f"typescript@{TYPESCRIPT}", f"@types/react@{TYPES_REACT}", cwd=root)  # fmt: skip
    (root / "src").mkdir()
    (root / "src" / "app.jsx").write_text(APP_JSX)
    (root / "src" / "readme.js").write_text(readme_block("## Browser tour", "js"))
    for entry in ("app.jsx", "readme.js"):
        bundle(root, entry)
    (root / "index.html").write_text(PAGE)
    (root / "readme.html").write_text(README_PAGE)
    (root / "plain.html").write_text(IMPORT_MAP_PAGE)
    (root / "wrong.html").write_text(WRONG_WORKER_PAGE)
    shutil.copy(root / "node_modules" / "pymemory" / "sw.mjs", root / "sw.mjs")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(StaticHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"root": root, "url": f"http://127.0.0.1:{server.server_address[1]}", "tarball": tarball}
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
    assert outcome["ms"] < 10_000  # from createAgentMemory() to the rejection


def test_the_tarball_holds_the_library_and_nothing_of_the_demo_tests_or_benches(app):
    with tarfile.open(app["tarball"]) as tar:
        names = {n.removeprefix("package/") for n in tar.getnames()}
    web = {"agent-memory.mjs", "agent-memory.d.ts", "connection.mjs", "errors.mjs",
           "leader.mjs", "options.mjs", "presets.mjs", "protocol.mjs", "worker-link.mjs",
           "react.mjs", "react.d.ts", "react-umd.mjs", "sw.mjs", "offline.mjs", "offline.d.ts",
           "ai.mjs", "ai.d.ts", "langchain.mjs", "langchain.d.ts", "bin/pymemory-assets.mjs",
           "package.json", "README.md"}  # fmt: skip
    workers = {
        f"worker/{p.name}"
        for p in (pack.ROOT / "web" / "worker").glob("*.mjs")
        if not p.name.endswith(".test.mjs")  # the unit tests stay in the repository
    }
    wheels = {n for n in names if n.startswith("wheels/")}
    assert names == web | workers | wheels
    assert {n.rsplit("/", 1)[1].split("-", 1)[0] for n in wheels} == {"manifest.json", "numpy", "pymemory_agent", "o200k_base.tiktoken"}
    assert not any(part in n for n in names for part in ("demo", "debug", "test", "bench", "vendor"))


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


def test_readme_js_example_prints_what_readme_shows(context, app):
    page = context.new_page()
    page.goto(f"{app['url']}/readme.html")
    page.wait_for_function("window.done || window.failed")
    assert page.evaluate("window.failed ?? null") is None
    lines = "\n".join(page.evaluate("window.lines")).splitlines()
    shown = readme_block("## Browser tour", "", index=1).splitlines()
    date = re.compile(r"\d{4}-\d{2}-\d{2}")
    assert [date.sub("DATE", x) for x in lines] == [date.sub("DATE", x) for x in shown]


TSCONFIG = {
    "compilerOptions": {
        "target": "es2022",
        "module": "esnext",
        "moduleResolution": "bundler",
        "lib": ["es2022", "dom"],
        "jsx": "react-jsx",
        "strict": True,
        "noEmit": True,
        "skipLibCheck": False,
    },
    "include": ["ts/**/*"],
}


def test_readme_examples_and_the_declarations_type_check(app):
    root = app["root"]
    ts = root / "ts"
    ts.mkdir(exist_ok=True)
    (ts / "client.ts").write_text(readme_block("## Browser tour", "js"))
    (ts / "hook.tsx").write_text(readme_block("## React hook", "jsx", page=DOCS / "browser.md"))
    storage = readme_block("## When storage runs out", "js", page=DOCS / "storage.md")
    (ts / "persist.ts").write_text('import { createAgentMemory } from "pymemory";\n' + storage)
    (ts / "options.ts").write_text(TS_OPTIONS)
    (root / "tsconfig.json").write_text(json.dumps(TSCONFIG, indent=2))
    tsc = root / "node_modules" / ".bin" / "tsc"
    run = subprocess.run([str(tsc), "-p", "."], cwd=root, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-1000:]
    # and it would fail on a type error: the check is real
    (ts / "wrong.ts").write_text('import { createAgentMemory } from "pymemory";\n'
                                 'createAgentMemory({ dbName: 3 });\n')  # fmt: skip
    run = subprocess.run([str(tsc), "-p", "."], cwd=root, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    (ts / "wrong.ts").unlink()
    assert run.returncode != 0 and "wrong.ts" in run.stdout


# The options and status fields README and docs/browser.md document, as a TypeScript user writes them.
TS_OPTIONS = """
import { createAgentMemory, resolveAssets, MemoryError, type Status, type ErrorCode } from "pymemory";
const memory = createAgentMemory({
  dbName: "app", assetsUrl: "/static/pymemory/", pyodideUrl: "/static/pyodide/",
  wheelsUrl: "/static/wheels/", modelsUrl: "/static/models/", onnxruntimeUrl: "/static/ort/",
  tiktokenUrl: "/static/tiktoken/", workerUrl: "/static/worker.mjs", bootTimeoutMs: 30_000,
  models: ["embedder", "summarizer"], ortThreads: 2, durability: "relaxed",
});
memory.onStatus((s: Status) => {
  const files = Object.entries(s.files ?? {}).map(([name, f]) => `${name} ${f.loaded}/${f.total} ${f.source}`);
  const models = s.models?.embedder ?? "off";
  if (s.error) { const code: ErrorCode = s.error.code; console.log(code, files, models); }
});
await memory.modelsReady;
const codes: ErrorCode[] = ["boot_failed", "worker_failed", "model_unavailable"];
console.log(resolveAssets({ assetsUrl: "/x/" }).workerUrl, codes, MemoryError);
"""
