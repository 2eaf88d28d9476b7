"""Storage of the memory page: timeline, activity, members, fact histories, notes with their
evidence, the job log, health, and the corrections log with the corrections themselves.

Every read names its guild. Each correction runs the code the Discord commands run (the
profile plan of ``/memory forget``, forget-me's removal of notes, facts and members) in the
same transaction as the line it adds to the corrections log, so a correction is never done
without its record, nor recorded without being done. Written once for both engines
(:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vivy.memory.facts import PROFILE_SECTIONS, RetiredFact
from vivy.memory.members import ForgetReport, GuildStatus
from vivy.memory.notes import Note
from vivy.memory.page import (
    REMOVED_FACT_REASON,
    Correction,
    CorrectionKind,
    DayActivity,
    GuildHealth,
    JobRun,
    MemberRow,
    NoteLine,
    PageFact,
    TimelineNote,
)
from vivy.state.profile import ProfilePlan
from vivy.storage import members as member_storage
from vivy.storage.dialect import Tx
from vivy.storage.evidence import purge_evidence_index
from vivy.storage.notes import get_notes
from vivy.storage.profiles import active_facts, apply_plan, profile_version

__all__ = [
    "activity",
    "corrections",
    "fact_history",
    "forget_member",
    "guild_facts",
    "guild_ids",
    "health",
    "job_log",
    "member",
    "members",
    "newest_day",
    "note",
    "remove_fact",
    "remove_note",
    "timeline",
]

#: Most recent errors shown in a guild's health.
_LAST_ERRORS = 5

_MEMBER_COLUMNS = (
    "SELECT m.user_id, m.display_name, m.opted_out,"
    " (SELECT COUNT(*) FROM profile_facts f WHERE f.guild_id = m.guild_id"
    "  AND f.user_id = m.user_id AND f.invalidated_at IS NULL)"
    " FROM guild_members m"
)


def guild_ids(tx: Tx) -> list[int]:
    """Every guild with a member or a note, in id order."""
    rows = tx.all(
        "SELECT guild_id FROM guild_members UNION SELECT guild_id FROM interaction_notes ORDER BY 1"
    )
    return [int(r[0]) for r in rows]


def newest_day(tx: Tx, guild_id: int) -> str | None:
    """The UTC date of the guild's newest note, or None."""
    day = tx.scalar(
        "SELECT MAX(note_date) FROM interaction_notes WHERE guild_id = ? AND note_type IN"
        " ('conversation', 'topic_cluster')",
        (guild_id,),
    )
    return None if day is None else str(day)


def timeline(tx: Tx, guild_id: int, first: str, last: str) -> list[TimelineNote]:
    """The guild's notes of both types dated ``first`` to ``last`` (UTC dates), newest day
    first, by channel within a day."""
    rows = tx.all(
        "SELECT id, note_type, note_date, channel_id, channel_name, title, message_count,"
        " started_at FROM interaction_notes WHERE guild_id = ? AND note_type IN"
        " ('conversation', 'topic_cluster') AND note_date >= ? AND note_date <= ?"
        f" ORDER BY note_date DESC, note_type DESC, channel_name{tx.dialect.bytewise},"
        " started_at, id",
        (guild_id, first, last),
    )
    return [
        TimelineNote(
            int(r[0]), str(r[1]), str(r[2]), int(r[3]), str(r[4]), str(r[5]), int(r[6]), r[7]
        )
        for r in rows
    ]


def activity(tx: Tx, guild_id: int, first: str, last: str) -> list[DayActivity]:
    """Per day from ``first`` to ``last`` with any note: notes, messages and clusters."""
    rows = tx.all(
        "SELECT note_date, note_type, COUNT(*), COALESCE(SUM(message_count), 0)"
        " FROM interaction_notes WHERE guild_id = ? AND note_type IN"
        " ('conversation', 'topic_cluster') AND note_date >= ? AND note_date <= ?"
        " GROUP BY note_date, note_type",
        (guild_id, first, last),
    )
    days: dict[str, list[int]] = {}
    for day, kind, count, messages in rows:
        entry = days.setdefault(str(day), [0, 0, 0])
        if kind == "conversation":
            entry[0] += int(count)
            entry[1] += int(messages)
        else:
            entry[2] += int(count)
    return [DayActivity(day, *days[day]) for day in sorted(days)]


def _member(row: Any) -> MemberRow:
    return MemberRow(int(row[0]), str(row[1]), bool(row[2]), int(row[3]))


def members(tx: Tx, guild_id: int) -> list[MemberRow]:
    """The guild's named members with their count of active facts, by name."""
    rows = tx.all(
        f"{_MEMBER_COLUMNS} WHERE m.guild_id = ? AND m.display_name != ''"
        " ORDER BY LOWER(m.display_name), m.user_id",
        (guild_id,),
    )
    return [_member(r) for r in rows]


def member(tx: Tx, guild_id: int, user_id: int) -> MemberRow | None:
    """One member of the guild, or None when the guild does not know them."""
    row = tx.one(f"{_MEMBER_COLUMNS} WHERE m.guild_id = ? AND m.user_id = ?", (guild_id, user_id))
    return None if row is None else _member(row)


def fact_history(tx: Tx, guild_id: int, user_id: int) -> list[PageFact]:
    """Every fact of the member, active or not, in section order, oldest first."""
    rows = tx.all(
        f"{_FACT_COLUMNS} WHERE f.guild_id = ? AND f.user_id = ? ORDER BY f.created_at, f.id",
        (guild_id, user_id),
    )
    return _in_sections([_page_fact(r) for r in rows])


def guild_facts(tx: Tx, guild_id: int) -> dict[int, list[PageFact]]:
    """The active facts of the guild's members, by member, each in section order, oldest
    first: one read for the page's search, however many members."""
    rows = tx.all(
        f"{_FACT_COLUMNS} WHERE f.guild_id = ? AND f.invalidated_at IS NULL"
        " ORDER BY f.created_at, f.id",
        (guild_id,),
    )
    facts: dict[int, list[PageFact]] = {}
    for r in rows:
        facts.setdefault(int(r[10]), []).append(_page_fact(r))
    return {user_id: _in_sections(held) for user_id, held in facts.items()}


#: A fact's columns for the page, with the text of the fact that superseded it.
_FACT_COLUMNS = (
    "SELECT f.id, f.section, f.text, f.source_kind, f.source_note_id, f.source_label,"
    " f.created_at, f.invalidated_at, f.invalidation_reason, s.text, f.user_id"
    " FROM profile_facts f LEFT JOIN profile_facts s ON s.id = f.superseded_by"
)


def _page_fact(r: Any) -> PageFact:
    return PageFact(
        int(r[0]),
        str(r[1]),
        str(r[2]),
        str(r[3]),
        None if r[4] is None else int(r[4]),
        str(r[5]),
        float(r[6]),
        None if r[7] is None else float(r[7]),
        r[8],
        r[9],
    )


#: Each profile section's place on the page; an unknown section comes last.
_SECTION_ORDER: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}


def _in_sections(facts: list[PageFact]) -> list[PageFact]:
    """``facts`` in the profile's section order, keeping their order within a section."""
    return sorted(facts, key=lambda f: _SECTION_ORDER.get(f.section, len(_SECTION_ORDER)))


def _guild_note(tx: Tx, guild_id: int, note_id: int) -> Note | None:
    found = get_notes(tx, [note_id])
    return found[0] if found and found[0].guild_id == guild_id else None


def note(tx: Tx, guild_id: int, note_id: int) -> tuple[Note, list[NoteLine]] | None:
    """A note of the guild with its kept messages in order; None when the guild has no such
    note."""
    found = _guild_note(tx, guild_id, note_id)
    if found is None:
        return None
    rows = tx.all(
        "SELECT author_id, author_name, text, created_at FROM note_lines WHERE note_id = ?"
        " ORDER BY message_id",
        (note_id,),
    )
    return found, [NoteLine(int(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in rows]


def job_log(tx: Tx, guild_id: int, limit: int) -> list[JobRun]:
    """The guild's newest nightly passes, newest first."""
    rows = tx.all(
        "SELECT job_date, pass, completed_at FROM memory_job_log WHERE guild_id = ?"
        " ORDER BY job_date DESC, completed_at DESC LIMIT ?",
        (guild_id, limit),
    )
    return [JobRun(str(r[0]), str(r[1]), float(r[2])) for r in rows]


def _evidence_lines(tx: Tx, guild_id: int) -> int:
    """The messages the guild's notes keep as evidence. When every note is the guild's (one
    guild per database, the usual case: two index reads tell) the lines are counted without
    joining each to its note, which costs a look-up per line."""
    bounds = tx.one("SELECT MIN(guild_id), MAX(guild_id) FROM interaction_notes")
    if bounds is not None and tuple(bounds) == (guild_id, guild_id):
        return int(tx.scalar("SELECT COUNT(*) FROM note_lines"))
    return int(
        tx.scalar(
            "SELECT COUNT(*) FROM note_lines l JOIN interaction_notes n ON n.id = l.note_id"
            " WHERE n.guild_id = ?",
            (guild_id,),
        )
    )


def health(tx: Tx, guild_id: int) -> tuple[GuildStatus, GuildHealth]:
    """The guild's counts, the evidence it keeps and the unfinished work that last failed."""
    lines = _evidence_lines(tx, guild_id)
    buffers = tx.all(
        "SELECT last_error, next_attempt_at FROM channel_buffers WHERE guild_id = ?"
        " AND status = 'closed' AND last_error IS NOT NULL ORDER BY next_attempt_at DESC",
        (guild_id,),
    )
    updates = tx.all(
        "SELECT last_error, next_attempt_at FROM profile_updates WHERE guild_id = ?"
        " AND status = 'pending' AND last_error IS NOT NULL ORDER BY next_attempt_at DESC",
        (guild_id,),
    )
    newest = sorted((*buffers, *updates), key=lambda r: -(r[1] or 0.0))[:_LAST_ERRORS]
    kept = GuildHealth(lines, len(buffers), len(updates), tuple(str(r[0]) for r in newest))
    return member_storage.guild_status(tx, guild_id), kept


def corrections(tx: Tx, guild_id: int, limit: int) -> list[Correction]:
    """The guild's newest corrections, newest first."""
    rows = tx.all(
        "SELECT id, done_at, actor, action, target, quote FROM memory_corrections"
        " WHERE guild_id = ? ORDER BY done_at DESC, id DESC LIMIT ?",
        (guild_id, limit),
    )
    return [
        Correction(
            int(r[0]),
            float(r[1]),
            str(r[2]),
            str(r[3]),
            str(r[4]),
            None if r[5] is None else str(r[5]),
        )
        for r in rows
    ]


def _record(
    tx: Tx,
    guild_id: int,
    now: float,
    who: str,
    kind: CorrectionKind,
    target: str,
    *,
    user_id: int | None = None,
    quote: str | None = None,
) -> None:
    """Add a line to the guild's corrections log: what was corrected (``target``), the member
    it concerns and a quote of what was removed (both cleared if that member is forgotten)."""
    tx.execute(
        "INSERT INTO memory_corrections (guild_id, done_at, actor, action, target, user_id, quote)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (guild_id, now, who, str(kind), target, user_id, quote),
    )


def remove_fact(
    tx: Tx, guild_id: int, user_id: int, fact_id: int, who: str, now: float
) -> str | None:
    """Invalidate one active fact of the member through the profile plan, as ``/memory
    forget`` does, and log it; returns its text, or None when the member has no such active
    fact."""
    fact = next((f for f in active_facts(tx, guild_id, user_id) if f.id == fact_id), None)
    if fact is None:
        return None
    version = profile_version(tx, guild_id, user_id)
    plan = ProfilePlan(retired=[RetiredFact(fact_id, REMOVED_FACT_REASON.format(who=who))])
    apply_plan(tx, guild_id, user_id, version, plan, now)
    name = tx.scalar(
        "SELECT display_name FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    )
    member = f"{name} ({user_id})" if name else f"member {user_id}"
    target = f"fact #{fact_id} ({fact.section}) of {member}"
    _record(
        tx, guild_id, now, who, CorrectionKind.REMOVE_FACT, target, user_id=user_id, quote=fact.text
    )
    return fact.text


def _derived_notes(tx: Tx, guild_id: int, note_id: int) -> list[int]:
    """The guild's topic clusters that summarise the note (its id in their sources)."""
    rows = tx.all(
        "SELECT id, source_note_ids FROM interaction_notes WHERE guild_id = ?"
        " AND note_type = 'topic_cluster' AND source_note_ids IS NOT NULL",
        (guild_id,),
    )
    wanted = str(note_id)
    return [
        int(r[0])
        for r in rows
        if wanted in {part.strip(' "') for part in str(r[1]).strip("[]").split(",")}
    ]


def remove_note(tx: Tx, guild_id: int, note_id: int, who: str, now: float) -> int | None:
    """Delete a note of the guild with its evidence, the facts learnt from it and the topic
    clusters that summarise it, through forget-me's note removal, and log it; returns how
    many notes went, or None when the guild has no such note."""
    found = _guild_note(tx, guild_id, note_id)
    if found is None:
        return None
    doomed = [note_id, *_derived_notes(tx, guild_id, note_id)]
    facts: Sequence[int] = [
        int(r[0])
        for r in tx.all(
            "SELECT id FROM profile_facts WHERE guild_id = ? AND source_note_id = ?",
            (guild_id, note_id),
        )
    ]
    member_storage.delete_facts(tx, facts)
    member_storage.delete_notes(tx, doomed, 0)
    purge_evidence_index(tx)
    clusters = len(doomed) - 1
    target = (
        f"note #{note_id} of {found.note_date}, {len(facts)} facts learnt from it"
        f" and {clusters} topic cluster{'s' if clusters != 1 else ''}"
    )
    _record(tx, guild_id, now, who, CorrectionKind.REMOVE_NOTE, target, quote=found.title)
    return len(doomed)


def forget_member(tx: Tx, guild_id: int, user_id: int, who: str, now: float) -> ForgetReport:
    """Forget the member in the guild exactly as forget-me does, and log it (without the
    member's id or name, which the forgetting removes)."""
    report = member_storage.forget_member(tx, guild_id, user_id)
    target = (
        f"a member: {report.facts} facts, {report.notes} notes, {report.messages} buffered messages"
    )
    _record(tx, guild_id, now, who, CorrectionKind.FORGET_MEMBER, target)
    return report
