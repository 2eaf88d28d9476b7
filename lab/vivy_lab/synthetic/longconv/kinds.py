"""Every thread kind by name, and the paraphrase kind's phrasings per thread kind and fact
tag."""

from __future__ import annotations

from collections.abc import Callable

from vivy_lab.synthetic.longconv.home import family, move, pet
from vivy_lab.synthetic.longconv.leisure import game, hobby, trip
from vivy_lab.synthetic.longconv.threads import Picker, Thread
from vivy_lab.synthetic.longconv.work import course, illness, job

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
