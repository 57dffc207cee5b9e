"""The relevance floor on queries people really type: small talk before the question never
hides an exact match (a number, a name, an id), in English and Chinese, while a query that
matches nothing still injects nothing. Hybrid tests use the real MiniLM model."""

from __future__ import annotations

import pytest
from helpers import Clock

from pymemory import Memory
from pymemory.models.embedding import HashingEmbedder, reads
from pymemory.retrieval.bm25 import Bm25Index
from pymemory.retrieval.lexical import ask_of, key_terms, query_mass
from pymemory.storage import MapKv

ANNA = "Anna's phone number is 07700 900123."
OTHERS = (
    "The boiler service is booked for the 14th.",
    "I prefer window seats on long flights.",
    "Tom's birthday party is at the bowling alley.",
)
CHATTY = (
    "Ugh, traffic was terrible today and I still have no idea what to cook for dinner, the "
    "kids are hungry and the dog needs a walk. Anyway, quick one: whose number is 07700 900123?"
)
SISTER = "我姐姐的手机号是13912345678。"
ZH_OTHERS = ("周末打算去西湖边走走。", "明天下午三点要开项目周会。", "楼下新开了一家面馆，味道还行。")
ZH_CHATTY = (
    "今天下班路上堵车堵了一个小时，真累啊。晚饭也还没想好吃什么。对了，手机号是13912345678的那个人叫什么名字？"
)


async def _store(texts, embedder=None):
    mem = await Memory.open(MapKv(), clock=Clock(), embedder=embedder)
    items = [await mem.add(t) for t in texts]
    if embedder is not None:
        await mem.embed_idle()
    return mem, items


@pytest.mark.parametrize("hybrid", [False, True], ids=["bm25", "hybrid"])
async def test_small_talk_before_the_question_keeps_the_exact_match(hybrid, minilm):
    embedder = minilm if hybrid else None
    mem, (anna, *_) = await _store((ANNA, *OTHERS), embedder)
    for query in ("Whose number is 07700 900123?", CHATTY, "who has 07700900123"):
        r = await mem.retrieve(query, trace=True)
        assert r.items and r.items[0].id == anna.id, query
        assert r.mode == ("hybrid" if hybrid else "bm25")
    # Nothing that shares no word with the store comes back (chatty too, by BM25: with
    # MiniLM, small talk can come within the dense floor of an unrelated memory).
    assert (await mem.retrieve("quantum chromodynamics lecture notes")).items == []
    if not hybrid:
        chat = "Honestly what a week. Do you know any good quantum chromodynamics notes?"
        assert (await mem.retrieve(chat)).items == []
    await mem.close()


@pytest.mark.parametrize("hybrid", [False, True], ids=["bm25", "hybrid"])
async def test_chinese_small_talk_keeps_the_exact_match(hybrid, minilm):
    embedder = minilm if hybrid else None
    mem, (sister, *_) = await _store((SISTER, *ZH_OTHERS), embedder)
    for query in ("手机号是13912345678的是谁？", ZH_CHATTY, "１３９１２３４５６７８是谁的号码"):
        r = await mem.retrieve(query, trace=True)
        assert r.items and r.items[0].id == sister.id, query
        # MiniLM reads no Chinese: the query is ranked by BM25 and says so.
        assert r.mode == "bm25"
        if hybrid:
            assert any("does not read its script" in n for n in r.notes)
    assert (await mem.retrieve("量子色动力学的讲义在哪里？")).items == []
    await mem.close()


async def test_the_number_matches_however_it_was_grouped():
    mem, (a, b) = await _store(("孙姐电话 139 1108 2267，回头我跟她谈谈。",
                                "Call the plumber on 0161-496-0000 after six."))  # fmt: skip
    assert (await mem.retrieve("13911082267这个号是谁的？")).items[0].id == a.id
    assert (await mem.retrieve("plumber 01614960000")).items[0].id == b.id
    assert (await mem.retrieve("0161 496 0000")).items[0].id == b.id
    await mem.close()


def test_the_ask_is_the_question_sentence():
    assert ask_of("Whose number is 07700 900123?") is None
    assert ask_of(CHATTY) == "Anyway, quick one: whose number is 07700 900123?"
    assert ask_of(ZH_CHATTY) == "对了，手机号是13912345678的那个人叫什么名字？"
    assert ask_of("Is it booked? Also the dog needs a walk.") == "Is it booked?"
    assert ask_of("Long day. Remind me about the boiler") == "Remind me about the boiler"
    assert ask_of("...") is None


def test_key_terms_are_rare_numbers_and_ids():
    index = Bm25Index()
    for slot, terms in enumerate([["a", "07700"], ["b", "2026"], ["c", "2026"], ["d", "2026"]]):
        index.add(slot, terms)
    # 2026 is in three of four memories: not a key; 42 is too short; 99999 is unknown.
    assert key_terms(index, ["07700", "2026", "42", "99999", "word"]) == ["07700"]


def test_query_mass_ignores_unknown_cjk_bigrams_only():
    index = Bm25Index()
    index.add(0, ["手机", "手", "机"])
    index.add(1, ["西湖", "西", "湖"])
    known = index.idf("手机")
    assert query_mass(index, ["手机", "号是"]) == pytest.approx(known)  # a word boundary
    assert query_mass(index, ["手机", "quantum"]) == pytest.approx(known + index.idf("quantum"))


def test_an_english_model_reads_latin_script_only():
    minilm_like = type("E", (), {"multilingual": False})()
    assert reads(minilm_like, "Where did Caroline go in May?")
    assert reads(minilm_like, "Café in Zürich, naïve façade")  # Latin with accents
    assert not reads(minilm_like, "手机号是13912345678的是谁？")
    assert reads(minilm_like, "Who is 王芳? She called about the Q3 budget review")
    assert reads(HashingEmbedder(), "手机号是13912345678的是谁？")  # no attribute: reads all
