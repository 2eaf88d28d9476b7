"""Thread kinds of free time: a trip, a hobby project, a video game."""

from __future__ import annotations

from vivy_lab.synthetic.longconv.threads import Beat, Picker, Thread


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
