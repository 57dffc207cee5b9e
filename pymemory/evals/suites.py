"""Evaluation suites shipped with pymemory: conversation turns plus questions with gold ids.

A suite is one JSON Lines file in ``pymemory/evals/data``. Every line is an object with
a ``kind``:

``{"kind": "suite", "name": ..., "version": 1, "description": ..., "categories": [...]}``
    The first line. ``categories`` lists the question categories in display order.
    Optional: ``abstention``, the categories whose questions have no answer in memory
    (default ``["abstention"]``); ``splits``, the names questions may be split into
    (e.g. ``["tune", "heldout"]``); ``conversations``, free-form notes per conversation.

``{"kind": "turn", "id": "s07.3", "session": "s07", "role": "user", "at": ISO, "text": ...}``
    One conversation turn; each becomes one memory. ``at`` is an ISO 8601 date-time
    with an offset (``2026-02-03T19:05:00Z``). ``role`` is ``user`` or ``assistant``
    (default ``user``). Optional: ``speaker``, the name of who said it (two-person
    chats); ``conversation``, which conversation the turn belongs to: each conversation
    is loaded into a Memory of its own (default: one conversation for the whole suite).

``{"kind": "question", "id": "q12", "category": ..., "asked_at": ISO, "text": ...,
"gold": [evidence, ...], "match": "paraphrase" | "exact" | "mixed", "depth": 0.5}``
    One question, asked at ``asked_at`` (the retrieval clock). ``gold`` lists the pieces
    of evidence the answer needs, all of them (multi-session questions have several).
    A piece is a turn id, or a list of turn ids any one of which carries it (when two
    turns state the same fact). An empty ``gold`` marks a question with no answer in
    memory (the abstention categories, and only they); the harness scores those
    separately. Optional: ``conversation`` (the one it is asked of; its gold turns
    must be in it), ``split`` (one of the header's ``splits``), ``answer`` (for
    readers; the harness scores retrieval, not answers). ``match``
    says how the question relates to its gold turns: ``exact`` shares a rare token
    (a name, a number, a code) with them, ``paraphrase`` shares no content word that
    points at them, ``mixed`` is in between. ``depth`` (long-context-recall only) is the
    needle's position in the history, 0..1, by token count.

The suites:

``multi-turn-memory``
    One user's conversations with an assistant over eight weeks: 54 questions in six
    categories of nine (information extraction, multi-session reasoning, temporal
    reasoning, knowledge update, preferences, abstention), their evidence spread over
    many sessions and buried in chit-chat, unrelated tasks and near-miss distractors.
``long-context-recall``
    One long working session of about 16K tokens (heuristic counter) with 30 needle facts,
    ten at each of 10%, 50% and 90% depth. Questions ``n01``-``n15`` ask for personal
    facts, mostly in other words; version 3 adds ``n16``-``n30``, facts identified by a
    key (a place, a company, a project, a person, an identifier) and asked for by that key,
    as in multi-key needle tests. The match mix is 10 exact, 12 mixed and 8 paraphrase.
    Every needle has two near-miss distractors (turns ``dNNa`` and ``dNNb`` for question
    ``nNN``) elsewhere in the day: the same kind of fact about another person, place or
    thing (for the key-based needles, a different key), or about the same thing in a
    context the question rules out, so that finding the topic is not enough.

``long-conversations``
    Ten long chats between two friends (26-32 dated sessions over five to ten months,
    430-545 turns each, one memory per turn), 612 questions in seven categories
    (single-hop, multi-hop, temporal, open-domain, knowledge-update, and two kinds with
    no answer: adversarial, which asks one friend about the other's fact, and
    unanswerable, a topic never discussed), most worded apart from their evidence.
    Conversations 0-5 are the ``tune`` split, 6-9 the ``heldout`` split (other people,
    names, titles and question wordings). Written by a seeded generator,
    ``benchmarks/make_conversations.py``.

``chinese-messages``
    Twelve people's message histories in Simplified Chinese, written by hand: what a
    person types to a personal assistant over three to six months (13-15 dated sessions,
    61-85 turns each, mostly the user's, one memory per turn) about family and friends,
    phone numbers (some in full-width digits or with spaces and dashes), e-mail
    addresses, places, dates, prices, order and flight numbers and licence plates, amid
    chit-chat, near-miss distractors and facts that change. 340 questions in five
    categories (single-hop, multi-hop, temporal, knowledge-update, preference), asked
    after the last turn: some terse, many chatty with small talk before the ask, a few
    rambling; some share only a number or a name with their evidence, some are worded
    apart from it. Knowledge-update questions cite the latest turn stating the fact.

``chinese-abstention``
    One user's messages to an assistant in Simplified Chinese over six weeks (32 memories:
    a Wi-Fi password, phone numbers, coffee purchases, meals, family) and 30 questions
    asked the next evening: 14 about the memories (some need several, some name a time:
    ``上周``, ``这个月``, ``昨天``, ``上个月``) and 16 in the ``unrelated`` category that
    nothing in memory is about (``秘鲁的首都是哪里？``, ``今天北京天气怎么样？``), which
    should inject nothing: the relevance floor's abstention in Chinese.
``english-abstention``
    The same suite translated into English by hand, to compare the floor's abstention in
    the two languages.

All text was written for pymemory; none is taken from LongMemEval, LoCoMo or other
benchmarks.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import ValidationError

__all__ = [
    "ABSTENTION",
    "SUITES",
    "Question",
    "Suite",
    "Turn",
    "load_suite",
    "parse_suite",
]

#: Suite name -> data file (in ``pymemory/evals/data``).
SUITES: dict[str, str] = {
    "multi-turn-memory": "multi_turn_memory.jsonl",
    "long-context-recall": "long_context_recall.jsonl",
    "long-conversations": "long_conversations.jsonl",
    "chinese-messages": "chinese_messages.jsonl",
    "chinese-abstention": "chinese_abstention.jsonl",
    "english-abstention": "english_abstention.jsonl",
}

#: The category whose questions have no answer in memory (unless a suite names others).
ABSTENTION = "abstention"

MATCH_KINDS = ("exact", "paraphrase", "mixed")


@dataclass(frozen=True)
class Turn:
    id: str
    session: str
    role: str
    timestamp: int  # epoch ms
    text: str
    speaker: str | None = None
    conversation: str = ""


@dataclass(frozen=True)
class Question:
    id: str
    category: str
    text: str
    asked_at: int  # epoch ms
    gold: tuple[tuple[str, ...], ...]  # evidence pieces, each satisfied by any of its turns
    match: str = "mixed"
    depth: float | None = None
    conversation: str = ""
    split: str | None = None
    answer: str | None = None

    @property
    def answerable(self) -> bool:
        return bool(self.gold)

    @property
    def gold_ids(self) -> tuple[str, ...]:
        """Every turn id cited as evidence."""
        return tuple(t for piece in self.gold for t in piece)


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    categories: tuple[str, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    version: int = 1
    abstention: tuple[str, ...] = (ABSTENTION,)
    splits: tuple[str, ...] = ()
    turn_index: dict[str, Turn] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.turn_index:
            object.__setattr__(self, "turn_index", {t.id: t for t in self.turns})

    @property
    def conversations(self) -> tuple[str, ...]:
        """The conversation names, in order of first appearance ("" for a one-conversation
        suite)."""
        return tuple(dict.fromkeys(t.conversation for t in self.turns))

    def __repr__(self) -> str:
        return f"Suite({self.name!r}, turns={len(self.turns)}, questions={len(self.questions)})"


def _ms(value: object, where: str) -> int:
    if not isinstance(value, str):
        raise ValidationError(f"{where}: expected an ISO date-time string")
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(f"{where}: bad ISO date-time {value!r}") from None
    if when.tzinfo is None:
        raise ValidationError(f"{where}: date-time {value!r} needs an offset (e.g. Z)")
    return round(when.timestamp() * 1000)


def _str(record: dict, key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{where}: {key!r} must be a non-empty string")
    return value


def _opt_str(record: dict, key: str, where: str) -> str | None:
    value = record.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ValidationError(f"{where}: {key!r} must be a non-empty string")
    return value


def _names(record: dict, key: str, where: str, default: list[str]) -> tuple[str, ...]:
    value = record.get(key, default)
    if not isinstance(value, list) or not all(isinstance(c, str) and c for c in value):
        raise ValidationError(f"{where}: {key!r} must be a list of strings")
    return tuple(value)


def _gold(value: object, where: str) -> tuple[tuple[str, ...], ...]:
    error = f"{where}: 'gold' must be a list of turn ids or of non-empty lists of turn ids"
    if not isinstance(value, list):
        raise ValidationError(error)
    out = []
    for piece in value:
        alternatives = [piece] if isinstance(piece, str) else piece
        if (
            not isinstance(alternatives, list)
            or not alternatives
            or not all(isinstance(t, str) for t in alternatives)
        ):
            raise ValidationError(error)
        out.append(tuple(alternatives))
    return tuple(out)


def parse_suite(lines: Iterable[str], *, source: str = "<suite>") -> Suite:
    """Parse and check a suite file; ValidationError names the line of any problem."""
    header: dict | None = None
    abstain: tuple[str, ...] = (ABSTENTION,)
    splits: tuple[str, ...] = ()
    turns: list[Turn] = []
    questions: list[Question] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{n}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ValidationError(f"{where}: each line must be a JSON object")
        kind = record.get("kind")
        if header is None:
            if kind != "suite":
                raise ValidationError(f"{where}: the first line must have kind 'suite'")
            cats = record.get("categories")
            if not isinstance(cats, list) or not cats or not all(isinstance(c, str) for c in cats):
                raise ValidationError(f"{where}: 'categories' must be a list of strings")
            abstain = _names(record, "abstention", where, [ABSTENTION])
            unknown = [c for c in abstain if c not in cats and c != ABSTENTION]
            if unknown:
                raise ValidationError(f"{where}: abstention names unknown categories {unknown}")
            splits = _names(record, "splits", where, [])
            header = record
            continue
        if kind == "turn":
            tid = _str(record, "id", where)
            if tid in seen:
                raise ValidationError(f"{where}: duplicate id {tid!r}")
            seen.add(tid)
            role = record.get("role", "user")
            if role not in ("user", "assistant"):
                raise ValidationError(f"{where}: role must be 'user' or 'assistant'")
            turns.append(
                Turn(
                    tid,
                    _str(record, "session", where),
                    role,
                    _ms(record.get("at"), where),
                    _str(record, "text", where),
                    _opt_str(record, "speaker", where),
                    _opt_str(record, "conversation", where) or "",
                )
            )
        elif kind == "question":
            qid = _str(record, "id", where)
            if qid in seen:
                raise ValidationError(f"{where}: duplicate id {qid!r}")
            seen.add(qid)
            category = _str(record, "category", where)
            if category not in header["categories"]:
                raise ValidationError(f"{where}: unknown category {category!r}")
            gold = _gold(record.get("gold"), where)
            if (category in abstain) != (not gold):
                raise ValidationError(
                    f"{where}: abstention questions (and only they) have an empty gold list"
                )
            split = _opt_str(record, "split", where)
            if split is not None and split not in splits:
                raise ValidationError(f"{where}: split {split!r} is not in the header's splits")
            match = record.get("match", "mixed")
            if match not in MATCH_KINDS:
                raise ValidationError(f"{where}: match must be one of {', '.join(MATCH_KINDS)}")
            depth = record.get("depth")
            number = isinstance(depth, (int, float)) and not isinstance(depth, bool)
            if depth is not None and not (number and 0 <= depth <= 1):
                raise ValidationError(f"{where}: depth must be a number in 0..1")
            questions.append(
                Question(
                    qid,
                    category,
                    _str(record, "text", where),
                    _ms(record.get("asked_at"), where),
                    gold,
                    match,
                    None if depth is None else float(depth),
                    _opt_str(record, "conversation", where) or "",
                    split,
                    _opt_str(record, "answer", where),
                )
            )
        else:
            raise ValidationError(f"{where}: unknown kind {kind!r}")
    if header is None:
        raise ValidationError(f"{source}: empty suite file")
    conversation_of = {t.id: t.conversation for t in turns}
    conversations = set(conversation_of.values())
    for q in questions:
        missing = [g for g in q.gold_ids if g not in conversation_of]
        if missing:
            raise ValidationError(f"{source}: question {q.id} cites unknown turns {missing}")
        if q.conversation not in conversations:
            raise ValidationError(f"{source}: question {q.id} asks unknown conversation")
        elsewhere = [g for g in q.gold_ids if conversation_of[g] != q.conversation]
        if elsewhere:
            raise ValidationError(
                f"{source}: question {q.id} cites turns of another conversation {elsewhere}"
            )
    return Suite(
        name=_str(header, "name", f"{source}:1"),
        description=str(header.get("description", "")),
        categories=tuple(header["categories"]),
        turns=tuple(turns),
        questions=tuple(questions),
        version=int(header.get("version", 1)),
        abstention=abstain,
        splits=splits,
    )


def load_suite(name: str | Path) -> Suite:
    """A shipped suite by name (see :data:`SUITES`), or a suite file by path."""
    if isinstance(name, Path) or (isinstance(name, str) and name not in SUITES):
        path = Path(name)
        if not path.is_file():
            raise ValidationError(
                f"unknown suite {str(name)!r}; choose one of {', '.join(SUITES)} or give a file"
            )
        return parse_suite(path.read_text(encoding="utf-8").splitlines(), source=path.name)
    data = resources.files(__package__) / "data" / SUITES[name]
    return parse_suite(data.read_text(encoding="utf-8").splitlines(), source=SUITES[name])
