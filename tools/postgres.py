"""A throwaway PostgreSQL server for tests and development (standard library only).

    server = LocalPostgres()          # a fresh cluster in a temporary folder
    server.start()                    # initdb on first start; the postmaster is our child
    print(server.dsn())               # host=/tmp/pymemory-pg-... port=5432 user=postgres ...
    server.kill(); server.start()     # a crash (SIGKILL of every server process), recovery
    server.remove()                   # stop it and delete its folder

Uses Debian's PostgreSQL (``apt-get install -y postgresql``: binaries under
/usr/lib/postgresql/<version>/bin; ``PYMEMORY_PG_BIN`` overrides). PostgreSQL refuses to
run as root, so under root the server runs as the ``postgres`` OS user (or ``nobody``) in
a folder chowned to it. It listens on a unix socket in its own folder (so several servers
never clash on a port) and, with ``tcp=True``, on 127.0.0.1 as well. Local connections
are trusted except for the role :meth:`LocalPostgres.add_role` creates, which needs its
password (the tests check authentication errors with it).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

APT_HINT = "install Debian's PostgreSQL: apt-get install -y postgresql"


class PostgresError(RuntimeError):
    """PostgreSQL is missing, or a server command failed."""


def find_bindir() -> Path:
    """The folder with ``initdb``, ``postgres`` and ``psql``."""
    override = os.environ.get("PYMEMORY_PG_BIN")
    if override:
        return Path(override)
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PostgresError(f"PostgreSQL's initdb was not found: {APT_HINT}")


def _server_user() -> pwd.struct_passwd | None:
    """The unprivileged OS user the server runs as when we are root (None: ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresError("running as root and there is no 'postgres' or 'nobody' user")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
    return out


class LocalPostgres:
    """One PostgreSQL cluster in ``root`` (a new temporary folder by default)."""

    def __init__(
        self,
        root: Path | None = None,
        *,
        port: int = 5432,
        tcp: bool = False,
        settings: dict[str, str] | None = None,
    ) -> None:
        """``settings``: extra postgresql.conf lines (e.g. ``{"fsync": "off"}``)."""
        self.settings = dict(settings or {})
        self.bindir = find_bindir()
        self.user = _server_user()
        self.port = port
        self.tcp = tcp
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="pymemory-pg-"))
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        os.chmod(self.root, 0o700)

    # --- commands, as the server's user -------------------------------------------------

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        kw: dict = {}
        if self.user is not None:
            kw = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = {**os.environ, "LC_ALL": "C", "PGHOST": str(self.root), "PGPORT": str(self.port)}
        result = subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            cwd=self.root, env=env, capture_output=True, text=True, **kw,
        )  # fmt: skip
        if check and result.returncode:
            tail = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise PostgresError(
                f"{args[0]} failed ({result.returncode}): {result.stderr.strip()}\n{tail}"
            )
        return result

    def init(self) -> None:
        """``initdb`` (UTF-8, C locale) and this server's settings, once."""
        if (self.data / "PG_VERSION").exists():
            return
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-E", "UTF8",
                  "--locale=C", "-A", "trust", "--no-instructions")  # fmt: skip
        (self.data / "pg_hba.conf").write_text(
            "local all pymemory_pw scram-sha-256\n"
            "local all all trust\n"
            "host all pymemory_pw 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 trust\n"
        )
        settings = {
            "unix_socket_directories": f"'{self.root}'",
            "listen_addresses": "'127.0.0.1'" if self.tcp else "''",
            "port": str(self.port),
            "max_connections": "300",
            "log_min_messages": "warning",
            **self.settings,
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("".join(f"{k} = {v}\n" for k, v in settings.items()))

    def start(self, timeout: float = 60.0) -> None:
        """Start the server (initialising the cluster first if needed); waits until it
        accepts connections. The postmaster is this process's child (never a daemon), so
        :meth:`kill` can reap it and a crash leaves no zombie holding the data folder."""
        self.init()
        if self.proc is not None and self.proc.poll() is None:
            return
        kw: dict = {}
        if self.user is not None:
            kw = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(self.data)],
                cwd=self.root, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "LC_ALL": "C"}, start_new_session=True, **kw,
            )  # fmt: skip
        if self.user is not None:
            with contextlib.suppress(OSError):
                os.chown(self.log, self.user.pw_uid, self.user.pw_gid)
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                tail = self.log.read_text(errors="replace")[-2000:]
                raise PostgresError(f"PostgreSQL did not start:\n{tail}")
            time.sleep(0.05)

    def _ready(self) -> bool:
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        assert self.proc is not None
        return len(lines) >= 8 and lines[0] == str(self.proc.pid) and lines[7].strip() == "ready"

    def stop(self) -> None:
        """A clean, fast shutdown (idempotent)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)  # "fast" shutdown: roll back, checkpoint, exit
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()

    def pid(self) -> int | None:
        """The postmaster's pid, if it runs."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        return self.proc.pid

    def kill(self) -> None:
        """Crash the server: SIGKILL the postmaster and every backend at once (the next
        start runs crash recovery from the write-ahead log)."""
        pid = self.pid()
        if pid is None:
            return
        doomed = [*_children(pid)]
        for p in [pid, *doomed]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        assert self.proc is not None
        self.proc.wait()
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in doomed):
            if time.monotonic() > deadline:
                raise PostgresError(f"server processes {doomed} did not exit")
            time.sleep(0.02)

    def remove(self) -> None:
        """Stop the server and delete its folder."""
        with contextlib.suppress(PostgresError):
            self.stop()
        if self.pid() is not None:
            self.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run ``sql`` as the superuser; psql's unaligned output."""
        return self._run("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                         "-U", "postgres", "-d", dbname, "-c", sql).stdout  # fmt: skip

    def add_role(self, name: str = "pymemory_pw", password: str = "secret") -> str:
        """A login role that must give ``password``, owning a database of its name; its DSN."""
        self.psql(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        self.psql(f"CREATE DATABASE {name} OWNER {name}")
        return self.dsn(dbname=name, user=name, password=password)

    def dsn(
        self, *, dbname: str = "postgres", user: str = "postgres", password: str | None = None
    ) -> str:
        """A libpq connection string for this server (its unix socket)."""
        dsn = f"host={self.root} port={self.port} dbname={dbname} user={user}"
        return dsn + (f" password={password}" if password is not None else "")

    def tcp_dsn(self, *, dbname: str = "postgres", user: str = "postgres") -> str:
        """A ``postgresql://`` URL over 127.0.0.1 (``tcp=True`` servers)."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"
