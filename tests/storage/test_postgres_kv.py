"""PostgresKv on a real PostgreSQL server (tests/storage/conftest.py): the table and its
schema version, key ranges per namespace, the per-namespace write lock, change
notifications, typed errors, Memory on top, and ciphertext only under EncryptedKv."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import psycopg
import pytest

from pymemory import Memory
from pymemory.errors import (
    NotFoundError,
    QuotaExceededError,
    SchemaError,
    StorageError,
    StoreClosedError,
    ValidationError,
)
from pymemory.storage import Writes
from pymemory.storage.changes import SEQ_KEY
from pymemory.storage.encrypted import EncryptedKv
from pymemory.storage.postgres import (
    AuthenticationError,
    CommitUnknownError,
    PostgresDatabase,
    PostgresKv,
    ServerUnavailableError,
    StatementTimeoutError,
    pool,
    sql,
)
from pymemory.storage.postgres.errors import translate

QUIET = {"feedback_flush_s": 3600, "sweep_interval_s": 3600}  # no background polling


@pytest.fixture
async def db(postgres_dsn):
    database = await PostgresDatabase.open(postgres_dsn, max_connections=6)
    yield database
    await database.close()


@pytest.fixture
def fresh_database(postgres_server):
    """The DSN of a database of its own (for schema tests)."""
    name = f"db_{uuid.uuid4().hex[:10]}"
    postgres_server.psql(f"CREATE DATABASE {name}")
    return postgres_server.dsn(dbname=name)


async def _raw(dsn: str) -> psycopg.AsyncConnection:
    return await psycopg.AsyncConnection.connect(dsn, autocommit=True)


# --- the table -------------------------------------------------------------------------


async def test_one_table_keyed_by_namespace_and_key_with_a_schema_version(fresh_database):
    kv = await PostgresKv.open(fresh_database, namespace="user-42")
    await kv.put_many([("a", b"1")])
    await kv.close()
    conn = await _raw(fresh_database)
    try:
        cur = await conn.execute(f"SELECT version FROM {sql.SCHEMA_TABLE}")
        assert await cur.fetchall() == [(sql.SCHEMA_VERSION,)]
        cur = await conn.execute(f"SELECT namespace, key, value FROM {sql.TABLE}")
        assert await cur.fetchall() == [("user-42", "a", b"1")]
        cur = await conn.execute(
            "SELECT a.attname, c.collname FROM pg_attribute a JOIN pg_collation c"
            " ON c.oid = a.attcollation WHERE a.attrelid = %s::regclass AND a.attnum > 0"
            " ORDER BY a.attnum",
            (sql.TABLE,),
        )
        assert await cur.fetchall() == [("namespace", "C"), ("key", "C")]
    finally:
        await conn.close()


async def test_a_newer_schema_is_refused_and_an_older_one_migrated(fresh_database, monkeypatch):
    kv = await PostgresKv.open(fresh_database, namespace="n")
    await kv.put_many([("kept", b"yes")])
    await kv.close()
    # A pymemory one version ahead migrates the table in place, once.
    monkeypatch.setattr(pool, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(pool, "MIGRATIONS", {1: [f"CREATE INDEX migrated_v2 ON {sql.TABLE} (key)"]})
    kvs = await asyncio.gather(*(PostgresKv.open(fresh_database, namespace="n") for _ in range(3)))
    assert [await k.get("kept") for k in kvs] == [b"yes"] * 3
    for k in kvs:
        await k.close()
    conn = await _raw(fresh_database)
    try:
        cur = await conn.execute(f"SELECT version FROM {sql.SCHEMA_TABLE}")
        assert (await cur.fetchone())[0] == 2
        cur = await conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'migrated_v2'")
        assert (await cur.fetchone())[0] == 1
    finally:
        await conn.close()
    monkeypatch.setattr(pool, "SCHEMA_VERSION", 1)  # this pymemory is now the older one
    with pytest.raises(SchemaError, match="newer pymemory"):
        await PostgresKv.open(fresh_database, namespace="n")


async def test_namespaces_that_look_like_prefixes_never_see_each_other(db):
    names = ["al", "alice", "al%", "al_ice", "al:", "ali\U0001f600"]
    for name in names:
        await db.kv(name).put_many([(f"mem:{name}", name.encode()), ("meta:seq", b"1")])
    for name in names:
        kv = db.kv(name)
        assert await kv.scan("") == [(f"mem:{name}", name.encode()), ("meta:seq", b"1")]
        assert await kv.scan("mem:") == [(f"mem:{name}", name.encode())]
        assert await kv.get_many([f"mem:{n}" for n in names]) == [
            name.encode() if n == name else None for n in names
        ]
        await kv.delete_many([f"mem:{n}" for n in names if n != name])
    for name in names:
        assert await db.kv(name).get(f"mem:{name}") == name.encode()
    assert set(names) <= set(await db.namespaces())
    assert await db.drop_namespace("al") == 2
    assert await db.kv("al").scan("") == []
    assert await db.kv("alice").get("mem:alice") == b"alice"


async def test_bad_namespaces_and_keys_the_index_cannot_hold_are_refused(db):
    for bad in ("", "nul\x00", 7, "x" * 300):
        with pytest.raises(ValidationError):
            db.kv(bad)  # type: ignore[arg-type]
    kv = db.kv("long-keys")
    await kv.put_many([("k:" + "中" * 800, b"fits")])  # 2,402 bytes
    with pytest.raises(ValidationError, match="too long for PostgreSQL"):
        await kv.put_many([("ok", b"1"), ("k:" + "中" * 1000, b"too big")])
    with pytest.raises(ValidationError, match="too long for PostgreSQL"):
        await kv.transact([], lambda v, _l: Writes([("k:" + "中" * 1000, b"x")]))
    assert [k for k, _ in await kv.scan("")] == ["k:" + "中" * 800]


# --- one writer at a time per namespace, namespaces in parallel ------------------------


async def test_transact_holds_the_namespace_lock_other_namespaces_write_on(db, postgres_dsn):
    holder = await _raw(postgres_dsn)
    try:
        await holder.execute(f"BEGIN; SELECT pg_advisory_xact_lock({sql.lock_id('busy')})")
        blocked = asyncio.ensure_future(db.kv("busy").put_many([("k", b"late")]))
        await asyncio.sleep(0.3)
        assert not blocked.done()  # waits for the other writer's transaction
        await asyncio.wait_for(db.kv("free").put_many([("k", b"now")]), 5)  # not blocked
        assert await db.kv("busy").get("k") is None
        await holder.execute("COMMIT")
        await asyncio.wait_for(blocked, 5)
        assert await db.kv("busy").get("k") == b"late"
    finally:
        await holder.close()


async def test_racing_transacts_from_two_pools_lose_no_increment(postgres_dsn, namespace):
    a = await PostgresKv.open(postgres_dsn, namespace=namespace)
    b = await PostgresKv.open(postgres_dsn, namespace=namespace)

    def bump(values, _listed):
        n = int(values[0] or b"0") + 1
        return Writes([("n", b"%d" % n)], result=n)

    try:
        got = await asyncio.gather(*(kv.transact(["n"], bump) for kv in [a, b] * 30))
        assert sorted(got) == list(range(1, 61))
        assert await a.get("n") == b"60"
    finally:
        await a.close()
        await b.close()


# --- change notifications ----------------------------------------------------------------


async def test_notify_is_sent_by_committed_change_log_writes_only(db, namespace):
    woken = asyncio.Event()
    stop = db.kv(namespace).watch_changes(woken.set)
    await asyncio.wait_for(woken.wait(), 5)  # once when the LISTEN starts
    woken.clear()
    writer = db.kv(namespace)

    def refuse(_v, _l):
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        await writer.transact([SEQ_KEY], refuse)  # rolled back: nothing delivered
    await writer.put_many([("blk:x", b"not logged")])  # no change-log write: no wake-up
    await db.kv("elsewhere").put_many([(SEQ_KEY, b'{"seq":1}')])  # another namespace
    await asyncio.sleep(0.8)
    assert not woken.is_set()
    await writer.transact([SEQ_KEY], lambda v, _l: Writes([(SEQ_KEY, b'{"seq":1}')]))
    await asyncio.wait_for(woken.wait(), 5)
    stop()


async def test_two_memories_see_each_others_writes_and_an_idle_one_is_woken(
    postgres_dsn, namespace
):
    a = await Memory.open(await PostgresKv.open(postgres_dsn, namespace=namespace), **QUIET)
    b = await Memory.open(await PostgresKv.open(postgres_dsn, namespace=namespace), **QUIET)
    try:
        changed = asyncio.Event()
        b.listeners.append(lambda kind, _id: kind == "changed" and changed.set())
        await asyncio.sleep(0.5)  # b's LISTEN is on
        item = await a.add("the staging database moved to port 6543")
        # b neither reads nor polls (QUIET): only the NOTIFY can wake it.
        await asyncio.wait_for(changed.wait(), 5)
        assert item.id in {i.id for i in b._catalog}
        assert (await b.get(item.id)).content == item.content
        await b.delete(item.id)
        with pytest.raises(NotFoundError):
            await a.get(item.id)  # a forget in one is a forget in all
        assert (await a.retrieve("staging database port")).memories == []
    finally:
        for m in (a, b):
            await m.close()
            await m.kv.close()


async def test_reopening_a_user_starts_from_the_snapshot_in_the_database(db, namespace):
    memory = await Memory.open(db.kv(namespace), **QUIET)
    await memory.add_many([{"text": f"fact number {i} about cheese"} for i in range(1200)])
    await memory.close()  # writes the index snapshot into the same table
    assert await db.kv(namespace).scan("snap:", limit=1)
    again = await Memory.open(db.kv(namespace), **QUIET)
    try:
        assert (await again.stats())["items"] == 1200
        assert (await again.retrieve("fact number 17 cheese")).memories
    finally:
        await again.close()


# --- typed errors ------------------------------------------------------------------------


async def test_wrong_password_is_an_authentication_error(password_dsn):
    kv = await PostgresKv.open(password_dsn, namespace="pw")  # the right one works
    await kv.close()
    assert "password=secret" in password_dsn
    with pytest.raises(AuthenticationError) as caught:
        await PostgresKv.open(password_dsn.replace("=secret", "=wrong"), namespace="pw")
    assert caught.value.retryable is False
    assert caught.value.code == "storage_error"


async def test_no_server_is_a_retryable_server_unavailable_error(tmp_path):
    dsn = f"host={tmp_path} port=5999 dbname=postgres user=postgres"
    with pytest.raises(ServerUnavailableError) as caught:
        await PostgresKv.open(dsn, namespace="x", connect_timeout_s=2)
    assert caught.value.retryable is True
    assert isinstance(caught.value, StorageError)


async def test_calls_wait_for_a_busy_connection_within_connect_timeout(postgres_dsn, namespace):
    """max_connections=1: a second call waits for the one connection, and gives up after
    connect_timeout_s with a retryable error that says so; a cancelled waiter takes
    nothing with it, and the connection serves the next calls."""
    app = f"busy-{namespace}"
    kv = await PostgresKv.open(
        f"{postgres_dsn} application_name={app}",
        namespace=namespace,
        max_connections=1,
        connect_timeout_s=1,
    )
    holder = await _raw(postgres_dsn)
    try:
        await holder.execute(f"BEGIN; SELECT pg_advisory_xact_lock({sql.lock_id(namespace)})")
        blocked = asyncio.ensure_future(kv.put_many([("k", b"v")]))  # holds the connection
        await asyncio.sleep(0.2)
        start = asyncio.get_running_loop().time()
        with pytest.raises(ServerUnavailableError, match="stayed busy") as caught:
            await kv.get("k")
        assert 0.7 < asyncio.get_running_loop().time() - start < 2.0
        assert caught.value.retryable is True
        waiter = asyncio.ensure_future(kv.get("k"))
        await asyncio.sleep(0.1)
        waiter.cancel()
        await holder.execute("COMMIT")
        await asyncio.wait_for(blocked, 5)
        got = await asyncio.wait_for(asyncio.gather(*(kv.get("k") for _ in range(5))), 5)
        assert got == [b"v"] * 5
        cur = await holder.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)
        )
        assert (await cur.fetchone())[0] == 1  # never more than max_connections
    finally:
        await holder.close()
        await kv.close()


async def test_statement_timeout_on_the_write_lock_writes_nothing(postgres_dsn, namespace):
    kv = await PostgresKv.open(postgres_dsn, namespace=namespace, statement_timeout_ms=300)
    holder = await _raw(postgres_dsn)
    try:
        await holder.execute(f"BEGIN; SELECT pg_advisory_xact_lock({sql.lock_id(namespace)})")
        with pytest.raises(StatementTimeoutError) as caught:
            await kv.put_many([("k", b"v")])
        assert caught.value.retryable is True
        await holder.execute("COMMIT")
        assert await kv.get("k") is None
        await kv.put_many([("k", b"v")])  # the pool's connection is fine afterwards
        assert await kv.get("k") == b"v"
    finally:
        await holder.close()
        await kv.close()


def _terminate_lock_holder(dsn: str, namespace: str, *, granted: bool = True) -> int:
    """Kill (from a connection of its own) the backends holding (or, ``granted=False``,
    waiting for) ``namespace``'s lock; how many."""
    lock = sql.lock_id(namespace) & 0xFFFFFFFFFFFFFFFF
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
            " AND granted = %s AND classid = %s::bigint::oid AND objid = %s::bigint::oid",
            (granted, lock >> 32, lock & 0xFFFFFFFF),
        ).fetchall()
    return len(rows)


async def test_a_connection_lost_mid_transaction_fails_typed_and_half_writes_nothing(
    postgres_dsn, namespace
):
    kv = await PostgresKv.open(postgres_dsn, namespace=namespace)
    await kv.put_many([("k", b"before")])
    killed = []

    def fn(values, _listed):
        # Runs inside the transaction, under the lock: the server drops us right here.
        killed.append(_terminate_lock_holder(postgres_dsn, namespace))
        return Writes([("k", b"after"), ("j", b"new")])

    try:
        # The writes and COMMIT went out in one round trip whose answer never came: the
        # call cannot know whether it landed, and says so.
        with pytest.raises(CommitUnknownError) as caught:
            await kv.transact(["k"], fn)
        assert killed == [1] and not caught.value.retryable
        assert await kv.get_many(["k", "j"]) == [b"before", None]  # whole or nothing
        await kv.put_many([("j", b"later")])  # the pool replaced the dead connection
        assert await kv.get("j") == b"later"
    finally:
        await kv.close()


async def test_a_connection_lost_before_the_transaction_began_is_retried(postgres_dsn, namespace):
    """Killed while waiting for the namespace's lock: nothing ran, so the call goes on
    on another connection (fn runs exactly once)."""
    kv = await PostgresKv.open(postgres_dsn, namespace=namespace)
    holder = await _raw(postgres_dsn)
    calls = []
    try:
        await holder.execute(f"BEGIN; SELECT pg_advisory_xact_lock({sql.lock_id(namespace)})")
        pending = asyncio.ensure_future(
            kv.transact(["k"], lambda v, _l: calls.append(v) or Writes([("k", b"v")]))
        )
        await asyncio.sleep(0.3)
        assert _terminate_lock_holder(postgres_dsn, namespace, granted=False) == 1
        await asyncio.sleep(0.3)
        assert not pending.done()  # waiting again, on a new connection
        await holder.execute("COMMIT")
        await asyncio.wait_for(pending, 10)
        assert calls == [[None]] and await kv.get("k") == b"v"
    finally:
        await holder.close()
        await kv.close()


def test_failures_map_to_typed_errors():
    lost = psycopg.OperationalError("server closed the connection unexpectedly")
    assert isinstance(translate(lost, "transact", committing=True), CommitUnknownError)
    assert isinstance(translate(lost, "transact"), ServerUnavailableError)
    full = psycopg.errors.DiskFull("could not extend file")
    assert isinstance(translate(full, "put_many"), QuotaExceededError)
    other = translate(psycopg.errors.UniqueViolation("dup"), "put_many")
    assert type(other) is StorageError and other.retryable is False
    assert translate(psycopg.errors.DeadlockDetected("d"), "x").retryable is True


async def test_closed_store_and_closed_database_raise_store_closed(db, postgres_dsn):
    kv = db.kv("closing")
    await kv.put_many([("a", b"1")])
    await kv.close()
    with pytest.raises(StoreClosedError):
        await kv.get("a")
    other = db.kv("closing")  # closing one handle leaves the database open
    assert await other.get("a") == b"1"
    await db.close()
    for call in (other.get("a"), other.put_many([("b", b"2")]), other.scan("")):
        with pytest.raises(StoreClosedError):
            await call
    with pytest.raises(StoreClosedError):
        db.kv("closing")


# --- encryption on top -------------------------------------------------------------------


async def test_encrypted_memory_leaves_only_ciphertext_in_the_table(
    db, postgres_server, postgres_dsn
):
    secret = f"canary-{uuid.uuid4().hex}"
    control = f"control-{uuid.uuid4().hex}"
    inner = db.kv(f"enc-{uuid.uuid4().hex[:8]}")
    sealed = await Memory.open(await EncryptedKv.open(inner, passphrase="pass phrase"), **QUIET)
    plain = await Memory.open(db.kv(f"plain-{uuid.uuid4().hex[:8]}"), **QUIET)
    try:
        item = await sealed.add(f"my bank PIN hint is {secret}", tags=[secret])
        await plain.add(f"nothing secret here {control}")
        assert secret in (await sealed.get(item.id)).content
    finally:
        await sealed.close()  # writes its snapshot (sealed too)
        await plain.close()
    conn = await _raw(postgres_dsn)
    try:

        async def rows_with(text: str) -> int:
            cur = await conn.execute(
                f"SELECT count(*) FROM {sql.TABLE} WHERE position(%s::bytea IN value) > 0"
                " OR position(%s IN key) > 0",
                (text.encode(), text),
            )
            return (await cur.fetchone())[0]

        assert await rows_with(control) > 0  # the grep finds plaintext where there is some
        assert await rows_with(secret) == 0
        await conn.execute("CHECKPOINT")
    finally:
        await conn.close()
    # The server's files too (table pages and write-ahead log).
    found = {secret: False, control: False}
    for path in Path(postgres_server.data).rglob("*"):
        if path.is_file() and (path.parent.name == "pg_wal" or "base" in path.parts):
            data = path.read_bytes()
            for text in found:
                found[text] = found[text] or text.encode() in data
    assert found == {secret: False, control: True}
