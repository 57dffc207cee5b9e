"""Ranking semantics: relevance decides, decay and feedback only re-rank, the relevance
floor returns nothing for an unrelated query, time phrases, speakers, text folding.

The hybrid tests use the real MiniLM model (``.cache/models/minilm``)."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from helpers import DAY, HOUR, Clock, window_days
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymemory import Memory
from pymemory.retrieval.analyzer import analyze
from pymemory.retrieval.strategies import (
    compose,
    feedback_weight,
    relevance_floor,
    time_decay,
)
from pymemory.retrieval.when import query_window
from pymemory.storage import MapKv


async def _memory(embedder=None, clock=None):
    return await Memory.open(MapKv(), clock=clock or Clock(), embedder=embedder)


# --- text folding, end to end -------------------------------------------------------------


async def test_retrieve_folds_case_and_accents_like_the_index():
    mem = await _memory()
    city = await mem.add("Our office moved to İstanbul last spring.")
    summer = await mem.add("We spent the e\u0301te\u0301 in Provence.")  # combining accents
    await mem.add("The office in Leeds is closing.")
    assert [i.id for i in (await mem.retrieve("istanbul")).items] == [city.id]
    assert [i.id for i in (await mem.retrieve("ISTANBUL")).items] == [city.id]
    assert [i.id for i in (await mem.retrieve("ete provence")).items] == [summer.id]
    assert [i.id for i in (await mem.retrieve("été")).items] == [summer.id]
    await mem.close()


# --- the relevance floor ------------------------------------------------------------------

STORE = [
    ('{"city": "Beijing", "temp_c": 23, "sky": "cloudy"}', "tool_result"),
    ("Today at 3pm we reviewed the permissions module with the product team: three roles, "
     "and it goes live next Tuesday.", "message"),
    ("The deploy to staging failed because the database migration timed out.", "message"),
    ("Lunch with Sam is moved to Thursday.", "message"),
]  # fmt: skip


async def _store(mem):
    return [await mem.add(text, type=kind) for text, kind in STORE]


async def test_an_unrelated_query_returns_nothing_and_a_related_one_its_answer(minilm):
    mem = await _memory(minilm)
    weather, meeting, *_ = await _store(mem)
    await mem.embed_idle()
    for query in ("How should answers be formatted?", "quantum chromodynamics lecture notes"):
        r = await mem.retrieve(query, trace=True)
        assert r.mode == "hybrid" and r.items == [] and r.text == "", query
        cut = [c for c in r.trace if c.status == "below_floor"]
        assert cut and all(c.dense < 0.15 and c.lexical_part < 0.05**2 for c in cut)
    related = await mem.retrieve("when does the permissions module go live?")
    assert related.items[0].id == meeting.id
    # Padding is what the floor prevents: without it the weather JSON would go in.
    padded = await mem.retrieve(
        "How should answers be formatted?", relevance_floor(0, 0), max_items=5
    )
    assert weather.id in {i.id for i in padded.items}
    # The same question finds its memory as soon as there is one.
    pref = await mem.add("From now on I prefer answers as tables, not bullet lists.",
                         type="user_preference")  # fmt: skip
    await mem.embed_idle()
    r = await mem.retrieve("How should answers be formatted?")
    assert [i.id for i in r.items] == [pref.id]
    await mem.close()


async def test_the_floor_without_an_embedder_cuts_weak_lexical_matches():
    mem = await _memory()
    await _store(mem)
    weak = await mem.add("Tomorrow is a holiday.")
    query = "tell me everything about tomorrow's quantum chromodynamics lecture notes, please"
    r = await mem.retrieve(query, trace=True)
    assert r.mode == "bm25" and r.items == []
    row = next(c for c in r.trace if c.id == weak.id)
    assert row.status == "below_floor" and 0 < row.relevance < 0.05
    assert (await mem.retrieve(query, relevance_floor(0, 0))).items[0].id == weak.id
    r = await mem.retrieve("permissions module go live")
    assert r.items and "permissions" in r.items[0].content
    await mem.close()


# --- decay and feedback re-rank, never overturn relevance ---------------------------------

ANSWERS = [
    ("Was invoice INV-2291 paid?", "Invoice INV-2291 was paid by bank transfer on the third."),
    ("What is the gate code for the Harbour Road depot?",
     "The gate code for the Harbour Road depot is 4471, changed in March."),
    ("When does Priya's flight to Lisbon leave?",
     "Priya's flight to Lisbon leaves at 07:40 on Friday from gate B12."),
    ("Which vet does Pepper the beagle go to?", "Pepper the beagle goes to the Orchard Lane vets."),
    ("What size is the Kestrel project's database server?",
     "The Kestrel project's database server has 64 GB of RAM and 2 TB of disk."),
    ("What did we decide about the permissions roles?",
     "We decided on three permissions roles: super admin, department admin and member."),
]  # fmt: skip
CHATTER = [
    "Morning! Coffee number one in hand, how's life?",
    "Ugh, it has not stopped raining here for four days.",
    "Haha, classic.",
    "I slept eleven hours on Sunday, my body just gave up.",
    "Did you see the video of the goat on the roof of the school?",
    "Dinner tonight is whatever is left in the fridge.",
    "Gotta run, meeting in five. Speak later!",
    "Honestly that sounds amazing.",
    "The train was cancelled again this morning.",
    "I bought new socks and I'm weirdly excited about it.",
    "My neighbour has started playing the trumpet at 7am.",
    "Nothing much, maybe a long walk and a lot of laundry.",
    "That's brilliant, I'm so happy for you!",
    "I tried baking bread and it came out like a brick.",
    "Sleep time for me. Speak this weekend?",
    "The supermarket moved everything around. Chaos.",
    "Same here, grey and miserable all week.",
    "Oh no, that's rubbish. Sending hugs.",
    "I've had one song stuck in my head for three days.",
    "Okay, the bus is here. Talk soon!",
    "My mum has discovered voice notes. They are eight minutes long.",
    "Someone on the bus was eating an egg sandwich at 7am.",
    "I'm going to bed at nine tonight like a pensioner.",
    "Work has been a lot this week, three deadlines at once.",
    "Fingers crossed for the weekend at least.",
    "The printer jammed so badly that someone called it haunted.",
    "Is it just me or did the weekend last five minutes?",
    "I found my old CD collection in the loft.",
    "Lovely chatting, have a good one!",
    "We had one nice hour this morning and then it went dark again.",
]
DECAYS = [
    None,  # the default strategy
    time_decay(24, floor=0.5),
    time_decay(168, floor=0.5),
    time_decay(by_type={"message": {"half_life_hours": 6, "floor": 0.5}}),
]


def _no_shared_term(query: str, texts: list[str]) -> list[str]:
    terms = set(analyze(query))
    return [t for t in texts if terms.isdisjoint(analyze(t))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    answer=st.integers(0, len(ANSWERS) - 1),
    answer_age_days=st.floats(1, 1000),
    answer_type=st.sampled_from(["message", "tool_result", "user_preference", "system_event"]),
    n_chatter=st.integers(5, len(CHATTER)),
    chatter_liked=st.booleans(),
    decay=st.sampled_from(range(len(DECAYS))),
    k=st.sampled_from([3, 5, 10]),
)
def test_recent_chatter_never_pushes_an_old_exact_answer_out_of_the_top_k(
    minilm, answer, answer_age_days, answer_type, n_chatter, chatter_liked, decay, k
):
    """The property of issue 11: an exact old answer stays in the top k however old it is,
    against any amount of recent chatter that shares no term with the query (liked or
    not), for the default decay and any decay whose floor is at least 0.5, with and
    without the embedder."""
    query, text = ANSWERS[answer]
    chatter = _no_shared_term(query, CHATTER)[:n_chatter]
    strategy = DECAYS[decay]

    async def run() -> None:
        for embedder in (None, minilm):
            clock = Clock()
            mem = await _memory(embedder, clock)
            old = await mem.add(
                text, type=answer_type, timestamp=clock.now - int(answer_age_days * DAY)
            )
            fresh = await mem.add_many(
                [{"text": c, "timestamp": clock.now - i * HOUR} for i, c in enumerate(chatter)]
            )
            if chatter_liked:
                for item in fresh:
                    await mem.feedback(item.id, "liked")
            await mem.embed_idle()
            r = await mem.retrieve(query, strategy, max_items=k)
            assert old.id in [i.id for i in r.items], (r.mode, query, answer_type)
            await mem.close()

    asyncio.run(run())


async def test_decay_and_feedback_reorder_comparably_relevant_memories(minilm):
    """Two equally relevant memories: recency (a tool result) and feedback decide."""
    clock = Clock()
    mem = await _memory(minilm, clock)
    old = await mem.add("The staging deploy finished without errors.", type="tool_result",
                        timestamp=clock.now - 3 * DAY)  # fmt: skip
    new = await mem.add("The staging deploy finished without errors.", type="tool_result")
    await mem.embed_idle()
    r = await mem.retrieve("did the staging deploy finish?", trace=True)
    assert [i.id for i in r.items] == [new.id, old.id]
    rows = {c.id: c for c in r.trace}
    assert rows[old.id].relevance == pytest.approx(rows[new.id].relevance)
    assert rows[old.id].decay < rows[new.id].decay == pytest.approx(1.0)
    await mem.feedback(old.id, "liked")
    await mem.feedback(old.id, "important")
    r = await mem.retrieve("did the staging deploy finish?")
    assert [i.id for i in r.items] == [old.id, new.id]  # liked x important beats 3 days
    await mem.close()


async def test_per_type_decay_defaults():
    clock = Clock()
    mem = await _memory(clock=clock)
    year = 365 * DAY
    pref = await mem.add("I prefer metric units", type="user_preference",
                         timestamp=clock.now - year)  # fmt: skip
    said = await mem.add("We use metric units in the lab", timestamp=clock.now - year)
    tool = await mem.add("units: metric; source: lab config", type="tool_result",
                         timestamp=clock.now - 2 * DAY)  # fmt: skip
    event = await mem.add("metric units enabled", type="system_event", timestamp=clock.now - 7 * DAY)
    r = await mem.retrieve("metric units", trace=True)
    decay = {c.id: c.decay for c in r.trace}
    assert decay[pref.id] == 1.0 and decay[said.id] == 1.0  # preferences and facts stay
    assert decay[tool.id] == pytest.approx(0.5 + 0.5 * 0.25)  # two half-lives of a day
    assert decay[event.id] == pytest.approx(0.7 + 0.3 * 0.5)  # one half-life of a week
    await mem.close()


# --- scores add up ------------------------------------------------------------------------


async def test_every_mode_shows_factors_that_multiply_to_the_score(minilm):
    clock = Clock()
    mem = await _memory(minilm, clock)
    await mem.add_many([{"text": t, "type": k, "timestamp": clock.now - i * DAY}
                        for i, (t, k) in enumerate(STORE)])  # fmt: skip
    await mem.embed_idle()
    first = (await mem.list())[-1]
    await mem.feedback(first.id, "liked")
    for query, mode in (("staging deploy failed yesterday", "hybrid"), ("", "recency")):
        r = await mem.retrieve(query, trace=True, max_items=10)
        assert r.mode == mode
        for row in [*r.trace, *r.memories]:
            if getattr(row, "status", "included") == "no_match":
                continue
            assert row.relevance == pytest.approx(row.dense_part + row.lexical_part)
            product = row.relevance * row.decay * row.feedback_weight * row.time_match
            assert row.score == pytest.approx(product)
    await mem.close()
    bm25 = await _memory(clock=clock)
    await _store(bm25)
    r = await bm25.retrieve("staging deploy failed", trace=True)
    assert r.mode == "bm25"
    for row in r.trace:
        if row.status != "no_match":
            assert row.dense_part == 0 and row.relevance == pytest.approx(row.lexical_part)
            assert row.score == pytest.approx(row.relevance * row.decay * row.feedback_weight)
    await bm25.close()


# --- speakers -----------------------------------------------------------------------------


async def test_the_speaker_is_indexed_with_the_turn():
    mem = await _memory()
    maya = await mem.add("We adopted a grey tabby from the shelter!", metadata={"speaker": "Maya"})
    leo = await mem.add("We adopted a grey tabby from the shelter!", metadata={"speaker": "Leo"})
    r = await mem.retrieve("What did Maya adopt from the shelter?")
    assert r.items[0].id == maya.id
    r = await mem.retrieve("What did Leo adopt from the shelter?")
    assert r.items[0].id == leo.id
    await mem.close()


# --- time phrases in the query ------------------------------------------------------------

# Wednesday 4 March 2026, noon UTC.
NOW = int(dt.datetime(2026, 3, 4, 12, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    "query, days",
    [
        ("what did I do yesterday?", ("2026-03-03", "2026-03-03")),
        ("what did we talk about last night", ("2026-03-03", "2026-03-03")),
        ("anything new this morning?", ("2026-03-04", "2026-03-04")),
        ("what happened today", ("2026-03-04", "2026-03-04")),
        ("what did I get up to last weekend?", ("2026-02-28", "2026-03-01")),
        ("plans for this weekend?", None),  # said on a Wednesday: the coming weekend
        ("what did I cook last Friday?", ("2026-02-27", "2026-02-27")),
        ("the meeting on Monday", ("2026-03-02", "2026-03-02")),
        ("what did I do this week", ("2026-03-02", "2026-03-04")),
        ("last week's standup", ("2026-02-23", "2026-03-01")),
        ("the film we saw two weeks ago", ("2026-02-11", "2026-02-25")),
        ("a couple of days ago", ("2026-03-01", "2026-03-03")),
        ("3 days ago", ("2026-02-28", "2026-03-02")),
        ("my runs in February", ("2026-02-01", "2026-02-28")),
        ("what stressed me at the start of January", ("2026-01-01", "2026-01-10")),
        ("in March", ("2026-03-01", "2026-03-31")),
        ("during December", ("2025-12-01", "2025-12-31")),
        ("this month", ("2026-03-01", "2026-03-04")),
        ("last month", ("2026-02-01", "2026-02-28")),
        ("plan my runs for next week", None),
        ("what should we cook tonight?", None),
        ("what is my locker code?", None),
    ],
)
def test_query_windows(query, days):
    assert window_days(query_window(query, NOW)) == days


async def test_a_time_phrase_lifts_memories_from_that_span():
    clock = Clock(NOW)
    mem = await _memory(clock=clock)
    await mem.add_many([{"text": c, "timestamp": NOW - (i + 2) * DAY} for i, c in enumerate(CHATTER)])
    friday = await mem.add("Dinner was a big mushroom risotto.",
                           timestamp=NOW - 5 * DAY)  # Friday 27 February  # fmt: skip
    await mem.add("Dinner was a big mushroom risotto, again.", timestamp=NOW - 20 * DAY)
    await mem.add("Dinner for the whole team, pizza from the place downstairs.", timestamp=NOW - DAY)
    r = await mem.retrieve("what did I have for dinner last Friday?", trace=True)
    assert r.items[0].id == friday.id and r.window is not None
    rows = {c.id: c for c in r.trace}
    assert rows[friday.id].time_match == 1.5
    others = [c for c in r.trace if c.id != friday.id and c.status != "no_match"]
    assert others and {c.time_match for c in others} == {1.0}
    assert rows[friday.id].score == pytest.approx(1.5 * rows[friday.id].relevance)
    off = await mem.retrieve("what did I have for dinner last Friday?", time_decay(query_window=1))
    assert all(m.time_match == 1.0 for m in off.memories)
    await mem.close()


async def test_feedback_weight_zero_still_removes():
    mem = await _memory()
    a = await mem.add("lunch at noon")
    await mem.feedback(a.id, "disliked")
    r = await mem.retrieve("lunch", compose(feedback_weight(disliked=0)), trace=True)
    assert r.items == [] and r.trace[0].status == "zero_weight"
    await mem.close()
