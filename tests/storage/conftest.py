"""A real PostgreSQL server for the storage tests (tools/postgres.py), started once per
session on first use, in a temporary folder, as an unprivileged user; removed after."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.postgres import LocalPostgres  # noqa: E402

#: ``fsync=off`` keeps the suite fast on a slow disk and changes nothing the tests check:
#: a commit still waits until its WAL record is written to the kernel
#: (``synchronous_commit=on``), so killing the server's processes loses no acknowledged
#: write; only a crash of the whole machine could. The benchmark runs with the defaults.
TEST_SETTINGS = {"fsync": "off"}


@pytest.fixture(scope="session")
def postgres_server():
    server = LocalPostgres(settings=TEST_SETTINGS)
    server.start()
    yield server
    server.remove()


@pytest.fixture
def own_postgres_server():
    """A server of the test's own (one it may crash), removed after it."""
    server = LocalPostgres(settings=TEST_SETTINGS)
    server.start()
    yield server
    server.remove()


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server) -> str:
    return postgres_server.dsn()


@pytest.fixture(scope="session")
def password_dsn(postgres_server) -> str:
    """The DSN of a role that must give its password (pg_hba.conf: scram-sha-256)."""
    return postgres_server.add_role()


@pytest.fixture
def namespace() -> str:
    """A namespace no other test uses."""
    return f"test-{uuid.uuid4().hex[:12]}"
