"""The answers of the fake model servers: deterministic functions of the prompt text.

Both fakes (:mod:`vivy_lab.fakes.gemini` through :func:`gemini_brain_route`, and
:mod:`vivy_lab.fakes.openai` by default) answer from here, so the same pipeline run through
either provider gets the same notes, facts, vectors and replies, and a test can compare what
each provider's plumbing made of them. The answers read the prompt as a model would (the
transcript, the members, the notes), never the structured payload:

* a note names the conversation's most repeated content words as its topics, its authors
  in the summary, questions as open questions and "let's" lines as decisions;
* a member's first-person lines ("I live in Denver") become facts ("Live in Denver"),
  in a note call or a profile update, unless the profile already holds them;
* consolidation changes nothing; clustering puts a day's notes in one cluster;
* a chat answer quotes the first note line of the memory block;
* vectors hash words into signed buckets, unnormalised (the providers normalise).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections import Counter
from typing import Any

from vivy.llm.prompts import (
    CLUSTER_SYSTEM,
    CONSOLIDATION_SYSTEM,
    NOTE_SYSTEM,
    PROFILE_UPDATE_SYSTEM,
)
from vivy_lab.fakes.gemini import RecordedRequest, Reply, Route, embeddings, text_answer

__all__ = ["brain_answer", "brain_chat", "brain_vector", "gemini_brain_route", "is_generation"]

#: The opening of each generation's system prompt (a chat's persona is none of them).
_GENERATION_SYSTEMS = tuple(
    system[:60]
    for system in (NOTE_SYSTEM, PROFILE_UPDATE_SYSTEM, CONSOLIDATION_SYSTEM, CLUSTER_SYSTEM)
)

_LINE = re.compile(r"^\[[^\]]+\] (?P<author>.+?)(?: \(id \d+\))?: (?P<text>.*)$")
_TRANSCRIPT = re.compile(r"<transcript>\n(?P<body>.*?)\n</transcript>", re.DOTALL)
_MEMBER = re.compile(r'<member id="(?P<id>\d+)" name="(?P<name>[^"]*)">\n(?P<facts>.*?)\n</member>')
_NOTE = re.compile(r'<note id="(?P<id>\d+)"(?P<head>[^>]*)>\n(?P<body>.*?)\n</note>', re.DOTALL)
_USER = re.compile(r'^User: "(?P<name>[^"]*)" \(id (?P<id>\d+)\)', re.MULTILINE)
_FACT = re.compile(r"^\d+ \w+: (?P<text>.*?)(?: \[[^\]]*\])?$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z][A-Za-z']+")
#: A word a note may name as a topic or entity (no contraction such as "it's").
_NAMING = re.compile(r"[A-Za-z]{4,}")
_FIRST_PERSON = re.compile(r"^I (?:live|work|play|love|have|own|study|moved|am|'m) .+", re.I)
_STOP = frozenset(
    "about after again also and are been but can could did does doing from have just like "
    "maybe more much need only really should some than that the their them then there these "
    "they this tonight want was were what when where which will with would you your yeah "
    "okay sure think going gonna".split()
)


def _transcript(block: str) -> list[tuple[str, str]]:
    """(author, text) of each line of a ``<transcript>`` body, unescaped."""
    found = []
    for raw in block.splitlines():
        match = _LINE.match(raw)
        if match:
            found.append((html.unescape(match["author"]), html.unescape(match["text"])))
    return found


def _fact(text: str) -> str | None:
    """The fact a first-person line states ("I live in Denver." -> "Live in Denver")."""
    if not _FIRST_PERSON.match(text):
        return None
    words = text.split()[1:13]
    fact = " ".join(words).rstrip(".!?,;")
    return fact[:1].upper() + fact[1:] if fact else None


def _facts_of(lines: list[tuple[str, str]], name: str, known: set[str]) -> list[tuple[str, str]]:
    """(fact, line) for each new fact ``name``'s lines state, at most two."""
    found: list[tuple[str, str]] = []
    for author, text in lines:
        fact = _fact(text) if author == name else None
        if fact and fact.lower() not in known:
            known.add(fact.lower())
            found.append((fact, text[:300]))
    return found[:2]


def _note(prompt: str) -> dict[str, Any]:
    """A conversation note (and the listed members' operations) from a note prompt."""
    match = _TRANSCRIPT.search(prompt)
    lines = _transcript(match["body"]) if match else []
    authors = list(dict.fromkeys(author for author, _ in lines))
    words = Counter(
        word.lower()
        for _, text in lines
        for word in _NAMING.findall(text)
        if word.lower() not in _STOP
    )
    topics = [word for word, _ in words.most_common(3)] or ["chat"]
    entities = list(
        dict.fromkeys(
            word
            for _, text in lines
            for word in _NAMING.findall(text)[1:]
            if word[0].isupper() and word.lower() not in _STOP and word not in authors
        )
    )[:5]
    first = lines[0][1] if lines else "nothing"
    note: dict[str, Any] = {
        "title": " and ".join(topics[:2]).capitalize()[:80],
        "summary": f"{', '.join(authors) or 'Nobody'} talked about {', '.join(topics)}. "
        f"It began with: {first}"[:1200],
        "topics": topics,
        "decisions": [text[:240] for _, text in lines if "let's" in text.lower()][:2],
        "open_questions": [text[:240] for _, text in lines if text.endswith("?")][:3],
        "entities": entities,
    }
    members = list(_MEMBER.finditer(prompt))
    if members:
        note["profiles"] = []
        for member in members:
            known = {m["text"].lower() for m in _FACT.finditer(member["facts"])}
            name = html.unescape(member["name"])
            operations = [
                {"op": "add", "section": "bio", "text": fact, "note_id": None, "evidence": line}
                for fact, line in _facts_of(lines, name, known)
            ]
            note["profiles"].append({"user_id": int(member["id"]), "operations": operations})
    return note


def _profile_update(prompt: str) -> dict[str, Any]:
    """Operations adding the facts the user states in the notes' transcripts."""
    user = _USER.search(prompt)
    if user is None:
        return {"operations": []}
    name = html.unescape(user["name"])
    profile = prompt[: prompt.find("</profile>")]
    known = {m["text"].lower() for m in _FACT.finditer(profile)}
    operations = []
    for note in _NOTE.finditer(prompt):
        transcript = _TRANSCRIPT.search(note["body"])
        lines = _transcript(transcript["body"]) if transcript else []
        for fact, line in _facts_of(lines, name, known):
            operations.append(
                {
                    "op": "add",
                    "section": "bio",
                    "text": fact,
                    "note_id": int(note["id"]),
                    "evidence": line,
                }
            )
    return {"operations": operations}


def _clusters(prompt: str) -> dict[str, Any]:
    """One cluster holding every note of the day (none without notes)."""
    notes = list(_NOTE.finditer(prompt))
    if not notes:
        return {"clusters": []}
    titles = [re.search(r"^Title: (.*)$", n["body"], re.MULTILINE) for n in notes]
    shown = "; ".join(html.unescape(t[1]) for t in titles if t is not None)
    date = re.search(r"^Date: (.*)$", prompt, re.MULTILINE)
    return {
        "clusters": [
            {
                "title": f"The day's talk{f' ({date[1]})' if date else ''}"[:80],
                "summary": f"Conversations: {shown}"[:1200],
                "source_note_ids": [int(n["id"]) for n in notes][:100],
            }
        ]
    }


def is_generation(system: str) -> bool:
    """Whether a request with this system prompt asks for a structured generation."""
    return system.startswith(_GENERATION_SYSTEMS)


def brain_answer(system: str, prompt: str) -> dict[str, Any]:
    """The structured answer to a generation with this system prompt and prompt."""
    if system.startswith(PROFILE_UPDATE_SYSTEM[:60]):
        return _profile_update(prompt)
    if system.startswith(CONSOLIDATION_SYSTEM[:60]):
        return {"operations": []}
    if system.startswith(CLUSTER_SYSTEM[:60]):
        return _clusters(prompt)
    return _note(prompt)


def brain_chat(system: str) -> str:
    """A chat answer: the first note line of the memory block, or that there is none."""
    notes = system.partition("<notes>\n")[2]
    first = notes.splitlines()[0] if notes else ""
    if not first.startswith("- "):
        return "I don't remember anything about that."
    return f"I remember this: {html.unescape(first[2:])[:200]}"


def brain_vector(text: str, dimension: int) -> list[float]:
    """Words hashed into ``dimension`` signed buckets, times three (not unit length)."""
    vector = [0.0] * dimension
    vector[0] = 0.5
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest, "little")
        vector[bucket % dimension] += 3.0 if bucket >> 63 else -3.0
    return vector


def _gemini_text(content: Any) -> str:
    """The text of a Gemini ``Content`` object (or of the first of a list of them)."""
    if isinstance(content, list):
        content = content[0] if content else {}
    parts = content.get("parts", []) if isinstance(content, dict) else []
    return "".join(str(part.get("text", "")) for part in parts)


def gemini_brain_route() -> Route:
    """A route for :class:`~vivy_lab.fakes.gemini.FakeGemini` answering from this brain:
    structured generations, chat answers and vectors, as the fake OpenAI server does."""

    def route(recorded: RecordedRequest) -> Reply | None:
        if recorded.method == "batchEmbedContents":
            vectors = []
            for item in recorded.body.get("requests", []):
                text = _gemini_text(item.get("content", {}))
                dimension = int(item.get("outputDimensionality", 768))
                vectors.append(brain_vector(text, dimension))
            return embeddings(vectors)
        if recorded.method != "generateContent":
            return None
        system = _gemini_text(recorded.body.get("systemInstruction", {}))
        if not is_generation(system):
            return text_answer(brain_chat(system))
        prompt = _gemini_text(recorded.body.get("contents", []))
        return text_answer(json.dumps(brain_answer(system, prompt)))

    return route
