"""The npm package in the apps people build: Vite's dev server, `vite build` and webpack 5.

An app outside this repository (a temporary folder) gets `build.py pack`'s tarball and the
bundlers pinned in tests/browser/apps/package-lock.json (installed with `npm ci`, cached
under .cache/bundler-apps/<the lock's hash>/ so reruns take seconds). Each app boots in
Chromium, adds, retrieves, has its service worker cache the first visit, and on the second
visit, with the network off, boots and finds the memory again. Vite's dev server runs with
the default asset URLs (`optimizeDeps.exclude: ["pymemory"]` is all its config); the
builds copy the assets with the package's `pymemory-assets` and pass `assetsUrl`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tarfile
import threading
import time
from functools import partial
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from test_npm_package import StaticHandler, npm, readme_block

from tools import pack

TEMPLATE = Path(__file__).parent / "apps"
CACHE = pack.ROOT / ".cache" / "bundler-apps"

MAIN_JS = """
import { createAgentMemory } from "pymemory";
import { registerOffline } from "pymemory/offline";

// Builds pass ?assets=/pymemory/ (the copied assets); Vite's dev server uses the defaults.
const assetsUrl = new URLSearchParams(location.search).get("assets") ?? undefined;
const options = assetsUrl ? { assetsUrl } : {};
const memory = createAgentMemory({ dbName: "app", scope: "user", ...options });
window.memory = memory;
const show = (text) => (document.getElementById("status").textContent = text);
memory.ready.then(
  () => {
    show("ready");
    window.offline = registerOffline("/pymemory-sw.mjs", options);
  },
  (err) => show(`error ${err.code}: ${err.message}`),
);
"""

INDEX = """<!doctype html><meta charset="utf-8"><title>bundled app</title>
<p id="status">starting</p>
<script type="module" src="SRC"></script>
"""

BUNDLERS_PAGE = pack.ROOT / "docs/bundlers.md"
VITE_CONFIG = readme_block("## Vite", "js", page=BUNDLERS_PAGE)
WEBPACK_CONFIG = readme_block("## webpack 5", "js", page=BUNDLERS_PAGE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cached_node_modules() -> Path:
    """`npm ci` of the template's lock, once per lock (keyed by its sha256)."""
    lock = (TEMPLATE / "package-lock.json").read_bytes()
    folder = CACHE / hashlib.sha256(lock).hexdigest()[:16]
    if not (folder / "node_modules" / ".package-lock.json").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(TEMPLATE / name, folder / name)
        npm("ci", "--no-audit", "--no-fund", "--loglevel=error", cwd=folder)
    return folder / "node_modules"


def run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(StaticHandler, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def app_root(tmp_path_factory):
    """The app's folder: the template's node_modules (hard links of the cache) with the
    packed pymemory extracted into it, the app's sources and configs."""
    tarball = pack.pack()
    modules = cached_node_modules()
    root = tmp_path_factory.mktemp("bundled-app")
    assert not root.resolve().is_relative_to(pack.ROOT)
    subprocess.run(["cp", "-al", str(modules), str(root / "node_modules")], check=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(root / "node_modules", filter="data")
    (root / "node_modules" / "package").rename(root / "node_modules" / "pymemory")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(TEMPLATE / name, root / name)
    (root / "src").mkdir()
    (root / "src" / "main.js").write_text(MAIN_JS)
    (root / "index.html").write_text(INDEX.replace("SRC", "/src/main.js"))
    (root / "vite.config.js").write_text(VITE_CONFIG)
    (root / "webpack.config.cjs").write_text(WEBPACK_CONFIG)
    (root / "public").mkdir()
    shutil.copy(root / "node_modules" / "pymemory" / "sw.mjs", root / "public" / "pymemory-sw.mjs")
    return root


def exercise(context, url: str) -> None:
    """Boot, add, retrieve, let the service worker cache the visit; then, offline, reload:
    the second visit boots and finds the memory."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.wait_for_function(
        "document.getElementById('status').textContent !== 'starting'", timeout=180_000
    )
    assert page.inner_text("#status") == "ready"
    found = page.evaluate(
        """async () => {
             await window.memory.addMemory("The user's favourite colour is teal.");
             return (await window.memory.retrieve("what colour does the user like?")).text;
           }"""
    )
    assert "teal" in found
    precached = page.evaluate("window.offline")
    assert precached["failed"] == [], precached
    context.set_offline(True)
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
    page.on("console", lambda m: failed.append(f"console: {m.text}"))
    try:
        page.reload()
        try:
            page.wait_for_function(
                "document.getElementById('status')?.textContent !== 'starting'", timeout=60_000
            )
        except Exception:
            state = page.evaluate("JSON.stringify(window.memory?.status ?? document.body.innerHTML)")
            pytest.fail(f"the offline visit did not boot: {state[:3000]} {failed}")
        assert page.inner_text("#status") == "ready", failed
        found = page.evaluate(
            "async () => (await window.memory.retrieve('what colour does the user like?')).text"
        )
        assert "teal" in found
    finally:
        context.set_offline(False)
    assert errors == []


def test_vite_dev_server_with_the_default_asset_urls(context, app_root):
    port = free_port()
    vite = subprocess.Popen(
        ["node", "node_modules/vite/bin/vite.js", "--host", "127.0.0.1", "--port", str(port),
         "--strictPort", "--clearScreen", "false"],
        cwd=app_root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        else:
            pytest.fail("vite's dev server did not start")
        exercise(context, f"http://127.0.0.1:{port}/")
    finally:
        vite.terminate()
        vite.wait(10)


def test_vite_build_served_statically(context, app_root):
    run(["node", "node_modules/pymemory/bin/pymemory-assets.mjs", "public"], app_root)
    run(["node", "node_modules/vite/bin/vite.js", "build", "--logLevel", "error"], app_root)
    dist = app_root / "dist"
    assert (dist / "pymemory" / "worker" / "memory-worker.mjs").is_file()
    assert (dist / "pyodide" / "pyodide.asm.wasm").is_file()
    server, url = serve(dist)
    try:
        exercise(context, f"{url}/?assets=/pymemory/")
    finally:
        server.shutdown()
        shutil.rmtree(app_root / "public" / "pymemory")
        shutil.rmtree(app_root / "public" / "pyodide")


def webpack_dist(app_root: Path) -> Path:
    """The webpack build of the app (docs/bundlers.md's config), with the assets copied."""
    out = app_root / "webpack-dist"
    if not (out / "main.js").exists():
        run(["node", "node_modules/webpack-cli/bin/cli.js", "--config", "webpack.config.cjs",
             "--output-path", str(out)], app_root)  # fmt: skip
        run(["node", "node_modules/pymemory/bin/pymemory-assets.mjs", str(out)], app_root)
        (out / "index.html").write_text(INDEX.replace("SRC", "/main.js"))
        shutil.copy(app_root / "public" / "pymemory-sw.mjs", out / "pymemory-sw.mjs")
    return out


def test_webpack_production_build(context, app_root):
    out = webpack_dist(app_root)
    server, url = serve(out)
    try:
        exercise(context, f"{url}/?assets=/pymemory/")
    finally:
        server.shutdown()


def test_a_webpack_build_without_assets_url_says_so_without_the_build_machines_path(
    context, app_root
):
    """webpack turns the client's import.meta.url into a file: URL of the build machine's
    node_modules; createAgentMemory without assetsUrl throws invalid_input saying to copy
    the assets, and its message does not repeat that path."""
    server, url = serve(webpack_dist(app_root))
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{url}/")  # no ?assets=: the defaults
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert len(errors) == 1, errors
        assert "pymemory-assets" in errors[0] and "assetsUrl" in errors[0]
        assert "file://" not in errors[0] and str(app_root) not in errors[0]
    finally:
        server.shutdown()


def test_the_template_lock_pins_the_bundlers():
    lock = json.loads((TEMPLATE / "package-lock.json").read_text())
    wanted = json.loads((TEMPLATE / "package.json").read_text())["devDependencies"]
    for name, version in wanted.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


def test_page_memory_against_a_bundled_app_and_a_page_whose_client_failed(context, app_root):
    from pymemory.testing import PageMemory, PageMemoryError

    server, url = serve(webpack_dist(app_root))
    try:
        page = context.new_page()
        page.goto(f"{url}/?assets=/pymemory/")  # the bundle's client, assets under /pymemory/
        memory = PageMemory(page, db_name="app")  # attaches to the app's own connection
        memory.reset()
        memory.seed([{"text": "The user prefers metric units", "type": "user_preference"}])
        assert memory.retrieve("metric units")["memories"][0]["item"]["type"] == "user_preference"
        explicit = PageMemory(page, db_name="other", options={"assetsUrl": "/pymemory/"})
        assert explicit.list() == []

        broken = context.new_page()
        broken.goto(f"{url}/?assets=/no-such-folder/")  # the app's own client fails to boot
        broken.wait_for_function("document.getElementById('status').textContent.startsWith('error')")
        with pytest.raises(PageMemoryError) as failed:
            PageMemory(broken, db_name="app", timeout_ms=20_000).list()
        assert failed.value.code == "boot_failed"
        assert "/no-such-folder/" in str(failed.value)
    finally:
        server.shutdown()
