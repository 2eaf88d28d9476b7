"""``vivy snapshot``: one Markdown file per guild, for operators.

Each file lists the people Vivy remembers with their facts and sources, the recent
conversation notes and the recent topic clusters, and server lore. It is written from a
read-only connection and is never read back into prompts.
"""

from __future__ import annotations

import argparse
from datetime import date, timedelta
from pathlib import Path

from vivy.commands.db import add_database_option, database_target, read_only
from vivy.commands.members import guild_label
from vivy.errors import ConfigError, StorageError
from vivy.memory.dates import short_date
from vivy.memory.notes import Note, NoteType
from vivy.storage.engines import Target
from vivy.storage.port import ReadOnlyStore

__all__ = ["register", "render_guild", "write_snapshots"]

#: How far back "recent" notes reach, counted from the newest note of the guild.
RECENT_DAYS = 7


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy snapshot``."""
    parser = commands.add_parser(
        "snapshot",
        help="write one Markdown snapshot per guild",
        description="Write one Markdown file per guild into a folder, for operators: the "
        "members Vivy remembers with their facts and sources, the recent notes and topic "
        "clusters, and server lore. The database is only read.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("snapshots"), help="directory (default: ./snapshots)"
    )
    add_database_option(parser)
    parser.set_defaults(handler=lambda args: write_snapshots(database_target(args), args.out))


def write_snapshots(database: Target, out: Path) -> int:
    """Write ``out/guild-<id>.md`` for every guild; returns the exit code."""
    try:
        is_file = out.exists() and not out.is_dir()
    except OSError as exc:
        raise StorageError(f"--out {out}: cannot use it ({exc.strerror or exc})") from exc
    if is_file:
        raise ConfigError(
            f"--out {out} is a file, not a folder; name a folder to write the snapshots into"
        )
    with read_only(database) as store:
        documents = {guild: render_guild(store, guild) for guild in store.guild_ids()}
    try:
        out.mkdir(parents=True, exist_ok=True)
        for guild, text in documents.items():
            (out / f"guild-{guild}.md").write_text(text, encoding="utf-8")
    except OSError as exc:
        raise StorageError(
            f"--out {out}: cannot write there ({exc.strerror or exc}); "
            "choose a folder this user can write"
        ) from exc
    print(f"wrote {len(documents)} snapshot{'s' if len(documents) != 1 else ''} to {out}")
    return 0


def _escape(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _note_line(note: Note) -> str:
    where = f"#{note.channel_name}" if note.channel_name else "all channels"
    people = ", ".join(p.display_name for p in note.participants)
    return (
        f"- **{short_date(note.note_date)} · {_escape(note.title)}** ({where}; {people}): "
        f"{_escape(note.summary)}"
    )


def render_guild(store: ReadOnlyStore, guild_id: int) -> str:
    """The Markdown snapshot of one guild."""
    lines = [f"# Vivy memory snapshot — {_escape(guild_label(store, guild_id))}", ""]
    lines += ["## People", ""]
    for user_id, name in store.guild_members(guild_id):
        facts = store.profile_records(guild_id, user_id, include_invalidated=False)
        lines.append(f"### {_escape(name)} ({user_id})")
        if not facts:
            lines += ["", "_Nothing remembered._", ""]
            continue
        lines.append("")
        for fact in facts:
            lines.append(f"- {fact.section}: {_escape(fact.text)} — _{_escape(fact.source_label)}_")
        lines.append("")
    newest = store.newest_note_date(guild_id)
    since = (
        (date.fromisoformat(newest) - timedelta(days=RECENT_DAYS)).isoformat() if newest else None
    )
    for title, kind in (
        ("Recent notes", NoteType.CONVERSATION),
        ("Recent topic clusters", NoteType.TOPIC_CLUSTER),
    ):
        notes = store.list_notes(guild_id, since=since, note_type=kind, limit=50)
        lines += [f"## {title}", ""]
        lines += [_note_line(n) for n in notes] or ["_None._"]
        lines.append("")
    lines += ["## Server lore", ""]
    lines += [f"- {_escape(text)}" for text in store.active_lore(guild_id)] or ["_None._"]
    return "\n".join(lines) + "\n"
