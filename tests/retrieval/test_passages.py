"""Passages: a memory's raw text split into spans, and the prompt packed with the ones
that answer the query (``Retrieval.text``, ``inject="passages"``), verbatim, by day."""

from __future__ import annotations

import datetime as dt
import itertools
import re

import numpy as np
import pytest
from helpers import DAY, Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymemory import Memory, ValidationError
from pymemory.retrieval.bm25 import Bm25Index
from pymemory.retrieval.passages import PASSAGE_TOKENS, estimate_tokens, split_passages
from pymemory.storage import MapKv

TRANSCRIPT = "\n".join(
    [
        "[2026-03-02 15:00] Review of the permissions module",
        "Ana: Thanks everyone for joining, let's start with the agenda for today.",
        "Ben: Sure. First the status of the billing export, which is still blocked.",
        "Ana: The vendor promised a fix by Friday, so we wait until then.",
        "Ben: Next, the permissions module. We need to settle on the roles.",
        "Ana: Three roles: super admin for everything, department admin for their own "
        "department, and member, read only.",
        "Ben: And when does it go live?",
        "Ana: It goes live next Tuesday, after the security review on Monday.",
        "Ben: Great. Then the onboarding survey: response rates are down to 12 percent.",
        "Ana: Let's send a reminder email on Thursday and look again next week.",
        "Ben: Finally, the office move: the movers come on the 14th at 8 am.",
        "Ana: Good, that's all for today. Thanks!",
    ]
)


def day(item) -> str:
    return dt.datetime.fromtimestamp(item.timestamp / 1000, tz=dt.UTC).date().isoformat()


def covered(text: str, spans) -> str:
    return "".join(text[a:b] for a, b in spans)


def test_a_short_text_is_one_passage():
    text = "  I prefer answers as tables, not bullet lists.  "
    assert split_passages(text) == ((2, len(text) - 2),)


def test_a_transcript_splits_at_lines_grouped_up_to_the_size():
    spans = split_passages(TRANSCRIPT)
    assert len(spans) > 2
    for (_, b), (c, _) in itertools.pairwise(spans):
        assert b <= c  # in order, no overlap
    lines = [x for x in TRANSCRIPT.splitlines() if x.strip()]
    for a, b in spans:
        part = TRANSCRIPT[a:b]
        assert part == part.strip()
        assert part.splitlines()[0] in lines and part.splitlines()[-1] in lines  # whole lines
        assert estimate_tokens(part) <= PASSAGE_TOKENS or "\n" not in part
    # Nothing of the text is lost between passages (only whitespace).
    assert re.sub(r"\s", "", covered(TRANSCRIPT, spans)) == re.sub(r"\s", "", TRANSCRIPT)


@pytest.mark.parametrize(
    "sentence",
    [
        "今天下午三点我们和产品团队一起评审了权限模块的设计方案，大家讨论得很充分。",
        "会議は午後三時から始まり、権限モジュールの設計について詳しく話し合いました！",
    ],
)
def test_cjk_sentence_ends_split_a_long_paragraph(sentence):
    text = sentence * 12  # one line, no spaces: only the full stops can split it
    spans = split_passages(text)
    assert len(spans) > 1
    for a, b in spans:
        assert text[a:b].endswith(("。", "！"))


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=3000))
def test_passages_are_ordered_verbatim_spans_that_lose_no_text(text):
    spans = split_passages(text)
    assert spans
    prev = 0
    for a, b in spans:
        assert prev <= a <= b <= len(text)
        prev = b
    assert "".join(covered(text, spans).split()) == "".join(text.split())


async def _memory(clock=None):
    return await Memory.open(MapKv(), clock=clock or Clock())


async def test_the_prompt_gets_the_passage_that_answers_not_the_summary():
    mem = await _memory()
    note = await mem.add(TRANSCRIPT, tags=["meeting"])
    assert "next Tuesday" not in note.content  # the 200-char summary lost it
    r = await mem.retrieve("when does the permissions module go live?", max_tokens=120)
    assert r.items == [note] and r.inject == "passages"
    assert "It goes live next Tuesday, after the security review on Monday." in r.text
    assert "movers" not in r.text  # not the whole transcript
    assert r.text.splitlines()[0] == f"[{day(note)}]"  # the date once, as a group header
    assert r.tokens_used == mem.token_counter.count(r.text) <= 120
    (m,) = r.memories
    assert {p.why for p in m.passages} >= {"best"}
    for p in m.passages:
        assert note.text[p.start : p.end] == p.text
    assert m.line in r.text


async def test_summary_injection_is_still_there():
    mem = await _memory()
    note = await mem.add(TRANSCRIPT)
    r = await mem.retrieve("permissions roles go live", inject="summary")
    assert r.inject == "summary" and r.text == f"- [message {day(note)}] {note.content}"
    with pytest.raises(ValidationError):
        await mem.retrieve("roles", inject="everything")


async def test_a_larger_budget_adds_neighbours_and_other_matches_never_twice():
    mem = await _memory()
    await mem.add(TRANSCRIPT)
    small = await mem.retrieve("roles go live", max_tokens=80)
    large = await mem.retrieve("roles go live", max_tokens=2000)
    assert len(large.text) > len(small.text)
    lines = [x for x in large.text.splitlines() if x.strip() not in ("", "…")]
    assert len(lines) == len(set(lines))  # each passage once
    # In text order: the roles come before the go-live answer, as in the transcript.
    assert large.text.index("Three roles") < large.text.index("goes live next Tuesday")


async def test_memories_are_grouped_by_day_in_time_order():
    clock = Clock()
    mem = await _memory(clock)
    first = await mem.add("The kickoff for project Falcon is on Monday at 10.")
    clock.advance(2 * DAY)
    second = await mem.add("Project Falcon: the budget was approved, 40k.")
    third = await mem.add("Project Falcon hires two contractors.")
    r = await mem.retrieve("project Falcon", max_tokens=500)
    assert {i.id for i in r.items} == {first.id, second.id, third.id}
    lines = r.text.splitlines()
    days = [x for x in lines if x.startswith("[")]
    assert len(days) == 2 and days == sorted(days)
    assert lines.index(f"- {first.text}") < lines.index(days[1])


async def test_a_budget_too_small_for_the_best_passage_takes_its_best_sentence():
    mem = await _memory()
    text = (
        "We talked about many things during the long afternoon session with the team. "
        "The new office in Lisbon opens on 1 June with twelve desks. "
        "Lunch was sandwiches and the coffee machine was broken again, sadly. "
        "Someone suggested a team outing to the coast later in the summer."
    )
    note = await mem.add(text)
    r = await mem.retrieve("when does the Lisbon office open?", max_tokens=30)
    assert r.items == [note]
    assert "The new office in Lisbon opens on 1 June with twelve desks." in r.text
    assert "Lunch" not in r.text and r.memories[0].condensed
    assert r.tokens_used <= 30
    none = await mem.retrieve("when does the Lisbon office open?", max_tokens=30, condense=False)
    assert none.items == []


async def test_trace_names_each_passage_and_why():
    mem = await _memory()
    note = await mem.add(TRANSCRIPT)
    r = await mem.retrieve("movers office move", max_tokens=200, trace=True)
    row = next(c for c in r.trace if c.id == note.id)
    assert row.status == "included"
    assert any(p.why == "best" and "movers" in p.text for p in row.passages)


async def test_delete_takes_the_passages_with_the_memory():
    mem = await _memory()
    note = await mem.add(TRANSCRIPT)
    await mem.delete(note.id)
    r = await mem.retrieve("movers office move")
    assert r.items == [] and "movers" not in r.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(
        st.lists(st.sampled_from([*TRANSCRIPT.splitlines(), "老王说下周二上线。"]),
                 min_size=1, max_size=12).map("\n".join),
        min_size=1, max_size=6,
    ),
    budget=st.integers(1, 400),
)  # fmt: skip
async def test_text_always_fits_the_budget_and_quotes_the_raw_text(texts, budget):
    mem = await _memory()
    items = [await mem.add(t) for t in texts]
    r = await mem.retrieve("roles go live movers 上线", max_tokens=budget, max_items=50)
    assert r.tokens_used == mem.token_counter.count(r.text) <= budget
    by_id = {i.id: i for i in items}
    for m in r.memories:
        for p in m.passages:
            assert by_id[m.item.id].text[p.start : p.end] == p.text
            assert all(x.strip() in r.text for x in p.text.splitlines() if x.strip())
    await mem.close()


async def test_without_a_binding_budget_the_same_best_memories_as_summaries():
    # max_items takes the best-ranked memories whatever their length; passages only
    # decide what of them fits the budget. Here the best memory is long and each of its
    # passages matches a quarter of the query: it must still be the one taken.
    mem = await _memory()
    filler = " ".join(f"quiet{j} meadow{j} river{j}." for j in range(40))
    words = ("alpha", "bravo", "charlie", "delta")
    long = "\n".join(f"{word} appears here. {filler}" for word in words)
    top = await mem.add(long)
    await mem.add("alpha and bravo, nothing more.")
    await mem.add("bravo only.")
    for k in (1, 2):
        ids = {}
        for how in ("passages", "summary"):
            r = await mem.retrieve("alpha bravo charlie delta", max_items=k,
                                   max_tokens=100_000, inject=how)  # fmt: skip
            ids[how] = [i.id for i in r.items]
        assert ids["passages"] == ids["summary"] and len(ids["passages"]) == k
        assert ids["passages"][0] == top.id


async def test_the_passage_index_follows_adds_updates_and_deletes():
    mem = await _memory()
    catalog = mem._catalog
    note = await mem.add(TRANSCRIPT)
    slot = catalog.slot_of[note.id]
    assert catalog.passages.spans(slot) == split_passages(TRANSCRIPT)
    assert len(catalog.passages) == len(split_passages(TRANSCRIPT)) > 1
    short = await mem.add("A short note is its own passage.")
    assert catalog.passages.spans(catalog.slot_of[short.id]) is None
    longer = TRANSCRIPT + "\nBen: One more thing: the printer on floor 3 is fixed."
    await mem.update(note.id, text=longer)
    assert catalog.passages.spans(slot) == split_passages(longer)
    r = await mem.retrieve("printer floor 3", max_tokens=100)
    assert "the printer on floor 3 is fixed" in r.text
    await mem.update(note.id, text="Now a short text.")
    assert catalog.passages.spans(slot) is None and len(catalog.passages) == 0
    await mem.update(note.id, text=TRANSCRIPT)
    await mem.delete(note.id)
    assert len(catalog.passages) == 0 and catalog.passages.of_memory == {}
    again = await mem.add(TRANSCRIPT)  # freed passage slots are reused
    assert len(catalog.passages) == len(split_passages(TRANSCRIPT))
    assert catalog.passages.owner[
        catalog.passages.of_memory[catalog.slot_of[again.id]]
    ].tolist() == [catalog.slot_of[again.id]] * len(split_passages(TRANSCRIPT))


async def test_a_long_document_is_found_by_its_best_passage():
    # Thirty chat turns share the query's common words; one section of a long handbook
    # answers it. Scored whole, the handbook's length buries that section below the floor.
    mem = await _memory()
    for i in range(30):
        await mem.add(f"Chat {i}: the team talked about the release and the deploy schedule.")
    lines = [f"Section {k}: the office handbook covers desks, parking, lunch, travel policy "
             f"item {k} and more rules." for k in range(30)]  # fmt: skip
    lines[17] = "Section 17: the deploy key rotates every 90 days, the release manager rotates it."
    doc = await mem.add("\n".join(lines))
    r = await mem.retrieve("how often does the deploy key for the release rotate", max_items=5)
    assert r.items[:1] == [doc]
    assert "the deploy key rotates every 90 days" in r.text and "Section 3:" not in r.text


def test_scores_of_a_few_documents_equal_their_full_scores():
    index = Bm25Index()
    docs = [["deploy", "key"], ["deploy"] * 3, ["lunch"], ["key", "key", "rotate"], []]
    for slot, terms in enumerate(docs):
        index.add(slot * 3, terms)
    query = ["deploy", "key", "key", "missing"]
    slots, scores = index.scores(query)
    full = dict(zip(slots.tolist(), scores.tolist(), strict=True))
    asked = [12, 0, 7, 9, 6, 3]
    got = index.scores_of(query, np.array(asked))
    assert got.tolist() == [full.get(s, 0.0) for s in asked]
