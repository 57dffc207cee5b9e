"""The dev/test web server: serves web/ (the npm package's tree, with its pages in
web/pages/) and the cached vendor files and wheel on 127.0.0.1 with the right MIME types
and the COOP/COEP headers onnxruntime-web threads need (``start(isolate=False)`` leaves
them out).

    /                 web/pages/demo/index.html
    /debug/memory     web/pages/debug/index.html
    /web/...          web/  (the client, web/worker/, the pages under /web/pages/...)
    /vendor/...       .cache/vendor/
    /wheels/...       .cache/wheels/
    /models/...       .cache/models/   (model.onnx, tokenizer.json, config.json, build.json)

and, so that the client's default asset URLs work on these pages unchanged, what the npm
package has around /web/agent-memory.mjs that the repository does not (its folder also
holds wheels/ and models/; the npm dependencies are its siblings):

    /web/wheels/, /web/models/  .cache/wheels/, .cache/models/
    /pyodide/, /onnxruntime-web/dist/, /js-tiktoken/dist/   the vendored npm files
"""

from __future__ import annotations

import shutil
import threading
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .assets import MODELS, VENDOR, WHEELS

ROOT = Path(__file__).resolve().parent.parent
MOUNTS: dict[str, Path] = {
    "/web/": ROOT / "web",
    "/vendor/": VENDOR,
    "/wheels/": WHEELS,
    "/models/": MODELS,
    # The package layout (see the module docstring); the longest matching prefix wins.
    "/web/wheels/": WHEELS,
    "/web/models/": MODELS,
    "/pyodide/": VENDOR / "pyodide",
    "/onnxruntime-web/dist/": VENDOR / "onnxruntime-web",
    "/js-tiktoken/dist/": VENDOR / "js-tiktoken",
}
PAGES = {
    "/": ROOT / "web" / "pages" / "demo" / "index.html",
    "/debug/memory": ROOT / "web" / "pages" / "debug" / "index.html",
}
TYPES = {
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".css": "text/css",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".ts": "text/plain; charset=utf-8",
    ".png": "image/png",
    ".map": "application/json",
    ".onnx": "application/octet-stream",
    ".txt": "text/plain; charset=utf-8",
}


def resolve(url_path: str) -> Path | None:
    """Map a URL path to a file inside one of the mounts, or None (never escapes a mount)."""
    path = unquote(urlsplit(url_path).path)
    if path in PAGES or path.rstrip("/") in PAGES:
        return PAGES.get(path) or PAGES[path.rstrip("/")]
    for prefix, folder in sorted(MOUNTS.items(), key=lambda m: -len(m[0])):
        if path.startswith(prefix):
            target = (folder / path[len(prefix) :]).resolve()
            if target.is_relative_to(folder.resolve()) and target.is_file():
                return target
            return None
    return None


class Handler(SimpleHTTPRequestHandler):
    server_version = "pymemory-dev"

    def log_message(self, format: str, *args: object) -> None:  # quiet by default
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def end_headers(self) -> None:
        if getattr(self.server, "isolate", True):  # crossOriginIsolated: WASM threads
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    def _serve(self, head: bool) -> None:
        target = resolve(self.path)
        if target is None and self.path == "/favicon.ico":
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return
        if target is None:
            self.send_error(HTTPStatus.NOT_FOUND, "not found")
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", TYPES.get(target.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(target.stat().st_size))
        self.end_headers()
        if not head:
            try:
                with target.open("rb") as f:
                    shutil.copyfileobj(f, self.wfile)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the page went away mid-download (tests close pages on purpose)


def start(
    port: int = 0, host: str = "127.0.0.1", verbose: bool = False, isolate: bool = True
) -> ThreadingHTTPServer:
    """Start serving in a daemon thread; ``server.server_address`` gives the port.
    ``isolate=False`` leaves out COOP/COEP, so pages are not cross-origin isolated (no
    SharedArrayBuffer, onnxruntime-web falls back to one thread)."""
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.verbose = verbose  # type: ignore[attr-defined]
    server.isolate = isolate  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True, name="pymemory-http").start()
    return server
