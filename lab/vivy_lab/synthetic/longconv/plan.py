"""A guild's plan: its members, session times, the members' threads placed in sessions and
their traits, and (filled in as the sessions are written) which message said each fact and
trait."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from vivy_lab.synthetic.longconv.kinds import THREAD_KINDS
from vivy_lab.synthetic.longconv.pools import CHANNELS, TRAITS
from vivy_lab.synthetic.longconv.text import fill
from vivy_lab.synthetic.longconv.threads import Picker, Thread

FIRST_DAY = datetime(2026, 1, 5, tzinfo=UTC)
ID_BASE = {
    "guild": 872000000000000000,
    "channel": 872100000000000000,
    "user": 872200000000000000,
    "message": 872300000000000000,
}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


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
