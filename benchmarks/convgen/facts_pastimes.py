# ruff: noqa: E501 (the templates and pools are data; long lines read better unwrapped)
"""Fact families about pastimes and occasions: races, trips, paint, concerts,
volunteering, birthdays, old friends, recipes, projects, team sports, crafts,
allotments (see :mod:`.facts`)."""

from __future__ import annotations

from .base import Ctx, Line, Plan, Question, a, month_name
from .chatter import REACTIONS_BAD, REACTIONS_GOOD
from .facts_common import names_of, pair
from .people import (
    BANDS,
    CITIES,
    CRAFTS,
    DISHES,
    FRIEND_NAMES,
    GIFTS,
    PAINT,
    PROJECTS,
    RACES,
    SPORTS_TEAMS,
    TRIP_PLACES,
    VEG,
    VENUES,
    VOLUNTEER,
    WEEKDAYS,
)

RACE_MINUTES = {"half marathon": (95, 150), "10K": (42, 70), "marathon": (200, 300),
                "trail race": (70, 180), "5K parkrun": (19, 36)}


def _race_time(minutes: int, seconds: int) -> str:
    h, m = divmod(minutes, 60)
    if h:
        return f"{h} hour{'s' if h > 1 else ''} {m} minutes"
    return f"{m} minutes {seconds} seconds"



def race(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
        Question("open-domain", *pair(c.qva([
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


def paint(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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


def concert(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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


def recipe(c: Ctx, o: int) -> Plan:
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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
    me, fr, o, f = names_of(c, o)
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


