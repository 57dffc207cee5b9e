"""Write the ``long-conversations`` evaluation suite: long, dated chats between two friends.

Usage (from the repository root; deterministic for a given ``--seed``)::

    python benchmarks/make_conversations.py          # pymemory/evals/data/long_conversations.jsonl
    python benchmarks/make_conversations.py --stats  # and counts per category and split

Ten conversations between two friends each (ten different pairs of people), 26-32 dated
sessions spread over six to nine months, 475-561 turns per conversation: greetings
and goodbyes, everyday small talk (weather, TV, food, work, sleep...), lines that echo a
fact's words without stating it, and the facts themselves: a pet adopted, a job offer,
a house move that falls through, a race time beaten later, trips, a partner's family,
an old roommate's new job... (``benchmarks/convgen/facts.py``). Relative time is said
the way people say it ("on Saturday", "two weeks ago"), so "when did ..." needs the
session date. Every question is asked at the end of its conversation (the clock is the
last turn) and cites the turns that answer it.

Categories: single-hop, multi-hop (evidence in two turns or two sessions), temporal,
open-domain (the memory plus world knowledge: the language of the city someone moves
to), knowledge-update (the latest of two statements), adversarial (asks one friend about
the other friend's fact: unanswerable) and unanswerable (a topic never discussed).
Conversations 0-5 form the ``tune`` split, 6-9 the ``heldout`` split; the two use
different people, pet names, companies, books and bands, and disjoint halves of every
question wording list, so tuning cannot learn the held-out wordings.

All text is written for pymemory (``benchmarks/convgen``); nothing is taken from other
benchmarks or data sets.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from convgen import chatter  # noqa: E402
from convgen.base import Ctx, Line, Plan, resolve_months  # noqa: E402
from convgen.facts import FAMILIES, NEVER  # noqa: E402
from convgen.people import (  # noqa: E402
    HOME_CITIES,
    JOBS,
    KID_NAMES,
    MONTHS,
    NAMES_HELDOUT,
    NAMES_TUNE,
    RELATIONSHIPS,
    SIBLING_NAMES,
    Persona,
)

from pymemory.retrieval.analyzer import analyze  # noqa: E402

OUT = ROOT / "pymemory" / "evals" / "data" / "long_conversations.jsonl"
CATEGORIES = ["single-hop", "multi-hop", "temporal", "open-domain", "knowledge-update",
              "adversarial", "unanswerable"]  # fmt: skip
ABSTAIN = ["adversarial", "unanswerable"]
N_CONVERSATIONS = 10
HELDOUT_FROM = 6


def make_people(rng: random.Random, split: str, used: set[str]) -> tuple[Persona, Persona]:
    pool = [n for n in (NAMES_TUNE if split == "tune" else NAMES_HELDOUT) if n[0] not in used]
    chosen = rng.sample(pool, 2)
    people = []
    siblings = rng.sample(SIBLING_NAMES, 2)
    for (name, pronoun), sib in zip(chosen, siblings, strict=True):
        used.add(name)
        job, workplace = rng.choice(JOBS)
        people.append(
            Persona(
                name=name,
                pronoun=pronoun,
                job=job,
                workplace=workplace,
                city=rng.choice(HOME_CITIES),
                sibling=sib,
                sibling_rel=rng.choice(["sister", "brother"]),
                kid=rng.choice(KID_NAMES) if rng.random() < 0.3 else None,
            )
        )
    return people[0], people[1]


def session_times(rng: random.Random, n: int) -> list[dt.datetime]:
    start = dt.datetime(2023, 1, 9, tzinfo=dt.UTC) + dt.timedelta(days=rng.randint(0, 540))
    day = start
    out = []
    for _ in range(n):
        out.append(day.replace(hour=rng.randint(7, 21), minute=rng.randint(0, 59)))
        gap = rng.choices([rng.randint(1, 4), rng.randint(5, 10), rng.randint(11, 21),
                           rng.randint(22, 35)], weights=[30, 45, 20, 5])[0]  # fmt: skip
        day = day + dt.timedelta(days=gap)
    return out


class Chat:
    """Small talk for one conversation, never repeating a line within it."""

    def __init__(self, rng: random.Random, people: tuple[Persona, Persona]) -> None:
        self.rng = rng
        self.p = people
        self.used: set[str] = set()
        self.script_uses: dict[tuple[str, int], int] = {}

    def fill(self, template: str, speaker: int, at: dt.datetime) -> str:
        other = self.p[1 - speaker]
        pick = self.rng.choice
        return template.format(
            other=other.name,
            show=pick(chatter.SHOWS),
            food=pick(chatter.FOODS),
            landmark=pick(chatter.LANDMARKS),
            workplace=self.p[speaker].workplace,
            weekday=pick(["Friday", "Saturday", "Sunday", "Thursday"]),
            month=MONTHS[at.month - 1],
            game=pick(chatter.GAMES),
            city=pick(HOME_CITIES),
            drink=pick(chatter.DRINKS),
            colleague=pick(chatter.COLLEAGUES),
            animal=pick(chatter.ANIMALS),
            item=pick(chatter.ITEMS),
        )

    def line(self, options: list[str], speaker: int, at: dt.datetime) -> str:
        for _ in range(12):
            text = self.fill(self.rng.choice(options), speaker, at)
            if text not in self.used:
                break
        self.used.add(text)
        return text

    def topic(self, name: str, first: int, at: dt.datetime) -> list[Line]:
        """One small-talk script of the topic, the least used one first."""
        scripts = chatter.TOPICS[name]
        fewest = min(self.script_uses.get((name, i), 0) for i in range(len(scripts)))
        index = self.rng.choice(
            [i for i in range(len(scripts)) if self.script_uses.get((name, i), 0) == fewest]
        )
        self.script_uses[(name, index)] = fewest + 1
        script = scripts[index]
        n = self.rng.randint(2, len(script))
        while n < len(script) and script[n - 1].endswith("?"):  # never stop on a question
            n += 1
        return [
            Line((first + i) % 2, self.fill(script[i], (first + i) % 2, at)) for i in range(n)
        ]

    def echo(self, at: dt.datetime) -> list[Line]:
        family = self.rng.choice(sorted(chatter.ECHOES))
        speaker = self.rng.randint(0, 1)
        lines = [Line(speaker, self.line(chatter.ECHOES[family], speaker, at))]
        if self.rng.random() < 0.7:
            lines.append(Line(1 - speaker, self.line(chatter.REACTIONS_NEUTRAL, 1 - speaker, at)))
        return lines


def schedule(rng: random.Random, plans: list[Plan], n_sessions: int) -> dict[int, list[list[Line]]]:
    """Place each plan's parts in sessions (parts in order, ``min_gap`` apart; at most
    three parts per session), then one to three of its follow-ups in later sessions."""
    slots: dict[int, list[list[Line]]] = {s: [] for s in range(n_sessions)}
    for plan in plans:
        span = plan.min_gap * (len(plan.parts) - 1)
        for _ in range(200):
            start = rng.randint(1, n_sessions - 2 - span)
            sessions, s = [], start
            for j in range(len(plan.parts)):
                if j:
                    s += rng.randint(plan.min_gap, plan.min_gap + 5)
                sessions.append(s)
            if sessions[-1] <= n_sessions - 1 and all(len(slots[x]) < 3 for x in sessions):
                break
        else:
            raise RuntimeError(f"cannot place {plan.family}")
        for s, part in zip(sessions, plan.parts, strict=True):
            slots[s].append(part)
        later = list(range(sessions[-1] + 1, n_sessions))
        if later and plan.followups:
            n = rng.randint(1, min(3, len(plan.followups)))
            for episode in rng.sample(plan.followups, n):
                slots[rng.choice(later)].append(episode)
    return slots


def conversation(
    index: int, seed: int, used_names: set[str]
) -> tuple[list[dict], list[dict], dict]:
    split = "tune" if index < HELDOUT_FROM else "heldout"
    rng = random.Random(seed * 1000 + index)
    people = make_people(rng, split, used_names)
    ctx = Ctx(rng, people, split)
    chat = Chat(rng, people)
    cid = f"c{index:02d}"

    # Facts: each friend gets 10-12 families; some families both have (near misses).
    families = list(FAMILIES)
    plans: list[Plan] = []
    for who in (0, 1):
        rng.shuffle(families)
        for fam in families[: rng.randint(10, 12)]:
            plans.append(fam(ctx, who))
            people[who].facts.add(plans[-1].family)
    rng.shuffle(plans)

    n_sessions = rng.randint(26, 32)
    times = session_times(rng, n_sessions)
    slots = schedule(rng, plans, n_sessions)

    turns: list[dict] = []
    key_turn: dict[str, str] = {}
    key_time: dict[str, dt.datetime] = {}
    topics = sorted(chatter.TOPICS)
    for s in range(n_sessions):
        at = times[s]
        body: list[list[Line]] = []
        chosen = rng.sample(topics, rng.randint(2, 4))
        body += [chat.topic(t, rng.randint(0, 1), at) for t in chosen]
        body += [chat.echo(at) for _ in range(rng.randint(0, 2))]
        body += slots[s]
        rng.shuffle(body)
        first = rng.randint(0, 1)
        lines = [Line(first, chat.line(chatter.GREETINGS, first, at)),
                 Line(1 - first, chat.line(chatter.GREETING_REPLIES, 1 - first, at))]  # fmt: skip
        for episode in body:
            lines += episode
        last = rng.randint(0, 1)
        lines += [Line(last, chat.line(chatter.CLOSINGS, last, at)),
                  Line(1 - last, chat.line(chatter.CLOSING_REPLIES, 1 - last, at))]  # fmt: skip
        t = at
        for n, line in enumerate(lines, start=1):
            tid = f"{cid}.s{s + 1:02d}.t{n:02d}"
            turns.append({
                "kind": "turn", "id": tid, "conversation": cid, "session": f"{cid}.s{s + 1:02d}",
                "speaker": people[line.speaker].name, "at": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "text": resolve_months(line.text, t, key_time),
            })  # fmt: skip
            if line.key:
                key_turn[line.key] = tid
                key_time[line.key] = t
            t += dt.timedelta(seconds=rng.randint(20, 240))
    asked_at = turns[-1]["at"]

    # Questions.
    questions: list[dict] = []

    def add(category: str, text: str, gold: list[list[str]], answer: str) -> None:
        questions.append({
            "kind": "question", "id": f"{cid}.q{len(questions) + 1:03d}", "conversation": cid,
            "split": split, "category": category, "asked_at": asked_at, "text": text,
            "gold": gold, "answer": answer,
        })  # fmt: skip

    for plan in plans:
        for q in plan.questions:
            gold = [[key_turn[k] for k in piece] for piece in q.gold]
            answer = q.answer if isinstance(q.answer, str) else q.answer(key_time)
            add(q.category, q.text, gold, answer)
    swaps = [p for p in plans if p.swap and p.family not in people[1 - p.owner].facts]
    for plan in rng.sample(swaps, min(len(swaps), 6)):
        add("adversarial", plan.swap, [], plan.swap_answer)  # type: ignore[arg-type]
    for template in rng.sample(NEVER, 5):
        who = people[rng.randint(0, 1)]
        add("unanswerable", template.format(X=who.name, P=who.pos), [], "Never discussed.")
    info = {
        "id": cid, "split": split, "people": [p.name for p in people],
        "relationship": rng.choice(RELATIONSHIPS), "sessions": n_sessions,
        "first": turns[0]["at"], "last": asked_at,
    }  # fmt: skip
    return turns, questions, info


def annotate_match(turns: list[dict], questions: list[dict], names: set[str]) -> None:
    """``match``: exact (shares a rare term with its evidence), paraphrase (shares no content
    term at all), mixed (shares only common terms). Names of the two friends do not count."""
    skip = {analyze(n)[0] for n in names if analyze(n)}
    by_id = {t["id"]: t for t in turns}
    df: dict[str, Counter[str]] = {}
    for t in turns:
        df.setdefault(t["conversation"], Counter()).update(set(analyze(t["text"])))
    for q in questions:
        if not q["gold"]:
            q["match"] = "paraphrase"
            continue
        terms = set(analyze(q["text"])) - skip
        gold_terms: set[str] = set()
        for piece in q["gold"]:
            for tid in piece:
                gold_terms |= set(analyze(by_id[tid]["text"]))
        shared = terms & gold_terms
        counts = df[q["conversation"]]
        if not shared:
            q["match"] = "paraphrase"
        elif any(counts[t] <= 3 for t in shared):
            q["match"] = "exact"
        else:
            q["match"] = "mixed"


def build(seed: int) -> list[dict]:
    used: set[str] = set()
    turns, questions, infos = [], [], []
    for i in range(N_CONVERSATIONS):
        t, q, info = conversation(i, seed, used)
        turns += t
        questions += q
        infos.append(info)
    annotate_match(turns, questions, used)
    header = {
        "kind": "suite",
        "name": "long-conversations",
        "version": 1,
        "description": (
            "Ten long, dated chats between two friends (26-32 sessions over months, about "
            "500 turns each, one memory per turn), with small talk, echoes of the facts' "
            "words and facts that change; questions asked at the end of each conversation, "
            "worded apart from their evidence. Generated by benchmarks/make_conversations.py "
            f"(seed {seed}); conversations 0-5 are the tune split, 6-9 the heldout split."
        ),
        "categories": CATEGORIES,
        "abstention": ABSTAIN,
        "splits": ["tune", "heldout"],
        "conversations": infos,
    }
    return [header, *turns, *questions]


def stats(records: list[dict]) -> str:
    turns = [r for r in records if r["kind"] == "turn"]
    qs = [r for r in records if r["kind"] == "question"]
    out = [f"{len(turns)} turns, {len(qs)} questions"]
    per_conv = Counter(t["conversation"] for t in turns)
    sizes = ", ".join(f"{k} {v}" for k, v in sorted(per_conv.items()))
    out.append(f"turns per conversation: {sizes}")
    for split in ("tune", "heldout"):
        c = Counter(q["category"] for q in qs if q["split"] == split)
        cats = ", ".join(f"{k} {c[k]}" for k in CATEGORIES)
        out.append(f"{split}: {sum(c.values())} questions: {cats}")
    m = Counter(q["match"] for q in qs if q["gold"])
    out.append("match (answerable): " + ", ".join(f"{k} {v}" for k, v in sorted(m.items())))
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--stats", action="store_true")
    a = parser.parse_args()
    records = build(a.seed)
    with a.out.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {a.out.relative_to(ROOT) if a.out.is_relative_to(ROOT) else a.out}")
    if a.stats:
        print(stats(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
