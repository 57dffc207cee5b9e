
"""Fact families: the things friends tell each other, and the questions asked about them.

Each family returns a :class:`~.base.Plan`: one or more episodes (lines with evidence
keys) and questions citing those keys. Questions are worded apart from the evidence on
purpose (a "furry companion" for a cat, "relocating" for moving), except where a real
user would name the thing (a band, a city). Families that change over time (a house
move that falls through, a new personal best) yield knowledge-update questions whose
gold is the latest statement; the earlier one stays behind as a distractor.
"""

from __future__ import annotations

from .facts_learning import book, evening_class, exam, lessons
from .facts_life import allergy, baby, car, diet, injury, move, new_job, partner, pet, phone
from .facts_pastimes import (
            allotment,
            birthday,
            concert,
            craft,
            old_friend,
            paint,
            project,
            race,
            recipe,
            team_sport,
            trip,
            volunteer,
)

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
