"""Profiles at the caps, for the llm-cost benchmark's *mature* replay.

A server that has been running for months holds full profiles: its regulars have said enough
about themselves for every section to be full or one short (45 facts). :func:`full_profile`
writes such a profile for a member, learnt from earlier conversations, with the kinds of
facts a model extracts (a home, an employer, an occupation, lists of likes, games and skills,
stances, people and pets, habits), so that the replay's statements meet what they would meet
on such a server: a slot to supersede, a list to join, or a subject not yet there.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import trio

from vivy.memory.facts import PROFILE_SECTIONS, NewFact
from vivy.state.profile import PROFILE_CAP, SECTION_CAP, ProfilePlan
from vivy.storage.engines import open_store

__all__ = ["full_profile", "seed_full_profiles"]

#: Per section, fact templates; ``{n}`` is the member's index, picking one of each choice.
_TEMPLATES: dict[str, tuple[str, ...]] = {
    "bio": (
        "Lives in {Portland|Porto|Mumbai|Munich}",
        "Works at {a bakery|a call centre|a pharmacy|a car dealer}",
        "Works as a {barista|cashier|courier|receptionist}",
        "Grew up in a small town by a lake",
        "Has two younger siblings",
        "Speaks {Spanish|French|Marathi|Danish} at home",
        "Commutes by train most days",
        "Was born in {March|July|October|January}",
    ),
    "interests": (
        "Loves {ramen|jazz|thrift shopping|street photography}",
        "Plays {Stardew Valley|Minecraft|Hades|Tetris} in the evenings",
        "Goes running along the river",
        "Watches {Frasier|The Office|Columbo|Taskmaster} reruns",
        "Collects vinyl records",
        "Follows {Formula 1|the NBA|cricket|cycling} closely",
        "Likes board games with friends",
        "Reads fantasy novels before bed",
    ),
    "skills": (
        "Is learning {Korean|Italian|German|Swedish}",
        "Uses {Excel|Figma|Rust|Blender} at work",
        "Knows some sign language",
        "Can touch type very fast",
        "Bakes bread on Sundays",
        "Fixes old bikes for friends",
        "Sews their own clothes",
        "Draws comics in a sketchbook",
    ),
    "opinions": (
        "Prefers {mornings over evenings|cats over dogs|trains over planes|summer over winter}",
        "Dislikes {loud bars|cilantro|crowded trains|reality TV}",
        "Thinks pineapple belongs on pizza",
        "Finds open offices distracting",
        "Enjoys rainy days indoors",
        "Thinks remote work suits them",
        "Believes handwritten letters matter",
    ),
    "relationships": (
        "Has a sister named {Ana|Rosa|Meera|Frieda}",
        "Has a roommate named {Sam|Nico|Dev|Lars}",
        "Has a cat named {Pixel|Mochi|Chai|Knut}",
        "Is close to their grandmother",
        "Has a best friend from school",
        "Visits their parents on Sundays",
        "Has a nephew who just started school",
    ),
    "other": (
        "Drinks coffee black",
        "Cycles to work in summer",
        "Is an early riser",
        "Has a tattoo of a fox",
        "Owns a vintage film camera",
        "Keeps a bullet journal",
        "Is allergic to peanuts",
    ),
}


def _fill(template: str, member: int) -> str:
    """``template`` with each ``{a|b|…}`` choice resolved for the member's index."""
    while "{" in template:
        head, rest = template.split("{", 1)
        choices, tail = rest.split("}", 1)
        options = choices.split("|")
        template = head + options[member % len(options)] + tail
    return template


def full_profile(member: int) -> list[tuple[str, str]]:
    """The (section, text) facts of member number ``member``'s full profile, oldest first, in
    an order of its own (a profile learnt over many conversations mixes sections in time)."""
    facts: list[tuple[str, str]] = [
        (section, _fill(template, member))
        for section in PROFILE_SECTIONS
        for template in _TEMPLATES[section]
    ]
    random.Random(member).shuffle(facts)
    assert len(facts) == PROFILE_CAP
    assert all(sum(s == section for s, _ in facts) <= SECTION_CAP for section in PROFILE_SECTIONS)
    return facts


def seed_full_profiles(
    database: Path, guild_id: int, user_ids: Sequence[int], *, before: float
) -> None:
    """Give each member a full profile in the SQLite database at ``database``, its facts
    learnt from conversations in the months before ``before``, oldest first."""

    async def seed() -> None:
        store = open_store(database, inline=True)
        try:
            for member, user_id in enumerate(user_ids):
                facts = full_profile(member)
                for version, (section, text) in enumerate(facts):
                    learnt = before - (len(facts) - version) * 3 * 86400.0
                    plan = ProfilePlan(
                        added=[NewFact(section, text, "note", None, "earlier conversation")]
                    )
                    await store.profiles.apply_plan(guild_id, user_id, version, plan, learnt)
        finally:
            store.close()

    trio.run(seed)
