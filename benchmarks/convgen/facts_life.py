# ruff: noqa: E501 (the templates and pools are data; long lines read better unwrapped)
"""Fact families about a life changing: a pet, a job, a move, a baby, an injury, a car,
a diet, a partner, an allergy, a phone (see :mod:`.facts`)."""

from __future__ import annotations

from .base import Ctx, Line, Plan, Question, a, month_name
from .chatter import REACTIONS_BAD, REACTIONS_GOOD
from .facts_common import names_of, pair
from .people import (
    ALLERGENS,
    CAR_COLOURS,
    CARS,
    CITIES,
    COMPANIES,
    INJURIES,
    NEW_ROLES,
    PARTNER_NAMES,
    PET_NAMES,
    PETS,
    PHONES,
    SHELTERS,
)


def pet(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    qs.append(Question("open-domain", *pair(c.qva([
        (f"What language do people speak in {final}, where {me.name} is moving?", language),
        (f"Which country is {final} in, the city {me.name} is moving to?", country),
        (f"Which language will {me.name} mostly hear around {me.obj} after the move?", language),
        (f"In which country will {me.name} be living once {me.subj} has relocated?", country),
    ]), [[final_key]])))
    fu = [[Line(o, "Started packing. We own far too many mugs for two people.")],
          [Line(f, "How's the move planning going?"), Line(o, "Slowly. There's a spreadsheet.")],
          [Line(o, f"Found a flat we like in {final}, fingers crossed.")]]
    return Plan("move", o, parts, qs, min_gap=4, swap=f"Which city is {fr.name} moving to?", followups=fu)


def baby(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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


def injury(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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


def car(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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


def allergy(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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


def phone(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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


