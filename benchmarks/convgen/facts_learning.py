# ruff: noqa: E501 (the templates and pools are data; long lines read better unwrapped)
"""Fact families about learning: lessons, an evening class, an exam, a book (see
:mod:`.facts`)."""

from __future__ import annotations

from .base import Ctx, Line, Plan, Question, a, cap
from .chatter import REACTIONS_GOOD
from .facts_common import names_of
from .people import (
    BOOKS,
    CERTS,
    CLASSES,
    INSTRUMENTS,
    TEACHER_NAMES,
    WEEKDAYS,
)


def lessons(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
    k = c.key("lessons")
    inst = c.pick(list(INSTRUMENTS))
    teacher = c.pick(TEACHER_NAMES)
    lines = [
        Line(o, c.any([
            f"I finally signed up for {inst} lessons. My teacher is {teacher}, very patient.",
            f"New hobby alert: I'm learning the {inst}. Lessons with {teacher} every week.",
        ]), f"{k}.main"),
        Line(f, c.any(["Fun! How's it going?", "Ooh, are you any good yet?"])),
        Line(o, c.any(["My fingers hurt and the neighbours hate me, so, great.",
                       "I can play one song, badly. Progress!"])),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Which instrument did {me.name} sign up for lessons on?",
            f"What instrument is {me.name} taking lessons on?",
            f"What is {me.name} learning to play?",
            f"Which musical instrument has {me.name} taken up?",
        ]), [[f"{k}.main"]], inst),
        Question("single-hop", c.qv([
            f"Who is {me.name}'s {inst} teacher?",
            f"Who teaches {me.name} the {inst}?",
            f"Who gives {me.name} {me.pos} weekly music tuition?",
            f"Who is {me.name}'s music tutor?",
        ]), [[f"{k}.main"]], teacher),
        Question("open-domain", c.qv([
            f"Is the {inst} a string, brass, woodwind, keyboard or percussion instrument?",
            f"What family of instruments does the {inst} {me.name} is learning belong to?",
            f"Is the instrument {me.name} is learning a string, wind, brass, keyboard or percussion instrument?",
            f"To which family of instruments does the one {me.name} practises belong?",
        ]), [[f"{k}.main"]], INSTRUMENTS[inst]),
    ]
    parts = [lines]
    if c.chance(0.35):
        teacher2 = c.any([t for t in TEACHER_NAMES if t != teacher])
        parts.append([
            Line(o, f"{cap(teacher)} moved away, so my new {inst} teacher is {teacher2}. Stricter!",
                 f"{k}.teacher2"),
            Line(f, c.any(["Stricter might be good for you.", "Oh no, do you miss the old one?"])),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"Who is {me.name}'s new {inst} teacher?",
            f"Who took over as {me.name}'s {inst} teacher?",
            f"Who teaches {me.name} music at the moment?",
            f"Who is {me.name}'s current instrument tutor?",
        ]), [[f"{k}.teacher2"]], teacher2))
    fu = [[Line(o, f"Practised the {inst} for an hour, then the neighbour knocked on the wall.")],
          [Line(f, "How are the music lessons going?"), Line(o, "Slowly! My timing is improving, apparently.")]]
    return Plan("lessons", o, parts, qs, swap=f"What instrument is {fr.name} learning?", followups=fu)


def book(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
    k = c.key("book")
    title, author, plot = c.pool(BOOKS)
    lines = [
        Line(o, c.any([f"You have to read {title} by {author}. I stayed up until 2am finishing it.",
                       f"Okay, book recommendation: {title}, {author}. Don't argue, just read it."]),
             f"{k}.main"),
        Line(f, "What's it about?"),
        Line(o, f"It's about {plot}. Sounds odd, but trust me.", f"{k}.plot"),
        Line(f, c.any(["Sold. Adding it to the pile.", "Okay, you've convinced me."])),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Which book by {author} did {me.name} recommend?",
            f"What book recommendation did {me.name} give?",
            f"Which novel did {me.name} tell {fr.name} not to miss?",
            f"What book did {me.name} insist {fr.name} should pick up?",
        ]), [[f"{k}.main"]], title),
        Question("single-hop", c.qv([
            f"Who is the author of {title}?",
            f"Who wrote {title}, the book {me.name} recommended?",
            f"Who wrote the story {me.name} could not put down?",
            f"Which author's work kept {me.name} awake at night?",
        ]), [[f"{k}.main"]], author),
        Question("multi-hop", c.qv([
            f"What is {title} about?",
            f"What is the book {title} about?",
            f"What is the plot of the book by {author} that {me.name} recommended?",
            f"What happens in the novel {me.name} urged {fr.name} to read?",
        ]), [[f"{k}.main"], [f"{k}.plot"]], plot),
    ]
    fu = [[Line(o, f"Lent my copy of {title} to my mum and now she won't stop texting me about it.")],
          [Line(f, f"I started {title}!"), Line(o, "And?? Don't tell me you don't love it.")]]
    return Plan("book", o, [lines], qs, swap=f"Which book did {fr.name} recommend?", followups=fu)


def evening_class(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
    k = c.key("class")
    cls, kind = c.pick(CLASSES)
    day, day2 = c.rng.sample(WEEKDAYS[:5], 2)
    lines = [
        Line(o, f"I signed up for {a(cls)} class on {day} evenings at the community centre.",
             f"{k}.main"),
        Line(f, c.any(["That sounds fun! Who else goes?", "Ooh, fancy. Are you nervous?"])),
        Line(o, c.any(["Mostly retired people who are much better than me.",
                       "A bit! But the teacher seems lovely."])),
    ]
    parts = [lines]
    qs = [
        Question("single-hop", c.qv([
            f"What class did {me.name} sign up for at the community centre?",
            f"Which class at the community centre did {me.name} sign up for?",
            f"What course did {me.name} enrol in at the community centre?",
            f"Which evening activity did {me.name} sign up for?",
        ]), [[f"{k}.main"]], cls),
    ]
    if c.chance(0.5):
        parts.append([
            Line(o, f"My {cls} class has moved to {day2}s, which suits me better actually.",
                 f"{k}.moved"),
            Line(f, c.any(["Oh good, no more rushing after work then.", "Nice, that's easier."])),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"Which day has {me.name}'s {cls} class moved to?",
            f"What day is {me.name}'s {cls} class on now that it has moved?",
            f"On which weeknight does {me.name} go to {me.pos} class now?",
            f"What day of the week is {me.name}'s {kind} session these days?",
        ]), [[f"{k}.moved"]], day2))
    else:
        qs.append(Question("single-hop", c.qv([
            f"Which evening is {me.name}'s {cls} class?",
            f"On which evenings is {me.name}'s {cls} class?",
            f"On which weeknight does {me.name} go to {me.pos} class?",
            f"What day of the week is {me.name}'s {kind} session?",
        ]), [[f"{k}.main"]], day))
    fu = [[Line(o, f"My {cls} teacher said I'm a natural. She was being kind.")],
          [Line(f, "How's the class going?"), Line(o, "Fun! I've made two friends, both over seventy.")]]
    return Plan("class", o, parts, qs, swap=f"Which evening class did {fr.name} join?", followups=fu)


def exam(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
    k = c.key("exam")
    name, what = c.pick(CERTS)
    w = c.when()
    lines = [
        Line(o, c.any([f"Results are in: I passed my {name}! I sat it {w.phrase} and was sure I'd failed.",
                       f"I passed my {name}!! Took it {w.phrase}, and I'm still shaking."]), f"{k}.main"),
        Line(f, c.any(REACTIONS_GOOD)),
        Line(o, "Celebrating with a very large pizza tonight."),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Which exam did {me.name} pass?",
            f"What did {me.name} pass?",
            f"Which qualification did {me.name} earn?",
            f"What did {me.name} get certified in?",
        ]), [[f"{k}.main"]], what),
        Question("temporal", c.qv([
            f"When did {me.name} take the {name}?",
            f"When did {me.name} sit the {name} that {me.subj} passed?",
            f"When did {me.name} sit the {name}?",
            f"On which date did {me.name} take the assessment for {me.pos} {what}?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
    ]
    fu = [[Line(o, "Framed the certificate. Too much? It's going up anyway.")]]
    return Plan("exam", o, [lines], qs, swap=f"Which exam did {fr.name} pass?", followups=fu)


