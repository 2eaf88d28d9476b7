"""Writing a planned guild's chat: each session's lines, its messages and its ideal note, and
the guild as the eval file holds it, questions included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from vivy_lab.synthetic.longconv.paraphrases import make_paraphrases
from vivy_lab.synthetic.longconv.plan import ID_BASE, Guild, Said, plan_guild
from vivy_lab.synthetic.longconv.pools import (
    GOODBYES,
    GREETINGS,
    REACTIONS,
    SLOTS,
    SMALL_TALK,
    TRAIT_REACTIONS,
)
from vivy_lab.synthetic.longconv.questions import QUOTA, make_questions
from vivy_lab.synthetic.longconv.text import fill, iso, join_names, typo, variant

DETAIL_SHARE = 0.45  # how often a note spells out a beat's details rather than its gist
#: What a line states: ("fact", (thread index, tag)) or ("trait", (member index, trait)).
Mark = tuple[str, tuple[int, str]]
#: A line of a session: (member index, text, what the line states).
Line = tuple[int, str, Mark | None]


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
