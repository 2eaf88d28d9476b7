"""The generator's report of a set: counts, how much a question's wording overlaps what
answers it, and how often a note gives a single-hop answer away."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from vivy_lab.synthetic.longconv.paraphrases import Stems, paraphrase_shared
from vivy_lab.synthetic.longconv.questions import KINDS
from vivy_lab.synthetic.longconv.text import content_words


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
        texts = {m["id"]: m["text"] for s in guild["sessions"] for m in s["messages"]}
        for q in guild["questions"]:
            if q["kind"] == "paraphrase":
                answers = [texts[i] for i in q["answer_message_ids"]]
                shared += len(paraphrase_shared(stems, q["question"], answers))
    lines.append(f"paraphrase_shared_answer_stems: {shared}")
    lines.append(f"single_hop_some_answer_word_in_summary: {any_in_note / max(1, singles):.3f}")
    lines.append(f"single_hop_some_detail_word_in_summary: {detail_in_note / max(1, singles):.3f}")
    lines.append(f"single_hop_half_detail_words_in_summary: {half_in_note / max(1, singles):.3f}")
    return lines
