#!/usr/bin/env python3
"""Build the long-conversation retrieval eval set (issue 13, Build item 4).

It writes ``lab/vivy_lab/data/longconv_eval.json`` (the full set: ~8 guilds, ~5,000 messages,
~600 questions) and ``tests/lab/eval/longconv_small.json`` (the first 2 guilds with ~36 questions
each, for the test suite). Each guild is a small group (2 or 3 members) chatting in one
channel over 6-16 weeks, in 15-25 sessions days apart; each session carries the "ideal LLM
summary" note it would become. Each question carries the ids of the messages that answer it,
in one of five kinds: single-hop, multi-hop (messages from two or more sessions), temporal
(time matters; asked after the last session, so "last month" resolves), open-domain
(an inference from what a member said, without the question's key word) and paraphrase (a
fact asked in words of the asker's own: no content word of the question, after porter
stemming, is in the answer message or the three messages either side of it, which the
generator checks with SQLite's FTS5 porter tokenizer, the one the retriever's keyword index
uses; only what the words mean can find the answer).

How the chat is made: every member gets a few life *threads* (a pet, a job change, a trip, a
hobby project, a family event, a move, an illness, a course, a game). A thread is a list of
beats, each placed in a later session than the one before; a beat is a short exchange in
which the facts that questions ask about are said in passing (tagged ``#tag`` below), in the
words people use for them ("Bean! best name for a puppy ever"). Later sessions mention the
thread again with the same common words but without the fact (the distractors, so the rare
detail words decide), members show *traits* in side remarks (the open-domain evidence) and
the rest is small talk. Questions are mostly worded close to what was said, as members ask
("What's the name of Sam's puppy?"); about one in five uses other words (phrasings marked
``~``) and many carry an aside ("remind me, ..."). The note of a session summarises its
threads, but spells out a beat's details (names, places, numbers) only about half the time
and never the side details (a hotel, a treatment), so most single-hop answers are not in the
note. The script prints, per kind, how much of a question's wording is found in its answer
messages, in their sessions' notes and in those sessions' raw text, and how often the note
gives a single-hop answer away.

Everything is deterministic: one seeded ``random.Random`` per guild, no network, no model, so
a rerun with the same seed gives the same bytes. To grow the set, add a thread kind (a
function returning a ``Thread``, listed in ``THREAD_KINDS``), more items to a pool, more
phrasings to a question list, or raise ``--guilds``; then rerun and commit both files.

Usage:  python scripts/build_longconv_eval.py [--seed N] [--guilds N] [--out PATH] [--small-out PATH]
"""

# Dialogue and phrasing lines are kept on one line each for readability.
# ruff: noqa: E501

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "lab" / "vivy_lab" / "data" / "longconv_eval.json"
DEFAULT_SMALL_OUT = ROOT / "tests" / "lab" / "eval" / "longconv_small.json"
DEFAULT_SEED = 7
DEFAULT_GUILDS = 8
KINDS = ("single-hop", "multi-hop", "temporal", "open-domain", "paraphrase")
QUOTA = {"single-hop": 22, "multi-hop": 12, "temporal": 16, "open-domain": 12, "paraphrase": 12}
SMALL_GUILDS = 2
SMALL_QUOTA = {"single-hop": 11, "multi-hop": 6, "temporal": 7, "open-domain": 6, "paraphrase": 6}
FIRST_DAY = datetime(2026, 1, 5, tzinfo=UTC)
DETAIL_SHARE = 0.45  # how often a note spells out a beat's details rather than its gist
PARAPHRASE_SHARE = 0.2  # how often a question is asked in words of its own ("~" phrasings)
ASIDE_SHARE = {
    "single-hop": 0.6,
    "multi-hop": 0.7,
}  # how often a question comes with an aside ("remind me, ...")
ID_BASE = {
    "guild": 872000000000000000,
    "channel": 872100000000000000,
    "user": 872200000000000000,
    "message": 872300000000000000,
}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
STOPWORDS = frozenset(
    "a an the and or but so to of in on at for with from by is are was were be been am i im i'm you your he she his her him it its we our they them their this that what which who when where how did do does done have has had not no yes just like lol really very too also about after before then than there here get got going go went can could would will my me up out if as into over all some any one new still now back more much tbh omg haha ok okay yeah oh".split()
)


def iso(dt: datetime) -> str:
    """The eval file's time format: ``2026-02-02T19:04:00Z``."""
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def content_words(text: str) -> list[str]:
    """Lower-cased words of three or more letters that are not stopwords, in order (an
    apostrophe splits a word: "Sam's" gives "sam")."""
    return [w for w in re.findall(r"[^\W_]+", text.lower()) if len(w) > 2 and w not in STOPWORDS]


PEOPLE = [
    ("Sam", "he", ["sammy", "samwise"]),
    ("Maya", "she", ["may", "mayz"]),
    ("Jordan", "he", ["jord", "jojo"]),
    ("Priya", "she", ["pri"]),
    ("Theo", "he", ["teddy"]),
    ("Nadia", "she", ["nads"]),
    ("Marcus", "he", ["marc"]),
    ("Lena", "she", ["len", "lenny"]),
    ("Omar", "he", ["omi"]),
    ("Grace", "she", ["gracie"]),
    ("Felix", "he", ["lix"]),
    ("Hana", "she", ["hanz"]),
    ("Diego", "he", ["dee"]),
    ("Zoe", "she", ["zozo"]),
    ("Ravi", "he", ["rav"]),
    ("Ines", "she", ["nessie"]),
    ("Ben", "he", ["benji", "benny"]),
    ("Aisha", "she", ["ash"]),
    ("Leo", "he", ["leon"]),
    ("Mira", "she", ["mimi"]),
    ("Tomas", "he", ["tommy", "tom"]),
    ("Yuki", "she", ["yuks"]),
    ("Arjun", "he", ["juni"]),
    ("Clara", "she", ["clary"]),
]
CHANNELS = ["hangout", "general", "the-couch", "chat", "off-topic", "daily", "lounge", "random"]

# Trait -> (remarks that show it without naming it, inference questions, trait words the questions avoid in remarks)
TRAITS: dict[str, tuple[list[str], list[str]]] = {
    "outdoorsy": (
        [
            "did the ridge trail before sunrise, legs are dead but the view 😍",
            "nothing beats a weekend in a tent with no signal",
            "got new boots, breaking them in on the river path",
            "we kayaked out to the little island sunday",
        ],
        [
            "Would {O} enjoy a hiking trip?",
            "Is {O} the type to spend a weekend in the mountains?",
            "Would a national park trip be a good birthday idea for {O}?",
        ],
    ),
    "flying": (
        [
            "i'd honestly rather sit on a 14 hour train than get on a plane",
            "turbulence last time had me gripping the armrest the whole way",
            "every time the engines rev up I'm praying lol",
        ],
        [
            "Would {O} be comfortable with a long-haul flight?",
            "Should the group plan an overseas getaway by air for {O}?",
        ],
    ),
    "nightowl": (
        [
            "it's 3am and I'm wide awake as usual",
            "mornings are a crime against humanity",
            "did my best work at 2am again, don't judge",
        ],
        ["Would {O} be up for a 6am gym session?", "Is {O} an early riser?"],
    ),
    "veggie": (
        [
            "haven't had meat in like six years",
            "the lentil curry at that place slaps",
            "tofu scramble for breakfast, obviously",
        ],
        [
            "Would {O} enjoy a steakhouse dinner?",
            "What should they keep in mind picking a BBQ place with {O}?",
        ],
    ),
    "introvert": (
        [
            "big parties drain me for a week honestly",
            "cancelled plans = best feeling",
            "a quiet night in with a book is my ideal saturday",
        ],
        ["Would {O} love a huge music festival?", "Would {O} want a big surprise party?"],
    ),
    "cook": (
        [
            "made fresh pasta from scratch tonight, flour everywhere",
            "my sourdough discard crackers are elite",
            "trying to nail my grandma's dumpling recipe",
        ],
        [
            "Would {O} appreciate a nice chef's knife as a gift?",
            "Would {O} be a good person to ask for a dinner recipe?",
        ],
    ),
    "reader": (
        [
            "finished my fourth novel this month",
            "the library hold list is my social life",
            "stayed up till 1 to finish the last chapter",
        ],
        ["Would {O} like an e-reader as a present?", "Is {O} much of a bookworm?"],
    ),
    "saver": (
        [
            "trying to save every cent for a down payment",
            "made a spreadsheet for my grocery budget lol",
            "no takeout this month, strict budget",
        ],
        [
            "Would {O} splurge on front-row concert tickets right now?",
            "Is {O} careful with money these days?",
        ],
    ),
    "scifi": (
        [
            "rewatching The Expanse for the third time",
            "anything with spaceships and I'm in",
            "just finished Project Hail Mary and cried",
        ],
        ["Would {O} enjoy watching Dune?", "What kind of movie should they pick for {O}?"],
    ),
    "cold": (
        [
            "anything below 10 degrees and I'm hibernating",
            "wearing two hoodies inside rn",
            "winter can end any minute now thanks",
        ],
        ["Would {O} enjoy a ski holiday?", "Should {O} move somewhere like Finland?"],
    ),
    "sporty": (
        [
            "the game last night!!! that last-second three",
            "got tickets for the home opener",
            "my fantasy team is in shambles",
        ],
        ["Would {O} want to watch a basketball game together?", "Is {O} into sports?"],
    ),
    "musician": (
        [
            "practiced scales for an hour, neighbours love me",
            "new strings on the guitar finally",
            "jammed with my old bandmates yesterday",
        ],
        ["Would {O} like a gift card for a music store?", "Does {O} play any instrument?"],
    ),
}
REACTIONS = [
    "lol",
    "lmao",
    "nice!",
    "omg",
    "haha",
    "wait really?",
    "😂",
    "damn",
    "no way",
    "love that",
    "oof",
    "ahh",
    "yesss",
    "👀",
    "fair",
    "same tbh",
    "true",
    "ugh",
]
FOOD = [
    "tacos",
    "leftover pizza",
    "ramen",
    "pad thai",
    "a sad salad",
    "pho",
    "mac and cheese",
    "curry",
    "dumplings",
    "toast lol",
]
SHOWS = [
    "Severance",
    "The Bear",
    "Shogun",
    "Slow Horses",
    "Great British Bake Off",
    "Abbott Elementary",
    "Andor",
    "Only Murders",
]
WEEKEND = [
    "nothing, sleeping",
    "brunch with some friends",
    "cleaning my disaster of a room",
    "probably a movie",
    "farmers market if it doesn't rain",
    "visiting family",
]
WEATHER = ["pouring", "freezing", "weirdly sunny", "so windy", "grey and gross", "snowing again"]
SLOTS = {
    "food": FOOD,
    "food2": FOOD,
    "show": SHOWS,
    "weekend": WEEKEND,
    "weekend2": WEEKEND,
    "weather": WEATHER,
    "animal": ["goat", "raccoon", "capybara", "duck"],
    "song": ["that 80s one from the ad", "the theme from that cartoon", "something by ABBA, help"],
    "podcast": ["shipwrecks", "unsolved heists", "the history of fonts", "bad movies"],
    "snack": ["pretzels", "gummy bears", "chips", "trail mix (just the chocolate)"],
    "movie": [
        "the new Pixar one",
        "an old Hitchcock",
        "that heist movie everyone likes",
        "a horror movie I regret",
    ],
    "verdict": ["mid", "loved it", "fell asleep halfway", "cried twice"],
    "news": [
        "escaped zoo penguin",
        "giant sinkhole",
        "lottery guy",
        "town that elected a dog mayor",
    ],
    "gift_idea": [
        "a nice candle",
        "fancy chocolate",
        "a plant, can't go wrong",
        "gift card, always",
    ],
    "boardgame": ["Catan", "Codenames", "Ticket to Ride", "Wingspan"],
    "dish": ["chili", "lasagna", "banana bread", "fried rice"],
    "band": ["Paramore", "Arctic Monkeys", "Phoenix", "The National"],
    "price": ["$90", "$120", "$150"],
    "item": ["a lamp", "new headphones", "a weird sweater", "a standing desk"],
}
TRAIT_REACTIONS = [
    "lol",
    "nice!",
    "haha",
    "fair",
    "same tbh",
    "respect",
    "😂",
    "love that",
    "valid",
]
SMALL_TALK: list[tuple[str, list[str]]] = [
    (
        "dinner",
        [
            "a: what are you having for dinner|what's for dinner tonight|dinner plans?",
            "b: {food} probably. you?|{food} i think|probably {food}, you?",
            "a: {food2}",
            "b: lol respectable",
        ],
    ),
    (
        "TV shows",
        [
            "a: did you watch the new ep of {show}",
            "b: not yet no spoilers!!|NO SPOILERS|saving it for tonight",
            "a: my lips are sealed|ok ok",
            "a: but. wow|that ending tho",
        ],
    ),
    (
        "the weather",
        [
            "a: it's {weather} here today|{weather} again today|weather update: {weather}",
            "b: ugh same|gross|same here",
            "b: i refuse to go outside|staying in all day",
        ],
    ),
    ("", ["a: brb coffee|brb|one sec, door", "a: back|ok back|back!"]),
    (
        "their day",
        [
            "a: how was your day|how was today?|how's your day going",
            "b: long. yours?|fine! yours?|meh. you?",
            "a: eh. fine. nothing exciting|pretty chill actually|a lot of meetings lol",
        ],
    ),
    (
        "weekend plans",
        [
            "a: any plans this weekend?|what are you up to this weekend?",
            "b: {weekend}",
            "a: solid|nice|sounds good",
            "b: you?",
            "a: {weekend2}",
        ],
    ),
    (
        "a viral video",
        [
            "a: lmaooo did you see the video of the {animal} on the trampoline",
            "b: YES i sent it to my whole family",
        ],
    ),
    (
        "music",
        [
            "a: this song has been stuck in my head all day",
            "b: which one",
            "a: {song}",
            "b: oh no now it's in mine",
        ],
    ),
    (
        "being tired",
        [
            "a: i need a nap so bad|so sleepy rn",
            "b: it's 7pm|it's barely evening",
            "a: and?|your point?",
        ],
    ),
    (
        "what to watch",
        [
            "a: ok what should I watch tonight|need a show rec",
            "b: {show}!!|{show}, trust me",
            "a: i'll give it a shot|adding it to the list",
        ],
    ),
    (
        "a cracked phone",
        [
            "a: my phone screen cracked AGAIN",
            "b: noooo",
            "a: third time this year, i need a case that isn't decorative",
        ],
    ),
    (
        "a new restaurant",
        [
            "a: tried that new place on the corner|went to the new spot downtown",
            "b: any good?|and?",
            "a: the {food} was decent, service slow",
        ],
    ),
    (
        "groceries",
        ["a: grocery store was a zoo", "b: saturday?", "a: tuesday!! who are these people"],
    ),
    ("a podcast", ["a: started a podcast about {podcast}", "b: link?", "a: sent", "b: ty"]),
    ("laundry", ["a: doing laundry at midnight, living the dream", "b: the glamour"]),
    (
        "a package",
        [
            "a: my package says delivered but it's not here",
            "b: check with the neighbours",
            "a: it was behind the bins lol",
        ],
    ),
    ("", ["a: lol", "b: 😂"]),
    (
        "snacks",
        [
            "a: ate an entire bag of {snack}|just demolished a bag of {snack}",
            "b: no regrets|respect",
            "a: some regrets|my stomach disagrees",
        ],
    ),
    (
        "a movie",
        ["a: watched {movie} last night|finally saw {movie}", "b: and??|thoughts?", "a: {verdict}"],
    ),
    ("sleep", ["a: slept 11 hours", "b: jealous", "a: still tired somehow"]),
    (
        "the news",
        ["a: did you see the thing about the {news}", "b: yeah wild", "a: the world is so weird"],
    ),
    (
        "a birthday",
        [
            "a: it's my coworker's birthday tomorrow, what do I get someone I barely know",
            "b: {gift_idea}",
            "a: perfect",
        ],
    ),
    (
        "coffee",
        [
            "a: third coffee of the day|on coffee number 3",
            "b: that's a cry for help|hydrate pls",
            "a: it's a lifestyle|coffee is hydration",
        ],
    ),
    ("a board game", ["a: we played {boardgame} last night", "b: who won", "a: not me. never me"]),
    ("", ["a: wait", "a: nvm"]),
    (
        "traffic",
        ["a: traffic was insane today", "b: accident?", "a: construction. forever construction"],
    ),
    ("a meme", ["a: [sent a meme]", "b: LMAO", "b: this is literally you"]),
    (
        "the gym",
        [
            "a: went to the gym for the first time in a month",
            "b: proud",
            "a: can't lift my arms now",
        ],
    ),
    (
        "cleaning",
        [
            "a: I cleaned the fridge and found something from last year",
            "b: ew",
            "a: we don't talk about it",
        ],
    ),
    ("a recipe", ["a: do you have a good {dish} recipe", "b: I'll send you my mom's", "a: legend"]),
    (
        "",
        [
            "a: how are you btw|how are things btw",
            "b: good! busy. you?|not bad! you?|tired but ok",
            "a: same same|same honestly|good good",
        ],
    ),
    (
        "a concert",
        [
            "a: {band} is touring again",
            "b: tickets are probably insane",
            "a: {price} for the cheap seats 💀",
        ],
    ),
    ("a haircut", ["a: got a haircut", "b: pics", "a: no. it's bad", "b: pics!!!"]),
    (
        "online shopping",
        [
            "a: put {item} in my cart three times and took it out again",
            "b: just buy it",
            "a: enabler",
        ],
    ),
    (
        "a power cut",
        [
            "a: power went out for like two hours",
            "b: what did you do",
            "a: sat in the dark like a Victorian",
        ],
    ),
]
GREETINGS = [
    ["a: heyy|heyyy|hey hey", "b: hey!|hii|heyo"],
    ["a: yo|sup", "b: hiii|yoo"],
    ["a: you around?", "b: yep whats up"],
    ["a: good evening 🌙", "b: evening!"],
    ["a: hello hello", "b: heyyy how's it going"],
    ["a: ok I'm finally off work", "b: freedom"],
]
GOODBYES = [
    ["a: ok I'm off, night!|ok going to bed, night", "b: night!!|nightt"],
    ["a: gotta go cook|gotta go, dinner time", "b: later!|cya"],
    ["a: sleep time|ok bed", "b: gn 😴|sleep well"],
    ["a: talk tmrw", "b: 👋"],
    ["a: ok bye for real", "b: lol bye"],
]


@dataclass
class Beat:
    """One step of a thread, said in one session: its lines and how the note sums it up."""

    title: str
    generic: str
    detail: str
    lines: list[str]
    decision: str = ""
    open_question: str = ""


@dataclass
class Thread:
    """A life thread of one member: beats in order, and the questions its facts answer.

    ``asks`` maps a fact tag to single-hop phrasings; ``when`` a tag to the event (base verb
    phrase) a temporal "when" question asks about; ``events`` a tag to its past-tense phrase
    for "which came first"; ``bridges`` and ``opens`` list (tags, phrasings) for multi-hop and
    open-domain questions; ``worry`` the tags where the owner worries; ``mentions`` distractor
    remarks said in sessions after beat ``mentions_after``; ``about`` how a question names the
    thread; ``names`` the parameters that are named entities. A phrasing starting with ``~``
    is one in other words than the chat's, picked ``PARAPHRASE_SHARE`` of the time.
    """

    kind: str
    topic: str
    about: str
    p: dict[str, str]
    beats: list[Beat]
    asks: dict[str, list[str]]
    when: dict[str, list[str]] = field(default_factory=dict)
    events: dict[str, str] = field(default_factory=dict)
    bridges: list[tuple[list[str], list[str]]] = field(default_factory=list)
    opens: list[tuple[list[str], list[str]]] = field(default_factory=list)
    worry: list[str] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    mentions_after: int = 0
    names: list[str] = field(default_factory=list)


class Picker:
    """Random choices for one guild that never hand out the same named item twice."""

    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.used: list[str] = []

    def __call__(self, pool: list[Any]) -> Any:
        """A random item of ``pool`` not handed out before (if any is left)."""
        fresh = [x for x in pool if str(x) not in self.used] or pool
        item = self.r.choice(fresh)
        self.used.append(str(item))
        return item


def pet(c: Picker) -> Thread:
    """A member adopts a pet, which then sees the vet and learns a trick."""
    species = c(["dog", "dog", "cat", "cat", "rabbit"])
    breed = c(
        {
            "dog": [
                "corgi",
                "beagle",
                "border collie",
                "shiba inu",
                "greyhound",
                "lab mix",
                "dachshund",
            ],
            "cat": ["tabby", "maine coon", "siamese", "tuxedo", "ragdoll"],
            "rabbit": ["holland lop", "lionhead", "mini rex"],
        }[species]
    )
    pg, pgo, pgp = c([("he", "him", "his"), ("she", "her", "her")])
    issue, issue_sum = c(
        [
            ("an ear infection, {pg} kept shaking {pgp} head", "an ear infection"),
            ("a tummy bug from eating half a sock", "a stomach upset"),
            ("a little cut on {pgp} paw from the fence", "a cut paw"),
            ("worms. gross", "worms"),
            ("a bad tooth that had to come out", "a tooth extraction"),
            ("an allergy to chicken apparently", "a food allergy"),
        ]
    )
    p = {
        "species": species,
        "species_up": species.upper(),
        "baby": {"dog": "puppy", "cat": "kitten", "rabbit": "bunny"}[species],
        "breed": breed,
        "pg": pg,
        "pgo": pgo,
        "pgp": pgp,
        "issue": issue,
        "issue_sum": issue_sum,
        "pname": c(
            [
                "Biscuit",
                "Pickle",
                "Mochi",
                "Waffles",
                "Pepper",
                "Noodle",
                "Juniper",
                "Clementine",
                "Bean",
                "Tofu",
                "Ziggy",
                "Olive",
                "Pretzel",
                "Maple",
                "Otis",
                "Chorizo",
                "Nacho",
                "Basil",
                "Sprout",
            ]
        ),
        "age": c(["10 weeks", "4 months", "3 months", "5 months", "6 months"]),
        "meds": c(
            [
                "antibiotics for 10 days",
                "ear drops twice a day",
                "a bland diet of rice for a week",
                "painkillers and a cone of shame",
            ]
        ),
        "trick": c(
            [
                "open the kitchen cupboard",
                "ring the little bell by the door",
                "fetch hair ties and hide them in shoes",
                "turn on the bathroom tap",
                "steal socks from the laundry basket",
            ]
        ),
    }
    beats = [
        Beat(
            "Thinking about a pet",
            "{O} is thinking about adopting a {species}.",
            "{O} is thinking about adopting a {species} now that {Pp} landlord allows pets.",
            [
                "x: how was your saturday|how was the weekend",
                "o: went to the shelter. just to look 👀",
                "x: just to look. sure",
                "o: the landlord finally said pets are ok in the building #landlord",
                "x: you are 100% coming home with a {species}",
            ],
            open_question="Will {O} adopt a {species}?",
        ),
        Beat(
            "A new {species}",
            "{O} brought home a new {species}.",
            "{O} adopted {pname}, a {breed} ({age} old).",
            [
                "o: ok so. I have news|big news|so. something happened",
                "x: ??",
                "o: we brought the {baby} home yesterday!!! I have a {species} now #adopt",
                "x: A {species_up}?!",
                "o: {pg}'s a {breed}, {age} old, the cutest {baby} ever #breed",
                "x: omg name???",
                "o: {pname}! best name for a {baby} ever #name|the {baby}'s name is {pname} 🥹 #name",
                "x: {pname} lmao perfect|{pname}!!! perfect|omg {pname} 😭",
                "x: pics or it didn't happen",
                "o: [sent 4 photos]",
            ],
            decision="{O} adopted a {species}.",
        ),
        Beat(
            "Vet visit",
            "{O} updated {X} on a vet visit for {Pp} {species}.",
            "{O}'s {species} {pname} was treated for {issue_sum}.",
            [
                "x: how's {pname}?",
                "o: we were at the vet this morning actually",
                "o: the vet says the poor {baby} has {issue} #vet",
                "x: poor baby|nooo poor thing|aw poor {pname}",
                "o: the vet put {pgo} on {meds} #meds",
                "o: {pg} hates me now",
            ],
        ),
        Beat(
            "Pet antics",
            "They traded funny pet stories.",
            "{O}'s {species} has learned to {trick}.",
            [
                "x: how's the little gremlin",
                "o: my {species} is a genius. or a menace",
                "o: new trick unlocked: the {species} can {trick} now #trick",
                "x: genius",
                "o: i have to childproof everything now",
            ],
        ),
    ]
    return Thread(
        "pet",
        "pets",
        "{Pp} {species}",
        p,
        beats,
        asks={
            "name": [
                "What's the name of {O}'s {baby}?",
                "What name did {O} give {Pp} {baby}?",
                "{O} got a {baby}, what's its name again?",
                "~remind me what {O}'s pet is called?",
                "~{O}'s new {species}, what did {P} end up calling it?",
            ],
            "breed": [
                "What breed is {O}'s {baby}?",
                "How old was {O}'s {baby} when {P} got {pgo}?",
                "~What kind of {species} did {O} adopt?",
            ],
            "vet": [
                "What did the vet find with {O}'s {baby}?",
                "Why was {O}'s {baby} at the vet?",
                "what did the vet say about {O}'s {baby}?",
                "~What was wrong with {pname} at the vet?",
            ],
            "meds": [
                "What did the vet put {O}'s {species} on?",
                "What treatment did the vet put {pname} on?",
                "~What did the vet prescribe for {O}'s {species}?",
            ],
            "trick": [
                "What trick can {O}'s {species} do now?",
                "What new trick has {O}'s {species} learned?",
                "~What mischief has {pname} picked up?",
            ],
            "landlord": [
                "What did {O}'s landlord say about pets?",
                "What did the landlord finally say about pets in {O}'s building?",
                "~Why could {O} finally get a pet?",
                "~What changed that let {O} have animals at home?",
            ],
        },
        when={
            "adopt": ["bring the {baby} home", "bring {Pp} {species} home", "~get {Pp} {species}"],
            "vet": ["take {pname} to the vet"],
        },
        events={"adopt": "brought {pname} home", "vet": "took {pname} to the vet"},
        bridges=[
            (
                ["breed", "vet"],
                [
                    "What did the vet say about the {breed} {O} adopted?",
                    "The {breed} {O} got, what was the vet visit about?",
                ],
            ),
            (["trick", "name"], ["What's the name of {O}'s pet that learned to {trick}?"]),
        ],
        opens=[
            (
                ["adopt", "breed"],
                [
                    "Is {O} more of a dog person or a cat person?"
                    if species != "rabbit"
                    else "Does {O} have a pet that needs a hutch?",
                    "Would {O} need a pet sitter if {P} went away for a week?",
                ],
            )
        ],
        worry=["vet"],
        names=["pname"],
        mentions=[
            "the {baby} says hi 🐾",
            "my {species} is being so dramatic today",
            "{pname} says hi 🐾",
            "walking {pname} rn so typing slow",
            "{pname} is asleep on my feet, I can't move",
            "ordered a fancy bed for {pname}, {pg} ignores it completely",
            "{pname} has a checkup at the vet next month, nothing serious",
            "bought {pname} a puzzle feeder, {pg} solved it in 2 min",
            "{pname} knocked my coffee over lol",
        ],
        mentions_after=1,
    )


def job(c: Picker) -> Thread:
    """A member is unhappy at work, interviews, gets an offer and starts the new job."""
    complaint, complaint_sum = c(
        [
            ("my manager keeps booking meetings at 7pm", "late-evening meetings"),
            ("they froze raises for the whole year", "a pay freeze"),
            ("I've been doing two people's jobs since Lisa left", "doing two people's work"),
            (
                "the new owner wants us in office 5 days, with my 90 min commute",
                "a new five-days-in-office rule",
            ),
            ("got passed over for the promotion. again", "being passed over for promotion"),
        ]
    )
    p = {
        "complaint": complaint,
        "complaint_sum": complaint_sum,
        "company": c(
            [
                "Ledgerly",
                "Brightside Analytics",
                "Crumb & Co",
                "Northwind Logistics",
                "Harbor Health",
                "Pixelforge",
                "Greenleaf Studio",
                "Tallow & Wick",
                "Orbital Freight",
                "Bluebird Labs",
                "Quill Legal",
            ]
        ),
        "role": c(
            [
                "junior data analyst",
                "pastry chef",
                "UX designer",
                "support team lead",
                "backend developer",
                "project coordinator",
                "lab technician",
                "copywriter",
                "account manager",
            ]
        ),
        "day": c(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]),
        "start": c(["monday after next", "the 1st", "in two weeks", "next monday"]),
        "boss": c(["Denise", "Raj", "Martin", "Claire", "Hugo", "Beatriz", "Owen", "Fatima"]),
        "boss_trait": c(
            [
                "brings donuts on fridays",
                "used to be a professional chef",
                "answers messages in like 4 seconds",
                "has a corgi that comes to the office",
            ]
        ),
        "commute": c(
            [
                "I bike there, 20 min along the river",
                "it's a 12 minute walk!!",
                "two buses but I get to read",
                "I can work from home tuesdays and thursdays",
            ]
        ),
    }
    beats = [
        Beat(
            "Work frustrations",
            "{O} vented about {Pp} job.",
            "{O} is fed up at work over {complaint_sum} and may look for a new job.",
            [
                "x: you ok? you've been quiet|you good? quiet today",
                "o: my job is wearing me down",
                "o: {complaint}, I'm so unhappy at this job #complaint",
                "x: that's so not ok|that's messed up|ugh I'm sorry",
                "o: thinking about looking around tbh",
            ],
        ),
        Beat(
            "Job interview",
            "{O} has a job interview coming up.",
            "{O} has an interview at {company} for a {role} position.",
            [
                "o: sooo I have a job interview {day} #interview",
                "x: WHERE",
                "o: {company}! the job is {role} #role",
                "x: you'd be perfect for that",
                "o: nervous tho",
            ],
            open_question="Will {O} get the new job?",
        ),
        Beat(
            "Job offer",
            "{O} got a job offer and accepted it.",
            "{O} accepted the {role} job at {company}.",
            [
                "o: {company} CALLED",
                "x: and???",
                "o: i got the job!!! offer came in this morning #offer",
                "x: AHHH congrats|CONGRATS!!!|omg yay",
                "o: start date at {company} is {start} #start",
                "x: we're celebrating this weekend",
            ],
            decision="{O} accepted the new job.",
        ),
        Beat(
            "New job",
            "{O} is settling into the new job.",
            "{O} likes {Pp} new manager {boss} at {company}.",
            [
                "x: so how's the new job??",
                "o: honestly? so much better",
                "o: my manager at the new job, {boss}, {boss_trait} #boss",
                "o: and the commute to the new job: {commute} #commute",
                "x: love that for you",
            ],
        ),
    ]
    return Thread(
        "job",
        "work",
        "{Pp} job",
        p,
        beats,
        asks={
            "complaint": [
                "What was {O} unhappy about at {Pp} old job?",
                "Why was {O} so unhappy at {Pp} job?",
                "~Why did {O} want to quit?",
                "~What was the problem at {O}'s previous work?",
            ],
            "role": [
                "What job did {O} apply for at {company}?",
                "What's {O}'s new job at {company}?",
                "~What does {O} do now?",
                "~{O} switched jobs, right? What's {Pp} role now?",
            ],
            "boss": [
                "Who is {O}'s manager at the new job?",
                "What's {O}'s new manager like?",
                "~What's the name of {O}'s new boss?",
                "~What's {O}'s supervisor like at the new place?",
            ],
            "commute": [
                "What's {O}'s commute like to the new job?",
                "How long is {O}'s commute these days?",
                "~How does {O} get to work now?",
            ],
            "offer": ["Did {O} get the job at {company}?", "Did {O} get an offer for the job?"],
        },
        when={
            "interview": ["have {Pp} job interview", "~interview at {company}"],
            "start": ["start at {company}", "~begin {Pp} new job"],
            "offer": ["get the job offer", "~get the offer from {company}"],
        },
        events={"offer": "got the offer from {company}", "interview": "interviewed at {company}"},
        bridges=[
            (
                ["interview", "boss"],
                ["Who is {O}'s manager at the place {P} interviewed at on a {day}?"],
            ),
            (["complaint", "role"], ["What was bothering {O} at work before {P} became a {role}?"]),
            (["role", "commute"], ["How does the new {role} get to work?"]),
        ],
        opens=[
            (
                ["complaint", "boss"],
                [
                    "Is {O} happier at work now than before?",
                    "Would {O} want to go back to {Pp} old job?",
                ],
            )
        ],
        worry=["complaint", "interview"],
        names=["company", "boss"],
        mentions=[
            "new job was fine today, nothing exciting",
            "the new job has so many meetings",
            "brb, meeting",
            "payday tomorrow 🙏",
            "had lunch with people from work, nice bunch",
            "so many emails today",
            "{company} onboarding has so many forms",
            "lunch with the {company} people, nice bunch",
        ],
        mentions_after=2,
    )


def trip(c: Picker) -> Thread:
    """A member plans a trip, books it, worries before leaving and comes back with stories."""
    worry, worry_sum = c(
        [
            ("I don't speak a word of the language", "the language barrier"),
            ("my passport expires in like 4 months, is that ok??", "an expiring passport"),
            (
                "I have to leave my plants with the neighbour and he kills everything",
                "leaving the plants behind",
            ),
            ("the forecast says rain the whole week", "the rainy forecast"),
        ]
    )
    mishap, mishap_q = c(
        [
            ("they lost my suitcase for two days", "the airline lost {Pp} suitcase"),
            ("I got food poisoning on day 3", "{P} got food poisoning"),
            ("we missed the last train and slept at the station", "they missed the last train"),
            ("my phone got stolen at the market", "{Pp} phone was stolen"),
            ("the flight back was delayed 9 hours", "the flight home was delayed for hours"),
        ]
    )
    p = {
        "worry": worry,
        "worry_sum": worry_sum,
        "mishap": mishap,
        "mishap_q": mishap_q,
        "dest": c(
            [
                "Lisbon",
                "Kyoto",
                "Mexico City",
                "Reykjavik",
                "Edinburgh",
                "Seoul",
                "Montreal",
                "Buenos Aires",
                "Vienna",
                "Marrakech",
                "Athens",
            ]
        ),
        "month_word": c(["spring", "the long weekend", "next month"]),
        "companion": c(
            [
                "going with my sister",
                "going with my college roommate",
                "going with my partner",
                "going solo this time",
            ]
        ),
        "nights": c(["5", "6", "7", "9"]),
        "lodging": c(
            [
                "a tiny airbnb above a bakery",
                "a hostel near the old town",
                "my cousin's flat",
                "a little guesthouse with a garden",
                "a boutique hotel with a rooftop pool",
                "a houseboat",
            ]
        ),
        "highlight": c(
            [
                "a dumpling-making class",
                "the sunrise hike up to the viewpoint",
                "a tiny jazz bar in a basement",
                "the food market on the last day",
                "the day trip to the hot springs",
                "a street football game with some locals",
            ]
        ),
        "leave": c(
            ["leaving thursday", "flight's on friday", "we leave in 3 days", "leaving this weekend"]
        ),
    }
    beats = [
        Beat(
            "Vacation ideas",
            "{O} wants a vacation.",
            "{O} is thinking about a trip to {dest}.",
            [
                "o: I need a vacation so bad",
                "x: go somewhere!",
                "o: been looking at a trip to {dest} for {month_word} #idea",
                "x: ooh the food there is supposed to be unreal",
            ],
        ),
        Beat(
            "Trip booked",
            "{O} booked {Pp} trip.",
            "{O} booked {nights} nights in {dest}.",
            [
                "o: ok it's official, booked the flights to {dest} #booked",
                "o: {companion} on the {dest} trip, {nights} nights #companion",
                "x: so jealous|jealous!!|take me with you",
                "o: in {dest} we're staying in {lodging} #lodging",
            ],
            decision="{O} booked {Pp} trip.",
        ),
        Beat(
            "Before the trip",
            "{O} is packing for {Pp} trip.",
            "{O} leaves for {dest} soon and is anxious about {worry_sum}.",
            [
                "x: you leave for your trip soon right?",
                "o: {leave}! packing for {dest} lol #leave",
                "o: lowkey worried bc {worry} #worry|lowkey stressing bc {worry} #worry",
                "x: you'll be fine, I promise",
            ],
        ),
        Beat(
            "Back from the trip",
            "{O} is back from {Pp} trip and shared stories.",
            "{O} is back from {dest} and loved {highlight}.",
            [
                "o: I'M BACK",
                "x: how was the trip!! how was {dest}",
                "o: {dest} was amazing. best part of the trip was {highlight} #highlight",
                "o: only thing that went wrong on the trip: {mishap} #mishap",
                "x: noooo|oh no|that sucks",
                "o: worth it tho|still worth it|10/10 would go again",
            ],
        ),
    ]
    return Thread(
        "trip",
        "travel",
        "{Pp} trip",
        p,
        beats,
        asks={
            "companion": [
                "Who is {O} going with on the {dest} trip?",
                "Who went on the trip to {dest} with {O}?",
                "~Was {O} going on the trip alone?",
                "~Who did {O} travel with?",
            ],
            "lodging": [
                "Where is {O} staying in {dest}?",
                "{O} went to {dest}, where was {P} staying?",
                "~What kind of place did {O} book for the trip?",
            ],
            "highlight": [
                "What was the best part of {O}'s trip?",
                "What was the best part of {dest} for {O}?",
                "~what did {O} love about the vacation?",
            ],
            "mishap": [
                "What went wrong on {O}'s trip?",
                "What went wrong on the {dest} trip?",
                "~Did anything bad happen while {O} was away?",
            ],
            "idea": [
                "Which place was {O} looking at for a trip?",
                "Where was {O} looking at going on a trip?",
                "~Where was {O} thinking of going for a holiday?",
            ],
        },
        when={
            "leave": ["leave for {dest}", "start packing for {dest}", "~fly out for {Pp} vacation"]
        },
        events={"booked": "booked the {dest} trip", "leave": "left for {dest}"},
        bridges=[
            (["mishap", "lodging"], ["Where did {O} stay on the trip where {mishap_q}?"]),
            (
                ["worry", "companion"],
                ["Who went along on the trip {O} was nervous about because of {worry_sum}?"],
            ),
            (
                ["idea", "highlight"],
                ["What ended up being the best part of the trip {O} was daydreaming about?"],
            ),
        ],
        opens=[
            (
                ["booked", "highlight"],
                [
                    "Does {O} enjoy traveling abroad?",
                    "Would {O} be a good person to ask for travel tips about {dest}?",
                ],
            )
        ],
        worry=["worry"],
        names=["dest"],
        mentions=[
            "watching {dest} food videos at midnight again",
            "still thinking about the trip honestly",
            "trip stuff all over my desk lol",
            "found a great podcast about {dest} history",
            "{dest} keeps showing up on my feed lol",
            "a coworker just got back from {dest} too, small world",
        ],
    )


def hobby(c: Picker) -> Thread:
    """A member starts a making project, hits a problem, fixes it and finishes."""
    noun, start, material, problem, fix, result, ask = c(
        [
            (
                "bookshelf",
                "started building a bookshelf from scratch",
                "using {mat} from the salvage yard",
                "one side came out 2cm shorter than the other",
                "shimmed it with a bit of cork, nobody will ever know",
                "it holds all 140 of my books",
                "What wood is {O} using for the bookshelf?",
            ),
            (
                "sourdough",
                "started a sourdough starter",
                "i named the starter {mat}",
                "the loaves keep coming out flat as pancakes",
                "turns out my kitchen is too cold, it lives on top of the fridge now",
                "finally got a proper ear on the loaf, crumb looks great",
                "What did {O} name {Pp} sourdough starter?",
            ),
            (
                "keyboard",
                "building a mechanical keyboard",
                "went with {mat} switches",
                "half the keys stopped working after soldering",
                "reflowed every joint with the good iron from my uncle",
                "it sounds like rain on a window, I'm obsessed",
                "Which switches did {O} go with for the keyboard?",
            ),
            (
                "garden",
                "started a balcony vegetable garden",
                "planting {mat} first",
                "aphids. everywhere",
                "ladybugs! ordered a box of 500 online",
                "harvested the first bowl today",
                "What is {O} growing on the balcony?",
            ),
            (
                "sweater",
                "knitting my first sweater",
                "the yarn is {mat}",
                "dropped a stitch 40 rows back",
                "my aunt showed me how to ladder down and fix it",
                "it's for my dad's birthday and it actually fits",
                "What yarn is {O} knitting with?",
            ),
            (
                "mural",
                "painting a mural on my bedroom wall",
                "it's going to be {mat}",
                "the paint is peeling in one corner",
                "sanded it and used a proper primer this time",
                "the landlord saw it and asked me to paint the hallway lol",
                "What is {O} painting on {Pp} wall?",
            ),
        ]
    )
    mats = {
        "bookshelf": ["reclaimed oak", "old barn walnut"],
        "sourdough": ["Clint Yeastwood", "Bread Pitt", "Doughlene"],
        "keyboard": ["lavender linear", "creamy tactile"],
        "garden": ["cherry tomatoes and basil", "chili peppers", "strawberries"],
        "sweater": ["forest green merino", "mustard alpaca"],
        "mural": ["a giant octopus", "a sunset over mountains"],
    }[noun]
    p = {
        "noun": noun,
        "start": start,
        "material": material,
        "problem": problem,
        "fix": fix,
        "result": result,
        "mat": c(mats),
        "ask": ask,
    }
    beats = [
        Beat(
            "New project",
            "{O} started a new {noun} project.",
            "{O} started a {noun} project ({mat}).",
            [
                "o: new project alert",
                "o: {start} #start",
                "o: {noun} update: {material} #material",
                "x: show me when it's done!!",
            ],
        ),
        Beat(
            "Project trouble",
            "{O} hit a snag with the {noun}.",
            "{O}'s {noun} has a problem: {problem}.",
            [
                "x: how's the {noun} going?",
                "o: badly lol",
                "o: problem with the {noun}: {problem} #problem",
                "x: oh no",
            ],
            open_question="How will {O} fix the {noun}?",
        ),
        Beat(
            "Project fixed",
            "{O} got the {noun} back on track.",
            "{O} fixed the {noun}.",
            [
                "o: ok the {noun} saga continues",
                "o: fixed the {noun} problem! {fix} #fix",
                "x: problem solver",
            ],
        ),
        Beat(
            "Project finished",
            "{O} finished the {noun}.",
            "{O} finished the {noun} and is proud of it.",
            [
                "o: the {noun} is DONE #done",
                "o: the {noun} turned out great, {result} #result",
                "x: proud of you honestly|look at you!!",
                "x: I want one",
            ],
        ),
    ]
    return Thread(
        "hobby",
        "hobby: " + noun,
        "the {noun}",
        p,
        beats,
        asks={
            "material": ["{ask}", "What did {O} pick for the {noun}?"],
            "problem": [
                "What problem did {O} have with the {noun}?",
                "What went wrong with {O}'s {noun}?",
                "~What issue did {O} run into?",
            ],
            "fix": [
                "How did {O} fix the {noun} problem?",
                "What was the fix for the {noun} problem?",
                "~How did {O} sort out the snag?",
            ],
            "result": [
                "How did the {noun} turn out?",
                "How did {O}'s {noun} turn out in the end?",
                "~{O} finished that project, right? How did {P} like it?",
            ],
        },
        when={"start": ["start the {noun}"], "done": ["finish the {noun}"]},
        events={"start": "started the {noun}", "done": "finished the {noun}"},
        bridges=[
            (
                ["problem", "fix"],
                [
                    "How did {O} end up solving the {noun} problem?",
                    "{O}'s {noun} had an issue at some point, what was it and how was it fixed?",
                ],
            ),
            (["material", "result"], ["How did the {noun} made with {mat} turn out?"]),
        ],
        opens=[
            (
                ["start", "fix"],
                ["Is {O} handy with DIY stuff?", "Would {O} enjoy a craft workshop?"],
            )
        ],
        worry=["problem"],
        names=["mat"],
        mentions=[
            "worked on the {noun} for an hour, slow going",
            "watching {noun} tutorials instead of sleeping",
            "bought more supplies for the {noun} oops",
            "the {noun} is judging me from the corner",
        ],
    )


def family(c: Picker) -> Thread:
    """A relative's wedding or big birthday: announced, planned, worried about, celebrated."""
    rel, event, announce, rnames = c(
        [
            (
                "brother {rname}",
                "wedding",
                "my {rel} is getting married!!",
                ["Tom", "Jonah", "Marco", "Dev"],
            ),
            (
                "sister {rname}",
                "wedding",
                "my {rel} just got engaged and the wedding is already set",
                ["Ana", "Elif", "Rosa"],
            ),
            (
                "grandma {rname}",
                "90th birthday",
                "my {rel} turns 90 soon and we're throwing a party",
                ["Priscilla", "Edith", "Margit"],
            ),
            ("dad", "60th birthday", "my {rel} turns 60 and mom wants a surprise party", ["-"]),
        ]
    )
    p = {
        "rel": rel,
        "event": event,
        "announce": announce,
        "rname": c(rnames),
        "venue": c(
            [
                "a vineyard outside town",
                "the old boathouse by the lake",
                "my aunt's backyard",
                "a Greek restaurant downtown",
                "a barn they rented",
            ]
        ),
        "gift": c(
            [
                "a vintage record player",
                "a framed map of where they met",
                "a cooking class for two",
                "a photo book of the last 30 years",
                "a hot air balloon ride",
            ]
        ),
        "task": c(["give a speech", "bake the cake", "do the playlist", "organise the slideshow"]),
        "after": c(
            [
                "everyone cried during the toasts",
                "the DJ played ABBA for an hour straight",
                "my uncle fell into the pond lol",
                "it rained and nobody cared",
                "we danced until 2am",
            ]
        ),
    }
    beats = [
        Beat(
            "Family news",
            "{O} shared family news.",
            "{O} announced that {Pp} {rel} has a {event} coming.",
            ["o: family news: {announce} #announce", "x: omg congrats to them!!|aww congrats!!"],
        ),
        Beat(
            "Planning the {event}",
            "{O} talked about planning the {event}.",
            "{O} is planning the {event}, held at {venue}.",
            [
                "x: how's the {event} planning",
                "o: chaos. the {event} is at {venue} #venue",
                "o: our gift for the {event} is {gift} #gift",
                "x: that's such a good gift",
            ],
        ),
        Beat(
            "Nerves before the {event}",
            "{O} is nervous about {Pp} part in the {event}.",
            "{O} has to {task} at the {event} and is nervous.",
            [
                "o: I have to {task} at the {event} and I'm panicking #task",
                "x: you'll crush it",
                "o: we'll see",
            ],
        ),
        Beat(
            "After the {event}",
            "{O} recapped the {event}.",
            "{O} said the {event} at {venue} went well.",
            [
                "x: how was the {event}?!",
                "o: the {event} was last saturday and honestly perfect #went",
                "o: best moment of the {event}: {after} #after",
                "x: iconic|lmao amazing",
            ],
        ),
    ]
    return Thread(
        "family",
        "family",
        "the {event}",
        p,
        beats,
        asks={
            "venue": [
                "Where is the {event} being held?",
                "{O}'s family had a {event}, where was it?",
                "~What's the venue for the family do?",
            ],
            "gift": [
                "What gift did {O}'s family get for the {event}?",
                "What's {O}'s gift for the {event}?",
                "~What are they giving as a present?",
            ],
            "task": [
                "What does {O} have to do at the {event}?",
                "What job did {O} get stuck with for the {event}?",
            ],
            "after": [
                "What was the best moment of the {event}?",
                "What happened at the {event}?",
                "~Any funny moments from that family party {O} went to?",
            ],
            "announce": ["What family news did {O} share?", "~What's new with {O}'s relatives?"],
        },
        when={"went": ["go to the {event}", "celebrate the {event}"]},
        events={"announce": "shared the news about the {event}", "went": "went to the {event}"},
        bridges=[
            (["venue", "after"], ["What happened at the event at {venue}?"]),
            (
                ["task", "after"],
                ["{O} was panicking about a task at a family event, how did the event go?"],
            ),
        ],
        opens=[(["announce", "task"], ["Is {O} close to {Pp} family?"])],
        worry=["task"],
        names=["rname"],
        mentions=[
            "family group chat is on fire about the {event}",
            "mom called about the {event} again",
            "need something to wear for the {event}",
            "the {event} seating chart is a war zone",
        ],
    )


def move(c: Picker) -> Thread:
    """A member moves flats: why, the new place, moving day and the new neighbour."""
    reason, reason_sum = c(
        [
            ("rent here is going up 30%", "a 30% rent increase"),
            ("I want to be closer to my parents", "wanting to live near family"),
            ("the upstairs neighbour stomps at 5am", "a noisy upstairs neighbour"),
            ("I need a second bedroom for an office", "needing a home office"),
        ]
    )
    p = {
        "place": c(
            ["Riverside", "the east side by the park", "Maple Heights", "Old Town", "the north end"]
        ),
        "reason": reason,
        "reason_sum": reason_sum,
        "feature": c(
            [
                "the kitchen has a huge window",
                "the bathroom is tiny but there's a real balcony",
                "it's a 4th floor walk-up, rip my legs",
                "the fireplace actually works",
            ]
        ),
        "mishap": c(
            [
                "the movers dropped the TV",
                "the elevator broke on moving day",
                "it rained the whole time and half the boxes got soaked",
                "the couch didn't fit through the door",
            ]
        ),
        "nb": c(["Gloria", "Mr. Patel", "Sven", "Lucia"]),
        "nb_trait": c(
            [
                "plays cello at 11pm",
                "brought us homemade cookies",
                "has three cats who visit my balcony",
                "waters everyone's plants",
            ]
        ),
    }
    beats = [
        Beat(
            "Thinking of moving",
            "{O} is thinking about moving.",
            "{O} wants to move because of {reason_sum}.",
            [
                "o: I think I'm moving",
                "x: wait why|why??",
                "o: {reason}, time for a new apartment #reason",
                "x: fair honestly",
            ],
        ),
        Beat(
            "New apartment",
            "{O} found a new apartment.",
            "{O} signed a lease in {place}.",
            [
                "o: SIGNED THE LEASE for the new apartment #signed",
                "o: the new apartment is in {place} #place",
                "o: and the new apartment: {feature} #feature",
                "x: housewarming when|when's the housewarming",
            ],
            decision="{O} signed the lease for a new apartment.",
        ),
        Beat(
            "Moving day",
            "{O} moved.",
            "{O} moved; {mishap}.",
            [
                "x: how was moving day",
                "o: a disaster",
                "o: moving day: {mishap} #mishap",
                "x: nooo",
                "o: but I'm in!!",
            ],
        ),
        Beat(
            "Settling in",
            "{O} is settling into the new place.",
            "{O} met {Pp} new neighbour {nb}.",
            [
                "o: met my neighbour {nb} #neighbour",
                "o: {pg_nb} {nb_trait}, {nb} is the best neighbour #nb_trait",
                "x: lol the lore",
            ],
        ),
    ]
    p["pg_nb"] = "she" if p["nb"] in ("Gloria", "Lucia") else "he"
    return Thread(
        "move",
        "moving",
        "{Pp} new apartment",
        p,
        beats,
        asks={
            "reason": [
                "Why did {O} want a new apartment?",
                "Why was it time for a new apartment for {O}?",
                "~Why did {O} decide to move?",
            ],
            "place": [
                "Where is {O}'s new apartment?",
                "Which part of town is {O}'s new apartment in?",
                "~{O} moved recently, where to?",
            ],
            "feature": [
                "What's special about {O}'s new apartment?",
                "~What does {O} like about the new flat?",
            ],
            "mishap": [
                "How did {O}'s moving day go?",
                "What happened on {O}'s moving day?",
                "~What went wrong when {O} moved?",
            ],
            "neighbour": ["Who is {O}'s new neighbour?"],
            "nb_trait": [
                "What's {O}'s neighbour {nb} like?",
                "What's the best thing about {O}'s neighbour?",
            ],
        },
        when={
            "signed": ["sign the lease on {Pp} new apartment"],
            "mishap": ["have {Pp} moving day", "~move into the new place"],
        },
        events={"signed": "signed the new lease", "mishap": "moved house"},
        bridges=[
            (["place", "neighbour"], ["Who lives next door to {O} in {place}?"]),
            (
                ["reason", "feature"],
                ["What's the new apartment like that {O} was so keen to move to?"],
            ),
        ],
        opens=[(["mishap", "nb_trait"], ["Is {O} happy in the new neighbourhood?"])],
        worry=["reason"],
        names=["place", "nb"],
        mentions=[
            "still unpacking boxes 📦",
            "the new apartment is slowly feeling like home",
            "the new place has weird water pressure",
            "bought a plant for the apartment",
            "internet guy comes tomorrow, finally",
        ],
        mentions_after=2,
    )


def illness(c: Picker) -> Thread:
    """A member gets hurt or ill, sees a doctor and recovers."""
    ail, cause, advice, recovery, base = c(
        [
            (
                "sprained my ankle",
                "running for the bus",
                "keep it up and no running for 6 weeks",
                "did my first slow jog today, no pain!",
                "sprain {Pp} ankle",
            ),
            (
                "threw out my back",
                "carrying my friend's couch",
                "physio twice a week and no lifting",
                "back is finally back lol, slept through the night",
                "hurt {Pp} back",
            ),
            (
                "got a nasty flu",
                "probably from the office",
                "rest, fluids and a week off work",
                "can taste food again!!",
                "get sick",
            ),
            (
                "cracked a tooth",
                "on a popcorn kernel of all things",
                "I need a crown. $$$",
                "crown is in, I can chew on both sides again",
                "crack a tooth",
            ),
            (
                "broke my wrist",
                "falling off my bike",
                "cast for five weeks",
                "cast came off today, my arm is so pale",
                "break {Pp} wrist",
            ),
        ]
    )
    ail_sum = ail.replace("my", "{Pp}")
    p = {
        "ail": ail,
        "ail_sum": ail_sum,
        "cause": cause,
        "advice": advice,
        "recovery": recovery,
        "base": base,
    }
    beats = [
        Beat(
            "Health trouble",
            "{O} is not doing great health-wise.",
            "{O} {ail_sum} {cause}.",
            [
                "o: so I {ail} #ail",
                "x: WHAT how|omg how",
                "o: {cause} #cause",
                "x: oh no, feel better|feel better!!",
            ],
        ),
        Beat(
            "Doctor's advice",
            "{O} saw a doctor.",
            "{O}'s doctor advised: {advice}.",
            [
                "x: did you see someone about it?",
                "o: yeah, the doctor told me {advice} #advice",
                "o: so that's fun",
                "x: ugh",
            ],
        ),
        Beat(
            "Recovery",
            "{O} is recovering.",
            "{O} is recovering well.",
            ["x: how are you feeling?", "o: recovery update: {recovery} #recovery", "x: yay!!"],
        ),
    ]
    return Thread(
        "illness",
        "health",
        "{Pp} health",
        p,
        beats,
        asks={
            "cause": ["How did {O} {base}?", "~How did {O} get hurt?"],
            "advice": [
                "What did the doctor tell {O}?",
                "{O} got hurt a while back, what did the doctor tell {Po}?",
                "~What did {O}'s physician recommend?",
            ],
            "recovery": [
                "How is {O}'s recovery going?",
                "Any recovery update from {O}?",
                "~How's {O} doing since {P} {ail_sum}?",
            ],
            "ail": ["~What health problem did {O} have?"],
        },
        when={"ail": ["{base}"]},
        events={"ail": "{ail_sum}", "recovery": "recovered from {Pp} injury"},
        bridges=[(["cause", "advice"], ["What was the doctor's advice after {O} {ail_sum}?"])],
        opens=[
            (
                ["ail", "advice"],
                ["Would {O} have been up for a dance class in the weeks after {P} got hurt?"],
            )
        ],
        worry=["ail"],
        mentions=[
            "still a bit sore today",
            "recovery is slow but the doctor says it's normal",
            "doing the exercises the doc gave me",
            "pharmacy run, brb",
            "feeling better than last week at least",
        ],
    )


def course(c: Picker) -> Thread:
    """A member takes a course: sign-up, the teacher, a struggle and the exam."""
    subject, exam = c(
        [
            ("Spanish", "the oral exam"),
            ("pottery", "the final piece review"),
            ("guitar", "the recital"),
            ("data science", "the capstone presentation"),
            ("driving", "the driving test"),
            ("Japanese", "the JLPT N4"),
            ("first aid", "the practical test"),
        ]
    )
    struggle, struggle_sum = c(
        [
            (
                "I'm the worst in the class and everyone's 19",
                "feeling behind much younger classmates",
            ),
            ("I keep freezing when I have to talk", "freezing up when speaking"),
            ("the homework takes me 5 hours a week", "the heavy homework"),
            ("my hands are covered in blisters", "blistered hands"),
        ]
    )
    p = {
        "subject": subject,
        "exam": exam,
        "schedule": c(
            [
                "tuesdays and thursdays 6 to 8",
                "saturday mornings",
                "every wednesday night",
                "online, three evenings a week",
            ]
        ),
        "teacher": c(
            ["Señora Ibáñez", "Mr. Okafor", "Ms. Lindqvist", "a guy called Pete", "Dr. Hoang"]
        ),
        "quirk": c(
            [
                "makes us sing in the first 10 minutes",
                "brings a huge dog to class",
                "grades everything in green ink",
                "tells the same joke every week",
            ]
        ),
        "struggle": struggle,
        "struggle_sum": struggle_sum,
        "grade": c(
            [
                "passed with 92!!",
                "passed, barely lol",
                "got top marks in the group",
                "passed on the second try",
            ]
        ),
    }
    beats = [
        Beat(
            "Signed up for {subject} classes",
            "{O} signed up for a class.",
            "{O} signed up for {subject} classes, {schedule}.",
            [
                "o: signed up for {subject} classes #signup",
                "o: the {subject} class is {schedule} #schedule",
                "x: look at you learning things|ooh fun",
            ],
        ),
        Beat(
            "{subject} teacher",
            "{O} talked about {Pp} class.",
            "{O} likes {Pp} {subject} teacher, {teacher}.",
            [
                "x: how's class",
                "o: fun! the {subject} teacher is {teacher} #teacher",
                "o: the teacher {quirk} lol #quirk",
                "x: lmao",
            ],
        ),
        Beat(
            "Struggling with {subject}",
            "{O} is finding the class hard.",
            "{O} is struggling in {subject} with {struggle_sum}.",
            [
                "o: ok {subject} is humbling me",
                "o: {subject} is so hard, {struggle} #struggle",
                "x: everyone starts somewhere",
            ],
            open_question="Will {O} pass {exam}?",
        ),
        Beat(
            "{exam} result",
            "{O} got {Pp} result.",
            "{O} {grade_sum} {exam}.",
            [
                "o: {exam} results are in",
                "o: so for {exam}: {grade} #grade",
                "x: LETS GOOO|yesss congrats",
            ],
        ),
    ]
    p["pg_t"] = "she" if p["teacher"] in ("Señora Ibáñez", "Ms. Lindqvist") else "he"
    p["grade_sum"] = "passed"
    return Thread(
        "course",
        "learning",
        "{Pp} {subject} class",
        p,
        beats,
        asks={
            "schedule": [
                "When does {O}'s {subject} class meet?",
                "When is {O}'s {subject} class?",
                "~How often does {O} have lessons?",
            ],
            "teacher": [
                "Who is {O}'s {subject} teacher?",
                "{O} takes {subject} classes, who's {Pp} teacher?",
                "~Who teaches {O}'s course?",
            ],
            "quirk": [
                "What's funny about {O}'s teacher?",
                "~What odd habit does {O}'s instructor have?",
            ],
            "struggle": [
                "What is {O} finding hard about {subject}?",
                "Why is {subject} so hard for {O}?",
                "~Why was {O} frustrated with the course?",
            ],
            "grade": ["How did {O} do on {exam}?", "~Did {O} pass {Pp} course?"],
        },
        when={"signup": ["sign up for {subject} classes"], "grade": ["get {Pp} result for {exam}"]},
        events={"signup": "signed up for {subject} classes", "grade": "got through {exam}"},
        bridges=[
            (
                ["struggle", "grade"],
                ["After all the struggling in class, how did {O} do in the end?"],
            ),
            (["teacher", "grade"], ["How did {O} do in the course {teacher} teaches?"]),
        ],
        opens=[
            (["signup", "struggle"], ["Is {O} the kind of person who likes learning new skills?"])
        ],
        worry=["struggle"],
        names=["teacher"],
        mentions=[
            "{subject} homework time 😩",
            "skipped {subject} this week, felt bad",
            "practiced for {subject} on the bus",
            "class got cancelled tonight",
        ],
    )


def game(c: Picker) -> Thread:
    """A member plays a video game: starts, gets stuck on a boss, beats it, counts the hours."""
    p = {
        "game": c(
            [
                "Elden Ring",
                "Baldur's Gate 3",
                "Hades II",
                "Hollow Knight",
                "Monster Hunter",
                "Zelda: Tears of the Kingdom",
                "Final Fantasy XVI",
                "Celeste",
                "Stardew Valley",
                "Sekiro",
            ]
        ),
        "style": c(
            [
                "completely blind, no guides",
                "for 100% completion",
                "co-op with my cousin",
                "on the hardest difficulty like an idiot",
            ]
        ),
        "boss": c(
            [
                "the second boss",
                "the water temple",
                "the final boss",
                "that stupid chase level",
                "the twin dragons",
            ]
        ),
        "how": c(
            [
                "turns out you just have to parry everything",
                "my cousin carried me honestly",
                "I changed my whole build and it took 2 tries",
                "I watched one video and felt dumb",
            ]
        ),
        "hours": c(["60", "85", "120", "45"]),
    }
    beats = [
        Beat(
            "New game",
            "{O} started a new game.",
            "{O} started playing {game}.",
            [
                "o: started a new game last night, {game} #started",
                "o: playing {game} {style} #style",
                "x: oh that's a good one",
            ],
        ),
        Beat(
            "Stuck in {game}",
            "{O} is stuck in {Pp} game.",
            "{O} is stuck on {boss} in {game}.",
            [
                "o: I've been stuck on {boss} for three days #stuck",
                "x: lmao skill issue",
                "o: rude",
            ],
        ),
        Beat(
            "Beat the boss",
            "{O} made progress in {Pp} game.",
            "{O} finally beat {boss}.",
            ["o: FINALLY beat {boss}, {how} #how", "x: gg|gg wp"],
        ),
        Beat(
            "Game almost done",
            "{O} talked about {Pp} game.",
            "{O} has spent {hours} hours on {game}.",
            [
                "x: still playing {game}?",
                "o: {hours} hours in {game} and not done #hours",
                "x: that's a part-time job|that's a lot of hours lol",
            ],
        ),
    ]
    return Thread(
        "game",
        "gaming",
        "{game}",
        p,
        beats,
        asks={
            "style": ["How is {O} playing {game}?", "~Is {O} using a guide?"],
            "stuck": [
                "Where was {O} stuck in {game}?",
                "What was {O} stuck on for days?",
                "~What part was giving {O} trouble?",
            ],
            "how": ["How did {O} finally beat {boss}?", "~What finally worked for {O}?"],
            "hours": [
                "How many hours has {O} put into {game}?",
                "{O} plays a lot of {game}, how many hours has {P} sunk into it?",
            ],
            "started": ["What new game did {O} start?", "~What is {O} playing these days?"],
        },
        when={"started": ["start playing {game}"], "how": ["beat {boss}"]},
        events={"started": "started {game}", "how": "beat {boss}"},
        bridges=[
            (
                ["stuck", "how"],
                ["{O} was stuck somewhere in a game for days, how did {P} finally get through?"],
            ),
            (["started", "hours"], ["How long has {O} played the game {P} started {style}?"]),
        ],
        opens=[(["style", "hours"], ["Would {O} be interested in a new video game as a gift?"])],
        mentions=[
            "one more run then bed. (it was not one more run)",
            "{game} patch notes dropped",
            "my controller is dying",
            "playing {game} tonight if you wanna watch",
        ],
        names=["game"],
    )


THREAD_KINDS: dict[str, Callable[[Picker], Thread]] = {
    "pet": pet,
    "job": job,
    "trip": trip,
    "hobby": hobby,
    "family": family,
    "move": move,
    "illness": illness,
    "course": course,
    "game": game,
}

# The paraphrase kind: a fact asked about in words of the asker's own, none of which (after
# stemming) was said in the answer message or the three messages either side of it, so only
# what the words mean can find it. Written as members would ask, per thread kind and fact
# tag; a phrasing that happens to share a word with what was said is skipped.
REPHRASE: dict[str, dict[str, list[str]]] = {
    "pet": {
        "landlord": [
            "Why was {O} suddenly allowed to keep an animal in {Pp} flat?",
            "Who gave {O} permission to keep animals at home?",
        ],
        "adopt": ["What animal did {O} take in?", "Which creature joined {O}'s household?"],
        "breed": [
            "What type of animal did {O} adopt, exactly?",
            "Which sort of furry companion does {O} have?",
        ],
        "name": [
            "What does {O} call {Pp} new animal?",
            "How did {O} christen the furry newcomer?",
        ],
        "vet": [
            "What did the animal doctor diagnose when {O} took {Pp} pet in?",
            "Why did {O}'s little companion need medical attention?",
        ],
        "meds": [
            "What medicine or care was prescribed for {O}'s animal?",
            "What remedy did {O}'s furry patient get?",
        ],
        "trick": [
            "What clever behaviour has {O}'s animal mastered lately?",
            "What mischief has {O}'s furry friend learned?",
        ],
    },
    "job": {
        "complaint": [
            "What was making {O} miserable in {Pp} previous position?",
            "Why did {O} want to quit?",
        ],
        "role": [
            "What does {O} do for a living now?",
            "What position did {O} go after?",
        ],
        "boss": [
            "Who does {O} report to these days, and what are they like?",
            "Who is {O}'s supervisor at the place {P} switched to?",
        ],
        "commute": [
            "How does {O} travel to the office these days?",
            "How does {O} reach the workplace each morning?",
        ],
        "offer": [
            "Was {O} successful with the application?",
            "Did the hiring process work out for {O}?",
        ],
        "start": ["When does {O} begin in the role?", "When is {O}'s first shift at the firm?"],
    },
    "trip": {
        "idea": [
            "Where was {O} dreaming of going on holiday?",
            "Which destination was {O} daydreaming about?",
        ],
        "booked": [
            "Did {O} make the travel reservations?",
            "Is {O}'s holiday locked in?",
        ],
        "companion": [
            "Who is joining {O} on the holiday?",
            "Is {O} travelling alone or with someone?",
        ],
        "lodging": [
            "What accommodation did {O} book abroad?",
            "Where did {O} sleep while abroad?",
        ],
        "worry": [
            "What was making {O} anxious before the holiday?",
            "What was {O} nervous about ahead of travelling?",
        ],
        "highlight": [
            "What did {O} enjoy most while abroad?",
            "What was the standout moment of {O}'s holiday?",
        ],
        "mishap": [
            "Did anything unlucky happen to {O} while abroad?",
            "What misfortune did {O} run into on holiday?",
        ],
    },
    "hobby": {
        "start": [
            "What craft project did {O} take up?",
            "What hands-on pastime did {O} pick up?",
        ],
        "material": [
            "What did {O} choose for {Pp} project?",
            "What supplies is {O} working with on that project?",
        ],
        "problem": [
            "What went wrong with {O}'s handiwork?",
            "What setback did {O}'s project hit?",
        ],
        "fix": [
            "How did {O} repair the issue with {Pp} project?",
            "How did {O} solve the setback?",
        ],
        "result": [
            "How pleased was {O} with the finished piece?",
            "How did {O}'s creation end up?",
        ],
    },
    "family": {
        "announce": [
            "What big occasion is coming up among {O}'s relatives?",
            "What celebration are {O}'s relatives preparing?",
        ],
        "venue": [
            "Where will {O}'s relatives celebrate?",
            "What location did {O}'s relatives choose for the celebration?",
        ],
        "gift": [
            "What present are {O} and {Pp} relatives giving?",
            "What are {O}'s relatives handing over as a present?",
        ],
        "task": [
            "What duty was {O} nervous about at the celebration?",
            "What role did {O} dread at the family occasion?",
        ],
        "after": [
            "What was the most memorable bit of the celebration for {O}?",
            "What stood out at {O}'s family occasion?",
        ],
    },
    "move": {
        "reason": ["Why did {O} decide to relocate?", "What pushed {O} to change flats?"],
        "place": [
            "Which neighbourhood did {O} relocate to?",
            "What area of town does {O} live in now?",
        ],
        "feature": [
            "What's nice about {O}'s flat?",
            "What does {O} love about {Pp} home?",
        ],
        "mishap": [
            "What disaster struck when {O} relocated?",
            "What mishap happened while {O} was changing homes?",
        ],
        "neighbour": ["Who lives next door to {O} now?", "Who did {O} get to know on {Pp} floor?"],
        "nb_trait": [
            "What's the person next door to {O} like?",
            "What's special about the resident beside {O}?",
        ],
    },
    "illness": {
        "ail": [
            "What happened to {O}'s health?",
            "What medical trouble did {O} have?",
        ],
        "cause": [
            "What caused {O}'s health trouble?",
            "What accident led to {O}'s injury?",
        ],
        "advice": [
            "What did the physician recommend for {O}?",
            "What treatment plan was {O} given?",
        ],
        "recovery": ["Is {O} feeling better now?", "How is {O} healing?"],
    },
    "course": {
        "signup": ["What lessons did {O} enrol in?", "What is {O} studying in {Pp} free time?"],
        "schedule": [
            "How often do {O}'s lessons take place?",
            "On which days does {O} study?",
        ],
        "teacher": ["Who instructs {O}'s course?", "Who leads the lessons {O} attends?"],
        "quirk": [
            "What odd habit does {O}'s instructor have?",
            "What's peculiar about the person leading {O}'s lessons?",
        ],
        "struggle": [
            "Why was {O} frustrated with the lessons?",
            "What was difficult for {O} in the course?",
        ],
        "grade": [
            "How did {O}'s final assessment go?",
            "Did {O} succeed at the end of the lessons?",
        ],
    },
    "game": {
        "started": [
            "Which title is {O} hooked on these days?",
            "What video game did {O} pick up recently?",
        ],
        "style": ["Is {O} using a walkthrough?", "What approach is {O} taking with that title?"],
        "stuck": [
            "Which part was giving {O} trouble?",
            "Where did {O} hit a wall in that title?",
        ],
        "how": [
            "How did {O} get past the tough part in the end?",
            "What helped {O} overcome the obstacle?",
        ],
        "hours": [
            "How much time has {O} sunk into that title?",
            "How long has {O} spent on that video game?",
        ],
    },
}


def fill(text: str, ctx: dict[str, str]) -> str:
    """Fill ``{key}`` placeholders from ``ctx``, twice, since parameters may hold placeholders."""
    for _ in range(3):
        if "{" not in text:
            break
        text = text.format_map(ctx)
    return text


def variant(text: str, r: random.Random) -> str:
    """One of the ``|``-separated ways of saying a line."""
    return r.choice(text.split("|")) if "|" in text else text


def phrase(r: random.Random, phrasings: list[str]) -> str:
    """A question phrasing: usually one in the words members say it with, but with
    ``PARAPHRASE_SHARE`` one in other words (those marked with a leading ``~``)."""
    close = [x for x in phrasings if not x.startswith("~")]
    other = [x[1:] for x in phrasings if x.startswith("~")]
    return r.choice(other if other and (not close or r.random() < PARAPHRASE_SHARE) else close)


def first_upper(text: str) -> str:
    """``text`` with its first letter upper-cased (questions are typed both ways)."""
    return text[:1].upper() + text[1:]


def join_names(names: list[str]) -> str:
    """'Sam', 'Sam and Maya' or 'Sam, Maya and Leo'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def period(dt: datetime) -> str:
    """'early March', 'mid-March' or 'late March'."""
    month = MONTHS[dt.month - 1]
    return f"early {month}" if dt.day <= 10 else f"mid-{month}" if dt.day <= 20 else f"late {month}"


def in_window(rel: str, day: datetime, other: datetime) -> bool:
    """Whether ``other`` falls in the stretch of time that ``rel`` (said of ``day``) names."""
    if rel == "last week":
        return other.isocalendar()[:2] == day.isocalendar()[:2]
    if rel == "last month":
        return other.month == day.month
    if rel.startswith("about"):
        return abs((other - day).days) <= 4
    return period(other) == period(day)


def typo(text: str, r: random.Random) -> str:
    """Swap two adjacent letters inside one longer word, as a hurried typist does."""
    words = text.split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long:
        return text
    i = r.choice(long)
    j = r.randrange(1, len(words[i]) - 2)
    w = words[i]
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


@dataclass
class Member:
    """A guild member: display name, aliases, pronouns and typing style."""

    user_id: str
    name: str
    aliases: list[str]
    pron: tuple[str, str, str]
    lower: bool

    def ctx(self, r: random.Random | None = None) -> dict[str, str]:
        """Placeholders about this member; with ``r`` the name is sometimes an alias."""
        name = r.choice(self.aliases) if r is not None and r.random() < 0.25 else self.name
        return {"O": name, "P": self.pron[0], "Po": self.pron[1], "Pp": self.pron[2]}


@dataclass
class Said:
    """A message that states a fact or a trait: its id, session and time."""

    msg_id: str
    session: int
    time: datetime


def place_beats(r: random.Random, threads: list[Thread], dates: list[datetime]) -> list[list[int]]:
    """Session indices for every thread's beats: increasing, spread so that no session holds
    more than its share, and a trip's return at least five days after the packing session."""
    n = len(dates)
    cap = -(-sum(len(t.beats) for t in threads) // n) + 1
    for _ in range(500):
        load = Counter[int]()
        placed: list[list[int]] = []
        for t in threads:
            k = len(t.beats)
            free = [s for s in range(r.randrange(0, max(1, n // 3)), n) if load[s] < cap]
            if len(free) < k:
                break
            spots = sorted(r.sample(free, k))
            if t.kind == "trip" and (dates[spots[3]] - dates[spots[2]]).days < 5:
                break
            load.update(spots)
            placed.append(spots)
        if len(placed) == len(threads):
            return placed
    raise RuntimeError("could not place the threads' beats; lower the thread count")


Mark = tuple[
    str, tuple[int, str]
]  # ("fact", (thread index, tag)) or ("trait", (member index, trait))
Line = tuple[int, str, Mark | None]  # (member index, text, what the line states)


@dataclass
class Guild:
    """The plan of one guild's chat (members, session times, threads, traits) and, once the
    sessions are written, which message said each fact and trait."""

    g: int
    r: random.Random
    members: list[Member]
    channel: dict[str, str]
    dates: list[datetime]
    threads: list[Thread]
    owners: list[int]
    placed: list[list[int]]
    traits: list[tuple[int, str, list[int], list[str]]]
    facts: dict[tuple[int, str], Said] = field(default_factory=dict)
    trait_said: dict[tuple[int, str], list[Said]] = field(default_factory=dict)

    def others(self, mi: int) -> list[int]:
        """Indices of the members other than ``mi``."""
        return [i for i in range(len(self.members)) if i != mi]

    def ctx(self, ti: int, x: int | None = None) -> dict[str, str]:
        """Placeholders for thread ``ti`` said by its owner (to member ``x``)."""
        extra = {"X": self.members[x].name} if x is not None else {}
        return {**self.members[self.owners[ti]].ctx(), **self.threads[ti].p, **extra}


def session_dates(r: random.Random) -> list[datetime]:
    """15-25 session start times, a day or more apart, over 6-16 weeks (evenings, or weekend
    afternoons)."""
    n = r.randint(15, 25)
    span = max(r.randint(6, 16) * 7, int(n * 1.8))
    weights = [r.uniform(0.4, 2.0) for _ in range(n - 1)]
    gaps = [max(1, round(w * span / sum(weights))) for w in weights] + [0]
    day = FIRST_DAY + timedelta(days=r.randint(0, 40))
    dates: list[datetime] = []
    for gap in gaps:
        hour = r.randint(13, 16) if day.weekday() >= 5 else r.randint(17, 22)
        dates.append(day.replace(hour=hour, minute=r.randint(0, 59), second=r.randint(0, 59)))
        day += timedelta(days=gap)
    return dates


def plan_guild(g: int, seed: int, people: list[tuple[str, str, list[str]]]) -> Guild:
    """Members, session times, each member's threads placed in sessions, and their traits."""
    r = random.Random(f"longconv:{seed}:{g}")
    pick = Picker(r)
    pron = {"he": ("he", "him", "his"), "she": ("she", "her", "her")}
    members = [
        Member(str(ID_BASE["user"] + g * 100 + i + 1), name, aliases, pron[p], r.random() < 0.35)
        for i, (name, p, aliases) in enumerate(people)
    ]
    channel = {"id": str(ID_BASE["channel"] + g), "name": CHANNELS[(g - 1) % len(CHANNELS)]}
    dates = session_dates(r)
    threads: list[Thread] = []
    owners: list[int] = []
    for mi, m in enumerate(members):
        taken = sorted({t.kind for t in threads})
        kinds = r.sample(
            [k for k in sorted(THREAD_KINDS) if k not in taken], 3 if len(members) == 2 else 2
        )
        if taken and r.random() < 0.4:
            kinds[-1] = r.choice(taken)  # the same kind of thread for two members: a distractor
        for kind in kinds:
            t = THREAD_KINDS[kind](pick)
            t.p = {k: fill(v, {**m.ctx(), **t.p}) for k, v in t.p.items()}
            threads.append(t)
            owners.append(mi)
    placed = place_beats(r, threads, dates)
    for t, spots in zip(threads, placed, strict=True):
        if t.kind == "trip":
            ahead = r.randint(1, 3)
            leave = dates[spots[2]] + timedelta(days=ahead)
            t.p["leave"] = (
                "leaving tomorrow" if ahead == 1 else f"leaving {WEEKDAYS[leave.weekday()]}"
            )
            t.p["nights"] = str(min(10, max(2, (dates[spots[3]] - leave).days - r.randint(0, 2))))
            t.p["leave_date"] = leave.isoformat()
    traits: list[tuple[int, str, list[int], list[str]]] = []
    for mi in range(len(members)):
        own_kinds = {threads[i].kind for i in range(len(threads)) if owners[i] == mi}
        taken = [trait for _, trait, _, _ in traits]
        allowed = [
            k
            for k in sorted(TRAITS)
            if k not in taken and not (k == "flying" and "trip" in own_kinds)
        ]
        for trait in r.sample(allowed, 3 if len(members) == 2 else 2):
            remarks = r.sample(TRAITS[trait][0], min(3, len(TRAITS[trait][0])))
            traits.append((mi, trait, sorted(r.sample(range(len(dates)), len(remarks))), remarks))
    return Guild(g, r, members, channel, dates, threads, owners, placed, traits)


def session_lines(
    w: Guild, s: int
) -> tuple[list[Line], list[tuple[int, int]], list[int], list[str]]:
    """The lines of session ``s`` in order: greeting, the beats, mentions, trait remarks and
    small talk shuffled together, goodbye. Also returns the (thread, beat) pairs, the threads
    only mentioned and the small-talk topics, for the note."""
    r, members = w.r, w.members
    blocks: list[list[Line]] = []
    beats: list[tuple[int, int]] = []
    mentioned: list[int] = []
    for ti, t in enumerate(w.threads):
        o = w.owners[ti]
        if s in w.placed[ti]:
            b = w.placed[ti].index(s)
            x = r.choice(w.others(o))
            block: list[Line] = []
            for line in t.beats[b].lines:
                text, _, tag = variant(line[3:], r).partition(" #")
                block.append(
                    (
                        o if line[0] == "o" else x,
                        fill(text, w.ctx(ti, x)),
                        ("fact", (ti, tag)) if tag else None,
                    )
                )
            blocks.append(block)
            beats.append((ti, b))
        elif w.placed[ti][t.mentions_after] < s and r.random() < 0.3:
            block = [(o, fill(r.choice(t.mentions), w.ctx(ti)), None)]
            if r.random() < 0.6:
                block.append((r.choice(w.others(o)), r.choice(REACTIONS), None))
            blocks.append(block)
            mentioned.append(ti)
    for mi, trait, spots, remarks in w.traits:
        if s in spots:
            block = [(mi, remarks[spots.index(s)], ("trait", (mi, trait)))]
            if r.random() < 0.7:
                block.append((r.choice(w.others(mi)), r.choice(TRAIT_REACTIONS), None))
            blocks.append(block)
    target = r.randint(14, 45)
    labels: list[str] = []
    talk = r.sample(SMALL_TALK, len(SMALL_TALK))
    while talk and sum(len(bl) for bl in blocks) + 4 < target:
        label, lines = talk.pop()
        a, b2 = r.sample(range(len(members)), 2)
        slots = {k: r.choice(v) for k, v in SLOTS.items()}
        blocks.append(
            [(a if ln[0] == "a" else b2, fill(variant(ln[3:], r), slots), None) for ln in lines]
        )
        if label and label not in labels:
            labels.append(label)
    r.shuffle(blocks)
    a, b2 = r.sample(range(len(members)), 2)
    hello: list[Line] = [
        (a if ln[0] == "a" else b2, variant(ln[3:], r), None) for ln in r.choice(GREETINGS)
    ]
    bye: list[Line] = [
        (a if ln[0] == "a" else b2, variant(ln[3:], r), None) for ln in r.choice(GOODBYES)
    ]
    flat = hello + [ln for bl in blocks for ln in bl] + bye
    if len(members) == 3 and r.random() < 0.5:
        flat.insert(r.randrange(2, len(flat)), (r.randrange(3), r.choice(REACTIONS), None))
    return flat, beats, mentioned, labels


def write_messages(w: Guild, s: int, lines: list[Line], first_id: int) -> list[dict[str, str]]:
    """Session ``s``'s messages: timed a few seconds to minutes apart, some typos, each
    member's casing; records which message states each fact and trait."""
    r = w.r
    messages: list[dict[str, str]] = []
    now = w.dates[s]
    for who, text, mark in lines:
        if messages:
            now += timedelta(
                seconds=r.choice(
                    [r.randint(8, 90)] * 7 + [r.randint(90, 300)] * 2 + [r.randint(300, 800)]
                )
            )
        if mark is None and r.random() < 0.06:
            text = typo(text, r)
        if w.members[who].lower and not text.startswith("["):
            text = text.lower()
        mid = str(first_id + len(messages))
        messages.append(
            {"id": mid, "author": w.members[who].user_id, "time": iso(now), "text": text}
        )
        if mark is not None and mark[0] == "fact":
            w.facts[mark[1]] = Said(mid, s, now)
        elif mark is not None:
            w.trait_said.setdefault(mark[1], []).append(Said(mid, s, now))
    return messages


def write_note(
    w: Guild,
    beats: list[tuple[int, int]],
    mentioned: list[int],
    labels: list[str],
    authors: list[str],
) -> dict[str, Any]:
    """The ideal summary of a session: its threads, with details only some of the time."""
    r = w.r
    sentences: list[str] = []
    topics: list[str] = []
    decisions: list[str] = []
    open_q: list[str] = []
    entities = [m.name for m in w.members if m.user_id in authors]
    for ti, b in beats:
        beat, ctx = w.threads[ti].beats[b], w.ctx(ti, r.choice(w.others(w.owners[ti])))
        sentences.append(fill(beat.detail if r.random() < DETAIL_SHARE else beat.generic, ctx))
        topics.append(w.threads[ti].topic)
        decisions += [fill(beat.decision, ctx)] if beat.decision else []
        open_q += [fill(beat.open_question, ctx)] if beat.open_question else []
    sentences = sentences[:3]
    for ti in mentioned:
        if len(sentences) < 4 and r.random() < 0.5:
            sentences.append(fill("{O} also mentioned " + w.threads[ti].about + ".", w.ctx(ti)))
            topics.append(w.threads[ti].topic)
    if len(sentences) < 2 and labels:
        sentences.append("They also chatted about " + join_names(labels[:3]) + ".")
    if len(sentences) < 2:
        sentences.insert(0, f"{join_names(entities)} caught up in #{w.channel['name']}.")
    summary = " ".join(sentences)
    entities += [
        w.threads[ti].p[k]
        for ti, _ in beats
        for k in w.threads[ti].names
        if w.threads[ti].p[k] in summary
    ]
    titles = [fill(w.threads[ti].beats[b].title, w.threads[ti].p) for ti, b in beats[:2]]
    return {
        "title": " and ".join(titles)
        if titles
        else "Catching up: " + (labels[0] if labels else "small talk"),
        "summary": summary,
        "topics": list(dict.fromkeys(topics + labels[:2])),
        "decisions": decisions,
        "open_questions": open_q,
        "entities": list(dict.fromkeys(entities)),
    }


def build_guild(g: int, seed: int, people: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
    """One guild: members, sessions with messages and notes, and its questions."""
    w = plan_guild(g, seed, people)
    sessions: list[dict[str, Any]] = []
    next_id = ID_BASE["message"] + g * 100000 + 1
    for s in range(len(w.dates)):
        lines, beats, mentioned, labels = session_lines(w, s)
        messages = write_messages(w, s, lines, next_id)
        next_id += len(messages)
        note = write_note(w, beats, mentioned, labels, [m["author"] for m in messages])
        sessions.append(
            {
                "key": f"g{g}-s{s + 1:02d}",
                "start": messages[0]["time"],
                "end": messages[-1]["time"],
                "note": note,
                "messages": messages,
            }
        )
    last_end = datetime.strptime(sessions[-1]["end"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    questions = make_questions(w, last_end)
    questions += make_paraphrases(w, sessions, last_end, seed, QUOTA["paraphrase"])
    return {
        "guild_id": str(ID_BASE["guild"] + g),
        "channel": w.channel,
        "members": [
            {"user_id": m.user_id, "name": m.name, "aliases": m.aliases} for m in w.members
        ],
        "sessions": sessions,
        "questions": [{"id": f"g{g}-q{i + 1:03d}", **q} for i, q in enumerate(questions)],
    }


WHEN_Q = [
    "When did {O} {e}?",
    "Roughly when did {O} {e}?",
    "What day did {O} {e}?",
    "How long ago did {O} {e}?",
]
WORRY_Q = [
    "What was {O} worried about in {per}?",
    "What was stressing {O} out in {per}?",
    "Anything bugging {O} back in {per}?",
    "What was on {O}'s mind in {per}?",
]
ABOUT_Q = [
    "What did {O} say about {about} {rel}?",
    "What was {O}'s news about {about} {rel}?",
    "{rel}, {O} told us something about {about}. What was it?",
    "Any update from {O} about {about} {rel}?",
]
TRIP_WEEK_Q = [
    "What did {names} talk about the week before {O} left for {dest}?",
    "In the week before {O}'s {dest} trip, what was going on with everyone?",
]
FIRST_Q = [
    "Which happened first: {a}, or {b}?",
    "Which came first, {a} or {b}?",
    "Was it before or after {b} that {a}?",
]
ASIDES = [
    "remind me, {q}",
    "quick question: {q}",
    "I forgot, {q}",
    "{Q} I was wondering earlier",
    "{Q} can't recall",
    "wait, {q}",
    "random question but {q}",
    "{Q} totally blanked on it",
    "hmm {q}",
    "{Q} someone mentioned it the other day",
]
AND_Q = ["{q1} And {q2}", "Two things I forgot: {q1} {q2}", "{q1} Also, {q2}"]
AFTER_TRIP_Q = [
    "Which city did {O} visit after {P} {past}?",
    "Where did {O} go on holiday after {P} {past}?",
]


def make_questions(w: Guild, last_end: datetime) -> list[dict[str, Any]]:
    """Candidate questions of every kind, sampled down to the per-kind quota and shuffled."""
    r, members, threads, owners, placed, facts, dates = (
        w.r,
        w.members,
        w.threads,
        w.owners,
        w.placed,
        w.facts,
        w.dates,
    )
    cands: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}

    def when_asked() -> datetime:
        return (last_end + timedelta(days=r.randint(1, 14))).replace(
            hour=r.randint(9, 22), minute=r.randint(0, 59), second=0
        )

    def add(
        kind: str, subject: int | list[int], text: str, said: list[Said], at: datetime | None = None
    ) -> None:
        subjects = subject if isinstance(subject, list) else [subject]
        others = [i for i in range(len(members)) if i not in subjects] or list(range(len(members)))
        ids = sorted({x.msg_id for x in said})
        cands[kind].append(
            {
                "subject": subjects[0],
                "kind": kind,
                "question": first_upper(text),
                "asked_by": members[r.choice(others)].user_id,
                "asked_at": iso(at or when_asked()),
                "answer_message_ids": ids,
            }
        )

    def qctx(ti: int) -> dict[str, str]:
        return {**threads[ti].p, **members[owners[ti]].ctx(r)}

    for ti, t in enumerate(threads):
        o = owners[ti]
        for tag, phrasings in t.asks.items():
            if (ti, tag) in facts:
                add("single-hop", o, fill(phrase(r, phrasings), qctx(ti)), [facts[(ti, tag)]])
        for tag, event_list in t.when.items():
            if (ti, tag) in facts:
                add(
                    "temporal",
                    o,
                    fill(r.choice(WHEN_Q).replace("{e}", phrase(r, event_list)), qctx(ti)),
                    [facts[(ti, tag)]],
                )
        for tags, phrasings in t.bridges:
            said = [facts[(ti, tag)] for tag in tags if (ti, tag) in facts]
            if len(said) == len(tags) and len({x.session for x in said}) > 1:
                add("multi-hop", o, fill(phrase(r, phrasings), qctx(ti)), said)
        for tags, phrasings in t.opens:
            said = [facts[(ti, tag)] for tag in tags if (ti, tag) in facts]
            if said:
                add("open-domain", o, fill(r.choice(phrasings), qctx(ti)), said)
        for tag in t.worry:
            if (ti, tag) not in facts:
                continue
            at = facts[(ti, tag)].time
            rivals = [
                f
                for (tj, tg), f in facts.items()
                if owners[tj] == o
                and tg in threads[tj].worry
                and f is not facts[(ti, tag)]
                and period(f.time) == period(at)
            ]
            if not rivals:
                add(
                    "temporal",
                    o,
                    fill(r.choice(WORRY_Q).replace("{per}", period(at)), qctx(ti)),
                    [facts[(ti, tag)]],
                )
        b = r.randrange(len(t.beats))
        said = [f for (tj, _tag), f in facts.items() if tj == ti and f.session == placed[ti][b]]
        asked_at = when_asked()
        day = dates[placed[ti][b]]
        options = [f"in {period(day)}"]
        weeks = round((asked_at - day).days / 7)
        if 2 <= weeks <= 8:
            options.append(f"about {weeks} weeks ago")
        if (asked_at.isocalendar()[1] - day.isocalendar()[1]) % 52 == 1:
            options.append("last week")
        if (asked_at.month - day.month) % 12 == 1:
            options.append("last month")
        rel = r.choice(options)
        if said and not any(
            in_window(rel, day, dates[s]) for k, s in enumerate(placed[ti]) if k != b
        ):
            text = r.choice(ABOUT_Q).replace("{rel}", rel).replace("{about}", t.about)
            add("temporal", o, fill(text, qctx(ti)), said, asked_at)
        if t.kind == "trip" and (ti, "leave") in facts:
            leave = datetime.fromisoformat(t.p["leave_date"])
            week = [
                s for s in range(len(dates)) if timedelta(0) < leave - dates[s] <= timedelta(days=7)
            ]
            said = [f for (tj, _tag), f in facts.items() if f.session in week]
            names = join_names([m.name for m in members])
            add(
                "temporal", o, fill(r.choice(TRIP_WEEK_Q).replace("{names}", names), qctx(ti)), said
            )
            for tj, u in enumerate(threads):
                if owners[tj] != o or tj == ti:
                    continue
                for tag, past in u.events.items():
                    if (
                        (tj, tag) in facts
                        and facts[(tj, tag)].session < placed[ti][1]
                        and (ti, "booked") in facts
                    ):
                        text = r.choice(AFTER_TRIP_Q).replace("{past}", past)
                        add(
                            "multi-hop",
                            o,
                            fill(text, {**u.p, **members[o].ctx(r)}),
                            [facts[(tj, tag)], facts[(ti, "booked")]],
                        )

    events = [
        (ti, tag, past)
        for ti, t in enumerate(threads)
        for tag, past in t.events.items()
        if (ti, tag) in facts
    ]
    for _ in range(6):
        (ta, ga, pa), (tb, gb, pb) = r.sample(events, 2)
        if ta != tb and facts[(ta, ga)].session != facts[(tb, gb)].session:
            qa = fill("{O} " + pa, {**threads[ta].p, **members[owners[ta]].ctx()})
            qb = fill("{O} " + pb, {**threads[tb].p, **members[owners[tb]].ctx()})
            add(
                "temporal",
                [owners[ta], owners[tb]],
                r.choice(FIRST_Q).format(a=qa, b=qb),
                [facts[(ta, ga)], facts[(tb, gb)]],
            )
    singles = list(cands["single-hop"])
    for _ in range(8):
        q1, q2 = r.sample(singles, 2)
        if q1["answer_message_ids"] != q2["answer_message_ids"]:
            text = r.choice(AND_Q).format(
                q1=q1["question"], q2=q2["question"][0].lower() + q2["question"][1:]
            )
            ids = q1["answer_message_ids"] + q2["answer_message_ids"]
            said = [f for f in facts.values() if f.msg_id in ids]
            if len({f.session for f in said}) > 1:
                add("multi-hop", [q1["subject"], q2["subject"]], text, said)
    for mi, trait, _spots, _remarks in w.traits:
        add(
            "open-domain",
            mi,
            fill(r.choice(TRAITS[trait][1]), members[mi].ctx(r)),
            w.trait_said[(mi, trait)],
        )

    chosen: list[dict[str, Any]] = []
    for kind in KINDS:
        seen: list[str] = []
        for q in r.sample(cands[kind], len(cands[kind])):
            if q["question"] not in seen and q["answer_message_ids"] and len(seen) < QUOTA[kind]:
                seen.append(q["question"])
                if r.random() < ASIDE_SHARE.get(kind, 0.0):
                    q["question"] = r.choice(ASIDES).format(
                        q=q["question"][:1].lower() + q["question"][1:], Q=q["question"]
                    )
                chosen.append({k: v for k, v in q.items() if k != "subject"})
    r.shuffle(chosen)
    return chosen


#: Words that carry no content: a paraphrase may share these with what was said.
FUNCTION_WORDS = frozenset(
    "a an the and or but so to of in on at for with from by as into about is are was were be been "
    "being am do does did done have has had i me my you your he him his she her it its we us our "
    "they them their this that these those what which who whom whose when where why how if then "
    "than not no s t d ll m re ve".split()
)
#: Messages either side of an answer that a paraphrase must share no content word with either
#: (an evidence window holds four consecutive messages).
PARAPHRASE_REACH = 3


class Stems:
    """Content words as the retriever's keyword index sees them: SQLite's FTS5 with the porter
    stemmer ("working" and "works" are "work"), function words left out."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')"
        )
        self.db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
        self.function = self.of(" ".join(sorted(FUNCTION_WORDS)), everything=True)

    def of(self, text: str, *, everything: bool = False) -> set[str]:
        """The stems of ``text``'s words (without function words unless ``everything``)."""
        self.db.execute("DELETE FROM t")
        self.db.execute("INSERT INTO t (x) VALUES (?)", (text,))
        found = {str(row[0]) for row in self.db.execute("SELECT term FROM v")}
        return found if everything else found - self.function


def paraphrase_shared(stems: Stems, question: str, said: list[str]) -> set[str]:
    """The content stems ``question`` shares with the texts ``said``."""
    return stems.of(question) & stems.of("\n".join(said))


def make_paraphrases(
    w: Guild, sessions: list[dict[str, Any]], last_end: datetime, seed: int, quota: int
) -> list[dict[str, Any]]:
    """Questions of the paraphrase kind: one per fact that some phrasing of :data:`REPHRASE`
    can ask without a content word of the answer message or its neighbours, sampled down to
    ``quota``. Its own random stream, so the other kinds' questions stay as they were."""
    r = random.Random(f"longconv-paraphrase:{seed}:{w.g}")
    stems = Stems()
    near: dict[str, list[str]] = {}
    for session in sessions:
        texts = [m["text"] for m in session["messages"]]
        for i, m in enumerate(session["messages"]):
            near[m["id"]] = texts[max(0, i - PARAPHRASE_REACH) : i + PARAPHRASE_REACH + 1]
    found: list[dict[str, Any]] = []
    for ti, t in enumerate(w.threads):
        o = w.owners[ti]
        for tag, phrasings in REPHRASE.get(t.kind, {}).items():
            said = w.facts.get((ti, tag))
            if said is None:
                continue
            for phrasing in r.sample(phrasings, len(phrasings)):
                text = first_upper(fill(phrasing, {**t.p, **w.members[o].ctx(r)}))
                if not paraphrase_shared(stems, text, near[said.msg_id]):
                    others = [i for i in range(len(w.members)) if i != o]
                    at = (last_end + timedelta(days=r.randint(1, 14))).replace(
                        hour=r.randint(9, 22), minute=r.randint(0, 59), second=0
                    )
                    found.append(
                        {
                            "kind": "paraphrase",
                            "question": text,
                            "asked_by": w.members[r.choice(others)].user_id,
                            "asked_at": iso(at),
                            "answer_message_ids": [said.msg_id],
                        }
                    )
                    break
    return r.sample(found, min(quota, len(found)))


DESCRIPTION = (
    "Synthetic long-conversation retrieval eval for Vivy (issue 13), generated by "
    "scripts/build_longconv_eval.py. Each guild is one channel where 2-3 members chat over weeks in "
    "sessions days apart; each session has the ideal note it becomes. Questions (single-hop, "
    "multi-hop, temporal, open-domain) list the ids of the messages that answer them; a question's "
    "asked_at is after the last session, so relative dates resolve against it."
)


def build(seed: int, guilds: int) -> dict[str, Any]:
    """The full eval set: ``guilds`` guilds, one seeded RNG per guild. Members' names differ
    across guilds until the name list runs out, then they come round again."""
    shuffler = random.Random(f"longconv-people:{seed}")
    people: list[tuple[str, str, list[str]]] = []
    out: list[dict[str, Any]] = []
    for g in range(1, guilds + 1):
        size = 3 if random.Random(f"longconv-size:{seed}:{g}").random() < 0.35 else 2
        if len(people) < size:
            fresh = shuffler.sample(PEOPLE, len(PEOPLE))
            people += [p for p in fresh if p not in people]
        taken, people = people[:size], people[size:]
        out.append(build_guild(g, seed, taken))
    return {"description": DESCRIPTION, "seed": seed, "guilds": out}


def small_subset(data: dict[str, Any]) -> dict[str, Any]:
    """The first guilds with the first questions of each kind, for the test suite."""
    guilds = []
    for guild in data["guilds"][:SMALL_GUILDS]:
        kept: list[dict[str, Any]] = []
        for q in guild["questions"]:
            if sum(k["kind"] == q["kind"] for k in kept) < SMALL_QUOTA[q["kind"]]:
                kept.append(q)
        guilds.append({**guild, "questions": kept})
    return {
        **data,
        "description": data["description"] + " Small subset for the test suite.",
        "guilds": guilds,
    }


def dumps(data: dict[str, Any]) -> str:
    """The file text: stable key order, one-space indent, UTF-8 characters kept."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def overlap(asked: set[str], text: str) -> float:
    """The share of the question's content words ``asked`` that occur in ``text``."""
    return len(asked & set(content_words(text))) / len(asked)


def report(data: dict[str, Any]) -> list[str]:
    """``name: value`` lines: counts per kind, messages, how much a question's words overlap
    what answers it, and how often the note gives a single-hop answer away.

    Overlaps are means over the questions of a kind of the share of the question's content
    words (members' names and aliases left out) found in its answer messages, in the notes of
    the answer sessions (all fields), and in the raw text of those whole sessions. A single-hop
    question's answer words are the content words of its answer message that the question does
    not contain; its detail words are those of them said in at most two sessions of the guild
    (a name, a place, a number, not the thread's common words like "job" or "trip"). The report
    gives the share of single-hop questions whose note (title and summary) holds at least one
    answer word, at least one detail word, and at least half of the detail words.
    """
    kinds = Counter(q["kind"] for g in data["guilds"] for q in g["questions"])
    messages = sum(len(s["messages"]) for g in data["guilds"] for s in g["sessions"])
    sessions = sum(len(g["sessions"]) for g in data["guilds"])
    any_in_note = detail_in_note = half_in_note = singles = 0
    sums = {k: [0.0, 0.0, 0.0, 0] for k in KINDS}
    for guild in data["guilds"]:
        names = {
            w for m in guild["members"] for w in content_words(" ".join([m["name"], *m["aliases"]]))
        }
        where = {m["id"]: (m["text"], s) for s in guild["sessions"] for m in s["messages"]}
        spread = Counter(
            w
            for s in guild["sessions"]
            for w in set(content_words(" ".join(m["text"] for m in s["messages"])))
        )
        for q in guild["questions"]:
            asked = set(content_words(q["question"])) - names
            said = [where[i] for i in q["answer_message_ids"]]
            held = list({id(s): s for _, s in said}.values())
            if asked:
                row = sums[q["kind"]]
                row[0] += overlap(asked, " ".join(text for text, _ in said))
                row[1] += overlap(
                    asked, " ".join(json.dumps(s["note"], ensure_ascii=False) for s in held)
                )
                row[2] += overlap(asked, " ".join(m["text"] for s in held for m in s["messages"]))
                row[3] += 1
            if q["kind"] != "single-hop":
                continue
            singles += 1
            text, session = said[0]
            answer = [w for w in dict.fromkeys(content_words(text)) if w not in asked]
            summary = set(
                content_words(session["note"]["title"] + " " + session["note"]["summary"])
            )
            detail = [w for w in answer if spread[w] <= 2]
            found = sum(w in summary for w in detail)
            any_in_note += any(w in summary for w in answer)
            detail_in_note += found > 0
            half_in_note += bool(detail) and found * 2 >= len(detail)
    lines = [f"guilds: {len(data['guilds'])}", f"sessions: {sessions}", f"messages: {messages}"]
    lines += [f"questions_{k}: {kinds[k]}" for k in KINDS] + [f"questions: {sum(kinds.values())}"]
    for k in KINDS:
        n = max(1, int(sums[k][3]))
        lines += [
            f"overlap_{k}_{part}: {sums[k][i] / n:.3f}"
            for i, part in enumerate(("answer_messages", "note", "session_raw"))
        ]
    stems = Stems()
    shared = 0
    for guild in data["guilds"]:
        where = {m["id"]: m["text"] for s in guild["sessions"] for m in s["messages"]}
        for q in guild["questions"]:
            if q["kind"] == "paraphrase":
                said = [where[i] for i in q["answer_message_ids"]]
                shared += len(paraphrase_shared(stems, q["question"], said))
    lines.append(f"paraphrase_shared_answer_stems: {shared}")
    lines.append(f"single_hop_some_answer_word_in_summary: {any_in_note / max(1, singles):.3f}")
    lines.append(f"single_hop_some_detail_word_in_summary: {detail_in_note / max(1, singles):.3f}")
    lines.append(f"single_hop_half_detail_words_in_summary: {half_in_note / max(1, singles):.3f}")
    return lines


def main() -> None:
    """Generate both files and print the report of the full set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="RNG seed (default %(default)s)"
    )
    parser.add_argument(
        "--guilds", type=int, default=DEFAULT_GUILDS, help="number of guilds in the full set"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the full set goes")
    parser.add_argument(
        "--small-out", type=Path, default=DEFAULT_SMALL_OUT, help="where the test-suite subset goes"
    )
    args = parser.parse_args()
    data = build(args.seed, args.guilds)
    args.out.write_text(dumps(data), encoding="utf-8")
    args.small_out.write_text(dumps(small_subset(data)), encoding="utf-8")
    print("\n".join(report(data)))


if __name__ == "__main__":
    main()
