"""The index snapshot (issue 14, "open fast at any size"): a store reopened from its
snapshot answers exactly as one rebuilt from every record, also after other instances
changed it; anything unusable falls back to the rebuild; forgets and exports never keep
what the snapshot holds; encrypted stores keep it sealed."""

from __future__ import annotations

import asyncio
import logging
import random
import shutil

import numpy as np
import pytest

from pymemory import Memory
from pymemory.item import Feedback, MemoryItem
from pymemory.models.embedding import HashingEmbedder
from pymemory.retrieval import bm25_state, snapshot
from pymemory.retrieval.analyzer import analyze
from pymemory.retrieval.bm25 import Bm25Index
from pymemory.storage import MapKv, SqliteKv, Writes, changes, schema
from pymemory.storage.encrypted import EncryptedKv

NOW = 1_780_000_000_000
DAY = 86_400_000
N = snapshot.MIN_ITEMS + 200
WORDS = [
    "deploy",
    "budget",
    "vault",
    "garden",
    "coffee",
    "invoice",
    "rocket",
    "piano",
    "harbor",
    "lantern",
    "meeting",
    "travel",
    "python",
    "server",
    "cat",
    "dog",
    "maya",
    "paris",
    "tokyo",
    "release",
    "review",
    "sprint",
    "ticket",
    "backup",
    "river",
    "museum",
    "concert",
    "recipe",
    "bicycle",
    "mountain",
    "winter",
    "summer",
    "report",
    "contract",
    "café",
    "naïve",
    "東京",
]
QUERIES = ["deploy the server", "coffee in paris", "budget review meeting", "vault backup",
           "maya concert tokyo", "winter bicycle", "café naïve", "東京"]  # fmt: skip


def clock() -> int:
    return NOW


def entries(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 18)))
        if i % 11 == 0:  # a transcript of several passages (the passage index)
            text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 30)))
                              for _ in range(rng.randint(6, 14)))  # fmt: skip
        out.append({
            "text": f"{text} #{seed}-{i}",
            "tags": rng.sample(["work", "home", "code", "trip"], rng.randint(0, 2)),
            "scope": rng.choice(["user", "session", "global"]),
            "timestamp": NOW - rng.randint(0, 90 * DAY),
            **({"ttl_ms": 200 * DAY} if i % 7 == 0 else {}),
        })  # fmt: skip
    return out


async def open_at(path, **kw) -> Memory:
    return await Memory.open(
        await SqliteKv.open(path), clock=clock, feedback_flush_s=3600, embedder=HashingEmbedder(),
        **kw,
    )  # fmt: skip


async def close(*memories: Memory) -> None:
    for m in memories:
        await m.close()
        await m.kv.close()


@pytest.fixture(scope="module")
def base_store(tmp_path_factory):
    """A closed store of N items with vectors and its snapshot (built once)."""
    path = tmp_path_factory.mktemp("snap") / "base.db"

    async def fill() -> None:
        m = await open_at(path)
        for start in range(0, N, 500):
            await m.add_many(entries(N, 1)[start : start + 500])
        await m.embed_idle()
        await close(m)

    asyncio.run(fill())
    return path


@pytest.fixture
def store(base_store, tmp_path):
    path = tmp_path / "s.db"
    shutil.copy(base_store, path)
    return path


async def observe(m: Memory) -> dict:
    """Everything a caller can see: rankings (BM25 and hybrid), lists, items, counts."""
    out: dict = {}
    await m.embed_idle()  # items added without a vector get one in the background
    for q in QUERIES:
        r = await m.retrieve(q, max_items=15, max_tokens=100_000)
        out[q] = [(x.item, round(x.score, 9)) for x in r.memories]
        packed = await m.retrieve(q, max_items=60, max_tokens=3000)
        out["text:" + q] = (packed.text, [x.passages for x in packed.memories])
        out["tag:" + q] = [x.item.id for x in (await m.retrieve(q, max_items=5)).memories]
    out["list"] = await m.list()
    out["list_work"] = await m.list(tags=["work"], scope="user")
    stats = await m.stats()
    for key in ("items", "archived", "by_type", "by_scope", "unreadable_records",
                "expired_pending_sweep", "oldest_ms", "newest_ms"):  # fmt: skip
        out["stats:" + key] = stats[key]
    out["vectors"] = sorted(m.vectors.ids()) if m.vectors is not None else None
    if m.vectors is not None:  # a transcript's passages' vectors, in its one record
        out["passage_vectors"] = sorted(m.vectors.passages.ids())
    out["archive"] = [a.id for a in await m.search_archive("deploy budget", limit=50)]
    return out


async def rebuilt_view(path) -> dict:
    """What a full rebuild (no snapshot) of a copy of the store at ``path`` shows."""
    copy = path.with_name(path.name + ".rebuilt.db")
    kv = await SqliteKv.open(path)
    backup = await SqliteKv.open(copy)
    rows = [(k, v) async for k, v in _all(kv) if not k.startswith(schema.SNAP)]
    await backup.put_many(rows)
    await kv.close()
    m = await Memory.open(backup, clock=clock, feedback_flush_s=3600, embedder=HashingEmbedder())
    assert await backup.get(snapshot.HEAD_KEY) is None
    seen = await observe(m)
    await close(m)
    return seen


async def _all(kv):
    for prefix in ("meta:", "chg:", "mem:", "arc:", "vec:", "hst:"):
        for pair in await kv.scan(prefix):
            yield pair


def used_snapshot(caplog) -> bool:
    return "opened from the index snapshot" in caplog.text


async def test_reopen_from_snapshot_answers_as_a_rebuild(store, caplog):
    caplog.set_level(logging.INFO, "pymemory")
    m = await open_at(store)
    assert used_snapshot(caplog)
    seen = await observe(m)
    assert len(seen["list"]) == N and len(seen["vectors"]) == N
    assert len(seen["passage_vectors"]) == len(m._catalog.passages)
    assert any(seen[q] for q in QUERIES)
    # The passage index came from the snapshot too, and passages went into the text.
    assert len(m._catalog.passages) > N // 11
    assert any(p.why in ("best", "match") for q in QUERIES
               for ps in seen["text:" + q][1] for p in ps)  # fmt: skip
    await close(m)
    assert seen == await rebuilt_view(store)


async def test_changes_by_another_instance_after_the_snapshot_are_applied(store, caplog):
    caplog.set_level(logging.INFO, "pymemory")
    other = await open_at(store)
    items = await other.list()
    added = await other.add_many(entries(30, 2))
    await other.update(items[0].id, text="the vault moved to the harbor in winter")
    await other.update(items[1].id, tags=["work", "urgent"], scope="user")
    for item in items[2:6]:
        await other.feedback(item.id, "liked")
    await other.feedback(items[6].id, "important")
    await other.flush()
    await other.feedback(items[7].id, "disliked")  # pending in `other`, not stored
    await other.embed_idle()
    caplog.clear()
    m = await open_at(store)  # while `other` still runs
    assert used_snapshot(caplog) and "+0 changed keys" not in caplog.text
    seen = await observe(m)
    assert {a.id for a in added} <= {i.id for i in seen["list"]}
    assert (await m.get(items[2].id)).feedback.liked == items[2].feedback.liked + 1
    assert (await m.get(items[0].id)).text == "the vault moved to the harbor in winter"
    assert (await m.get(items[7].id)).feedback == items[7].feedback
    assert seen == await rebuilt_view(store)  # before `other` flushes its pending feedback
    await close(m, other)


async def test_forgets_after_the_snapshot_are_applied_and_drop_it(store, caplog):
    """A forget drops the snapshot (it holds the forgotten text). Were that drop lost (a
    crash right after the forget's commit), the next open still applies the forget from
    the change log, then drops the snapshot."""
    caplog.set_level(logging.INFO, "pymemory")
    kv = await SqliteKv.open(store)
    kept = await kv.scan(schema.SNAP)
    assert kept and await kv.get(snapshot.HEAD_KEY) is not None
    other = await open_at(store)
    items = await other.list()
    await other.delete(items[0].id)
    assert await kv.scan(schema.SNAP) == []  # dropped by the forget
    assert await other.clear(tags=["trip"], scope="session") > 0
    assert await other.archive_older_than(80) > 0
    await close(other)
    await kv.put_many(kept)  # as if the drop had been lost
    caplog.clear()
    m = await open_at(store)
    assert used_snapshot(caplog)
    seen = await observe(m)
    assert items[0].id not in {i.id for i in seen["list"]} and seen["archive"]
    assert await kv.scan(schema.SNAP) == []  # dropped: it held forgotten items
    await close(m)
    assert seen == await rebuilt_view(store)
    forgotten = items[0].text.encode()
    assert not any(forgotten in v for _, v in await kv.scan(""))  # nowhere in the store
    await kv.close()


@pytest.mark.parametrize("damage", ["chunk", "format", "analyzer", "log", "missing", "seq"])
async def test_an_unusable_snapshot_means_a_logged_rebuild(store, caplog, damage):
    caplog.set_level(logging.INFO, "pymemory")
    kv = await SqliteKv.open(store)
    head = await kv.get(snapshot.HEAD_KEY)
    import json

    meta = json.loads(head)
    chunk = f"{schema.SNAP}{meta['gen']}:view:000000"
    if damage == "chunk":
        raw = bytearray(await kv.get(chunk))
        raw[len(raw) // 2] ^= 0xFF
        await kv.put_many([(chunk, bytes(raw))])
    elif damage == "missing":
        await kv.delete_many([chunk])
    elif damage in ("format", "analyzer"):
        meta[damage] = "other"
        await kv.put_many([(snapshot.HEAD_KEY, json.dumps(meta).encode())])
    elif damage == "seq":  # a head from the future: the store was replaced
        meta["seq"] += 5
        await kv.put_many([(snapshot.HEAD_KEY, json.dumps(meta).encode())])
    else:  # the log no longer reaches back to the snapshot (a hole after its seq)
        kept = await kv.scan(schema.SNAP)
        m = await open_at(store)
        await m.add("one more change after the snapshot")
        await close(m)
        await kv.delete_many([k for k, _ in await kv.scan(schema.SNAP)])
        await kv.put_many(kept)
        await kv.delete_many([changes.log_key(meta["seq"] + 1)])
    await kv.close()
    caplog.clear()
    m = await open_at(store)
    assert not used_snapshot(caplog)
    assert (
        "rebuild" in caplog.text
        or "reading every record" in caplog.text
        or ("older than the change log" in caplog.text)
    )
    seen = await observe(m)
    await close(m)
    assert seen == await rebuilt_view(store)


async def test_snapshot_is_never_exported_and_clear_all_drops_it(store, tmp_path):
    m = await open_at(store)
    lines = [line async for line in m.export()]
    assert not any("snap:" in line or "PMSNAP" in line for line in lines)
    fresh = await Memory.open(MapKv(), clock=clock)
    await fresh.import_(lines)
    assert await fresh.kv.scan(schema.SNAP) == []
    await fresh.close()
    assert await m.kv.get(snapshot.HEAD_KEY) is not None
    await m.clear(all=True)
    assert await m.kv.scan(schema.SNAP) == []
    await close(m)


async def test_a_stale_snapshot_is_not_written(store):
    """Written only if the store is still at the position it reflects (a forget since
    could be in it otherwise)."""
    m = await open_at(store)
    seq, parts = m._view.seq, await m._view.take_snapshot(m.vectors)
    other = await open_at(store)
    await other.add("a change after the snapshot was taken")
    before = await m.kv.scan(schema.SNAP)
    assert await snapshot.write(m.kv, seq, parts) is False
    assert await m.kv.scan(schema.SNAP) == before
    await close(other, m)


async def test_background_writer_snapshots_a_store_without_one(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, "pymemory")
    monkeypatch.setattr(snapshot, "CHECK_S", 0.05)
    monkeypatch.setattr(snapshot, "MIN_INTERVAL_S", 0.0)
    m = await Memory.open(await SqliteKv.open(tmp_path / "s.db"), clock=clock)  # no embedder
    await m.add_many(entries(N, 3))
    for _ in range(200):
        if await m.kv.get(snapshot.HEAD_KEY) is not None:
            break
        await asyncio.sleep(0.05)
    head = await m.kv.get(snapshot.HEAD_KEY)
    assert head is not None and snapshot.stored_seq(head) == m._view.seq
    await close(m)


async def test_encrypted_store_keeps_the_snapshot_sealed(tmp_path, caplog):
    caplog.set_level(logging.INFO, "pymemory")
    inner = await SqliteKv.open(tmp_path / "e.db")
    kv = await EncryptedKv.open(inner, key=bytes(range(32)))
    m = await Memory.open(kv, clock=clock)
    await m.add_many(entries(N, 4))
    marker = (await m.list())[0].text
    before = await observe(m)
    await m.close()
    sealed = await inner.scan(schema.SNAP)
    assert sealed and not any(marker.encode() in v or b"PMSNAP" in v for _, v in sealed)
    caplog.clear()
    m = await Memory.open(await EncryptedKv.open(inner, key=bytes(range(32))), clock=clock)
    assert used_snapshot(caplog)
    assert await observe(m) == before
    await m.close()
    await inner.close()


def test_trusted_decode_is_from_json():
    items = [
        MemoryItem(id="0" * 8 + "-0000-4000-8000-" + "0" * 12, type="message", timestamp=5,
                   content="hi", text="hi", metadata={}),
        MemoryItem(id="1" * 8 + "-0000-4000-8000-" + "0" * 12, type="tool_result",
                   timestamp=NOW, content="Café 東京 naïve", text="raw Café 東京 naïve text",
                   metadata={"speaker": "Maya", "n": [1, 2.5, None, {"x": True}],
                             "confidence": 0.5, "references": ["0" * 8 + "-0000-4000-8000-" + "0" * 12]},
                   scope="conversation:42", tags=("a", "b"), ttl_ms=DAY,
                   feedback=Feedback(3, 1, True), content_method="model", version=7),
    ]  # fmt: skip
    for item in items:
        raw = item.to_json().encode()
        assert MemoryItem.from_trusted_json(raw) == MemoryItem.from_json(raw) == item


def test_bm25_restored_from_arrays_scores_and_updates_as_the_original():
    rng = random.Random(5)
    docs = [analyze(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))))
            for _ in range(300)]  # fmt: skip
    index = Bm25Index()
    for slot, terms in enumerate(docs):
        index.add(slot, terms)
    for slot in range(0, 300, 7):
        index.remove(slot)
    halves = lambda n: iter([range(0, n // 2), range(n // 2, n)])  # noqa: E731
    copy = bm25_state.from_arrays(*list(bm25_state.to_arrays(index, halves))[-1])
    for i in range(40):  # the same updates on both
        slot = rng.randrange(320)
        if i % 3 == 0:
            index.remove(slot)
            copy.remove(slot)
        else:
            terms = docs[rng.randrange(300)]
            index.add(slot, terms)
            copy.add(slot, terms)
        for q in (["deploy"], ["coffee", "paris"], analyze("vault backup winter")):
            a, b = index.scores(q), copy.scores(q)
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert len(copy) == len(index) and copy.avgdl == index.avgdl


def test_payload_codec_round_trips():
    arrays = {"a": np.arange(5, dtype=np.int32), "e": np.zeros(0, np.float64)}
    strings = {"s": ["", "x", "Café 東京", "\ud800"], "none": [], "one": [""], "nl": ["a\nb", ""]}
    blobs = {"b": [b"", b"\x00\xff", b"json"], "nl": [b"x\ny", b""], "none": []}
    got = snapshot.unpack(snapshot.pack({"k": 1}, arrays, strings, blobs))
    assert got.meta == {"k": 1} and got.strings == strings and got.blobs == blobs
    assert all(np.array_equal(got.arrays[k], v) for k, v in arrays.items())


async def test_unreadable_records_are_reported_as_without_a_snapshot(store, caplog):
    """One unreadable before the snapshot (kept in it) and one another writer logged
    after it (re-read at open): stats() counts both, as a rebuild does."""
    caplog.set_level(logging.INFO, "pymemory")
    kv = await SqliteKv.open(store)
    ids = [k[len(schema.MEM) :] for k, _ in await kv.scan(schema.MEM, limit=2)]

    def spoil(item_id: str):
        def fn(_values, _listed):
            return Writes([(schema.mem_key(item_id), b'{"not": "an item"}')])

        return fn

    await changes.commit(kv, [schema.mem_key(ids[0])], spoil(ids[0]))
    await kv.delete_many([k for k, _ in await kv.scan(schema.SNAP)])
    m = await open_at(store)  # a rebuild, which reports one; its close writes a snapshot
    assert (await m.stats())["unreadable_records"] == 1
    await close(m)
    await changes.commit(kv, [schema.mem_key(ids[1])], spoil(ids[1]))
    await kv.close()
    caplog.clear()
    m = await open_at(store)
    assert used_snapshot(caplog)
    seen = await observe(m)
    assert seen["stats:unreadable_records"] == 2
    assert {ids[0], ids[1]}.isdisjoint(i.id for i in seen["list"])
    await close(m)
    assert seen == await rebuilt_view(store)


async def test_an_instance_further_behind_than_the_log_reloads_from_a_newer_snapshot(
    store, monkeypatch, caplog
):
    caplog.set_level(logging.INFO, "pymemory")
    monkeypatch.setattr(changes, "RETAIN", 8)
    a = await open_at(store)
    b = await open_at(store)
    for i in range(12):  # more commits than the log keeps
        await b.add(f"change {i} made while the other instance was idle", scope="user")
    await b.update((await b.list())[-1].id, text="the vault moved to the harbor")
    await b.embed_idle()
    assert await b._snapshots.save()
    caplog.clear()
    seen = await observe(a)  # its next call reloads: from b's snapshot
    assert "does not reach back" in caplog.text and used_snapshot(caplog)
    assert seen == await observe(b)
    await close(a, b)
    assert seen == await rebuilt_view(store)


async def test_a_snapshot_without_vectors_gets_them_once_an_embedder_is_attached(store):
    import json

    m = await Memory.open(await SqliteKv.open(store), clock=clock)  # no embedder
    await snapshot.discard(m.kv)
    assert await m._snapshots.save()
    assert "vec" not in json.loads(await m.kv.get(snapshot.HEAD_KEY))["parts"]
    await close(m)
    m = await open_at(store)  # every item has its vector: nothing new is committed
    seq = m._view.seq
    await close(m)
    kv = await SqliteKv.open(store)
    head = json.loads(await kv.get(snapshot.HEAD_KEY))
    assert head["seq"] == seq and "vec" in head["parts"]
    await kv.close()
