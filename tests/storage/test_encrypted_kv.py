"""EncryptedKv (issue 16): the format, key checks, tampering, canaries, passphrase change,
rotation (killed mid-way), plaintext migration and concurrent writers."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from pymemory import CorruptValueError, Memory, SchemaError, ValidationError, WrongKeyError
from pymemory.agent.blocks import MemoryBlockSet
from pymemory.storage import MapKv, SqliteKv, Writes
from pymemory.storage.encrypted import (
    DEFAULT_ITERATIONS,
    KEYRING_KEY,
    OVERHEAD,
    ROTATION_KEY,
    AesGcmCipher,
    EncryptedKv,
    sealed_key_id,
)

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
FAST = 1000  # PBKDF2 iterations for tests; the default is checked once below


async def raw_state(inner) -> dict[str, bytes]:
    return dict(await inner.scan(""))


# --- the format -------------------------------------------------------------------------


async def test_value_format_matches_the_documented_layout():
    """Decrypt by hand, from the documented layout alone (what the browser side must do)."""
    inner = MapKv()
    kv = await EncryptedKv.open(inner, passphrase="pässphrase", iterations=FAST)
    await kv.put_many([("mem:1", b"hello"), ("meta:seq", b'{"seq":3}')])
    sealed = await inner.get("mem:1")
    assert sealed is not None and len(sealed) == len(b"hello") + OVERHEAD
    assert sealed[0] == 1 and sealed_key_id(sealed) == 1
    assert await inner.get("meta:seq") == b'{"seq":3}'  # the one clear data record

    record = json.loads(await inner.get(KEYRING_KEY))
    assert record["kdf"]["name"] == "pbkdf2-hmac-sha256"
    assert record["kdf"]["iterations"] == FAST and record["write"] == 1
    salt = base64.b64decode(record["kdf"]["salt"])
    kek = hashlib.pbkdf2_hmac("sha256", "pässphrase".encode(), salt, FAST, 32)
    blob = base64.b64decode(record["keys"]["1"])
    aad = b"pymemory-data-key" + b"\x01" + (1).to_bytes(4, "big")
    data_key = AESGCM(kek).decrypt(blob[:12], blob[12:], aad)
    plain = AESGCM(data_key).decrypt(sealed[5:17], sealed[17:], sealed[:5] + b"mem:1")
    assert plain == b"hello"
    assert await kv.get("mem:1") == b"hello"
    await kv.close()


async def test_key_record_is_hidden_and_reserved():
    kv = await EncryptedKv.open(MapKv(), key=KEY)
    await kv.put_many([("a", b"1")])
    assert await kv.scan("") == [("a", b"1")]
    assert await kv.get(KEYRING_KEY) is None
    for bad in (kv.put_many([(KEYRING_KEY, b"x")]), kv.delete_many([ROTATION_KEY])):
        with pytest.raises(ValidationError):
            await bad
    with pytest.raises(ValidationError):
        await kv.transact([], lambda v, ls: Writes([(KEYRING_KEY, b"x")]))
    listed = await kv.transact([], lambda v, ls: Writes(result=ls), list_prefixes=["meta:"])
    assert listed == [[]]
    assert kv.key_info() == {"format": 1, "kdf": None, "key_ids": [1], "write_id": 1}
    await kv.close()


async def test_default_iterations_are_recorded():
    inner = MapKv()
    kv = await EncryptedKv.open(inner, passphrase="pw")
    assert kv.key_info()["kdf"] == {"name": "pbkdf2-hmac-sha256", "iterations": DEFAULT_ITERATIONS}
    assert DEFAULT_ITERATIONS >= 600_000
    salt = base64.b64decode(json.loads(await inner.get(KEYRING_KEY))["kdf"]["salt"])
    assert len(salt) == 16


async def test_low_level_constructor_without_key_record():
    inner = MapKv()
    kv = EncryptedKv(inner, await AesGcmCipher.from_key(KEY))
    await kv.put_many([("k", b"v")])
    assert await kv.get("k") == b"v" and await inner.get(KEYRING_KEY) is None
    with pytest.raises(ValidationError):
        await kv.rotate()


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"key": KEY, "passphrase": "x"}, {"key": b"short"}, {"passphrase": ""}, {"key": "text"}],
)
async def test_bad_secrets_are_refused(kwargs):
    inner = MapKv()
    with pytest.raises(ValidationError):
        await EncryptedKv.open(inner, **kwargs)
    assert await raw_state(inner) == {}


# --- wrong keys -------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["map", "sqlite"])
async def test_wrong_key_is_refused_at_open_and_nothing_is_written(tmp_path, backend):
    async def inner():
        return MapKv() if backend == "map" else await SqliteKv.open(tmp_path / "s.db")

    store = await inner()
    kv = await EncryptedKv.open(store, passphrase="right", iterations=FAST)
    memory = await Memory.open(kv)
    await memory.add("the user's dog is called Biscuit")
    await memory.close()
    before = await raw_state(store)
    if backend == "sqlite":
        await kv.close()
        store = await SqliteKv.open(tmp_path / "s.db")
    for attempt in ({"passphrase": "wrong"}, {"key": KEY}, {"passphrase": "Right"}):
        with pytest.raises(WrongKeyError) as info:
            await EncryptedKv.open(store, iterations=FAST, **attempt)
        assert info.value.code == "wrong_key"
        assert await raw_state(store) == before
    kv = await EncryptedKv.open(store, passphrase="right")
    memory = await Memory.open(kv)
    assert [i.text for i in await memory.get_all()] == ["the user's dog is called Biscuit"]
    await memory.close()
    await kv.close()


async def test_wrong_raw_key_and_a_key_for_a_passphrase_store():
    inner = MapKv()
    await EncryptedKv.open(inner, key=KEY)
    before = await raw_state(inner)
    with pytest.raises(WrongKeyError):
        await EncryptedKv.open(inner, key=OTHER_KEY)
    with pytest.raises(WrongKeyError):
        await EncryptedKv.open(inner, passphrase="anything", iterations=FAST)
    assert await raw_state(inner) == before


async def test_plain_memory_refuses_an_encrypted_store():
    inner = MapKv()
    kv = await EncryptedKv.open(inner, key=KEY)
    memory = await Memory.open(kv)
    await memory.add("secret plans")
    await memory.close()
    with pytest.raises(SchemaError):
        await Memory.open(inner)  # meta:schema is sealed: no plaintext write can happen


# --- tampering ----------------------------------------------------------------------------


async def test_tampered_values_raise_a_typed_error():
    inner = MapKv()
    kv = await EncryptedKv.open(inner, key=KEY)
    await kv.put_many([("mem:a", b"alpha" * 10), ("mem:b", b"beta")])
    sealed = await inner.get("mem:a")
    for i in (0, 1, 4, 5, 16, 17, len(sealed) - 1):  # version, key id, nonce, body, tag
        bad = bytearray(sealed)
        bad[i] ^= 0x01
        await inner.put_many([("mem:a", bytes(bad))])
        with pytest.raises(CorruptValueError) as info:
            await kv.get("mem:a")
        assert info.value.code == "storage_error"
    for bad in (sealed[:-1], sealed[:20], b"", b'{"plain": "json"}'):
        await inner.put_many([("mem:a", bad)])
        with pytest.raises(CorruptValueError):
            await kv.get("mem:a")
    with pytest.raises(CorruptValueError):
        await kv.scan("mem:")
    with pytest.raises(CorruptValueError):  # a transact reading it writes nothing
        await kv.transact(["mem:a"], lambda v, ls: Writes([("x", b"1")]))
    assert await inner.get("x") is None
    await inner.put_many([("mem:a", sealed)])
    assert await kv.get("mem:a") == b"alpha" * 10


async def test_value_moved_to_another_key_fails():
    inner = MapKv()
    kv = await EncryptedKv.open(inner, key=KEY)
    await kv.put_many([("mem:a", b"A"), ("mem:b", b"B")])
    a, b = await inner.get_many(["mem:a", "mem:b"])
    await inner.put_many([("mem:a", b), ("mem:b", a), ("mem:c", a)])
    for key in ("mem:a", "mem:b", "mem:c"):
        with pytest.raises(CorruptValueError):
            await kv.get(key)


async def test_tampered_value_through_memory_is_a_typed_error():
    inner = MapKv()
    kv = await EncryptedKv.open(inner, key=KEY)
    memory = await Memory.open(kv)
    item = await memory.add("meeting with Dana on Friday")
    await memory.close()
    sealed = bytearray(await inner.get(f"mem:{item.id}"))
    sealed[-3] ^= 0xFF
    await inner.put_many([(f"mem:{item.id}", bytes(sealed))])
    with pytest.raises(CorruptValueError):
        memory = await Memory.open(kv)
        await memory.get(item.id)


# --- nothing readable at rest -----------------------------------------------------------

CANARIES = [
    "CANARY-add-7f3a",
    "CANARY-many-91bc",
    "CANARY-update-c0de",
    "CANARY-meta-5eed",
    "CANARY-block-b10c",
    "CANARY-append-a99e",
    "CANARY-tag-7a9",
]


async def fill_with_canaries(kv) -> None:
    memory = await Memory.open(kv)
    item = await memory.add(f"my bank PIN hint is {CANARIES[0]}", tags=[CANARIES[6].lower()])
    await memory.add_many([{"text": f"passport number {CANARIES[1]}"}] * 3)
    await memory.update(item.id, text=f"new PIN hint {CANARIES[2]}")
    await memory.add("travel plans", metadata={"note": CANARIES[3]})
    await memory.feedback(item.id, "important", durable=True)
    blocks = await MemoryBlockSet.open(kv, "agent:1", [{"label": "human", "value": CANARIES[4]}])
    await blocks.append("human", CANARIES[5])
    assert (await memory.retrieve("PIN hint")).items
    await memory.close()


def file_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


async def test_sqlite_file_holds_no_canary(tmp_path):
    plain_path, secret_path = tmp_path / "plain.db", tmp_path / "secret.db"
    plain = await SqliteKv.open(plain_path)
    await fill_with_canaries(plain)
    await plain.close()
    plain_bytes = file_bytes(plain_path).lower()
    assert all(c.lower().encode() in plain_bytes for c in CANARIES)  # the check can see them

    kv = await EncryptedKv.open(await SqliteKv.open(secret_path), key=KEY)
    await fill_with_canaries(kv)
    raw = file_bytes(secret_path).lower()  # the WAL too, before any checkpoint
    await kv.close()
    raw += file_bytes(secret_path).lower()
    for canary in CANARIES:
        assert canary.lower().encode() not in raw, canary
    kv = await EncryptedKv.open(await SqliteKv.open(secret_path), key=KEY)
    memory = await Memory.open(kv)
    texts = {i.text for i in await memory.get_all()}
    assert f"new PIN hint {CANARIES[2]}" in texts
    history = await memory.history(next(i.id for i in await memory.get_all() if "PIN" in i.text))
    assert CANARIES[0] in history[0].item.text
    await memory.close()
    await kv.close()


# --- passphrase change and rotation -------------------------------------------------------


async def test_change_passphrase_keeps_data_and_retires_the_old_one(tmp_path):
    path = tmp_path / "s.db"
    kv = await EncryptedKv.open(await SqliteKv.open(path), passphrase="old", iterations=FAST)
    other = await EncryptedKv.open(await SqliteKv.open(path), passphrase="old")
    await kv.put_many([("mem:a", b"A")])
    values_before = {k: v for k, v in await kv.inner.scan("") if k != KEYRING_KEY}
    with pytest.raises(WrongKeyError):
        await kv.change_passphrase("not it", "new")
    await kv.change_passphrase("old", "new")
    values_after = {k: v for k, v in await kv.inner.scan("") if k != KEYRING_KEY}
    assert values_after == values_before  # only the data key was re-wrapped
    assert await kv.get("mem:a") == b"A"
    await other.put_many([("mem:b", b"B")])  # an instance already open keeps working
    assert await kv.get("mem:b") == b"B"
    await kv.close()
    await other.close()
    with pytest.raises(WrongKeyError):
        await EncryptedKv.open(await SqliteKv.open(path), passphrase="old")
    kv = await EncryptedKv.open(await SqliteKv.open(path), passphrase="new")
    assert await kv.get_many(["mem:a", "mem:b"]) == [b"A", b"B"]
    await kv.close()


async def test_rotate_reseals_everything_and_drops_the_old_key():
    inner = MapKv()
    kv = await EncryptedKv.open(inner, key=KEY, batch_size=7)
    other = await EncryptedKv.open(inner, key=KEY)
    await kv.put_many([(f"mem:{i:03d}", b"v%d" % i) for i in range(50)])
    moved = await kv.rotate()
    assert moved == 50
    assert kv.key_info()["key_ids"] == [2]
    assert {sealed_key_id(v) for k, v in await inner.scan("mem:")} == {2}
    assert await inner.get(ROTATION_KEY) is None
    # The other instance follows: it reads the new key's values and writes with it.
    assert await other.get("mem:007") == b"v7"
    await other.put_many([("mem:new", b"n")])
    assert sealed_key_id(await inner.get("mem:new")) == 2
    assert await kv.get("mem:new") == b"n"
    # A new key-encryption key: the old key stops opening the store, and instances
    # holding it are refused when they meet the new data key.
    await kv.rotate(key=OTHER_KEY)
    with pytest.raises(WrongKeyError):
        await other.put_many([("mem:x", b"x")])
    with pytest.raises(WrongKeyError):
        await EncryptedKv.open(inner, key=KEY)
    fresh = await EncryptedKv.open(inner, key=OTHER_KEY)
    assert await fresh.get("mem:049") == b"v49" and fresh.key_info()["key_ids"] == [3]


async def test_rotation_leaves_a_damaged_value_damaged():
    inner = MapKv()
    kv = await EncryptedKv.open(inner, key=KEY)
    await kv.put_many([("a", b"1"), ("b", b"2")])
    bad = bytearray(await inner.get("a"))
    bad[-1] ^= 1
    await inner.put_many([("a", bytes(bad))])
    await kv.rotate()
    assert await kv.get("b") == b"2"
    with pytest.raises(CorruptValueError):
        await kv.get("a")


ROTATE_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pymemory.storage import SqliteKv
    from pymemory.storage.encrypted import EncryptedKv

    async def main():
        kv = await EncryptedKv.open(await SqliteKv.open(sys.argv[1]), passphrase="first")
        print("rotating", flush=True)
        await kv.rotate(passphrase="second", iterations=1000, batch_size=4)
        print("finished", flush=True)

    asyncio.run(main())
    """
)


def rotation_cursor(path: Path) -> str | None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.05)
        try:
            row = conn.execute("SELECT value FROM kv WHERE key = ?", (ROTATION_KEY,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return None if row is None else json.loads(row[0])["after"]


async def test_rotation_killed_mid_way_resumes_and_every_item_is_readable(tmp_path):
    path = tmp_path / "s.db"
    kv = await EncryptedKv.open(await SqliteKv.open(path), passphrase="first", iterations=FAST)
    memory = await Memory.open(kv)
    texts = [f"memory number {i}: the deploy key rotates on day {i % 28}" for i in range(600)]
    for start in range(0, len(texts), 200):
        await memory.add_many([{"text": t} for t in texts[start : start + 200]])
    await memory.close()
    await kv.close()

    child = subprocess.Popen(
        [sys.executable, "-c", ROTATE_CHILD, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert child.stdout.readline().strip() == "rotating"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        cursor = rotation_cursor(path)
        if cursor is not None and cursor.startswith("mem:"):
            break
        await asyncio.sleep(0.002)
    else:
        child.kill()
        pytest.fail("the rotation never reached the items")
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL

    conn = sqlite3.connect(path)
    ids = {
        sealed_key_id(bytes(v))
        for (v,) in conn.execute("SELECT value FROM kv WHERE key LIKE 'mem:%'")
    }
    assert conn.execute("SELECT 1 FROM kv WHERE key = ?", (ROTATION_KEY,)).fetchone()
    conn.close()
    assert ids == {1, 2}, ids  # killed with items under both data keys

    with pytest.raises(WrongKeyError):  # the rotation changed the passphrase at its start
        await EncryptedKv.open(await SqliteKv.open(path), passphrase="first")
    kv = await EncryptedKv.open(await SqliteKv.open(path), passphrase="second")  # resumes
    assert kv.key_info()["key_ids"] == [2]
    assert await kv.inner.get(ROTATION_KEY) is None
    assert {
        sealed_key_id(v) for k, v in await kv.inner.scan("") if k not in (KEYRING_KEY, "meta:seq")
    } == {2}
    memory = await Memory.open(kv)
    assert sorted(i.text for i in await memory.get_all()) == sorted(texts)
    assert (await memory.retrieve("deploy key day 17")).items
    await memory.close()
    await kv.close()


# --- migration from an unencrypted store ----------------------------------------------------


async def test_plain_store_is_refused_unless_migrated(tmp_path):
    path = tmp_path / "s.db"
    plain = await SqliteKv.open(path)
    await fill_with_canaries(plain)
    before = await raw_state(plain)
    with pytest.raises(SchemaError):
        await EncryptedKv.open(plain, key=KEY)
    assert await raw_state(plain) == before
    kv = await EncryptedKv.open(plain, key=KEY, migrate=True, batch_size=3)
    assert await kv.inner.get(ROTATION_KEY) is None
    memory = await Memory.open(kv)
    assert len(await memory.get_all()) == 5
    blocks = await MemoryBlockSet.open(kv, "agent:1")
    assert CANARIES[5] in blocks.render()
    await memory.close()
    await kv.close()
    raw = file_bytes(path).lower()
    for canary in CANARIES:  # secure_delete zeroed the old cells, purge() cut the WAL
        assert canary.lower().encode() not in raw, canary


# --- many writers -------------------------------------------------------------------------


async def test_concurrent_transacts_from_two_instances_lose_nothing(tmp_path):
    path = tmp_path / "s.db"
    a = await EncryptedKv.open(await SqliteKv.open(path), key=KEY)
    b = await EncryptedKv.open(await SqliteKv.open(path), key=KEY)

    def increment(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        n = int(values[0] or b"0") + 1
        return Writes([("counter", b"%d" % n), (f"log:{n:04d}", b"x")], result=n)

    async def writer(kv: EncryptedKv, n: int) -> list[int]:
        return [await kv.transact(["counter"], increment) for _ in range(n)]

    results = await asyncio.gather(*(writer(kv, 25) for kv in (a, b, a, b)))
    assert sorted(n for r in results for n in r) == list(range(1, 101))
    assert await a.get("counter") == b"100" == await b.get("counter")
    assert len(await b.scan("log:")) == 100

    # Through the change log too: two Memory instances, one per EncryptedKv.
    m1, m2 = await Memory.open(a), await Memory.open(b)
    await asyncio.gather(
        *(m.add(f"note {i} from {n}") for i in range(15) for n, m in (("one", m1), ("two", m2)))
    )
    assert len(await m1.get_all()) == 30 == len(await m2.get_all())
    await m1.close()
    await m2.close()
    await a.close()
    await b.close()


async def test_transact_function_errors_propagate_and_write_nothing():
    kv = await EncryptedKv.open(MapKv(), key=KEY)
    await kv.put_many([("k", b"1")])

    def refuse(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        raise LookupError(values[0])

    with pytest.raises(LookupError, match="1"):
        await kv.transact(["k"], refuse)
    assert await kv.scan("") == [("k", b"1")]


class Interfering(MapKv):
    """A MapKv where another writer gets in right after a read (between an EncryptedKv
    transact's read and its commit), as many times as ``hooks`` says."""

    def __init__(self) -> None:
        super().__init__()
        self.hooks: list = []
        self._busy = False

    async def get_many(self, keys):
        out = await super().get_many(keys)
        if self.hooks and not self._busy:  # the other writer's own reads run undisturbed
            self._busy = True
            try:
                await self.hooks.pop(0)()
            finally:
                self._busy = False
        return out


def increment(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
    n = int(values[0] or b"0") + 1
    return Writes([("counter", b"%d" % n)], result=n)


async def test_a_write_between_read_and_commit_makes_the_transact_retry():
    inner = Interfering()
    kv = await EncryptedKv.open(inner, key=KEY)
    other = await EncryptedKv.open(inner, key=KEY)
    seen: list[bytes | None] = []

    def counted(values, listed):
        seen.append(values[0])
        return increment(values, listed)

    inner.hooks = [lambda: other.transact(["counter"], increment)]
    assert await kv.transact(["counter"], counted) == 2
    assert seen == [None, b"1"]  # one run per attempt; the second saw the other write
    assert await other.get("counter") == b"2"

    # A function that raised on a state that was already gone is run again.
    def strict(values, _listed):
        if values[0] != b"3":
            raise ValueError(values[0])
        return Writes([("done", b"y")])

    inner.hooks = [lambda: other.transact(["counter"], increment)]
    await kv.transact(["counter"], strict)
    assert await kv.get("done") == b"y"


async def test_endless_interference_gives_a_typed_error(monkeypatch):
    from pymemory.storage import encrypted

    monkeypatch.setattr(encrypted.store, "MAX_ATTEMPTS", 3)
    inner = Interfering()
    kv = await EncryptedKv.open(inner, key=KEY)
    other = await EncryptedKv.open(inner, key=KEY)
    inner.hooks = [lambda: other.transact(["counter"], increment) for _ in range(3)]
    with pytest.raises(encrypted.ContentionError) as info:
        await kv.transact(["counter"], increment)
    assert info.value.code == "storage_error"
    assert await kv.get("counter") == b"3"  # the other writer's three, none of ours


async def test_two_opens_racing_to_create_agree_on_one_key_record():
    inner = MapKv()
    a, b = await asyncio.gather(
        EncryptedKv.open(inner, passphrase="p", iterations=FAST),
        EncryptedKv.open(inner, passphrase="p", iterations=FAST),
    )
    await a.put_many([("k", b"from a")])
    assert await b.get("k") == b"from a"
    fresh = MapKv()
    results = await asyncio.gather(
        EncryptedKv.open(fresh, passphrase="one", iterations=FAST),
        EncryptedKv.open(fresh, passphrase="two", iterations=FAST),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["EncryptedKv", "WrongKeyError"]
