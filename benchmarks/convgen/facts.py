# ruff: noqa: E501 (the templates and pools are data; long lines read better unwrapped)
"""Fact families: the things friends tell each other, and the questions asked about them.

Each family returns a :class:`~.base.Plan`: one or more episodes (lines with evidence
keys) and questions citing those keys. Questions are worded apart from the evidence on
purpose (a "furry companion" for a cat, "relocating" for moving), except where a real
user would name the thing (a band, a city). Families that change over time (a house
move that falls through, a new personal best) yield knowledge-update questions whose
gold is the latest statement; the earlier one stays behind as a distractor.
"""

from __future__ import annotations

from .base import Ctx, Line, Plan, Question, a, cap, month_name
from .chatter import REACTIONS_BAD, REACTIONS_GOOD
from .people import (
    ALLERGENS,
    BANDS,
    BOOKS,
    CAR_COLOURS,
    CARS,
    CERTS,
    CITIES,
    CLASSES,
    COMPANIES,
    CRAFTS,
    DISHES,
    FRIEND_NAMES,
    GIFTS,
    INJURIES,
    INSTRUMENTS,
    NEW_ROLES,
    PAINT,
    PARTNER_NAMES,
    PET_NAMES,
    PETS,
    PHONES,
    PROJECTS,
    RACES,
    SHELTERS,
    SPORTS_TEAMS,
    TEACHER_NAMES,
    TRIP_PLACES,
    VEG,
    VENUES,
    VOLUNTEER,
    WEEKDAYS,
)


def _pair(text_answer: tuple, gold: list[list[str]]) -> tuple:
    """(text, gold, answer) for ``Question(category, *...)`` from a ``Ctx.qva`` pick."""
    return text_answer[0], gold, text_answer[1]


def _names(c: Ctx, o: int) -> tuple:
    me, fr = c.p[o], c.p[1 - o]
    return me, fr, o, 1 - o


def pet(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("pet")
    kind = c.pick(list(PETS))
    breed = c.pick(PETS[kind]["breeds"])
    name = c.pool(PET_NAMES)
    shelter = c.pick(SHELTERS)
    w = c.when()
    she = c.chance(0.5)
    p, ps = ("her", "She") if she else ("him", "He")
    main = c.any([
        f"Big news from our place: we adopted a {breed} from the {shelter} {w.phrase}!",
        f"So {w.phrase} we went to the {shelter} 'just to look' and came home with a {breed}. Classic.",
        f"Guess who has a new housemate with four legs? We brought a {breed} home from the {shelter} {w.phrase}.",
    ])
    ask = c.any(["Stop it, that's adorable! What did you call " + p + "?",
                 "No way! Name? Photos? I need everything.",
                 "Oh my goodness. What's the name?"])
    detail = c.any([
        f"{name}. {ps} has already claimed the best spot on the sofa.",
        f"We went with {name}. Sleeps about twenty hours a day, eats the other four.",
        f"{name}! It suited {p} straight away. Photos incoming.",
    ])
    lines = [Line(o, main, f"{k}.main"), Line(f, ask), Line(o, detail, f"{k}.name"),
             Line(f, c.any(REACTIONS_GOOD))]
    if c.chance(0.5):  # a near miss: the friend's relative has a pet too
        other = c.any([n for n in PET_NAMES[0] + PET_NAMES[1] if n != name])
        lines.append(Line(f, f"My cousin has a {c.any(PETS[kind]['breeds'])} called {other}, they'd get on."))
    qs = [
        Question("single-hop", c.qv([
            f"What is the name of the {kind} {me.name} adopted?",
            f"What did {me.name} name the {kind} from the {shelter}?",
            f"What did {me.name} call the animal {me.subj} took in?",
            f"What is the name of {me.name}'s new furry companion?",
            f"What name did {me.name} give {me.pos} newly adopted pet?",
            f"What is {me.name}'s rescue animal called?",
        ]), [[f"{k}.name"]], name),
        Question("temporal", c.qv([
            f"When did {me.name} bring the {breed} home from the {shelter}?",
            f"When did {me.name} adopt the {breed}?",
            f"When did {me.name} adopt {name}?",
            f"On what date did {name} come to live with {me.name}?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
        Question("open-domain", c.qv([
            f"Is {me.name}'s {breed} a feline, a canine or something else?",
            f"What kind of animal, in zoological terms, is the {breed} {me.name} adopted?",
            f"Is the animal {me.name} adopted a feline, a canine or something else?",
            f"What kind of animal, in zoological terms, did {me.name} bring home?",
        ]), [[f"{k}.main"]], PETS[kind]["class"]),
    ]
    fu = [[Line(o, f"{name} knocked a glass off the table at 3am. I live with a tiny menace.")],
          [Line(f, f"How's {name} settling in?"), Line(o, f"{name} runs the house now, obviously.")],
          [Line(o, f"Took {name} to the vet for a check-up. {ps} sulked all evening.")],
          [Line(o, f"{name} has decided the bath mat is {'her' if she else 'his'} bed now.")]]
    return Plan("pet", o, [lines], qs, swap=f"What is the name of {fr.name}'s {kind}?", followups=fu)


def new_job(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("job")
    company = c.pool(COMPANIES)
    role = c.pick(NEW_ROLES)
    start = c.any(["in two weeks", "at the start of next month", "on the first of the month"])
    main = c.any([
        f"I got the job!! I'm going to be a {role} at {company}.",
        f"Signed the contract today: {role}, at {company}. I can't quite believe it.",
        f"Remember that interview I was dreading? They offered me the {role} post at {company}!",
    ])
    lines = [
        Line(o, main, f"{k}.main"),
        Line(f, c.any(["Congratulations!!! When do you start?", "Amazing! When's your first day?"])),
        Line(o, c.any([f"I start {start}. I'll miss the people at {me.workplace} though.",
                       f"First day is {start}. I'm already planning my outfit."]), f"{k}.start"),
        Line(f, c.any(REACTIONS_GOOD)),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Which company offered {me.name} the {role} job?",
            f"Where did {me.name} get the job as {a(role)}?",
            f"Which employer hired {me.name}?",
            f"What organisation is {me.name} going to work for next?",
            f"Who made {me.name} an offer of employment?",
        ]), [[f"{k}.main"]], company),
        Question("single-hop", c.qv([
            f"What job did {me.name} get at {company}?",
            f"Which post did {me.name} get offered at {company}?",
            f"What position did {me.name} accept?",
            f"What will {me.name}'s title be in the new role?",
        ]), [[f"{k}.main"]], role),
        Question("temporal", c.qv([
            f"When did {me.name} get the job at {company}?",
            f"When did {me.name} sign the contract with {company}?",
            f"When did {me.name} get the offer from {company}?",
            f"On which day did {me.name} sign {me.pos} new employment contract?",
        ]), [[f"{k}.main"]], lambda d: f"{d[f'{k}.main'].day} {d[f'{k}.main'].strftime('%B %Y')}"),
    ]
    parts = [lines]
    if c.chance(0.6):  # promoted later: a knowledge update
        new = c.any([r for r in NEW_ROLES if r != role])
        parts.append([
            Line(o, c.any([
                f"Small update: they've already made me {new}. Apparently the last one quit.",
                f"Guess who got promoted? I'm {new} now, same team, more spreadsheets.",
            ]), f"{k}.promo"),
            Line(f, c.any(REACTIONS_GOOD)),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"What was {me.name} promoted to?",
            f"What job title does {me.name} have now, after the promotion?",
            f"What is {me.name}'s job title at {company} now?",
            f"What role does {me.name} currently hold at work?",
        ]), [[f"{k}.promo"]], new))
    fu = [[Line(o, f"Third week at {company} and I finally know where the good coffee is.")],
          [Line(f, "How's the new job going?"), Line(o, "Busy, but I like the people a lot.")],
          [Line(o, f"The commute to {company} is longer than I thought. Podcasts are saving me.")]]
    return Plan("job", o, parts, qs, swap=f"Which company offered {fr.name} a new job?", followups=fu)


def move(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("move")
    c1 = c.pick(list(CITIES))
    month = f"<M+{c.rng.randint(2, 5)}>"
    why = c.any(["got a transfer", "found a job there", "has family there", "wants a change"])
    partner = c.any(["my partner", "my other half", "my fiancé", "my girlfriend", "my boyfriend"])
    part1 = [
        Line(o, c.any([
            f"We've decided: we're moving to {c1} in {month}! {partner.capitalize()} {why}.",
            f"Okay, sitting down? We're packing up and going to {c1} in {month}. {partner.capitalize()} {why}.",
        ]), f"{k}.plan"),
        Line(f, c.any([f"Whoa, {c1}! That's huge. How do you feel?", "Wait, what?! That's massive news."])),
        Line(o, c.any(["Excited and terrified in equal measure.",
                       "Mostly thinking about how many boxes I'll need."])),
        Line(f, c.any(["I'll miss you, but I'm coming to visit.", "You'll love it, I know you will."])),
    ]
    qs: list[Question] = []
    parts = [part1]
    if c.chance(0.7):
        c2 = c.pick([x for x in CITIES if x != c1])
        parts.append([
            Line(o, c.any([
                f"Plot twist: the {c1} plan is off. It's {c2} now, don't ask.",
                f"Change of plans. We're not going to {c1} any more. We're going to {c2} instead.",
            ]), f"{k}.update"),
            Line(f, c.any(["Wow, okay! Good different or bad different?",
                           "Ha, I can't keep up with you. Is that better?"])),
            Line(o, c.any(["Good different, I think. The flat there is twice the size.",
                           "Better, honestly. It's closer to the sea."])),
        ])
        final, final_key = c2, f"{k}.update"
        qs.append(Question("knowledge-update", c.qv([
            f"Where is {me.name} moving to, now that the {c1} plan is off?",
            f"Which city is {me.name} moving to after the change of plans?",
            f"Which city is {me.name} going to live in?",
            f"Where is {me.name} relocating to, in the end?",
            f"What is {me.name}'s final destination for the move?",
        ]), [[final_key]], c2))
    else:
        final, final_key = c1, f"{k}.plan"
        qs.append(Question("single-hop", c.qv([
            f"Which city is {me.name} moving to?",
            f"Where are {me.name} and {me.pos} partner moving to?",
            f"Where is {me.name} relocating to?",
            f"Which city will {me.name} be living in soon?",
        ]), [[final_key]], c1))
    country, language, _continent = CITIES[final]
    qs.append(Question("open-domain", *_pair(c.qva([
        (f"What language do people speak in {final}, where {me.name} is moving?", language),
        (f"Which country is {final} in, the city {me.name} is moving to?", country),
        (f"Which language will {me.name} mostly hear around {me.obj} after the move?", language),
        (f"In which country will {me.name} be living once {me.subj} has relocated?", country),
    ]), [[final_key]])))
    fu = [[Line(o, "Started packing. We own far too many mugs for two people.")],
          [Line(f, "How's the move planning going?"), Line(o, "Slowly. There's a spreadsheet.")],
          [Line(o, f"Found a flat we like in {final}, fingers crossed.")]]
    return Plan("move", o, parts, qs, min_gap=4, swap=f"Which city is {fr.name} moving to?", followups=fu)


RACE_MINUTES = {"half marathon": (95, 150), "10K": (42, 70), "marathon": (200, 300),
                "trail race": (70, 180), "5K parkrun": (19, 36)}


def _race_time(minutes: int, seconds: int) -> str:
    h, m = divmod(minutes, 60)
    if h:
        return f"{h} hour{'s' if h > 1 else ''} {m} minutes"
    return f"{m} minutes {seconds} seconds"


def race(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("race")
    race_name, distance = c.pick(RACES)
    lo, hi = RACE_MINUTES[race_name]
    total = c.rng.randint(lo, hi)
    time = _race_time(total, c.rng.randint(2, 58))
    w = c.when()
    main = c.any([
        f"I did it: ran my first {race_name} {w.phrase}! {time}, and I only walked once.",
        f"Finished the {race_name} {w.phrase}. {time}. My legs have filed a complaint.",
        f"So the {race_name} happened {w.phrase}. Crossed the line in {time} and nearly cried.",
    ])
    lines = [Line(o, main, f"{k}.main"),
             Line(f, c.any(["Legend! How are your legs?", "That's incredible! Are you walking today?"])),
             Line(o, c.any(["Stairs are my enemy. Already looking at the next one though.",
                            "Walking like a penguin. Worth it."])),
             Line(f, c.any(REACTIONS_GOOD))]
    qs = [
        Question("single-hop", c.qv([
            f"What was {me.name}'s time in {me.pos} first {race_name}?",
            f"How long did {me.name} take to run the {race_name}?",
            f"How long did it take {me.name} to complete the {distance}?",
            f"What was {me.name}'s finishing time in {me.pos} first long-distance event?",
        ]), [[f"{k}.main"]], time),
        Question("temporal", c.qv([
            f"When did {me.name} finish {me.pos} first {race_name}?",
            f"When did {me.name} run {me.pos} first {race_name}?",
            f"When did {me.name} run the {race_name}?",
            f"What was the date of {me.name}'s first {race_name}?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
    ]
    parts = [lines]
    if c.chance(0.5):
        time2 = _race_time(total - c.rng.randint(2, 9), c.rng.randint(2, 58))
        parts.append([
            Line(o, f"Did another {race_name} at the weekend and knocked a few minutes off: {time2}!",
                 f"{k}.pb"),
            Line(f, c.any(REACTIONS_GOOD)),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"What time did {me.name} run in {me.pos} second {race_name}?",
            f"How many minutes did {me.name} knock off in the next {race_name}, and what was the new time?",
            f"What is {me.name}'s best time over that distance so far?",
            f"What is {me.name}'s current personal record for the {distance}?",
        ]), [[f"{k}.pb"]], time2))
    fu = [[Line(o, f"Legs finally recovered from the {race_name}. Back to short easy runs.")],
          [Line(o, "Joined a running club. They run up hills for fun, I've made a mistake.")]]
    return Plan("race", o, parts, qs, swap=f"How long did {fr.name}'s {race_name} take?", followups=fu)


def trip(c: Ctx, o: int, second: bool = True) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("trip")
    place = c.pick(list(TRIP_PLACES))
    country, continent, best = TRIP_PLACES[place]
    n = c.rng.randint(4, 12)

    def episode(place: str, n: int, best: str, key: str) -> list[Line]:
        return [
            Line(o, c.any([f"Just got back from {n} days in {place}. I want to go back already.",
                           f"Home from {place}! {n} days wasn't nearly enough."]), key),
            Line(f, c.any(["Jealous! What was the best part?", "Welcome back! Highlight?"])),
            Line(o, f"Oh, {best}.", key + ".best"),
            Line(f, c.any(["Sounds like a dream.", "Okay, adding it to my list."])),
        ]

    parts = [episode(place, n, best, f"{k}.a")]
    qs = [
        Question("single-hop", c.qv([
            f"Where did {me.name} get back from after {n} days?",
            f"Which place did {me.name} spend {n} days in?",
            f"Where did {me.name} spend {n} days away?",
            f"Which destination did {me.name} just return from after {n} days?",
        ]), [[f"{k}.a"]], place),
        Question("temporal", c.qv([
            f"When did {me.name} get back from {place}?",
            f"When was {me.name} home from {place}?",
            f"When did {me.name} come home from {place}?",
            f"Around what date did {me.name}'s holiday in {country} end?",
        ]), [[f"{k}.a"]], lambda d: f"{d[f'{k}.a'].day} {d[f'{k}.a'].strftime('%B %Y')}"),
        Question("open-domain", *_pair(c.qva([
            (f"Which continent is {place} in, where {me.name} spent {n} days?", continent),
            (f"In which country is {place}, the place {me.name} got back from?", country),
            (f"On which continent was {me.name}'s {n}-day getaway?", continent),
            (f"Which country did {me.name} visit for {n} days?", country),
        ]), [[f"{k}.a"]])),
        Question("single-hop", c.qv([
            f"What was the best part of {place} for {me.name}?",
            f"What was {me.name}'s highlight in {place}?",
            f"What did {me.name} enjoy most about {place}?",
            f"What stood out for {me.name} while in {place}?",
        ]), [[f"{k}.a.best"]], best),
    ]
    if second and c.chance(0.6):
        place2 = c.pick([p for p in TRIP_PLACES if p != place])
        n2 = c.rng.randint(3, 10)
        parts.append(episode(place2, n2, TRIP_PLACES[place2][2], f"{k}.b"))
        qs.append(Question("multi-hop", c.qv([
            f"Which places did {me.name} get back from in these months?",
            f"Where has {me.name} been on holiday, judging by the trips {me.subj} got back from?",
            f"Which places has {me.name} travelled to during these months?",
            f"Name the destinations of {me.name}'s holidays that {me.subj} told {fr.name} about.",
        ]), [[f"{k}.a"], [f"{k}.b"]], f"{place} and {place2}"))
        qs.append(Question("multi-hop", c.qv([
            f"How many days in total was {me.name} away, adding up both trips?",
            f"Adding the days of both trips, how long was {me.name} away?",
            f"In total, how many days did {me.name} spend on {me.pos} two trips?",
            f"How many days away did {me.name}'s two holidays add up to?",
        ]), [[f"{k}.a"], [f"{k}.b"]], str(n + n2)))
    fu = [[Line(o, f"Still dreaming about {place}. I looked at the photos at work, big mistake.")],
          [Line(o, f"Tried to cook something I had in {place}. Not quite the same.")]]
    return Plan("trip", o, parts, qs, min_gap=5, swap=f"Where did {fr.name} go on holiday?", followups=fu)


def lessons(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
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


def baby(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("baby")
    girl = c.chance(0.5)
    baby_name = c.any(["Ava", "Jude", "Nora", "Elias", "Mira", "Otis", "Rosie", "Idris", "June"])
    w = c.when()
    rel = me.sibling_rel
    lines = [
        Line(o, c.any([
            f"I'm an {'aunt' if me.pronoun == 'she' else 'uncle'}! My {rel} {me.sibling} had a baby {'girl' if girl else 'boy'} {w.phrase}.",
            f"{me.sibling} had the baby {w.phrase}! A little {'girl' if girl else 'boy'}, everyone's fine.",
        ]), f"{k}.main"),
        Line(f, c.any(["Congratulations!! What's the name?", "Aww! Name? Weight? Everything!"])),
        Line(o, c.any([f"{baby_name}. Seven pounds of pure grumpiness.",
                       f"They've called {'her' if girl else 'him'} {baby_name}. Tiny fingers!"]),
             f"{k}.name"),
        Line(f, c.any(REACTIONS_GOOD)),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"What is the name of the baby {me.sibling} had?",
            f"What did {me.sibling} call the baby?",
            f"What is the name of {me.name}'s new {'niece' if girl else 'nephew'}?",
            f"What did {me.name}'s {rel} name the newborn?",
        ]), [[f"{k}.main"], [f"{k}.name"]], baby_name),
        Question("temporal", c.qv([
            f"When did {me.sibling} have the baby?",
            f"When did {me.name}'s {rel} {me.sibling} have a baby?",
            f"When was {me.sibling}'s baby born?",
            f"What is the birth date of {me.name}'s {'niece' if girl else 'nephew'}?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
    ]
    fu = [[Line(o, f"Visited {me.sibling} at the weekend. {baby_name} slept on me for an hour.")],
          [Line(o, f"{baby_name} smiled at me! Or it was wind. I'm counting it.")]]
    return Plan("baby", o, [lines], qs, swap=f"What is the name of {fr.name}'s new niece or nephew?", followups=fu)


def book(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
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


def injury(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("injury")
    what, part, sport = c.pick(INJURIES)
    weeks = c.rng.randint(2, 8)
    w = c.when()
    lines = [
        Line(o, c.any([f"Slight disaster: I {what} playing {sport} {w.phrase}.",
                       f"So I {what} {w.phrase}. {sport.capitalize()}, of all things."]), f"{k}.main"),
        Line(f, c.any(["Ouch! Are you okay?", "Oh no! What did the doctor say?"])),
        Line(o, c.any([f"Doctor says {weeks} weeks of rest. I'm going to go mad.",
                       f"{weeks} weeks off anything sporty. Send snacks."]), f"{k}.rest"),
        Line(f, c.any(REACTIONS_BAD)),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"How did {me.name} hurt {me.pos} {part}?",
            f"What happened to {me.name}'s {part}?",
            f"How did {me.name} get hurt?",
            f"What activity led to {me.name}'s injury?",
        ]), [[f"{k}.main"]], f"{what.replace('my ', 'their ')} ({sport})"),
        Question("single-hop", c.qv([
            f"How many weeks of rest did the doctor give {me.name}?",
            f"How long did the doctor say {me.name} must rest?",
            f"How long was {me.name} told to take it easy?",
            f"For how many weeks does {me.name} have to avoid exercise?",
        ]), [[f"{k}.rest"]], f"{weeks} weeks"),
        Question("temporal", c.qv([
            f"When did {me.name} get hurt playing {sport}?",
            f"When did {me.name}'s {part} get injured playing {sport}?",
            f"When did {me.name} hurt {me.pos} {part}?",
            f"On what date did {me.name}'s {sport} accident happen?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
    ]
    fu = [[Line(o, f"The {part} is a bit better. Walking without wincing now.")],
          [Line(f, f"How's the {part}?"), Line(o, "Healing. Physio is torture but it works.")]]
    return Plan("injury", o, [lines], qs, swap=f"How did {fr.name} injure {fr.pos} {part}?", followups=fu)


def paint(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("paint")
    c1, c2 = c.rng.sample(PAINT, 2)
    room = c.any(["living room", "bedroom", "kitchen", "hallway"])
    parts = [
        [Line(o, f"We're finally repainting the {room}. Leaning towards {c1}.", f"{k}.plan"),
         Line(f, c.any(["Bold! I like it.", "Ooh, send me a photo of the sample."]))],
        [Line(o, c.any([f"The {room} is done! We went with {c2} in the end, the {c1} looked awful.",
                        f"Update: {c1} was a mistake. Repainted the {room} {c2} and it's perfect now."]),
              f"{k}.done"),
         Line(f, c.any(["It sounds gorgeous.", "Ha, the classic second coat of regret."]))],
    ]
    qs = [Question("knowledge-update", c.qv([
        f"Which colour did {me.name} go with for the {room} in the end?",
        f"What colour is {me.name}'s {room} now that it is done?",
        f"What colour are the walls of {me.name}'s {room} now?",
        f"Which shade did {me.name}'s {room} end up?",
    ]), [[f"{k}.done"]], c2)]
    fu = [[Line(o, f"Still finding paint on my elbows from the {room} job.")]]
    return Plan("paint", o, parts, qs, swap=f"What colour did {fr.name} paint {fr.pos} {room}?", followups=fu)


def car(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("car")
    model, body = c.pick(CARS)
    colour = c.any(CAR_COLOURS)
    w = c.when()
    lines = [
        Line(o, c.any([f"I bought a car {w.phrase}! A {colour} {model}, second-hand but lovely.",
                       f"Big purchase {w.phrase}: a {colour} {model}. Goodbye, buses!"]), f"{k}.main"),
        Line(f, c.any(["Road trip?!", "Nice! Is it comfy?"])),
        Line(o, c.any(["Road trip for sure. Once I learn where the fuel cap is.",
                       "Very comfy. The radio only gets one station though."])),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"What car did {me.name} buy?",
            f"What car did {me.name} get?",
            f"What vehicle did {me.name} purchase?",
            f"What make and model is {me.name}'s new motor?",
        ]), [[f"{k}.main"]], f"a {colour} {model}"),
        Question("temporal", c.qv([
            f"When did {me.name} buy a car?",
            f"When was {me.name}'s big purchase, the {model}?",
            f"When did {me.name} buy the {model}?",
            f"On what date did {me.name} get {me.pos} {colour} car?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
        Question("open-domain", c.qv([
            f"What body style is the {model} {me.name} bought?",
            f"Is the {model} {me.name} bought a hatchback, an estate, a van or something else?",
            f"What body style is {me.name}'s new vehicle, going by the model?",
        ]), [[f"{k}.main"]], body),
    ]
    fu = [[Line(o, f"Drove the {model} to the coast at the weekend. So much easier than the train.")],
          [Line(o, "The car needs its first service already. Expensive hobby, driving.")]]
    return Plan("car", o, [lines], qs, swap=f"What car did {fr.name} buy?", followups=fu)


def diet(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("diet")
    back = c.rng.randint(2, 5)
    month = f"<M-{back}>"
    parts = [[
        Line(o, c.any([f"I've been vegetarian since {month}, and I don't even miss bacon.",
                       f"Fun fact: no meat for me since {month}. Feeling good so far."]), f"{k}.veg"),
        Line(f, c.any(["Respect. What do you eat for lunch?", "Good for you! Any tips?"])),
        Line(o, "Lots of lentils. I've become a lentil person."),
    ]]
    qs = [Question("single-hop", c.qv([
        f"Since when has {me.name} been vegetarian?",
        f"Since which month has {me.name} had no meat?",
        f"Since which month has {me.name} avoided meat?",
        f"When did {me.name} stop eating animal flesh?",
    ]), [[f"{k}.veg"]], lambda d: month_name(d[f"{k}.veg"], -back))]
    if c.chance(0.7):
        parts.append([
            Line(o, c.any(["Confession: I'm eating fish again. The lentil era is over.",
                           "Okay, I caved. I eat fish now, but still no meat."]), f"{k}.fish"),
            Line(f, c.any(["Ha! No judgement.", "Pescatarian is still pretty good going."])),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"Is {me.name} still vegetarian or eating fish again?",
            f"Does {me.name} eat fish again?",
            f"What is {me.name}'s diet these days?",
            f"Does {me.name} currently eat seafood?",
        ]), [[f"{k}.fish"]], "pescatarian: fish, no meat"))
    fu = [[Line(o, "Made a lentil lasagne last night. Genuinely good, I'm as surprised as you.")]]
    return Plan("diet", o, parts, qs, swap=f"Since when has {fr.name} been vegetarian?", followups=fu)


def partner(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("partner")
    pname, ppron = c.pick(PARTNER_NAMES)
    job = c.any(["paramedic", "carpenter", "marine biologist", "dentist", "sound engineer",
                 "primary teacher", "baker"])
    met = c.any(["at a friend's barbecue", "in the queue at the post office",
                 "at the climbing wall", "through a work quiz night"])
    home = c.pick(list(CITIES))
    his = "his" if ppron == "he" else "her"
    parts = [
        [Line(o, f"I've been seeing someone! {pname}, we met {met}.", f"{k}.met"),
         Line(f, c.any(["WHAT. Tell me everything!", "Finally! Details, please."])),
         Line(o, f"{pname} is a {job}, very funny, terrible at mini golf.", f"{k}.job"),
         Line(f, c.any(REACTIONS_GOOD))],
        [Line(o, f"{pname} took me to meet {his} parents in {home}. They live right by the water.",
              f"{k}.parents"),
         Line(f, c.any(["How did it go?", "Big step! Were they nice?"])),
         Line(o, "They fed me until I couldn't move. I think they liked me.")],
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Where did {me.name} meet {pname}?",
            f"How did {me.name} and {pname} meet?",
            f"How did {me.name} first cross paths with {pname}?",
            f"Where did {me.name} meet the person {me.subj} is dating?",
        ]), [[f"{k}.met"]], met),
        Question("multi-hop", c.qv([
            f"What job does the person {me.name} is seeing have?",
            f"What does the person {me.name} has been seeing work as?",
            f"What does {me.name}'s partner do for a living?",
            f"What is the occupation of the person {me.name} is dating?",
        ]), [[f"{k}.met"], [f"{k}.job"]], job),
        Question("multi-hop", c.qv([
            f"Where do the parents of the person {me.name} is seeing live?",
            f"In which city did {me.name} meet the parents of the person {me.subj} is seeing?",
            f"In which city do the parents of {me.name}'s partner live?",
            f"Where did {me.name} go to meet {me.pos} partner's family?",
        ]), [[f"{k}.met"], [f"{k}.parents"]], home),
    ]
    fu = [[Line(o, f"{pname} cooked dinner for my flatmates. They approve.")],
          [Line(f, f"How's it going with {pname}?"), Line(o, "Really well. I'm a bit smitten, honestly.")],
          [Line(o, f"{pname} and I went to the cinema and both fell asleep during the trailers.")]]
    return Plan("partner", o, parts, qs, min_gap=4,
                swap=f"What does {fr.name}'s new partner do for work?", followups=fu)


def evening_class(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
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
    me, fr, o, f = _names(c, o)
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


def concert(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("concert")
    band = c.pool(BANDS)
    venue = c.pick(VENUES)
    w = c.when()
    lines = [
        Line(o, c.any([f"Saw {band} live at {venue} {w.phrase}. My ears are still ringing.",
                       f"{band} at {venue} {w.phrase}, best gig I've been to in years."]), f"{k}.main"),
        Line(f, c.any(["Were they good?", "Jealous! Did they play the old stuff?"])),
        Line(o, c.any(["Unreal. The encore went on for twenty minutes.",
                       "All of it. I lost my voice singing along."])),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Which band did {me.name} see live at {venue}?",
            f"Who did {me.name} see live at {venue}?",
            f"Which group did {me.name} see perform?",
            f"Whose live show did {me.name} go to at {venue}?",
        ]), [[f"{k}.main"]], band),
        Question("temporal", c.qv([
            f"When did {me.name} see {band} live?",
            f"When did {me.name} see {band} at {venue}?",
            f"When did {me.name} go to the {band} gig?",
            f"On what date did {me.name} see {band}?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
    ]
    fu = [[Line(o, f"Still listening to {band} on repeat since the gig.")]]
    return Plan("concert", o, [lines], qs, swap=f"Which band did {fr.name} see live?", followups=fu)


def volunteer(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("volunteer")
    place, task = c.pick(VOLUNTEER)
    day = c.any(["Saturday", "Sunday", "Wednesday"])
    lines = [
        Line(o, f"I've started volunteering at the {place} on {day} mornings, {task}.", f"{k}.main"),
        Line(f, c.any(["That's lovely. How did you get into it?", "Good on you!"])),
        Line(o, "A friend roped me in, and now I actually look forward to it."),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Where has {me.name} started volunteering?",
            f"Where does {me.name} volunteer on {day} mornings?",
            f"Where does {me.name} help out without pay?",
            f"What charity work does {me.name} do at weekends or midweek?",
        ]), [[f"{k}.main"]], place),
        Question("single-hop", c.qv([
            f"What does {me.name} do when volunteering at the {place}?",
            f"What does {me.name} do at the {place} on {day} mornings?",
            f"What does {me.name} do during {me.pos} unpaid shifts?",
        ]), [[f"{k}.main"]], task),
    ]
    fu = [[Line(o, f"Busy shift at the {place} today. My feet hurt but it was a good one.")]]
    return Plan("volunteer", o, [lines], qs, swap=f"Where does {fr.name} volunteer?", followups=fu)


def birthday(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("birthday")
    gift = c.pick(GIFTS)
    giver = c.any(["my partner", "my mum", f"my {me.sibling_rel}", "my flatmate", "my dad"])
    w = c.when()
    lines = [
        Line(o, f"It was my birthday {w.phrase}! {giver.capitalize()} got me a {gift}.", f"{k}.main"),
        Line(f, c.any(["Happy belated birthday!! That's such a good present.",
                       "Happy birthday! I'm terrible, I didn't know!"])),
        Line(o, "Ha, it's fine, I barely remembered myself."),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"What did {me.name} get for {me.pos} birthday?",
            f"What birthday present did {me.name} get?",
            f"What present did {me.name} receive from {giver.replace('my ', me.pos + ' ')}?",
            f"What did {me.name} get as a gift on {me.pos} special day?",
        ]), [[f"{k}.main"]], gift),
        Question("temporal", c.qv([
            f"When was {me.name}'s birthday?",
            f"On what date was {me.name}'s birthday?",
            f"When is {me.name}'s birthday?",
            f"On what date did {me.name} turn a year older?",
        ]), [[f"{k}.main"]], lambda d, w=w: w.answer(d[f"{k}.main"])),
    ]
    fu = [[Line(o, f"Finally used the {gift} properly. Best present in years.")]]
    return Plan("birthday", o, [lines], qs, swap=f"What did {fr.name} get for {fr.pos} birthday?", followups=fu)


def old_friend(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("oldfriend")
    name = c.pick(FRIEND_NAMES)
    city = c.pick(list(CITIES))
    job = c.any(["a museum curator", "a ferry captain", "a tattoo artist", "a sommelier",
                 "a park ranger", "a radio producer"])
    parts = [
        [Line(o, f"My old roommate {name} just moved to {city}. I'm weirdly emotional about it.",
              f"{k}.moved"),
         Line(f, c.any(["Aw. You'll have somewhere to visit though!", "That's a big move for them!"]))],
        [Line(o, f"{name} called, they've landed a job as {job}. So proud.", f"{k}.job"),
         Line(f, c.any(["That's so cool!", "What a job!"]))],
    ]
    qs = [
        Question("multi-hop", c.qv([
            f"What job did {me.name}'s old roommate who moved to {city} land?",
            f"What job has {me.name}'s old roommate landed since moving to {city}?",
            f"What job did {me.name}'s former roommate get after moving to {city}?",
            f"What does the friend of {me.name} who relocated to {city} now do for work?",
        ]), [[f"{k}.moved"], [f"{k}.job"]], job),
        Question("single-hop", c.qv([
            f"Where did {me.name}'s old roommate {name} move to?",
            f"Which city did {me.name}'s old roommate just move to?",
            f"Where did {me.name}'s old flatmate relocate?",
            f"To which city did {name} move?",
        ]), [[f"{k}.moved"]], city),
    ]
    fu = [[Line(o, f"{name} sent photos from {city}. The weather there looks better than here.")]]
    return Plan("oldfriend", o, parts, qs, swap=f"Which of {fr.name}'s friends moved abroad?", followups=fu)


def allergy(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("allergy")
    what, explains = c.pick(ALLERGENS)
    lines = [
        Line(o, f"Turns out I'm allergic to {what}. That explains {explains}.", f"{k}.main"),
        Line(f, c.any(["Oh wow, good to know! I'll remember.", "Yikes. How did you find out?"])),
        Line(o, "Finally did the test at the clinic. Mystery solved."),
    ]
    qs = [Question("single-hop", c.qv([
        f"What is {me.name} allergic to?",
        f"What turned out to be {me.name}'s allergy?",
        f"What did {me.name} find out {me.subj} reacts badly to?",
        f"What must {me.name} avoid because of a test result?",
    ]), [[f"{k}.main"]], what)]
    fu = [[Line(o, "I read every label in the supermarket now. Shopping takes twice as long.")]]
    return Plan("allergy", o, [lines], qs, swap=f"What is {fr.name} allergic to?", followups=fu)


def recipe(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("recipe")
    dish = c.pick(list(DISHES))
    w = c.when()
    lines = [
        Line(o, f"Made my grandma's {dish} {w.phrase} and it actually tasted like hers.", f"{k}.main"),
        Line(f, c.any(["Oh, that's special. Save me some next time?", "That's lovely. Did you cry?"])),
        Line(o, "A little bit, yes. Worth it."),
    ]
    qs = [
        Question("single-hop", c.qv([
            f"Which of {me.pos} grandma's recipes did {me.name} make?",
            f"What did {me.name} make from {me.pos} grandma's recipe?",
            f"Which family dish did {me.name} cook?",
            f"What did {me.name} make from {me.pos} grandmother's recipe?",
        ]), [[f"{k}.main"]], dish),
        Question("open-domain", c.qv([
            f"Which country's cuisine is {dish}, the dish {me.name} made?",
            f"What cuisine is {dish} from, the recipe {me.name} made?",
            f"Which cuisine does the family recipe {me.name} cooked come from?",
            f"The dish {me.name} recreated is from which culinary tradition?",
        ]), [[f"{k}.main"]], DISHES[dish]),
    ]
    fu = [[Line(o, "Going to try another of grandma's recipes next weekend. Wish me luck.")]]
    return Plan("recipe", o, [lines], qs, swap=f"Which recipe of {fr.pos} grandmother did {fr.name} cook?", followups=fu)


def project(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("project")
    proj = c.pick(PROJECTS)
    ahead = c.rng.randint(2, 5)
    m1 = f"<M+{ahead}>"
    parts = [[
        Line(o, f"I'm leading the {proj} project at work. It has to launch by {m1}.", f"{k}.plan"),
        Line(f, c.any(["No pressure then!", "Ooh, in charge! How's the team?"])),
        Line(o, "The team's great. The deadline is not."),
    ]]
    qs = [Question("single-hop", c.qv([
        f"Which project is {me.name} leading at work?",
        f"What project at work is {me.name} leading?",
        f"What is {me.name} in charge of at {me.pos} workplace?",
        f"Which work initiative is {me.name} heading up?",
    ]), [[f"{k}.plan"]], proj)]
    if c.chance(0.65):
        later = ahead + c.rng.randint(1, 3)
        m2 = f"<M:{k}.plan+{later}>"
        parts.append([
            Line(o, f"The {proj} launch slipped. It's {m2} now, which is both a relief and a nightmare.",
                 f"{k}.slip"),
            Line(f, c.any(REACTIONS_BAD)),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"When is the {proj} launch now that it has slipped?",
            f"What month did the {proj} launch slip to?",
            f"When is the {proj} that {me.name} leads due to go live now?",
            f"What is the current deadline for {me.name}'s project?",
        ]), [[f"{k}.slip"]], lambda d: month_name(d[f"{k}.plan"], later)))
    else:
        qs.append(Question("single-hop", c.qv([
            f"When does the {proj} project {me.name} leads have to launch?",
            f"By when must the {proj} project launch?",
            f"By which month must {me.name}'s team deliver?",
        ]), [[f"{k}.plan"]], lambda d: month_name(d[f"{k}.plan"], ahead)))
    fu = [[Line(o, f"The {proj} project had a rough demo today. Nothing worked, everyone smiled.")],
          [Line(f, "How's the big project?"), Line(o, "Alive. Just about.")]]
    return Plan("project", o, parts, qs, swap=f"Which project is {fr.name} leading at work?", followups=fu)


def team_sport(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("team")
    sport, day = c.pick(SPORTS_TEAMS)
    lines = [
        Line(o, f"I joined {a(sport)} team! We train on {day}s.", f"{k}.main"),
        Line(f, c.any(["You? Team sports? I love it.", "Amazing! Are they competitive?"])),
        Line(o, "Very. I mostly run around shouting encouragement."),
    ]
    parts = [lines]
    qs = [Question("single-hop", c.qv([
        f"What team did {me.name} join?",
        f"Which sport's team did {me.name} join?",
        f"Which team sport did {me.name} take up?",
        f"What does {me.name} play with {me.pos} new teammates?",
    ]), [[f"{k}.main"]], sport)]
    day2 = c.any([d for d in WEEKDAYS if d != day])
    if c.chance(0.4):
        parts.append([
            Line(o, f"We've switched {sport} training to {day2}s because of the pitch booking.",
                 f"{k}.moved"),
            Line(f, c.any(["Does that work for you?", "Ah, annoying. Or better?"])),
            Line(o, "Better, honestly. I was always late before."),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"Which day has {me.name}'s {sport} training switched to?",
            f"What day is {me.name}'s {sport} training on since the switch?",
            f"On which day of the week does {me.name} train with the team now?",
            f"When are {me.name}'s team practices currently held?",
        ]), [[f"{k}.moved"]], day2))
    else:
        qs.append(Question("single-hop", c.qv([
            f"Which day does {me.name}'s {sport} team train?",
            f"On which day does {me.name} train for {sport}?",
            f"On which day of the week does {me.name} train with the team?",
        ]), [[f"{k}.main"]], day))
    fu = [[Line(o, f"We lost our {sport} match 6-1. Morale is low, snacks are high.")],
          [Line(o, "Won our first game with the team! I touched the ball twice.")]]
    return Plan("team", o, parts, qs, swap=f"Which team did {fr.name} join?", followups=fu)


def craft(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("craft")
    hobby, thing = c.pick(CRAFTS)
    w = c.when()
    lines = [
        Line(o, f"I've got really into {hobby}. Finished my first {thing} {w.phrase}!", f"{k}.main"),
        Line(f, c.any(["Photo please!", "Look at you, so crafty."])),
        Line(o, "It's wonky but it's mine."),
    ]
    qs = [Question("single-hop", c.qv([
        f"What has {me.name} got really into lately?",
        f"What did {me.name} finish {me.pos} first {thing} in?",
        f"What hobby has {me.name} been absorbed in lately?",
        f"What did {me.name} complete for the first time with {me.pos} new pastime?",
    ]), [[f"{k}.main"]], f"{hobby} (a {thing})")]
    fu = [[Line(o, f"Started a second {thing}. Going better than the first one.")]]
    return Plan("craft", o, [lines], qs, swap=f"What craft did {fr.name} take up?", followups=fu)


def allotment(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("allotment")
    veg = c.rng.sample(VEG, 2)
    plot = c.rng.randint(3, 48)
    lines = [
        Line(o, f"We got an allotment! Plot {plot}, and we've put in {veg[0]} and {veg[1]}.", f"{k}.main"),
        Line(f, c.any(["Living the good life!", "Ooh, I want a share of the harvest."])),
    ]
    qs = [Question("single-hop", c.qv([
        f"What has {me.name} put in on the allotment?",
        f"What is growing on {me.name}'s allotment plot?",
        f"What is {me.name} growing on {me.pos} patch of land?",
        f"Which vegetables did {me.name} plant?",
    ]), [[f"{k}.main"]], f"{veg[0]} and {veg[1]}")]
    fu = [[Line(o, f"The slugs found our {veg[0]}. War has been declared.")],
          [Line(o, "Spent three hours weeding the plot. My back is furious.")]]
    return Plan("allotment", o, [lines], qs, swap=f"What is {fr.name} growing in {fr.pos} garden?", followups=fu)


def phone(c: Ctx, o: int) -> Plan:
    me, fr, o, f = _names(c, o)
    k = c.key("phone")
    model, model2 = c.rng.sample(PHONES, 2)
    lines = [
        Line(o, f"My phone died in the bath (don't ask), so I got a {model}.", f"{k}.main"),
        Line(f, c.any(["RIP old phone. How's the new one?", "In the bath?! Okay, I won't ask."])),
    ]
    parts = [lines]
    qs = [Question("single-hop", c.qv([
        f"What phone did {me.name} get after the old one died?",
        f"What phone did {me.name} get?",
        f"What did {me.name} replace {me.pos} drowned mobile with?",
        f"Which handset did {me.name} buy after the bath accident?",
    ]), [[f"{k}.main"]], model)]
    if c.chance(0.4):
        parts.append([
            Line(o, f"The {model} lasted three months before the screen cracked. I've got a {model2} now.",
                 f"{k}.again"),
            Line(f, c.any(["You and phones are not friends.", "Get a case this time!"])),
        ])
        qs.append(Question("knowledge-update", c.qv([
            f"What phone does {me.name} have now, after the {model} cracked?",
            f"Which phone did {me.name} get after the {model} screen cracked?",
            f"What handset does {me.name} use now?",
            f"Which mobile is {me.name} currently carrying around?",
        ]), [[f"{k}.again"]], model2))
    fu = [[Line(o, "Still setting up the phone. I've lost every photo from last year.")]]
    return Plan("phone", o, parts, qs, swap=f"Which phone did {fr.name} buy?", followups=fu)


FAMILIES = [pet, new_job, move, race, trip, lessons, baby, book, injury, paint, car, diet,
            partner, evening_class, exam, concert, volunteer, birthday, old_friend, allergy,
            recipe, project, team_sport, craft, allotment, phone]

# Topics never discussed in any conversation (unanswerable questions), by wording.
NEVER = [
    "What is {X}'s favourite ski resort?",
    "Which political party does {X} vote for?",
    "What was the name of {X}'s first primary school teacher?",
    "How much did {X} pay for {P} flat?",
    "What is {X}'s blood type?",
    "Which football club does {X} support?",
    "What brand of toothpaste does {X} buy?",
    "How many tattoos does {X} have?",
    "What was {X}'s grade in maths at school?",
    "Which cryptocurrency did {X} invest in?",
    "What is the registration number of {X}'s motorbike?",
    "Who was {X}'s best man at the wedding?",
    "What is {X}'s shoe size?",
    "Which opera did {X} see in Vienna?",
    "What is the name of {X}'s goldfish?",
    "How many languages can {X} speak fluently?",
]
