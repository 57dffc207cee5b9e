"""The relevance floor's dense half (issue 38, item 3): a memory passes on its cosine only
if some memory stands out by meaning from the rest of the store for this query (the
embedder's ``dense_standout`` over the query's typical cosine to the store). A question
about nothing stored is about as close to every memory, and gets only what its words
match. The embedder here is a stand-in whose vectors are set by the test; the real
models' rates are in ``tests/models/test_floor_meaning_models.py``."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import Clock

from pymemory import Memory
from pymemory.retrieval.dense import TYPICAL_MIN
from pymemory.retrieval.pipeline import NO_STANDOUT
from pymemory.storage import MapKv

NOW = 1_780_000_000_000
DIM = 8


class SetVectors:
    """Every text's vector is ``base`` plus a little of its own direction, except the
    texts named in ``special`` (their vector given); so every memory is about as close
    to a query as any other unless the test makes one stand out."""

    name = "set-vectors"
    dim = DIM

    def __init__(self, special: dict[str, np.ndarray], standout: float | None) -> None:
        self.special = special
        self.dense_standout = standout

    async def embed(self, texts):
        out = []
        for t in texts:
            v = self.special.get(t)
            if v is None:
                v = np.zeros(DIM)
                v[0] = 1.0
                v[1 + sum(map(ord, t)) % (DIM - 1)] = 0.3
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)


QUERY = "zzq question"
NEAR = "the one memory close to the question"


def _vec(*xs: float) -> np.ndarray:
    return np.array(xs + (0.0,) * (DIM - len(xs)))


# The query's cosine to every memory is ~0.8: above min_dense, and typical.
TYPICAL_QUERY = {QUERY: _vec(1.0, 0, 0, 0, 0, 0, 0, 0.5)}


async def _store(n: int, special: dict[str, np.ndarray], standout: float | None):
    mem = await Memory.open(MapKv(), clock=Clock(NOW))
    await mem.attach_embedder(SetVectors(special, standout))
    await mem.add_many({"text": f"note {i} kept for later"} for i in range(n))
    await mem.embed_idle()
    return mem


@pytest.mark.parametrize("standout", [None, 0.2])
async def test_nothing_stands_out_nothing_passes_on_its_cosine(standout):
    mem = await _store(40, TYPICAL_QUERY, standout)
    r = await mem.retrieve(QUERY, trace=True)
    if standout is None:  # the floor as it was: every memory over min_dense passes
        assert len(r.items) > 0 and NO_STANDOUT not in r.notes
    else:
        assert r.items == [] and r.text == "" and NO_STANDOUT in r.notes
        assert {c.status for c in r.trace} == {"below_floor"}
    await mem.close()


async def test_one_that_stands_out_opens_the_floor():
    q = _vec(0, 0, 0, 0, 0, 0, 0, 1.0)
    mem = await _store(40, {QUERY: q, NEAR: q + _vec(0.2)}, 0.2)
    near = await mem.add(NEAR)
    await mem.embed_idle()
    r = await mem.retrieve(QUERY, trace=True)
    assert r.items and r.items[0].id == near.id and NO_STANDOUT not in r.notes
    await mem.close()


async def test_word_matches_pass_whatever_the_cosines():
    mem = await _store(40, {"note 7": _vec(1.0)}, 0.2)
    r = await mem.retrieve("note 7", trace=True)
    assert r.items and "note 7 kept" in r.items[0].content
    await mem.close()


async def test_a_small_store_has_no_gate():
    """Fewer than TYPICAL_MIN memories say nothing of what is typical: the floor as
    before."""
    mem = await _store(TYPICAL_MIN - 1, TYPICAL_QUERY, 0.2)
    r = await mem.retrieve(QUERY, trace=True)
    assert len(r.items) > 0 and NO_STANDOUT not in r.notes
    await mem.close()


async def test_floor_off_ignores_the_gate():
    from pymemory.retrieval.strategies import relevance_floor

    mem = await _store(40, TYPICAL_QUERY, 0.2)
    r = await mem.retrieve(QUERY, strategy=relevance_floor(0, 0), trace=True)
    assert len(r.items) > 0 and NO_STANDOUT not in r.notes
    await mem.close()
