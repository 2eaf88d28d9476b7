"""``vivy snapshot``: one Markdown file per guild, for operators (seed 003's snapshot).

Each file lists the people Vivy remembers with their facts and sources, the recent
conversation notes and the recent topic clusters, and server lore. It is written from a
read-only connection and is never read back into prompts.
"""

from __future__ import annotations

import argparse
from datetime import date, timedelta
from pathlib import Path

from vivy.commands.db import add_database_option, database_path, read_only
from vivy.notes import NoteType
from vivy.storage import maintenance as upkeep
from vivy.storage.db import Connection
from vivy.storage.notes import Note, short_date

__all__ = ["register", "render_guild", "write_snapshots"]

#: How far back "recent" notes reach, counted from the newest note of the guild.
RECENT_DAYS = 7


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy snapshot``."""
    parser = commands.add_parser(
        "snapshot", help="write one Markdown snapshot per guild", description=__doc__
    )
    parser.add_argument(
        "--out", type=Path, default=Path("snapshots"), help="directory (default: ./snapshots)"
    )
    add_database_option(parser)
    parser.set_defaults(handler=lambda args: write_snapshots(database_path(args), args.out))


def write_snapshots(path: Path, out: Path) -> int:
    """Write ``out/guild-<id>.md`` for every guild; returns the exit code."""
    with read_only(path) as conn:
        guilds = [
            int(r[0])
            for r in conn.execute(
                "SELECT guild_id FROM guild_members UNION SELECT guild_id FROM interaction_notes"
                " UNION SELECT guild_id FROM server_lore ORDER BY 1"
            )
        ]
        documents = {guild: render_guild(conn, guild) for guild in guilds}
    out.mkdir(parents=True, exist_ok=True)
    for guild, text in documents.items():
        (out / f"guild-{guild}.md").write_text(text, encoding="utf-8")
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


def render_guild(conn: Connection, guild_id: int) -> str:
    """The Markdown snapshot of one guild."""
    lines = [f"# Vivy memory snapshot — guild {guild_id}", ""]
    members = conn.execute(
        "SELECT user_id, display_name FROM guild_members WHERE guild_id = ? ORDER BY display_name",
        (guild_id,),
    ).fetchall()
    lines += ["## People", ""]
    for user_id, name in members:
        facts = upkeep.profile_records(conn, guild_id, int(user_id), include_invalidated=False)
        lines.append(f"### {_escape(str(name))} ({user_id})")
        if not facts:
            lines += ["", "_Nothing remembered._", ""]
            continue
        lines.append("")
        for fact in facts:
            lines.append(f"- {fact.section}: {_escape(fact.text)} — _{_escape(fact.source_label)}_")
        lines.append("")
    newest = conn.execute(
        "SELECT MAX(note_date) FROM interaction_notes WHERE guild_id = ?", (guild_id,)
    ).fetchone()[0]
    since = (
        (date.fromisoformat(newest) - timedelta(days=RECENT_DAYS)).isoformat() if newest else None
    )
    for title, kind in (
        ("Recent notes", NoteType.CONVERSATION),
        ("Recent topic clusters", NoteType.TOPIC_CLUSTER),
    ):
        notes = upkeep.list_notes(conn, guild_id, since=since, note_type=kind, limit=50)
        lines += [f"## {title}", ""]
        lines += [_note_line(n) for n in notes] or ["_None._"]
        lines.append("")
    lore = conn.execute(
        "SELECT text FROM server_lore WHERE guild_id = ? AND invalidated_at IS NULL ORDER BY id",
        (guild_id,),
    ).fetchall()
    lines += ["## Server lore", ""]
    lines += [f"- {_escape(str(r[0]))}" for r in lore] or ["_None._"]
    return "\n".join(lines) + "\n"
