"""Per-passage vectors (issue 38, item 4; issue 35, item 2): a memory of several passages
has a vector per passage beside its own, in its one ``vec:`` record, so a long text is
found by meaning in any passage (not only its first 256 tokens) and the prompt gets the
passage nearest the question. The embedder is a stand-in whose vectors the test sets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import Clock

from pymemory import Memory
from pymemory.errors import ValidationError
from pymemory.retrieval import dense
from pymemory.retrieval.vectors_kv import (
    decode_group,
    decode_vector,
    encode_group,
    encode_vector,
)
from pymemory.storage import SqliteKv, schema

NOW = 1_780_000_000_000
DIM = 8
QUERY = "what animal was adopted"
FAR_LINE = "Later that week the shelter called and she brought home a grey kitten."
LINES = [f"Line {i}: we went over the quarterly budget, item {i}, and the travel plans."
         for i in range(14)]  # fmt: skip
TRANSCRIPT = "\n".join([*LINES[:11], FAR_LINE, *LINES[11:]])


class SetVectors:
    """Every text points along axis 0 (with a little of its own direction), except a text
    holding ``FAR_LINE`` or equal to ``QUERY``, which point along axis 7."""

    name = "set-vectors"
    dim = DIM

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def embed(self, texts):
        self.texts += texts
        out = []
        for t in texts:
            v = np.zeros(DIM)
            if t == QUERY or (FAR_LINE in t and len(t) < 400):  # a passage, not the whole
                v[7] = 1.0
            else:
                v[0] = 1.0
                v[1 + sum(map(ord, t)) % 6] = 0.3
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)


async def _open(path, embedder=None) -> Memory:
    return await Memory.open(await SqliteKv.open(path), clock=Clock(NOW),
                             embedder=embedder or SetVectors())  # fmt: skip


async def _close(mem: Memory) -> None:
    await mem.close()
    await mem.kv.close()


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32"])
def test_a_record_holds_a_memory_and_its_passages(dtype):
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(5, DIM)).astype(np.float32)
    if dtype == "int8":
        scales = np.abs(rows).max(axis=1) / 127
        rows = np.round(rows / scales[:, None]).astype(np.int8)
    else:
        scales = np.ones(5, dtype=np.float32)
        rows = rows.astype(dtype)
    got_dtype, got, got_scales = decode_group(encode_group(rows, scales, dtype))
    assert got_dtype == dtype and np.array_equal(got, rows)
    assert np.allclose(got_scales, scales)
    # One row is the version-1 record, so a memory of one passage reads as before.
    assert encode_group(rows[:1], scales[:1], dtype) == encode_vector(rows[0], scales[0], dtype)
    assert np.array_equal(decode_group(encode_vector(rows[0], scales[0], dtype))[1], rows[:1])
    raw = encode_group(rows, scales, dtype)
    for bad in (raw[:-1], raw[:9], raw + b"\0"):
        with pytest.raises(ValidationError):
            decode_group(bad)
    with pytest.raises(ValidationError):
        decode_vector(raw)  # a group is not a single vector


async def test_a_long_memory_is_found_and_quoted_by_its_nearest_passage(tmp_path):
    mem = await _open(tmp_path / "m.db")
    long = await mem.add(TRANSCRIPT)
    await mem.add_many({"text": f"short note {i} about groceries"} for i in range(30))
    await mem.embed_idle()
    n = len(mem._catalog.passages.spans(mem._catalog.slot_of[long.id]))
    assert n >= 3 and mem.vectors.passage_count(long.id) == n
    short = next(i for i in await mem.list() if i.text.startswith("short note"))
    assert mem.vectors.passage_count(short.id) == 0  # one passage: none
    r = await mem.retrieve(QUERY, max_tokens=120, trace=True)
    assert r.mode == "hybrid" and r.items[0].id == long.id
    assert FAR_LINE in r.text and LINES[0] not in r.text
    assert [p.why for p in r.memories[0].passages if FAR_LINE in p.text] == ["best"]
    await _close(mem)


async def test_passage_vectors_persist_follow_edits_and_go_with_their_memory(tmp_path):
    path = tmp_path / "m.db"
    mem = await _open(path)
    long = await mem.add(TRANSCRIPT)
    await mem.embed_idle()
    n = mem.vectors.passage_count(long.id)
    await _close(mem)

    embedder = SetVectors()
    mem = await _open(path, embedder)
    other = await _open(path)  # a second instance on the same file
    await mem.embed_idle()
    assert embedder.texts == [] and mem.vectors.passage_count(long.id) == n  # not re-embedded
    await mem.update(long.id, text="\n".join(LINES[:4]))  # now one passage
    await mem.embed_idle()
    assert mem.vectors.passage_count(long.id) == 0 and len(mem.vectors.passages) == 0
    await mem.update(long.id, text=TRANSCRIPT)
    await mem.embed_idle()
    assert mem.vectors.passage_count(long.id) == n
    await other.retrieve(QUERY)  # catches up with the other instance's records
    assert other.vectors.passage_count(long.id) == n
    await mem.delete(long.id)
    assert await mem.kv.get(schema.vec_key(long.id)) is None
    assert len(mem.vectors.passages) == 0
    await other.retrieve(QUERY)
    assert len(other.vectors.passages) == 0
    await _close(other)
    await _close(mem)


async def test_a_store_embedded_without_passage_vectors_gets_them_in_the_background(
    tmp_path, monkeypatch
):
    path = tmp_path / "m.db"
    monkeypatch.setattr(dense, "MAX_PASSAGE_VECTORS", 0)  # as stores of earlier versions
    mem = await _open(path)
    long = await mem.add(TRANSCRIPT)
    await mem.embed_idle()
    assert mem.vectors.passage_count(long.id) == 0
    before = await mem.retrieve(QUERY, max_tokens=120)
    assert FAR_LINE not in before.text  # found by its first lines' vector, if at all
    await _close(mem)

    monkeypatch.setattr(dense, "MAX_PASSAGE_VECTORS", 512)
    mem = await _open(path)
    await mem.embed_idle()
    assert mem.vectors.passage_count(long.id) >= 3
    assert FAR_LINE in (await mem.retrieve(QUERY, max_tokens=120)).text
    await _close(mem)


async def test_a_passage_that_stands_out_by_meaning_goes_in_beside_the_word_match(tmp_path):
    """The question's words are in one passage; the passage that answers it by meaning has
    none of them, and goes in second (why ``meaning``), before the word match's
    neighbours; without an embedder only the word match and its neighbours go in."""
    query = "the Hartwell invoice"
    invoice = "Line 3: the Hartwell invoice came; Hartwell sent the invoice for the Hartwell job."
    text = "\n".join([*LINES[:3], invoice, *LINES[4:11], FAR_LINE, *LINES[11:]])

    class Near(SetVectors):  # the query means what FAR_LINE says
        async def embed(self, texts):
            return await super().embed([QUERY if t == query else t for t in texts])

    def whys(r) -> list[tuple[str, bool, bool]]:
        return [(p.why, invoice in p.text, FAR_LINE in p.text) for p in r.memories[0].passages]

    mem = await _open(tmp_path / "m.db", Near())
    long = await mem.add(text)
    await mem.add_many({"text": f"short note {i} about groceries"} for i in range(30))
    await mem.embed_idle()
    r = await mem.retrieve(query, max_tokens=200, trace=True)
    assert r.items[0].id == long.id
    assert whys(r) == [("best", True, False), ("meaning", False, True)]
    await _close(mem)

    plain = await Memory.open(await SqliteKv.open(tmp_path / "p.db"), clock=Clock(NOW))
    await plain.add(text)
    r = await plain.retrieve(query, max_tokens=200, trace=True)
    assert [w for w, *_ in whys(r)] == ["best", "neighbour"] and FAR_LINE not in r.text
    await plain.close()
    await plain.kv.close()
