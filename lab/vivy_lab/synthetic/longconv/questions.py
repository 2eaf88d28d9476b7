"""The question kinds and how many of each a guild gets; the questions of every kind but
paraphrase (:mod:`.paraphrases`): their phrasings and :func:`make_questions`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from vivy_lab.synthetic.longconv.plan import Guild, Said
from vivy_lab.synthetic.longconv.pools import TRAITS
from vivy_lab.synthetic.longconv.text import (
    fill,
    first_upper,
    in_window,
    iso,
    join_names,
    period,
    phrase,
)

KINDS = ("single-hop", "multi-hop", "temporal", "open-domain", "paraphrase")
QUOTA = {"single-hop": 22, "multi-hop": 12, "temporal": 16, "open-domain": 12, "paraphrase": 12}
#: How often a question of a kind comes with an aside ("remind me, ...").
ASIDE_SHARE = {"single-hop": 0.6, "multi-hop": 0.7}


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
