"""``vivy profile`` and ``vivy notes``: read what Vivy remembers, straight from the database.

Both only read: the database is opened read-only and a missing file is an error, never an
empty new database. A guild the database does not know is an error (exit 2); nothing found
in a known one (a member without facts, no note since a date) prints a short note on stderr
and exits 0, so scripts can tell "nothing" from "failed".
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime

from vivy.commands.db import add_database_option, database_target, read_only
from vivy.commands.members import add_guild_option, guild_label, guild_of, member_of
from vivy.memory.dates import short_date
from vivy.memory.facts import FactRecord
from vivy.memory.notes import Note, NoteType
from vivy.storage.engines import Target
from vivy.storage.port import ReadOnlyStore

__all__ = [
    "format_fact",
    "format_note",
    "print_notes",
    "print_profile",
    "register",
    "show_notes",
    "show_profile",
]

#: The note types ``--type`` takes, as typed (the values, not the enum's names).
NOTE_TYPES = tuple(kind.value for kind in NoteType)


def _day(text: str) -> date:
    """An argparse type: a ``YYYY-MM-DD`` date."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy profile`` and ``vivy notes``."""
    profile = commands.add_parser(
        "profile",
        help="show what Vivy remembers about a member",
        description="Show a member's active profile facts by section, each with its source "
        "[note title, date]. With --all, invalidated facts too, with why and what replaced them.",
    )
    profile.add_argument("user", metavar="USER", help="the member's Discord id or name")
    add_guild_option(profile)
    profile.add_argument(
        "--all", action="store_true", help="also show invalidated facts and their history"
    )
    add_database_option(profile)
    profile.set_defaults(
        handler=lambda args: show_profile(
            database_target(args), args.guild, args.user, include_invalidated=args.all
        )
    )
    notes = commands.add_parser(
        "notes",
        help="list a guild's notes",
        description="List a guild's notes, newest first: date, channel, participants, title, "
        "summary, topics, decisions and open questions.",
    )
    add_guild_option(notes)
    notes.add_argument("--since", type=_day, help="only notes on or after this date (YYYY-MM-DD)")
    notes.add_argument(
        "--type", choices=NOTE_TYPES, dest="note_type", help="only this type of note"
    )
    notes.add_argument(
        "--limit", type=_positive, default=20, help="at most this many notes (default 20)"
    )
    add_database_option(notes)
    notes.set_defaults(
        handler=lambda args: show_notes(
            database_target(args),
            args.guild,
            since=args.since,
            note_type=NoteType(args.note_type) if args.note_type else None,
            limit=args.limit,
        )
    )


def _short(wall: float) -> str:
    return short_date(datetime.fromtimestamp(wall, tz=UTC).date().isoformat())


def format_fact(fact: FactRecord) -> list[str]:
    """The lines of one fact: text and source, then its history when it was invalidated."""
    lines = [f"  - {fact.text}  [{fact.source_label}]"]
    if fact.invalidated_at is not None:
        history = f"      invalidated {_short(fact.invalidated_at)}"
        if fact.invalidation_reason:
            history += f": {fact.invalidation_reason}"
        if fact.superseded_by is not None:
            history += f"; superseded by #{fact.superseded_by} {fact.superseded_text!r}"
        lines.append(history)
    return lines


def show_profile(
    database: Target, guild: int | str, user: str, *, include_invalidated: bool
) -> int:
    """Print the profile of the member ``user`` names (an id or a name); returns the exit
    code."""
    with read_only(database) as store:
        guild_id = guild_of(store, guild)
        user_id = member_of(store, guild_id, user)
        return print_profile(store, guild_id, user_id, include_invalidated=include_invalidated)


def print_profile(
    store: ReadOnlyStore, guild_id: int, user_id: int, *, include_invalidated: bool
) -> int:
    """Print a member's profile read from ``store`` (either engine); returns the exit code."""
    name = store.member_name(guild_id, user_id)
    facts = store.profile_records(guild_id, user_id, include_invalidated=include_invalidated)
    if not facts:
        where = guild_label(store, guild_id)
        print(f"no facts remembered about user {user_id} in {where}", file=sys.stderr)
        return 0
    active = [f for f in facts if f.invalidated_at is None]
    retired = [f for f in facts if f.invalidated_at is not None]
    who = f"{name} ({user_id})" if name else str(user_id)
    count = f"{len(active)} active fact{'' if len(active) == 1 else 's'}"
    print(f"{who} in {guild_label(store, guild_id)}: {count}")
    section = None
    for fact in active:
        if fact.section != section:
            section = fact.section
            print(section)
        print("\n".join(format_fact(fact)))
    if retired:
        print(f"invalidated ({len(retired)})")
        for fact in sorted(retired, key=lambda f: (f.invalidated_at or 0.0, f.id)):
            print("\n".join(format_fact(fact)))
    return 0


def format_note(note: Note) -> list[str]:
    """The lines of one note."""
    where = f"#{note.channel_name}" if note.channel_name else "all channels"
    kind = "topic cluster" if note.note_type == NoteType.TOPIC_CLUSTER else "conversation"
    people = ", ".join(p.display_name for p in note.participants) or "nobody"
    lines = [
        f"{note.note_date}  {where}  ({kind} #{note.id})",
        f"  {note.title}",
        f"  participants: {people}",
        f"  {note.summary}",
    ]
    if note.topics:
        lines.append(f"  topics: {', '.join(note.topics)}")
    lines += [f"  decision: {d}" for d in note.decisions]
    lines += [f"  open question: {q}" for q in note.open_questions]
    if note.source_note_ids:
        lines.append(f"  from notes: {', '.join(f'#{i}' for i in note.source_note_ids)}")
    return lines


def show_notes(
    database: Target,
    guild: int | str,
    *,
    since: date | None = None,
    note_type: str | None = None,
    limit: int = 20,
) -> int:
    """Print a guild's notes; returns the exit code."""
    with read_only(database) as store:
        guild_id = guild_of(store, guild)
        return print_notes(store, guild_id, since=since, note_type=note_type, limit=limit)


def print_notes(
    store: ReadOnlyStore,
    guild_id: int,
    *,
    since: date | None = None,
    note_type: str | None = None,
    limit: int = 20,
) -> int:
    """Print a guild's notes read from ``store`` (either engine); returns the exit code."""
    notes = store.list_notes(
        guild_id,
        since=since.isoformat() if since else None,
        note_type=note_type,
        limit=limit,
    )
    if not notes:
        print(f"no notes in {guild_label(store, guild_id)} match", file=sys.stderr)
        return 0
    print("\n\n".join("\n".join(format_note(note)) for note in notes))
    return 0
