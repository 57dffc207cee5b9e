# ruff: noqa: E501 (the templates and pools are data; long lines read better unwrapped)
"""Personas and the value pools the conversation generator draws from.

Every string here was written for pymemory's benchmark. Names, places and titles are
ordinary words or invented (bands, books, companies); real cities and countries are used
where a question needs world knowledge (open-domain: "which language ...").

Pools that the held-out split must not share with the tuning split are given as pairs
``(tune, heldout)``: persona names, pet names, invented titles and companies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --- people -------------------------------------------------------------------------------

# (name, pronoun) pairs; "she" / "he".
NAMES_TUNE = [
    ("Maya", "she"), ("Leo", "he"), ("Priya", "she"), ("Tomasz", "he"), ("Aisha", "she"),
    ("Jonah", "he"), ("Camille", "she"), ("Diego", "he"), ("Hannah", "she"), ("Kwame", "he"),
    ("Sofia", "she"), ("Oliver", "he"), ("Mei", "she"), ("Rafael", "he"),
]  # fmt: skip
NAMES_HELDOUT = [
    ("Ingrid", "she"), ("Samir", "he"), ("Lucia", "she"), ("Elliot", "he"), ("Nadia", "she"),
    ("Felix", "he"), ("Yuki", "she"), ("Marcus", "he"), ("Zara", "she"), ("Callum", "he"),
]  # fmt: skip

RELATIONSHIPS = [
    "old university friends", "former flatmates", "cousins", "friends from a running club",
    "ex-colleagues", "childhood neighbours", "friends who met at a language class",
]  # fmt: skip

HOME_CITIES = [
    "Leeds", "Bristol", "Manchester", "Glasgow", "Cardiff", "Brighton", "Sheffield",
    "Nottingham", "Edinburgh", "Norwich", "York", "Belfast", "Oxford", "Liverpool",
]  # fmt: skip

JOBS = [
    ("nurse", "the hospital"), ("primary school teacher", "school"), ("software tester", "work"),
    ("architect", "the studio"), ("pharmacist", "the pharmacy"), ("accountant", "the office"),
    ("graphic designer", "the agency"), ("physiotherapist", "the clinic"),
    ("bus driver", "the depot"), ("data analyst", "the office"), ("chef", "the restaurant"),
    ("librarian", "the library"), ("vet nurse", "the surgery"), ("electrician", "site"),
]  # fmt: skip

SIBLING_NAMES = [
    "Rosa", "Ben", "Clara", "Sam", "Nell", "Theo", "Iris", "Dan", "Lotte", "Rory", "Esme",
    "Jack", "Amara", "Owen", "Freya", "Hugo", "Tess", "Ravi",
]  # fmt: skip

PARTNER_NAMES = [
    ("Tomás", "he"), ("Gabe", "he"), ("Ruth", "she"), ("Ivo", "he"), ("Lena", "she"),
    ("Arjun", "he"), ("Bea", "she"), ("Milo", "he"), ("Anouk", "she"), ("Kofi", "he"),
    ("Petra", "she"), ("Joel", "he"),
]  # fmt: skip

FRIEND_NAMES = [
    "Harriet", "Niko", "Polly", "Desmond", "Wren", "Yusuf", "Greta", "Alfie", "Ines",
    "Basil", "Marta", "Caleb", "Juno", "Stellan",
]  # fmt: skip

KID_NAMES = ["Isla", "Finn", "Ada", "Noah", "Lily", "Arlo", "Maisie", "Ezra", "Poppy", "Kit"]


@dataclass
class Persona:
    name: str
    pronoun: str  # "she" or "he"
    job: str
    workplace: str
    city: str
    sibling: str
    sibling_rel: str  # "sister" / "brother"
    kid: str | None = None
    facts: set[str] = field(default_factory=set)  # families this persona has a fact of

    @property
    def subj(self) -> str:
        return self.pronoun

    @property
    def obj(self) -> str:
        return "her" if self.pronoun == "she" else "him"

    @property
    def pos(self) -> str:
        return "her" if self.pronoun == "she" else "his"

    @property
    def Subj(self) -> str:
        return self.pronoun.capitalize()


# --- pools for the fact families -----------------------------------------------------------

PETS = {
    "cat": {
        "breeds": ["grey tabby", "black cat", "ginger kitten", "tortoiseshell cat",
                   "fluffy white cat", "one-eyed tomcat"],
        "class": "a cat (a feline)",
    },
    "dog": {
        "breeds": ["beagle", "rescue greyhound", "scruffy terrier", "collie cross",
                   "chocolate labrador puppy", "tiny dachshund"],
        "class": "a dog (a canine)",
    },
    "rabbit": {
        "breeds": ["lop-eared rabbit", "pair of rabbits", "little brown bunny"],
        "class": "a rabbit (a lagomorph, not a rodent)",
    },
}  # fmt: skip
PET_NAMES = (
    ["Pepper", "Biscuit", "Juniper", "Moss", "Pickle", "Olive", "Tofu", "Bramble", "Clementine"],
    ["Waffles", "Sprout", "Marble", "Nutmeg", "Pebble", "Fig", "Button"],
)
SHELTERS = ["rescue centre", "animal shelter", "rehoming charity", "rescue down the road",
            "shelter by the ring road"]  # fmt: skip

COMPANIES = (
    ["Brightwater Analytics", "Halden & Co", "Northgate Health", "Lumen Studio",
     "Kestrel Logistics", "Orchard Lane Schools", "Fennel Foods"],
    ["Bluepine Energy", "Marlow Digital", "Cobalt Ridge Labs", "Seacourt Insurance",
     "Willowby Press", "Tarn Engineering"],
)  # fmt: skip
NEW_ROLES = [
    "senior designer", "project coordinator", "operations manager", "research assistant",
    "team lead", "clinical specialist", "content editor", "quality engineer",
]  # fmt: skip

# City -> (country, main language, continent). A mix of domestic and abroad.
CITIES = {
    "Lisbon": ("Portugal", "Portuguese", "Europe"),
    "Porto": ("Portugal", "Portuguese", "Europe"),
    "Valencia": ("Spain", "Spanish", "Europe"),
    "Montreal": ("Canada", "French", "North America"),
    "Utrecht": ("the Netherlands", "Dutch", "Europe"),
    "Gothenburg": ("Sweden", "Swedish", "Europe"),
    "Dublin": ("Ireland", "English", "Europe"),
    "Melbourne": ("Australia", "English", "Oceania"),
    "Bologna": ("Italy", "Italian", "Europe"),
    "Lyon": ("France", "French", "Europe"),
    "Kraków": ("Poland", "Polish", "Europe"),
    "Hamburg": ("Germany", "German", "Europe"),
    "Wellington": ("New Zealand", "English", "Oceania"),
    "Vancouver": ("Canada", "English", "North America"),
}
TRIP_PLACES = {
    "Kyoto": ("Japan", "Asia", "the temples at dawn, before the tour buses"),
    "Marrakesh": ("Morocco", "Africa", "the spice market and the mint tea everywhere"),
    "Reykjavik": ("Iceland", "Europe", "the hot springs in the snow"),
    "Oaxaca": ("Mexico", "North America", "the mole, I had it four nights running"),
    "Hanoi": ("Vietnam", "Asia", "the street food, honestly every single corner"),
    "Cape Town": ("South Africa", "Africa", "the view from the top of the mountain"),
    "Tbilisi": ("Georgia", "Asia", "the sulphur baths and the bread"),
    "Lima": ("Peru", "South America", "the ceviche, best thing I've eaten all year"),
    "Seville": ("Spain", "Europe", "the orange trees and the flamenco bar we stumbled into"),
    "Tromsø": ("Norway", "Europe", "seeing the northern lights on the second night"),
    "Quebec City": ("Canada", "North America", "the old town walls in the snow"),
    "Kotor": ("Montenegro", "Europe", "swimming in the bay every morning"),
}
INSTRUMENTS = {
    "cello": "string", "ukulele": "string", "violin": "string", "trumpet": "brass",
    "saxophone": "woodwind", "clarinet": "woodwind", "piano": "keyboard",
    "drums": "percussion", "flute": "woodwind", "double bass": "string",
}  # fmt: skip
TEACHER_NAMES = ["Mr Okafor", "Greta", "a retired jazz player called Vince", "Madame Roux",
                 "a student called Pip", "Mrs Lindqvist"]  # fmt: skip

BOOKS = (
    [("The Salt Orchard", "Imogen Vale", "two sisters running a failing cider farm"),
     ("Nine Lamps", "Teodor Haas", "a lighthouse keeper who starts getting letters from 1911"),
     ("The Quiet Cartographer", "Ruth Amadi", "a mapmaker who invents an island to save her job"),
     ("Paper Harbour", "Luis Ferrant", "a heist in a shipping town, told backwards")],
    [("Winter Bees", "Hana Morrow", "a beekeeper hiding a fugitive through one winter"),
     ("The Long Table", "Oskar Brandt", "five family dinners over forty years"),
     ("Glass Tide", "Priyanka Rao", "a marine biologist and a drowned village")],
)  # fmt: skip
BANDS = (
    ["The Paper Lanterns", "Velvet Tram", "Harbour Lights Collective", "Nova & the Moths"],
    ["Static Orchard", "The Low Tides", "Copper Kite", "Wildflower Radio"],
)  # fmt: skip
VENUES = ["the Academy", "a tiny pub back room", "the old corn exchange", "the park festival",
          "the arena", "a converted church"]  # fmt: skip

RACES = [("half marathon", "21K"), ("10K", "ten kilometres"), ("marathon", "42K"),
         ("trail race", "the hills"), ("5K parkrun", "five kilometres")]  # fmt: skip
INJURIES = [
    ("sprained my ankle", "ankle", "netball"), ("twisted my knee", "knee", "five-a-side"),
    ("broke my wrist", "wrist", "ice skating"), ("pulled a muscle in my back", "back", "bouldering"),
    ("cracked a rib", "rib", "mountain biking"), ("dislocated my finger", "finger", "volleyball"),
]  # fmt: skip
PAINT = ["sage green", "terracotta", "navy blue", "warm white", "mustard yellow",
         "dusty pink", "charcoal grey", "forest green"]  # fmt: skip
CARS = [("Skoda Octavia", "estate"), ("Toyota Yaris", "hatchback"), ("Volvo V60", "estate"),
        ("Nissan Leaf", "electric hatchback"), ("Mazda MX-5", "two-seater convertible"),
        ("Ford Transit", "van")]  # fmt: skip
CAR_COLOURS = ["silver", "dark red", "white", "bright blue", "black", "racing green"]
CLASSES = [("pottery", "ceramics"), ("life drawing", "sketching"), ("salsa", "dance"),
           ("Italian", "language"), ("woodwork", "carpentry"), ("improv comedy", "acting"),
           ("sign language", "signing")]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
CERTS = [("driving test", "driving licence"), ("ACCA final", "accountancy qualification"),
         ("first aid course", "first aid certificate"), ("PRINCE2 exam", "project management"),
         ("Spanish B2 exam", "Spanish certificate"), ("scuba open water course", "diving")]  # fmt: skip
VOLUNTEER = [("food bank", "sorting donations and packing parcels"),
             ("animal shelter", "walking the dogs nobody else will"),
             ("hospice shop", "pricing an endless stream of books"),
             ("community garden", "weeding and fixing the raised beds"),
             ("reading scheme at the library", "listening to seven-year-olds read")]  # fmt: skip
GIFTS = ["record player", "pasta machine", "pair of hiking boots", "watercolour set",
         "vintage film camera", "hammock", "bread-making course", "telescope"]  # fmt: skip
ALLERGENS = [("cashews", "why that curry nearly killed me"),
             ("cats", "why I sneeze at my aunt's house"),
             ("shellfish", "the prawn incident at the wedding"),
             ("penicillin", "the rash last winter"),
             ("birch pollen", "why April is always miserable")]  # fmt: skip
DISHES = {
    "pierogi": "Polish", "jollof rice": "West African", "moussaka": "Greek",
    "goulash": "Hungarian", "dal makhani": "Indian", "paella": "Spanish",
    "bibimbap": "Korean", "empanadas": "Argentinian",
}  # fmt: skip
PROJECTS = ["booking app", "warehouse system", "new website", "customer portal",
            "rebrand", "payroll migration"]  # fmt: skip
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip
SPORTS_TEAMS = [("netball", "Wednesday"), ("five-a-side football", "Thursday"),
                ("water polo", "Monday"), ("ultimate frisbee", "Sunday"),
                ("cricket", "Saturday"), ("roller derby", "Tuesday")]  # fmt: skip
CRAFTS = [("knitting", "scarf"), ("woodturning", "bowl"), ("bookbinding", "notebook"),
          ("candle making", "set of candles"), ("embroidery", "cushion cover")]  # fmt: skip
VEG = ["courgettes", "runner beans", "potatoes", "tomatoes", "garlic", "rhubarb"]
PHONES = ["second-hand Pixel", "refurbished iPhone", "cheap Motorola", "Fairphone"]
SCHOOLS = ["Oakfield Primary", "St Anne's", "Riverside Nursery", "Hillcrest Academy"]
