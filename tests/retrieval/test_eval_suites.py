"""The shipped evaluation suites' integrity: their size, shape, gold answers, abstention
items and distractors, and the parser's refusals."""

from __future__ import annotations

import re
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from helpers import DAY

from pymemory.errors import ValidationError
from pymemory.evals import (
    load_suite,
    parse_suite,
)
from pymemory.evals.suites import ABSTENTION, SUITES
from pymemory.retrieval.tokens import HeuristicTokenCounter

# --- suite integrity --------------------------------------------------------------------


@pytest.fixture(scope="module")
def mtm():
    return load_suite("multi-turn-memory")


@pytest.fixture(scope="module")
def lcr():
    return load_suite("long-context-recall")


def test_shipped_data_is_small():
    # The suites stay out of the browser wheel (setuptools packages .py files only); the
    # generated long-conversations suite is the big one.
    data = resources.files("pymemory.evals") / "data"
    size = {name: (data / f).stat().st_size for name, f in SUITES.items()}  # type: ignore[attr-defined]
    assert size["multi-turn-memory"] + size["long-context-recall"] < 300_000
    assert size["long-conversations"] < 1_600_000


@pytest.fixture(scope="module")
def lc():
    return load_suite("long-conversations")


def test_long_conversations_shape(lc):
    """Ten long two-person chats over months, one memory per turn, 500+ questions."""
    assert len(lc.questions) >= 500 and len(lc.conversations) == 10
    assert lc.splits == ("tune", "heldout") and lc.abstention == ("adversarial", "unanswerable")
    for name in lc.conversations:
        turns = [t for t in lc.turns if t.conversation == name]
        assert len(turns) >= 400
        assert len({t.speaker for t in turns}) == 2  # two people, no assistant
        assert len({t.session for t in turns}) >= 20
        span_days = (turns[-1].timestamp - turns[0].timestamp) / DAY
        assert 60 <= span_days <= 400
        assert [t.timestamp for t in turns] == sorted(t.timestamp for t in turns)
        questions = [q for q in lc.questions if q.conversation == name]
        assert {q.asked_at for q in questions} == {turns[-1].timestamp}  # asked at the end
        assert len({q.split for q in questions}) == 1  # a conversation is in one split
        cited = {t for q in questions for t in q.gold_ids}
        assert len(cited) / len(turns) < 0.3  # most turns are small talk
    for split in lc.splits:
        cats = Counter(q.category for q in lc.questions if q.split == split)
        assert set(cats) == set(lc.categories) and min(cats.values()) >= 10, (split, cats)
        assert sum(cats.values()) >= 200
    # The held-out people are not the tuning people.
    by_split: dict = {}
    for q in lc.questions:
        by_split.setdefault(q.split, set()).add(q.conversation)
    speakers = {
        sp: {t.speaker for t in lc.turns if t.conversation in convs}
        for sp, convs in by_split.items()
    }
    assert speakers["tune"] and not speakers["tune"] & speakers["heldout"]
    matches = Counter(q.match for q in lc.questions if q.gold)
    assert matches["paraphrase"] / sum(matches.values()) >= 0.25  # wording apart from evidence
    assert matches["exact"] / sum(matches.values()) >= 0.25


def test_long_conversations_evidence_and_answers(lc):
    for q in lc.questions:
        assert q.answer, q.id
        if q.category in lc.abstention:
            assert not q.gold
            continue
        assert q.gold
        turns = [lc.turn_index[t] for t in q.gold_ids]
        assert all(t.conversation == q.conversation for t in turns)
        if q.category == "multi-hop":
            assert len(q.gold) >= 2
    # Relative time is said the way people say it; temporal answers are dates.
    temporal = [q for q in lc.questions if q.category == "temporal"]
    assert all(re.search(r"\b\d{1,2} [A-Z][a-z]+ 20\d\d\b", q.answer) for q in temporal)
    phrases = ("yesterday", "last week", "on Saturday", "two weeks ago", "last night")
    texts = " ".join(t.text for t in lc.turns)
    assert all(p in texts for p in phrases)


def test_long_conversations_generator_is_deterministic(tmp_path):
    """The committed file is what the seeded generator writes."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "lc.jsonl"
    subprocess.run(
        [sys.executable, str(root / "benchmarks" / "make_conversations.py"), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    shipped = resources.files("pymemory.evals") / "data" / SUITES["long-conversations"]
    assert out.read_bytes() == shipped.read_bytes()  # type: ignore[attr-defined]


def test_multi_turn_memory_has_54_items_in_6_categories_of_9(mtm):
    assert len(mtm.questions) == 54
    assert len(mtm.categories) == 6
    assert Counter(q.category for q in mtm.questions) == dict.fromkeys(mtm.categories, 9)
    assert set(mtm.categories) == {
        "information extraction",
        "multi-session reasoning",
        "temporal reasoning",
        "knowledge update",
        "preferences",
        "abstention",
    }


def test_multi_turn_memory_gold_and_abstention(mtm):
    ids = {t.id for t in mtm.turns}
    assert len(ids) == len(mtm.turns)
    for q in mtm.questions:
        assert set(q.gold_ids) <= ids
        assert (q.category == ABSTENTION) == (not q.gold)
    multi = [q for q in mtm.questions if q.category == "multi-session reasoning"]
    for q in multi:  # evidence from at least two different sessions
        sessions = {mtm.turn_index[t].session for piece in q.gold for t in piece}
        assert len(q.gold) >= 2 and len(sessions) >= 2


def test_multi_turn_memory_is_spread_over_weeks_of_sessions(mtm):
    sessions = {t.session for t in mtm.turns}
    assert 30 <= len(sessions) <= 100
    span_days = (max(t.timestamp for t in mtm.turns) - min(t.timestamp for t in mtm.turns)) / DAY
    assert span_days >= 42
    cited = {t for q in mtm.questions for t in q.gold_ids}
    assert len(cited) / len(mtm.turns) < 0.3  # most turns are noise
    last = max(t.timestamp for t in mtm.turns)
    assert all(q.asked_at >= last for q in mtm.questions)  # no question sees the future
    assert {q.match for q in mtm.questions if q.gold} == {"exact", "mixed", "paraphrase"}


def test_long_context_recall_is_about_16k_tokens_with_needles_at_depth(lcr):
    counter = HeuristicTokenCounter()
    sizes = [counter.count(t.text) for t in lcr.turns]
    total = sum(sizes)
    assert abs(total - 16_000) <= 1_600
    start = {}
    position = 0
    for turn, size in zip(lcr.turns, sizes, strict=True):
        start[turn.id] = (position, size)
        position += size
    assert Counter(q.category for q in lcr.questions) == {
        "depth 10%": 10,
        "depth 50%": 10,
        "depth 90%": 10,
    }
    # Asked by key as well as in other words: enough questions of each kind.
    matches = Counter(q.match for q in lcr.questions)
    assert matches["exact"] >= 8 and matches["paraphrase"] >= 8, matches
    for q in lcr.questions:
        (needle,) = q.gold_ids
        before, size = start[needle]
        depth = (before + size / 2) / total
        target = int(q.category.split()[1].rstrip("%")) / 100
        assert abs(depth - target) <= 0.02, (q.id, depth)
        assert q.depth == pytest.approx(depth, abs=1e-4)
        assert q.asked_at >= max(t.timestamp for t in lcr.turns)


def test_long_context_recall_needles_have_two_near_miss_distractors(lcr):
    # Question nNN has distractor user turns dNNa and dNNb: the same kind of fact that does
    # not answer it, each acknowledged by the assistant and placed away from the needle.
    assert lcr.version >= 3
    counter = HeuristicTokenCounter()
    sizes = [counter.count(t.text) for t in lcr.turns]
    total = sum(sizes)
    middle, position = {}, 0
    for turn, size in zip(lcr.turns, sizes, strict=True):
        middle[turn.id] = (position + size / 2) / total
        position += size
    stamps = [t.timestamp for t in lcr.turns]
    assert stamps == sorted(set(stamps))  # strictly increasing: file order is time order
    gold = {t for q in lcr.questions for t in q.gold_ids}
    distractors = [
        t.id
        for t in lcr.turns
        if len(t.id) == 4 and t.id[0] == "d" and t.id[1:3].isdigit() and t.id[3] in "ab"
    ]
    assert len(distractors) == 2 * len(lcr.questions)
    assert sorted(q.id for q in lcr.questions) == [f"n{i:02d}" for i in range(1, 31)]
    assert sorted(distractors) == [f"d{i:02d}{s}" for i in range(1, 31) for s in "ab"]
    order = {t.id: i for i, t in enumerate(lcr.turns)}
    offsets = []
    for q in lcr.questions:
        (needle,) = q.gold_ids
        for suffix in "ab":
            tid = f"d{q.id.removeprefix('n')}{suffix}"
            assert tid in lcr.turn_index, (q.id, tid)
            assert tid not in gold
            assert lcr.turn_index[tid].role == "user"
            assert lcr.turns[order[tid] + 1].role == "assistant"
            offsets.append(middle[tid] - middle[needle])
            assert abs(offsets[-1]) >= 0.05, (q.id, tid, offsets[-1])
    assert min(offsets) < 0 < max(offsets)  # some before their needle, some after
    assert min(middle[d] for d in distractors) < 0.1 and max(middle[d] for d in distractors) > 0.9


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"kind": "turn"}', "first line"),
        ('{"kind": "suite", "name": "x", "categories": ["a"]}\nnot json', "not JSON"),
        (
            '{"kind": "suite", "name": "x", "categories": ["a"]}\n'
            '{"kind": "question", "id": "q", "category": "a", "asked_at": "2026-01-01T00:00Z",'
            ' "text": "?", "gold": ["nope"]}',
            "unknown turns",
        ),
        (
            '{"kind": "suite", "name": "x", "categories": ["a"]}\n'
            '{"kind": "turn", "id": "t", "session": "s", "role": "bot", "at": "2026-01-01T00:00Z",'
            ' "text": "hi"}',
            "role",
        ),
        (
            '{"kind": "suite", "name": "x", "categories": ["a"]}\n'
            '{"kind": "turn", "id": "t", "session": "s", "role": "user", "at": "2026-01-01",'
            ' "text": "hi"}',
            "offset",
        ),
        (
            '{"kind": "suite", "name": "x", "categories": ["abstention"]}\n'
            '{"kind": "turn", "id": "t", "session": "s", "role": "user", "at": "2026-01-01T00:00Z",'
            ' "text": "hi"}\n'
            '{"kind": "question", "id": "q", "category": "abstention",'
            ' "asked_at": "2026-01-01T00:00Z", "text": "?", "gold": ["t"]}',
            "abstention",
        ),
    ],
)
def test_malformed_suites_are_rejected(line, error):
    with pytest.raises(ValidationError, match=error):
        parse_suite(line.splitlines())


def test_unknown_suite_name():
    with pytest.raises(ValidationError, match="unknown suite"):
        load_suite("no-such-suite")
