"""docs/browser.md's "In your own Pyodide" page, run as it is with npm's `pyodide` only.

`build.py pack`'s tarball is installed with npm into a temporary folder outside the
repository (npm's `pyodide`, which has neither numpy nor micropip, comes as pymemory's
dependency); the page's HTML block is the app's index.html, served by a plain static
server over that folder. It loads numpy and the pymemory wheel from
`node_modules/pymemory/wheels/` (the URLs read from its manifest.json), adds, retrieves and
prints what the page shows. No Pyodide from this repository's .cache is served.
"""

from __future__ import annotations

import json
import re
import threading
import time
from functools import partial
from http.server import ThreadingHTTPServer

import pytest
from browserkit import BOOT_TIMEOUT_MS, watch_errors
from test_npm_package import StaticHandler, npm, readme_block

from tools import pack

BROWSER_PAGE = pack.ROOT / "docs" / "browser.md"  # docs/browser.md
HEADING = "## In your own Pyodide (PyScript, JupyterLite, a page's own worker)"


@pytest.fixture(scope="module")
def own_pyodide_app(tmp_path_factory):
    """An app folder with the packed tarball installed by npm and the page as index.html."""
    tarball = pack.pack()
    root = tmp_path_factory.mktemp("own-pyodide-app")
    assert not root.resolve().is_relative_to(pack.ROOT)
    (root / "package.json").write_text(json.dumps({"name": "app", "private": True}))
    npm("install", "--no-audit", "--no-fund", "--loglevel=error", str(tarball), cwd=root)
    (root / "index.html").write_text(readme_block(HEADING, "html", page=BROWSER_PAGE))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(StaticHandler, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_own_pyodide_page_runs_with_npms_pyodide_only(context, own_pyodide_app):
    root, base = own_pyodide_app
    pyodide = root / "node_modules" / "pyodide"
    # What makes the recipe necessary: npm's pyodide has the core, no packages.
    assert (pyodide / "pyodide.asm.wasm").is_file()
    assert not list(pyodide.glob("numpy*")) and not list(pyodide.glob("micropip*"))
    manifest = json.loads((root / "node_modules/pymemory/wheels/manifest.json").read_text())

    page = context.new_page()
    errors = watch_errors(page)
    printed: list[str] = []
    requests: list[str] = []
    page.on("console", lambda msg: printed.append(msg.text))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{base}/index.html")
    # The page prints one line when done (a page error ends the wait too).
    deadline = time.monotonic() + BOOT_TIMEOUT_MS / 1000
    while not any("goes live next Tuesday" in line for line in printed) and not errors:
        assert time.monotonic() < deadline, f"the page printed nothing: {printed}"
        page.wait_for_timeout(250)
    assert errors == [], errors

    shown = readme_block(HEADING, "", index=1, page=BROWSER_PAGE)
    date = re.compile(r"\[\d{4}-\d{2}-\d{2}\]")
    out = "\n".join(x for x in printed if date.search(x) or "goes live" in x)
    assert date.sub("[DATE]", out) == date.sub("[DATE]", shown.strip()), printed

    # The memory is in IndexedDB, under the name the page gave.
    names = page.evaluate("async () => (await indexedDB.databases()).map((d) => d.name)")
    assert "my-notes" in names

    # Everything came from the app's own folder: npm's pyodide and pymemory's wheels.
    fetched = {u.removeprefix(base + "/") for u in requests if not u.startswith("blob:")}
    assert all(not u.startswith("http") for u in fetched), fetched  # nothing from a CDN
    wheels = {f"node_modules/pymemory/wheels/{manifest[k]}" for k in ("numpy", "pymemory")}
    assert wheels <= fetched
    others = {
        u
        for u in fetched - wheels
        if not u.startswith("node_modules/pyodide/")
        and u not in {"index.html", "node_modules/pymemory/wheels/manifest.json"}
    }
    assert others == set(), others
