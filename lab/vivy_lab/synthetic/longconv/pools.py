"""The word pools the chat is made of: people and channel names, traits (the remarks that
show them and the questions they answer), reactions, small talk with its slots, greetings
and goodbyes."""

# Dialogue and phrasing lines are kept on one line each for readability.
# ruff: noqa: E501

from __future__ import annotations

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
