"""Setup mistakes against the tests' real PostgreSQL (issue 37, item 7): each is a typed,
non-retryable error raised at once that says what to fix (a DSN of the wrong type, empty
or malformed: ValidationError; wrong credentials: AuthenticationError; an unknown
database, TLS the server does not offer, something that is not PostgreSQL:
ConfigurationError). Nobody listening at the address stays a retryable
ServerUnavailableError: that is also what a server that is not up yet looks like."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid

import pytest

from pymemory.errors import StorageError, ValidationError
from pymemory.integrations.server import MemoryPool
from pymemory.storage.postgres import (
    AuthenticationError,
    ConfigurationError,
    PostgresDatabase,
    PostgresKv,
    ServerUnavailableError,
)
from tools.postgres import LocalPostgres

OPENERS = {
    "PostgresKv.open": lambda dsn, **kw: PostgresKv.open(dsn, namespace="setup", **kw),
    "PostgresDatabase.open": PostgresDatabase.open,
    "MemoryPool.on_postgres": lambda dsn, **kw: MemoryPool.on_postgres(dsn, database_options=kw),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def tcp_server():
    """A server listening on 127.0.0.1 too (TLS negotiation happens over TCP only)."""
    server = LocalPostgres(port=_free_port(), tcp=True, settings={"fsync": "off"})
    server.start()
    yield server
    server.remove()


async def _fails(opener: str, dsn: object, error: type[Exception], **options) -> Exception:
    """Open with ``dsn``: it must raise ``error`` within a second (no timeout waited out)."""
    start = time.monotonic()
    with pytest.raises(error) as caught:
        await OPENERS[opener](dsn, connect_timeout_s=10, **options)
    assert time.monotonic() - start < 1.5, f"{opener} took {time.monotonic() - start:.1f} s"
    return caught.value


@pytest.mark.parametrize("opener", OPENERS)
@pytest.mark.parametrize("dsn", [None, 5432, b"host=db", ["host=db"]], ids=repr)
async def test_a_dsn_that_is_not_a_string_is_a_validation_error(opener, dsn):
    exc = await _fails(opener, dsn, ValidationError)
    assert "must be a str" in str(exc) and type(dsn).__name__ in str(exc)


@pytest.mark.parametrize("opener", OPENERS)
async def test_an_empty_or_malformed_dsn_is_a_validation_error(opener, postgres_server):
    for dsn in ("", "   "):
        exc = await _fails(opener, dsn, ValidationError)
        assert "empty" in str(exc) and "postgresql://" in str(exc)
    good = postgres_server.dsn()
    for dsn, says in (
        (good + " dbname", 'missing "="'),
        (good + " colour=blue", 'invalid connection option "colour"'),
        (good.replace(f"port={postgres_server.port}", "port=fifty"), "invalid integer value"),
        (good + " sslmode=sometimes", "invalid sslmode value"),
    ):
        exc = await _fails(opener, dsn, ValidationError)
        assert "DSN is malformed" in str(exc) and says in str(exc), exc


@pytest.mark.parametrize("opener", OPENERS)
async def test_an_unknown_database_is_a_configuration_error(opener, postgres_server):
    name = f"nope_{uuid.uuid4().hex[:8]}"
    exc = await _fails(opener, postgres_server.dsn(dbname=name), ConfigurationError)
    assert exc.retryable is False and exc.code == "storage_error"
    assert f'database "{name}" does not exist' in str(exc) and "CREATE DATABASE" in str(exc)


async def test_wrong_credentials_are_an_authentication_error(postgres_server, password_dsn):
    for dsn in (
        password_dsn.replace("=secret", "=wrong"),
        password_dsn.replace(" password=secret", ""),  # scram needs one: none given
        postgres_server.dsn(user=f"ghost_{uuid.uuid4().hex[:6]}"),  # no such role
    ):
        exc = await _fails("PostgresDatabase.open", dsn, AuthenticationError)
        assert isinstance(exc, ConfigurationError) and exc.retryable is False
        assert "credentials" in str(exc) and "Fix the user or password" in str(exc)


async def test_tls_required_from_a_server_without_it_is_a_configuration_error(tcp_server):
    dsn = tcp_server.tcp_dsn() + "?sslmode=require"
    for opener in OPENERS:
        exc = await _fails(opener, dsn, ConfigurationError)
        assert exc.retryable is False
        assert "does not support SSL" in str(exc) and "sslmode" in str(exc)
    # The same server without the TLS demand is fine.
    db = await PostgresDatabase.open(tcp_server.tcp_dsn(), connect_timeout_s=10)
    await db.close()


@pytest.mark.parametrize("sslmode", ["prefer", "disable"])
async def test_a_server_that_is_not_postgresql_is_a_configuration_error(sslmode):
    """An HTTP server at the DSN's port (a wrong port that hits another service)."""
    seen: list[bytes] = []

    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.read(100))
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        dsn = f"host=127.0.0.1 port={port} dbname=app user=app sslmode={sslmode}"
        for opener in OPENERS:
            exc = await _fails(opener, dsn, ConfigurationError)
            assert exc.retryable is False
            assert "not a PostgreSQL server" in str(exc) and "host or port" in str(exc)
        assert seen  # libpq did talk to it
    finally:
        server.close()
        await server.wait_closed()


async def test_nobody_listening_is_retryable_and_names_host_and_port(tmp_path):
    """A refused connection is what a server that is starting looks like, so it stays
    retryable; the message names the DSN's host and port as the other suspect."""
    for dsn in (
        f"host={tmp_path} port=5999 dbname=postgres user=postgres",  # unix socket
        f"host=127.0.0.1 port={_free_port()} dbname=postgres user=postgres",  # TCP
    ):
        for opener in OPENERS:
            exc = await _fails(opener, dsn, ServerUnavailableError)
            assert exc.retryable is True and isinstance(exc, StorageError)
            assert "host or port" in str(exc) and "not up yet" in str(exc)


async def test_a_database_dropped_under_a_running_server_is_not_retryable(postgres_server):
    """The connections die with the database; reconnecting finds it gone: a
    ConfigurationError, not a retryable outage."""
    name = f"doomed_{uuid.uuid4().hex[:8]}"
    postgres_server.psql(f"CREATE DATABASE {name}")
    kv = await PostgresKv.open(postgres_server.dsn(dbname=name), namespace="n")
    try:
        await kv.put_many([("k", b"v")])
        postgres_server.psql(f"DROP DATABASE {name} WITH (FORCE)")
        with pytest.raises(ConfigurationError) as caught:
            await kv.get("k")
        assert caught.value.retryable is False and "does not exist" in str(caught.value)
    finally:
        await kv.close()
