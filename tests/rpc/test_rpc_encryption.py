"""Encrypted databases through the worker's JSON API (issue 16), in CPython over MapKv: every
call of a client brings its key (an Unlock); the first call of each client is checked
against the store's key record; calls without a key, or with a wrong one, are refused with
wrong_key and write nothing. And the batch path of the cipher (one crossing per batch in the
browser) gives the same bytes and the same errors as the per-value one."""

from __future__ import annotations

import json

import pytest

from pymemory import CorruptValueError
from pymemory.browser.rpc import RpcApi, Unlock
from pymemory.storage import MapKv
from pymemory.storage.conformance import CHECKS, run_conformance
from pymemory.storage.encrypted import KEYRING_KEY, AesGcmCipher, CpythonCrypto, EncryptedKv

FAST = 1000


@pytest.fixture
def stores() -> dict[str, MapKv]:
    """The databases by name; each open gets its own handle on one (as IndexedDB gives)."""
    return {}


def handle(stores: dict[str, MapKv], name: str) -> MapKv:
    db = stores.setdefault(name, MapKv())
    kv = MapKv()
    kv._data, kv._keys = db._data, db._keys  # the same records; closing it closes only kv
    return kv


@pytest.fixture
async def api(stores):
    async def plain(name):
        return handle(stores, name)

    async def locked(name, unlock: Unlock):
        return await EncryptedKv.open(
            handle(stores, name),
            passphrase=unlock.passphrase,
            key=unlock.key,
            iterations=unlock.iterations,
        )

    api = RpcApi(plain, feedback_flush_s=3600)
    api.locked_kv_factory = locked
    yield api
    await api.close_all()


def unlock(uid: str, passphrase: str = "right") -> dict:
    return {"id": uid, "passphrase": passphrase, "iterations": FAST}


async def call(api, method, params=None, db="db", key=None):
    return json.loads(await api.call(db, method, json.dumps(params or {}), None, key))


async def raw(store: MapKv) -> dict[str, bytes]:
    return dict(await store.scan(""))


async def test_a_client_with_the_key_creates_and_reads_an_encrypted_database(api, stores):
    answer = await call(api, "addMemory", {"text": "the code is 4711"}, key=unlock("a"))
    assert answer["ok"], answer
    records = await raw(stores["db"])
    assert KEYRING_KEY in records
    assert not any(b"4711" in v for v in records.values())
    listed = await call(api, "list", {"scope": None}, key=unlock("a"))
    assert [i["text"] for i in listed["result"]] == ["the code is 4711"]
    # another client with the same passphrase is checked once, then admitted
    listed = await call(api, "list", {"scope": None}, key=unlock("b"))
    assert listed["ok"] and len(listed["result"]) == 1


async def test_wrong_or_missing_keys_are_refused_and_write_nothing(api, stores):
    assert (await call(api, "addMemory", {"text": "secret"}, key=unlock("a")))["ok"]
    before = await raw(stores["db"])
    for key in (unlock("b", "wrong"), None, {"id": "c", "key": bytes(32)}):
        for method, params in (("open", {}), ("list", {}), ("addMemory", {"text": "x"})):
            answer = await call(api, method, params, key=key)
            assert answer["error"]["code"] == "wrong_key", (key, method)
    assert await raw(stores["db"]) == before
    # and a later open of the database (a new worker) without a key is refused too
    await api.close_all()
    assert (await call(api, "list", {}))["error"]["code"] == "wrong_key"
    assert (await call(api, "list", {}, key=unlock("b", "wrong")))["error"]["code"] == "wrong_key"
    assert await raw(stores["db"]) == before
    assert (await call(api, "list", {"scope": None}, key=unlock("a")))["ok"]


async def test_a_plain_database_is_not_encrypted_by_a_client_with_a_key(api, stores):
    assert (await call(api, "addMemory", {"text": "plain"}))["ok"]
    before = await raw(stores["db"])
    answer = await call(api, "open", key=unlock("a"))
    assert answer["error"]["code"] == "schema_mismatch", answer
    await api.close_all()
    answer = await call(api, "open", key=unlock("a"))  # not open: EncryptedKv.open refuses
    assert answer["error"]["code"] == "schema_mismatch", answer
    assert await raw(stores["db"]) == before


async def test_bad_unlocks_are_invalid_input(api):
    for key in ({"id": "a"}, {"passphrase": "x"}, {"id": "a", "passphrase": "x", "salt": 1},
                {"id": "", "passphrase": "x"}, "text", {"id": "a", "passphrase": "x", "key": b"k"}):  # fmt: skip
        answer = await call(api, "open", key=key)
        assert answer["error"]["code"] == "invalid_input", key
    answer = await call(api, "open", key={"id": "a", "passphrase": "x", "iterations": 5})
    assert answer["error"]["code"] == "invalid_input"


async def test_default_unlock_and_conformance_on_encrypted_stores(api, stores):
    api.default_unlock = Unlock("default", "right", iterations=FAST)
    assert (await call(api, "addMemory", {"text": "hello"}))["ok"]
    assert KEYRING_KEY in await raw(stores["db"])
    results = (await call(api, "runKvConformance"))["result"]
    assert [r["name"] for r in results] == list(CHECKS)
    assert [r for r in results if not r["ok"]] == []
    made = [s for name, s in stores.items() if name.startswith("db-conformance-")]
    assert len(made) == len(CHECKS)
    assert all(KEYRING_KEY in s._data for s in made)  # each check ran on an EncryptedKv


# --- the batch path ------------------------------------------------------------------------


class BatchKey:
    """A CPython key with the optional batch methods, counting the calls."""

    def __init__(self, key, calls):
        self._key, self.calls = key, calls

    async def encrypt(self, nonce, data, aad):
        return await self._key.encrypt(nonce, data, aad)

    async def decrypt(self, nonce, data, aad):
        return await self._key.decrypt(nonce, data, aad)

    async def encrypt_many(self, items):
        self.calls.append(("encrypt_many", len(items)))
        return [await self._key.encrypt(*item) for item in items]

    async def decrypt_many(self, items):
        self.calls.append(("decrypt_many", len(items)))
        out = []
        for item in items:
            try:
                out.append(await self._key.decrypt(*item))
            except Exception:
                out.append(None)
        return out


class BatchCrypto(CpythonCrypto):
    def __init__(self):
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    async def import_key(self, raw):
        return BatchKey(await super().import_key(raw), self.calls)


async def test_batches_give_the_same_bytes_and_errors():
    crypto = BatchCrypto()
    cipher = AesGcmCipher({1: await crypto.import_key(bytes(range(32)))}, 1)
    plain = AesGcmCipher({1: await CpythonCrypto().import_key(bytes(range(32)))}, 1)
    pairs = [(f"mem:{i}", f"value {i}".encode()) for i in range(5)] + [("mem:e", b"")]
    sealed = await cipher.seal_many(pairs)
    assert crypto.calls == [("encrypt_many", 6)]
    # sealed in a batch, opened one by one by a cipher without batches, and back
    assert [await plain.open(k, s) for (k, _), s in zip(pairs, sealed, strict=True)] == [
        v for _, v in pairs
    ]
    resealed = [await plain.seal(k, v) for k, v in pairs]
    assert await cipher.open_many(list(zip([k for k, _ in pairs], resealed, strict=True))) == [
        v for _, v in pairs
    ]
    swapped = list(zip([k for k, _ in pairs], sealed, strict=True))
    swapped[2] = ("mem:2", sealed[3])  # a value moved to another key
    with pytest.raises(CorruptValueError, match="mem:2"):
        await cipher.open_many(swapped)
    tampered = bytearray(sealed[4])
    tampered[-1] ^= 1
    with pytest.raises(CorruptValueError, match="mem:4"):
        await cipher.open_many([("mem:0", sealed[0]), ("mem:4", bytes(tampered))])


async def test_conformance_with_batching_keys():
    crypto = BatchCrypto()

    async def factory():
        return await EncryptedKv.open(MapKv(), passphrase="pw", iterations=FAST, crypto=crypto)

    results = await run_conformance(factory)
    assert [r for r in results if not r.ok] == []
    assert any(name == "decrypt_many" for name, _ in crypto.calls)
    assert any(name == "encrypt_many" for name, _ in crypto.calls)
