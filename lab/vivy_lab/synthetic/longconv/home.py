"""Thread kinds of home life: a pet, a family event, a move."""

# Dialogue and phrasing lines are kept on one line each for readability.
# ruff: noqa: E501

from __future__ import annotations

from vivy_lab.synthetic.longconv.threads import Beat, Picker, Thread


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
