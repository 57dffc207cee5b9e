"""The CouchDB-protocol hub the sync tests run against: ``pouchdb-server`` from npm,
pinned in ``package-lock.json`` beside this file (standard library only).

    server = SyncServer()      # installs the pinned package into .cache/ on first use
    server.start(port=0)       # in memory, on 127.0.0.1; port 0 picks a free one
    print(server.url)          # http://127.0.0.1:<port>
    server.stop()

``start(port, data_dir=folder)`` keeps the databases on disk in ``folder`` instead
(pouchdb-server's ``--dir``, LevelDB): a server started again on the same port and folder
serves the same data, e.g. after :meth:`SyncServer.kill` (SIGKILL, for the tests of a hub
that dies mid-round). ``stop()`` and ``kill()`` never delete a ``data_dir``.

``python3 build.py sync-server --port N`` runs one in the foreground.

CORS is on for every origin (:data:`CONFIG`), so that a page served from another port
(the browser tests' ``tools/server.py``) can sync with it; pouchdb-server reads its
settings from the ``config.json`` it is given (``--config``), CouchDB's ``[cors]``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PREFIX = ROOT / ".cache" / "sync-server"
BIN = PREFIX / "node_modules" / "pouchdb-server" / "bin" / "pouchdb-server"

#: pouchdb-server's settings (CouchDB's ini sections as JSON): CORS for any origin, with
#: the headers the replicator sends (Authorization, Content-Type) and its methods.
CONFIG = {
    "httpd": {"enable_cors": True},
    "cors": {
        "origins": "*",
        "credentials": False,
        "methods": "GET, HEAD, POST, PUT, DELETE",
        "headers": "accept, authorization, content-type, origin, referer",
    },
    "log": {"level": "error"},
}


class SyncServerError(RuntimeError):
    """Node/npm is missing, the install failed, or the server did not come up."""


def install() -> Path:
    """``npm ci`` of the pinned lock into .cache/sync-server (once per lock change)."""
    lock = (HERE / "package-lock.json").read_bytes()
    stamp = PREFIX / ".lock"
    if BIN.exists() and stamp.exists() and stamp.read_bytes() == lock:
        return BIN
    npm = shutil.which("npm")
    if not npm:
        raise SyncServerError("the sync tests need npm (Node.js 18+): apt-get install -y npm")
    PREFIX.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / name, PREFIX / name)
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PREFIX,
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode or not BIN.exists():
        raise SyncServerError(f"npm ci of pouchdb-server failed:\n{done.stderr[-2000:]}")
    stamp.write_bytes(lock)
    return BIN


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SyncServer:
    """One pouchdb-server process on loopback, in memory or over a ``data_dir``."""

    def __init__(self) -> None:
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.dir: Path | None = None  # its config and log (a temporary folder)
        self.data_dir: Path | None = None  # its databases, if kept on disk

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(
        self, port: int = 0, *, data_dir: Path | None = None, timeout_s: float = 60.0
    ) -> SyncServer:
        """Run the server on 127.0.0.1:``port`` (0: a free port) until it answers. Without
        ``data_dir`` its databases live in memory (``--in-memory``); with it, on disk in
        that folder (``--dir``, created if missing), kept across restarts."""
        if self.proc is not None and self.proc.poll() is None:
            raise SyncServerError(f"pouchdb-server already runs on {self.url}")
        node = shutil.which("node")
        if not node:
            raise SyncServerError("the sync tests need Node.js 18+: apt-get install -y nodejs")
        binary = install()
        self.port = port or free_port()
        self._cleanup()  # a previous run's config folder
        self.dir = Path(tempfile.mkdtemp(prefix="pymemory-sync-"))  # its config and log
        config = self.dir / "config.json"
        config.write_text(json.dumps(CONFIG), encoding="utf-8")
        if data_dir is None:
            self.data_dir, store = None, ["--in-memory"]
        else:
            self.data_dir = Path(data_dir).resolve()
            self.data_dir.mkdir(parents=True, exist_ok=True)
            store = ["--dir", str(self.data_dir)]
        self.proc = subprocess.Popen(
            [node, str(binary), *store, "--host", "127.0.0.1", "--port", str(self.port),
             "--config", str(config)],
            cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SyncServerError(f"pouchdb-server exited ({self.proc.returncode})")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(self.url + "/", timeout=1) as answer,
            ):
                if answer.status == 200:
                    return self
            time.sleep(0.2)
        self.stop()
        raise SyncServerError(f"pouchdb-server did not answer on {self.url} in {timeout_s}s")

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 5 s), then remove the config folder (never ``data_dir``)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self._cleanup()

    def kill(self) -> None:
        """SIGKILL the server and wait for it (a hub that dies without a word, for the
        tests); the config folder goes, ``data_dir`` stays for a restart."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        self._cleanup()

    def _cleanup(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
