"""The sync tests' hub, shared by tests/sync/ and the browser tests (imported by
tests/conftest.py): pouchdb-server (pinned, tools/sync_server), one per session, in memory
on loopback, CORS on for any origin; each test gets a fresh database. ``COUCHDB_URL``
(e.g. ``http://admin:pw@127.0.0.1:5984``) runs them against an Apache CouchDB instead
(which then needs CORS enabled for the browser tests)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tools.sync_server import SyncServer


@pytest.fixture(scope="session")
def hub_root() -> Iterator[str]:
    given = os.environ.get("COUCHDB_URL")
    if given:
        yield given.rstrip("/")
        return
    server = SyncServer().start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def hub(hub_root: str) -> str:
    """The URL of a new, empty database on the hub."""
    return f"{hub_root}/pm-{uuid.uuid4().hex[:12]}"
