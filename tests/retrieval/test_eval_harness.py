"""The evaluation harness end to end on tiny suites with known answers, the retrievers,
the embedders, ``pymemory eval`` and the LoCoMo reader (the shipped suites' integrity is
in test_eval_suites.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import Clock

from pymemory import Memory
from pymemory.cli import main
from pymemory.errors import ValidationError
from pymemory.evals import (
    KS,
    DenseRetriever,
    MemoryRetriever,
    Retriever,
    evaluate,
    load,
    load_suite,
    parse_suite,
    report_rows,
    run_suite,
)
from pymemory.evals.harness import auroc, make_retriever
from pymemory.evals.locomo import locomo_suite
from pymemory.evals.suites import ABSTENTION, SUITES
from pymemory.models.embedding import (
    EMBEDDERS,
    Embedder,
    EmbedderUnavailableError,
    HashingEmbedder,
    load_embedder,
)
from pymemory.retrieval.vectors import InMemoryVectorStore
from pymemory.storage import MapKv

# --- a tiny suite with known answers ------------------------------------------------------

TINY = """\
{"kind": "suite", "name": "tiny", "categories": ["facts", "abstention"]}
{"kind": "turn", "id": "a", "session": "s1", "role": "user", "at": "2026-01-01T10:00Z", "text": "My locker code at the pool is 4471."}
{"kind": "turn", "id": "b", "session": "s1", "role": "assistant", "at": "2026-01-01T10:01Z", "text": "Noted, I will remember that."}
{"kind": "turn", "id": "c", "session": "s2", "role": "user", "at": "2026-01-02T10:00Z", "text": "The quarterly report is due on Friday."}
{"kind": "turn", "id": "d", "session": "s2", "role": "user", "at": "2026-01-02T10:05Z", "text": "Our dog Rusty loves the beach."}
{"kind": "question", "id": "q1", "category": "facts", "asked_at": "2026-01-03T09:00Z", "text": "What is my pool locker code?", "gold": ["a"], "match": "exact"}
{"kind": "question", "id": "q2", "category": "facts", "asked_at": "2026-01-03T09:00Z", "text": "When is the quarterly report due?", "gold": [["c", "b"], "d"], "match": "mixed"}
{"kind": "question", "id": "q3", "category": "abstention", "asked_at": "2026-01-03T09:00Z", "text": "What is my cat called?", "gold": []}
"""


@pytest.fixture
def tiny():
    return parse_suite(TINY.splitlines(), source="tiny")


async def test_harness_scores_a_known_suite(tiny):
    report = await run_suite(tiny, "bm25")
    by_id = {r.id: r for r in report.results}
    assert by_id["q1"].ranked[0] == "a" and by_id["q1"].rank == 1
    assert by_id["q1"].recall == {1: 1.0, 5: 1.0, 10: 1.0}
    # q2 needs two pieces: (c or b) and d. BM25 finds c only.
    assert by_id["q2"].rank == 1 and by_id["q2"].recall[10] == 0.5
    assert by_id["q3"].recall is None
    assert report.categories["facts"].recall == {1: 0.75, 5: 0.75, 10: 0.75}
    assert report.categories["facts"].mrr == 1.0
    assert report.overall.answerable == 2 and report.overall.n == 3
    assert report.categories[ABSTENTION].recall is None
    assert report.overall.abstention_auroc == report.categories[ABSTENTION].abstention_auroc
    assert report.embedder is None and report.turns == 4
    assert all(r.latency_ms >= 0 for r in report.results)
    json.dumps(report.to_dict(results=True))  # JSON-ready (no inf/nan)


async def test_harness_accepts_a_custom_retriever(tiny):
    class Reverse:
        name = "reverse"

        def __init__(self, memory):
            self.memory = memory

        async def search(self, query, k, now_ms):
            items = await self.memory.list()
            return [i.id for i in items][:k]  # newest first, ignores the query

    report = await run_suite(tiny, lambda memory: Reverse(memory))
    assert report.retriever == "reverse"
    assert all(r.scores is None for r in report.results)
    assert report.overall.abstention_auroc is None
    by_id = {r.id: r for r in report.results}
    assert by_id["q2"].ranked[:3] == ("d", "c", "b")


TWO = """\
{"kind": "suite", "name": "two", "categories": ["facts", "none"], "abstention": ["none"], "splits": ["a", "b"]}
{"kind": "turn", "id": "x1", "conversation": "x", "session": "x1", "speaker": "Ann", "at": "2026-01-01T10:00Z", "text": "My locker code is 4471."}
{"kind": "turn", "id": "x2", "conversation": "x", "session": "x1", "speaker": "Bo", "at": "2026-01-01T10:01Z", "text": "Got it."}
{"kind": "turn", "id": "y1", "conversation": "y", "session": "y1", "speaker": "Cy", "at": "2026-01-02T10:00Z", "text": "My locker code is 9000."}
{"kind": "question", "id": "qx", "conversation": "x", "split": "a", "category": "facts", "asked_at": "2026-01-03T09:00Z", "text": "What is Ann's locker code?", "gold": ["x1"], "answer": "4471"}
{"kind": "question", "id": "qy", "conversation": "y", "split": "b", "category": "facts", "asked_at": "2026-01-03T09:00Z", "text": "What is the locker code?", "gold": ["y1"]}
{"kind": "question", "id": "qn", "conversation": "y", "split": "b", "category": "none", "asked_at": "2026-01-03T09:00Z", "text": "What is Cy's blood type?", "gold": []}
"""


async def test_each_conversation_gets_its_own_memory_and_splits_are_reported():
    suite = parse_suite(TWO.splitlines(), source="two")
    assert suite.conversations == ("x", "y") and suite.turn_index["x1"].speaker == "Ann"
    loaded = await load(suite)
    try:
        assert {n: len(await c.memory.list()) for n, c in loaded.conversations.items()} == {
            "x": 2, "y": 1,
        }  # fmt: skip
        items = await loaded.conversations["x"].memory.list()
        assert {i.metadata["speaker"] for i in items} == {"Ann", "Bo"}
        with pytest.raises(ValidationError, match="several conversations"):
            loaded.memory  # noqa: B018
        with pytest.raises(ValidationError, match="factory"):
            await evaluate(loaded, MemoryRetriever(loaded.conversations["x"].memory))
        report = await evaluate(loaded, lambda m: MemoryRetriever(m))
        by_id = {r.id: r for r in report.results}
        # Each question only sees its own conversation: y's code never answers x.
        assert by_id["qx"].ranked == ("x1",) and by_id["qy"].ranked == ("y1",)
        assert set(report.by_split) == {"a", "b"} and report.by_split["a"].n == 1
        assert report.categories["none"].recall is None
        only_b = await evaluate(loaded, lambda m: MemoryRetriever(m), split="b")
        assert [r.id for r in only_b.results] == ["qy", "qn"] and only_b.by_split == {}
        with pytest.raises(ValidationError, match="no split"):
            await evaluate(loaded, lambda m: MemoryRetriever(m), split="c")
    finally:
        await loaded.close()


@pytest.mark.parametrize(
    "line, error",
    [
        (
            '{"kind": "turn", "id": "z", "conversation": "y", "session": "s", "at": "2026-01-01T10:00Z", "text": "t"}\n'
            '{"kind": "question", "id": "q", "conversation": "x", "category": "facts", "asked_at": "2026-01-03T09:00Z", "text": "?", "gold": ["z"]}',
            "another conversation|unknown conversation",
        ),
        (
            '{"kind": "question", "id": "q", "split": "c", "category": "none", "asked_at": "2026-01-03T09:00Z", "text": "?", "gold": []}',
            "split",
        ),
        (
            '{"kind": "turn", "id": "z", "session": "s", "speaker": "", "at": "2026-01-01T10:00Z", "text": "t"}',
            "speaker",
        ),
    ],
)
def test_conversation_and_split_fields_are_checked(line, error):
    head = '{"kind": "suite", "name": "t", "categories": ["facts", "none"], "abstention": ["none"], "splits": ["a"]}'
    with pytest.raises(ValidationError, match=error):
        parse_suite([head, *line.splitlines()])


def test_auroc():
    assert auroc([3, 4], [1, 2]) == 1.0
    assert auroc([1], [2]) == 0.0
    assert auroc([1, 2], [1, 2]) == 0.5
    assert auroc([float("-inf")], [float("-inf")]) == 0.5
    assert auroc([], [1]) is None


@pytest.mark.parametrize("name", sorted(SUITES))
async def test_harness_end_to_end_with_the_hashing_embedder(name):
    embedder = HashingEmbedder()
    reports = {r: await run_suite(name, r, embedder) for r in ("bm25", "dense", "hybrid")}
    suite = load_suite(name)
    for retriever, report in reports.items():
        assert report.retriever == retriever
        assert report.overall.n == len(suite.questions)
        assert set(report.categories) == set(suite.categories)
        assert set(report.overall.recall) == {n for n in KS if n <= report.k}
        for n in report.overall.recall:
            assert 0.0 <= report.overall.recall[n] <= 1.0
        r = report.overall.recall
        assert r[1] <= r[5] <= r[10]
        assert report.overall.p50_ms <= report.overall.p95_ms
        rows = len(suite.categories) + len(report.by_match) + len(report.by_split) + 1
        assert len(report_rows(report)) == rows
        assert len(report.by_split) == len(suite.splits)
    # The quality bar: lexical retrieval alone is clearly imperfect on the generated
    # English suites (chinese-messages checks Chinese tokenisation, the abstention suites
    # the floor: most of their questions quote a word).
    if name in ("multi-turn-memory", "long-context-recall", "long-conversations"):
        assert reports["bm25"].overall.recall[5] < 0.75
    assert reports["dense"].embedder == embedder.name


# --- retrievers ---------------------------------------------------------------------------


async def _memory_with(texts, clock, **extra):
    memory = await Memory.open(MapKv(), clock=clock)
    items = [
        await memory.add(text, timestamp=clock.now - age, **extra.get(text, {}))
        for text, age in texts
    ]
    return memory, items


async def test_retrievers_share_the_protocol():
    clock = Clock()
    memory, _ = await _memory_with([("hello world", 0)], clock)
    assert MemoryRetriever(memory).name == "bm25"
    embedder = HashingEmbedder(dim=64)
    await memory.attach_embedder(embedder)
    await memory.embed_idle()
    assert memory.vectors is not None
    for r in (MemoryRetriever(memory), DenseRetriever(memory.vectors, embedder)):
        assert isinstance(r, Retriever)
        assert await r.search("hello", 3, clock.now) == [(await memory.list())[0].id]
        with pytest.raises(ValidationError):
            await r.search("hello", 0, clock.now)
    assert MemoryRetriever(memory).name == "hybrid"
    with pytest.raises(ValidationError):
        DenseRetriever(InMemoryVectorStore(16), embedder)
    with pytest.raises(ValidationError):  # bm25 needs the embedder off
        make_retriever("bm25", memory)
    with pytest.raises(ValidationError):
        make_retriever("magic", memory)
    await memory.close()


async def test_hybrid_in_the_harness_is_memory_retrieve(tiny):
    """One loaded suite, scored by Memory.retrieve with two strategies: the harness's
    hybrid is the app's ranking, so a strategy changes it."""
    loaded = await load(tiny, HashingEmbedder(dim=128))
    try:
        assert loaded.memory.embedder is not None and len(loaded.memory.vectors) == 4
        hybrid = await evaluate(loaded, make_retriever("hybrid", loaded.memory))
        assert hybrid.retriever == "hybrid" and hybrid.embedder.startswith("hashing-128")
        r = await loaded.memory.retrieve(loaded.suite.questions[0].text)
        assert r.mode == "hybrid"
        assert hybrid.results[0].ranked[0] == loaded.turn_of[r.memories[0].item.id]
        only_dense = await evaluate(
            loaded, MemoryRetriever(loaded.memory, {"kind": "fusion", "lexical": 0.0})
        )
        assert only_dense.results[0].scores != hybrid.results[0].scores
    finally:
        await loaded.close()


# --- embedders ----------------------------------------------------------------------------


async def test_hashing_embedder_shape_norm_and_determinism():
    e = HashingEmbedder()
    assert isinstance(e, Embedder)
    v = await e.embed(["Deploy the service", "deployment of services", "Banana bread", ""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v[:3], axis=1), 1.0, rtol=1e-6)
    assert not v[3].any()  # no features: a zero row
    assert v[0] @ v[1] > v[0] @ v[2]  # shared n-grams, not meaning
    again = await HashingEmbedder().embed(["Deploy the service"])
    np.testing.assert_array_equal(again[0], v[0])
    assert HashingEmbedder(seed=1).name != e.name
    with pytest.raises(ValidationError):
        await e.embed("not a list")
    with pytest.raises(ValidationError):
        HashingEmbedder(dim=0)


async def test_load_embedder(monkeypatch):
    assert isinstance(await load_embedder("hashing", dim=64), HashingEmbedder)
    with pytest.raises(EmbedderUnavailableError, match="unknown embedder"):
        await load_embedder("word2vec")
    monkeypatch.setitem(EMBEDDERS, "minilm", ("pymemory.no_such_module", "load"))
    with pytest.raises(EmbedderUnavailableError, match="not available"):
        await load_embedder("minilm")

    def missing_model(**_):
        raise FileNotFoundError("model.onnx")

    import pymemory.models.embedding as embedding

    monkeypatch.setattr(embedding, "_missing_model_for_test", missing_model, raising=False)
    monkeypatch.setitem(
        EMBEDDERS, "minilm", ("pymemory.models.embedding", "_missing_model_for_test")
    )
    with pytest.raises(EmbedderUnavailableError, match="could not load"):
        await load_embedder("minilm")


# --- the CLI ------------------------------------------------------------------------------


def test_cli_eval_table(tmp_path: Path, capsys):
    db = tmp_path / "memory.db"
    code = main(["--db", str(db), "eval", "multi-turn-memory", "--retriever", "bm25"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "multi-turn-memory: 277 turns" in out
    assert "information extraction" in out and "overall" in out and "R@5" in out
    assert not db.exists()  # eval never opens the store


def test_cli_eval_one_split(tmp_path: Path, capsys):
    db = str(tmp_path / "m.db")
    code = main(["--db", db, "eval", "long-conversations", "--retriever", "bm25", "--split",
                 "heldout"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "234 questions (split heldout)" in out and "split: tune" not in out
    assert "adversarial" in out and "abstain" in out
    assert main(["--db", db, "eval", "long-conversations", "--split", "nope"]) == 1
    assert "no split" in capsys.readouterr().err


def test_cli_eval_json_all_retrievers(tmp_path: Path, capsys):
    code = main(
        ["--db", str(tmp_path / "m.db"), "--json", "eval", "long-context-recall",
         "--embedder", "hashing"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["suite"] == "long-context-recall"
    assert [r["retriever"] for r in doc["reports"]] == ["bm25", "dense", "hybrid"]
    overall = doc["reports"][0]["overall"]
    assert set(overall["recall"]) == {"1", "5", "10"}
    assert doc["reports"][1]["embedder"].startswith("hashing")


def test_cli_eval_errors(tmp_path: Path, capsys):
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "eval", "nope"]) == 1
    assert "invalid_input" in capsys.readouterr().err
    assert main(["--db", db, "eval", "long-context-recall", "--embedder", "nope"]) == 1
    assert "embedder_unavailable" in capsys.readouterr().err
    assert main(["--db", db, "eval", "long-context-recall", "--retriever", "magic"]) == 2


def _locomo_sample(conv: str) -> dict:
    """A made-up conversation in LoCoMo's format (the real data never enters the repo)."""
    return {
        "sample_id": conv,
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat called Miso."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started pottery."},
            ],
            "session_2_date_time": "10:00 am on 2 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My first bowl cracked in the kiln."},
            ],
        },
        "qa": [
            {"question": "What is Ana's cat called?", "answer": "Miso", "evidence": ["D1:1"],
             "category": 4},
            {"question": "What did Ben make?", "answer": "a bowl", "evidence": ["D1:2; D2:1"],
             "category": 1},
            {"question": "What did Ana adopt?", "answer": "x", "evidence": ["D:1:1"],
             "category": 5},  # adversarial: not scored
            {"question": "Unscorable", "answer": "x", "evidence": ["D9:9"], "category": 2},
        ],
    }  # fmt: skip


def test_locomo_suite_follows_the_measurement(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_locomo_sample("conv-26"), _locomo_sample("conv-99")]))
    suite = locomo_suite(path)
    assert suite.splits == ("tune", "check") and len(suite.turns) == 6
    first = suite.turns[0]
    assert first.text == "Ana: I adopted a grey cat called Miso." and first.speaker is None
    assert first.timestamp == 1683554160000  # 1:56 pm on 8 May 2023, UTC
    qs = {q.id: q for q in suite.questions}
    assert set(qs) == {"conv-26:q0", "conv-26:q1", "conv-99:q0", "conv-99:q1"}
    assert qs["conv-26:q1"].gold == (("conv-26:D1:2",), ("conv-26:D2:1",))  # "D1:2; D2:1"
    assert qs["conv-26:q0"].split == "tune" and qs["conv-99:q0"].split == "check"
    assert all(q.asked_at == suite.turns[2].timestamp for q in qs.values() if "26" in q.id)
    assert qs["conv-26:q0"].category == "single-hop"


async def test_locomo_runs_through_the_harness(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_locomo_sample("conv-26")]))
    report = await run_suite(locomo_suite(path), "bm25", k=20)
    assert report.overall.recall[5] == 1.0 and set(report.overall.recall) == {1, 5, 10, 20}


def test_locomo_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"not": "locomo"}))
    with pytest.raises(ValidationError, match="not LoCoMo's format"):
        locomo_suite(bad)
    with pytest.raises(ValidationError, match="no LoCoMo file"):
        locomo_suite(tmp_path / "missing.json")
