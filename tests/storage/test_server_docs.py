"""docs/server-store.md: its web-server example is examples/server_postgres.py, and the
client session under it prints what the page shows, against a fresh PostgreSQL database."""

from __future__ import annotations

import contextlib
import io
import re
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = "docs/server-store.md"
HEADING = "## A web server for two users"


def page_blocks(heading: str) -> list[str]:
    """The fenced blocks under ``heading`` of the page, in order."""
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    section = text[text.index(heading + "\n") :]
    following = re.search(r"^## ", section[len(heading) :], re.M)
    if following:
        section = section[: len(heading) + following.start()]
    return re.findall(r"^```\w*\n(.*?)^```$", section, re.M | re.S)


def test_the_web_server_example_serves_two_users_as_the_page_shows(postgres_server, monkeypatch):
    app_code, client_code, output = page_blocks(HEADING)
    assert app_code == (ROOT / "examples/server_postgres.py").read_text(encoding="utf-8")
    database = f"docs_{uuid.uuid4().hex[:8]}"
    postgres_server.psql(f"CREATE DATABASE {database}")
    monkeypatch.setenv("PYMEMORY_DSN", postgres_server.dsn(dbname=database))
    monkeypatch.syspath_prepend(str(ROOT))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(client_code, f"{PAGE} (client)", "exec"), {"__name__": "docs_example"})
    assert printed.getvalue() == output
