"""An app's own folder outside this repository, for tests and benchmarks: Pyodide and the
pymemory wheel beside the app's pages and its own Pyodide worker, served by Python's plain
static file server (none of tools/server.py's mounts or headers)."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

from .assets import VENDOR, WHEELS

# The app's worker: its own Pyodide with numpy and the wheel; each message is Python to
# run, answered { ok, result } or { ok: false, error }.
WORKER = """import { loadPyodide } from "./pyodide/pyodide.mjs";
const pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", import.meta.url).href });
await pyodide.loadPackage(["numpy", new URL("./WHEEL", import.meta.url).href]);
self.onmessage = async ({ data }) => {
  try {
    self.postMessage({ ok: true, result: String(await pyodide.runPythonAsync(data)) });
  } catch (err) {
    self.postMessage({ ok: false, error: String(err) });
  }
};
self.postMessage({ ready: true });
"""

# A page of the app that runs Python in that worker: window.python(code).
WORKER_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>my app with its own Pyodide worker</title>
<script type="module">
  const worker = new Worker("./worker.mjs", { type: "module" });
  const ready = new Promise((resolve) => {
    worker.addEventListener("message", (e) => e.data.ready && resolve(), { once: true });
  });
  window.python = async (code) => {
    await ready;
    return new Promise((resolve) => {
      worker.addEventListener("message", (e) => resolve(e.data), { once: true });
      worker.postMessage(code);
    });
  };
</script>
"""


class StaticFiles(SimpleHTTPRequestHandler):
    """Python's plain static file server (with the JS and WASM types spelled out)."""

    extensions_map: ClassVar[dict[str, str]] = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".wasm": "application/wasm",
    }

    def log_message(self, format: str, *args: object) -> None:
        pass


def wheel_name() -> str:
    """The built pymemory wheel's file name (FileNotFoundError: run build.py setup)."""
    return json.loads((WHEELS / "manifest.json").read_text())["pymemory"]


def serve_app(folder: Path, pages: Mapping[str, str]) -> tuple[ThreadingHTTPServer, str]:
    """Link Pyodide and the wheel into ``folder``, write ``worker.mjs`` and ``pages`` (file
    name -> text; ``WHEEL`` in a text becomes the wheel's file name) and serve the folder
    on 127.0.0.1: (the server, its base URL)."""
    wheel = wheel_name()
    (folder / "pyodide").symlink_to(VENDOR / "pyodide", target_is_directory=True)
    (folder / wheel).symlink_to(WHEELS / wheel)
    for name, text in {"worker.mjs": WORKER, **pages}.items():
        (folder / name).write_text(text.replace("WHEEL", wheel))
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(StaticFiles, directory=str(folder))
    )
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
