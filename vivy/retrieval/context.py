"""Rendering of the ``<background_facts>`` block the chat model reads (pure).

Facts and notes carry inline sources, so the bot can say where it learned something::

    <background_facts>
    <user name="Alex">
    Bio:
    - Lives in Austin, works at Dell  [Gaming session, Feb 23]

    Interests:
    - RPG games  [Gaming discussion, Feb 23]
    </user>
    <notes>
    - [Feb 23] Gaming discussion — Alex, Sam, and Jake debated JRPG recommendations...
      > Sam, Feb 23: xenoblade 3 fixes everything you hated about 2
    - [Feb 23] Daily topic: Games — Three conversations about co-op games...
    </notes>
    <recent_activity>
    - Alex: Gaming discussion [Feb 23]; OS debate [Feb 21]
    </recent_activity>
    <server_lore>
    - The server's mascot is an owl named Hoot.
    </server_lore>
    </background_facts>

* One ``<user>`` block per member with facts; sections in the order Bio, Interests, Skills,
  Opinions, Relationships, Other, only non-empty ones, a blank line between sections. Each
  fact is ``- text  [source label]`` (two spaces), the label as stored with the fact.
* ``<notes>``: conversation notes in rank order, then the day's topic clusters (marked
  ``Daily topic:``), each ``- [Mon D] Title — summary`` with the summary cut to about 300
  characters ("..." marks a cut). Under a conversation note, the lines of its evidence that
  best answer the question, ``  > Name, Mon D: text`` (clipped), so the chat model can quote
  what was said and when; all notes' lines together stay within a token budget (about four
  characters a token): each note's best line in rank order, then the other lines by how
  well they answer the question, the higher notes' first where lines answer alike.
* ``<recent_activity>`` (short-lived memory, no LLM call): for each member of the
  conversation, the titles of conversation notes they took part in over the last days.
* ``<server_lore>``: the guild's active lore, oldest first.

Blocks with nothing to say are left out; with nothing at all the result is the empty string.
Every stored text (names, facts, labels, titles, summaries, lore) is escaped (``&``, ``<``,
``>``, and ``"`` in attributes) and its whitespace collapsed, so stored text can neither close
a block (a stored ``</background_facts>``) nor start a line that looks like a fact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vivy.memory.dates import note_date, short_date
from vivy.memory.evidence import EvidenceLine, ScoredLine
from vivy.memory.facts import Fact
from vivy.memory.notes import Note
from vivy.text.markup import readable

__all__ = [
    "EVIDENCE_TOKENS",
    "RANK_SHARE",
    "SECTION_TITLES",
    "ActivityBlock",
    "ContextParts",
    "ProfileBlock",
    "clip",
    "escape_attribute",
    "escape_text",
    "quoted_lines",
    "quoted_text",
    "render_context",
    "sections_of",
]

#: Profile sections in display order, with their headings.
SECTION_TITLES: tuple[tuple[str, str], ...] = (
    ("bio", "Bio"),
    ("interests", "Interests"),
    ("skills", "Skills"),
    ("opinions", "Opinions"),
    ("relationships", "Relationships"),
    ("other", "Other"),
)


@dataclass(frozen=True, slots=True)
class ProfileBlock:
    """A member's name and active facts."""

    name: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True, slots=True)
class ActivityBlock:
    """A member's recent conversation notes as (``YYYY-MM-DD``, title), newest first."""

    name: str
    notes: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ContextParts:
    """Everything that goes into one ``<background_facts>`` block."""

    profiles: tuple[ProfileBlock, ...] = ()
    notes: tuple[Note, ...] = ()
    clusters: tuple[Note, ...] = ()
    activity: tuple[ActivityBlock, ...] = ()
    lore: tuple[str, ...] = ()
    #: Conversation notes' evidence lines that best answer the question, best first with
    #: their scores, by note id: the budget quotes what it can of them.
    evidence: Mapping[int, tuple[ScoredLine, ...]] = field(default_factory=dict)


#: Characters per token, as the evidence budget estimates it.
CHARS_PER_TOKEN = 4
#: Tokens of quoted lines under a reply's notes, all notes together (``VIVY_EVIDENCE_TOKENS``):
#: six chat-length lines under each of five notes, or two to three of the long messages of
#: talk written at length, where the budget binds (docs/benchmarks.md has the measurement).
EVIDENCE_TOKENS = 600
#: What a note's place adds to its lines' claim on the evidence budget: ``RANK_SHARE / place``
#: (1 for the first note), so that of lines that answer alike the better note's are quoted.
#: Chosen by leave-one-conversation-out cross-validation on the real dev conversations
#: (``python scripts/learn_fusion_weights.py`` reports the held-out choice).
RANK_SHARE = 0.2


def _squash(text: str) -> str:
    """``text`` on one line, runs of whitespace collapsed to single spaces."""
    return " ".join(text.split())


def escape_text(text: str) -> str:
    """``text`` on one line, with ``&``, ``<`` and ``>`` escaped for XML character data."""
    return _squash(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attribute(text: str) -> str:
    """``text`` escaped for a double-quoted XML attribute value."""
    return escape_text(text).replace('"', "&quot;")


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters + "..."."""
    text = _squash(text)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:-—")
    return (cut or text[:limit]) + "..."


def _profile(block: ProfileBlock) -> list[str]:
    """The lines of one ``<user>`` block, or none when the member has no facts."""
    sections: list[list[str]] = []
    for key, heading in SECTION_TITLES:
        facts = [fact for fact in block.facts if fact.section == key]
        if facts:
            lines = [f"{heading}:"]
            lines += [
                f"- {escape_text(fact.text)}  [{escape_text(fact.source_label)}]" for fact in facts
            ]
            sections.append(lines)
    known = {key for key, _ in SECTION_TITLES}
    strays = [fact for fact in block.facts if fact.section not in known]
    if strays:
        other = [f"- {escape_text(f.text)}  [{escape_text(f.source_label)}]" for f in strays]
        if sections and sections[-1][0] == "Other:":
            sections[-1] += other
        else:
            sections.append(["Other:", *other])
    if not sections:
        return []
    lines = [f'<user name="{escape_attribute(block.name)}">']
    for index, section in enumerate(sections):
        if index:
            lines.append("")
        lines += section
    lines.append("</user>")
    return lines


def _note_line(note: Note, summary_chars: int, *, cluster: bool) -> str:
    """``- [Mon D] Title — summary`` for one note."""
    prefix = "Daily topic: " if cluster else ""
    title = escape_text(note.title)
    summary = escape_text(clip(note.summary, summary_chars))
    return f"- [{short_date(note.note_date)}] {prefix}{title} — {summary}"


def quoted_text(line: EvidenceLine, note: Note) -> str:
    """A kept message of ``note`` as it is quoted: mentions of the note's participants as
    "@Name" (anyone else's as "@someone"), as the note names them, never Discord's ids."""
    return readable(line.text, {p.user_id: p.display_name for p in note.participants})


def _evidence_line(note: Note, line: EvidenceLine, line_chars: int) -> str:
    """``  > Name, Mon D: text`` for one quoted line of ``note``."""
    name = escape_text(line.author_name)
    text = escape_text(clip(quoted_text(line, note), line_chars))
    return f"  > {name}, {short_date(note_date(line.created_at))}: {text}"


def quoted_lines(
    evidence: Sequence[tuple[Note, Sequence[ScoredLine]]],
    *,
    evidence_tokens: int = EVIDENCE_TOKENS,
    evidence_line_chars: int = 200,
    rank_share: float = RANK_SHARE,
) -> list[tuple[EvidenceLine, ...]]:
    """The lines quoted under each of some notes (``evidence``, each note with its lines best
    first, in rank order), in the order they were said, as :func:`render_context` quotes
    them, while the budget shared by all of them lasts (about four characters a token).

    Each note first quotes its best line, in rank order, so every note shows what it is
    quoted for. The rest of the budget goes to the other lines by their score plus
    ``rank_share / place``, best first: the line that answers the question comes before a
    weaker line of a note that merely ranks high, and of lines that answer alike the higher
    note's. A line that does not fit is passed over; a shorter one after it may still fit.
    """
    budget = evidence_tokens * CHARS_PER_TOKEN
    shown: list[list[EvidenceLine]] = [[] for _ in evidence]

    def claim(at: tuple[int, int]) -> float:
        """A line's claim on what is left: its score plus its note's share by place."""
        index, turn = at
        return evidence[index][1][turn].score + rank_share / (index + 1)

    best = [(index, 0) for index, (_, lines) in enumerate(evidence) if lines]
    rest = [
        (index, turn) for index, (_, lines) in enumerate(evidence) for turn in range(1, len(lines))
    ]
    for index, turn in (*best, *sorted(rest, key=claim, reverse=True)):
        note, lines = evidence[index]
        line = lines[turn].line
        size = len(_evidence_line(note, line, evidence_line_chars))
        if size <= budget:
            budget -= size
            shown[index].append(line)
    return [tuple(sorted(lines, key=lambda line: line.message_id)) for lines in shown]


def render_context(
    parts: ContextParts,
    *,
    summary_chars: int = 300,
    evidence_tokens: int = EVIDENCE_TOKENS,
    evidence_line_chars: int = 200,
) -> str:
    """The ``<background_facts>`` block for ``parts``, or "" when there is nothing in it.

    Quoted evidence lines take at most ``evidence_tokens`` tokens in all, each line clipped
    to ``evidence_line_chars`` characters.
    """
    body: list[str] = []
    for profile in parts.profiles:
        body += _profile(profile)
    if parts.notes or parts.clusters:
        body.append("<notes>")
        quoted = quoted_lines(
            [(note, parts.evidence.get(note.id, ())) for note in parts.notes],
            evidence_tokens=evidence_tokens,
            evidence_line_chars=evidence_line_chars,
        )
        for note, lines in zip(parts.notes, quoted, strict=True):
            body.append(_note_line(note, summary_chars, cluster=False))
            body += [_evidence_line(note, line, evidence_line_chars) for line in lines]
        body += [_note_line(note, summary_chars, cluster=True) for note in parts.clusters]
        body.append("</notes>")
    activity = [block for block in parts.activity if block.notes]
    if activity:
        body.append("<recent_activity>")
        for block in activity:
            titles = "; ".join(
                f"{escape_text(title)} [{short_date(day)}]" for day, title in block.notes
            )
            body.append(f"- {escape_text(block.name)}: {titles}")
        body.append("</recent_activity>")
    lore = [text for text in parts.lore if text.strip()]
    if lore:
        body.append("<server_lore>")
        body += [f"- {escape_text(text)}" for text in lore]
        body.append("</server_lore>")
    if not body:
        return ""
    return "\n".join(["<background_facts>", *body, "</background_facts>"])


def sections_of(facts: Sequence[Fact]) -> dict[str, list[Fact]]:
    """Facts grouped by section, in display order (sections without facts left out)."""
    grouped: dict[str, list[Fact]] = {}
    for key, _ in SECTION_TITLES:
        chosen = [fact for fact in facts if fact.section == key]
        if chosen:
            grouped[key] = chosen
    return grouped
