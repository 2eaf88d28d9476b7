"""``vivy export --guild G [--member U] --out FILE``: a guild's or a member's memory as JSON.

A guild's export holds what Vivy remembers of it: every note with its evidence (the kept
messages it was written from), every member's profile facts with their sources and history,
and server lore. A member's export answers a member's request for their data: their names,
every fact of their profile (retired ones too, with why), and every message of theirs Vivy
keeps, as a note's evidence or still in a buffer; nothing of any other member. Discord ids are
strings, as in Discord's own JSON; times are ISO 8601 in UTC. The database is only read, and
the file is written whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vivy import __version__
from vivy.commands.db import add_database_option, database_target, read_only
from vivy.commands.members import add_guild_option, guild_label, guild_of, member_of
from vivy.errors import StorageError
from vivy.memory.evidence import EvidenceLine
from vivy.memory.facts import FactRecord
from vivy.memory.notes import Note
from vivy.storage.engines import Target
from vivy.storage.port import ReadOnlyStore

__all__ = ["EXPORT_FORMAT", "export", "guild_export", "member_export", "register"]

#: The ``format`` field of every export, and its version.
EXPORT_FORMAT = "vivy-memory-export"
EXPORT_VERSION = 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy export``."""
    parser = commands.add_parser(
        "export",
        help="write a guild's or a member's memory as JSON",
        description="Write what Vivy remembers of a guild (notes with their evidence, every "
        "member's facts with sources and history, server lore) as one JSON file; with "
        "--member, only that member's data (names, facts, kept messages), for a member's "
        "request for their data. The database is only read.",
    )
    add_guild_option(parser)
    parser.add_argument("--member", metavar="USER", help="only this member (an id or a name)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    add_database_option(parser)
    parser.set_defaults(
        handler=lambda args: export(database_target(args), args.guild, args.out, args.member)
    )


def export(database: Target, guild: int | str, out: Path, member: str | None = None) -> int:
    """Write the export of ``guild`` (or of one member of it) to ``out``; returns the exit
    code."""
    with read_only(database) as store:
        guild_id = guild_of(store, guild)
        label = guild_label(store, guild_id)
        if member is None:
            document = guild_export(store, guild_id)
            what = f"{label}: {len(document['notes'])} notes, "
            what += f"{len(document['members'])} members"
        else:
            user_id = member_of(store, guild_id, member)
            document = member_export(store, guild_id, user_id)
            held = document["member"]
            what = f"member {user_id} of {label}: {len(held['facts'])} facts, "
            what += f"{len(held['messages']) + len(held['pending_messages'])} messages"
    _write(out, document)
    print(f"wrote {out} ({what})")
    return 0


def _when(wall: float | None) -> str | None:
    """A stored UTC time as ISO 8601."""
    return None if wall is None else datetime.fromtimestamp(wall, tz=UTC).isoformat()


def _header(store: ReadOnlyStore, guild_id: int) -> dict[str, Any]:
    """What every export starts with: its format, when it was written and the guild (with its
    name, when Vivy has seen it)."""
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "vivy": __version__,
        "exported_at": datetime.now(UTC).isoformat(),
        "guild": {"id": str(guild_id), "name": store.guild_names().get(guild_id)},
    }


def _fact(fact: FactRecord) -> dict[str, Any]:
    return {
        "id": fact.id,
        "section": fact.section,
        "text": fact.text,
        "source": {
            "kind": fact.source_kind,
            "label": fact.source_label,
            "note_id": fact.source_note_id,
        },
        "created_at": _when(fact.created_at),
        "invalidated_at": _when(fact.invalidated_at),
        "invalidation_reason": fact.invalidation_reason,
        "superseded_by": fact.superseded_by,
    }


def _line(line: EvidenceLine) -> dict[str, Any]:
    return {
        "message_id": str(line.message_id),
        "author_id": str(line.author_id),
        "author_name": line.author_name,
        "text": line.text,
        "at": _when(line.created_at),
    }


def _note(note: Note, lines: list[EvidenceLine]) -> dict[str, Any]:
    return {
        "id": note.id,
        "type": note.note_type,
        "channel": {"id": str(note.channel_id), "name": note.channel_name},
        "date": note.note_date,
        "started_at": _when(note.started_at),
        "ended_at": _when(note.ended_at),
        "title": note.title,
        "summary": note.summary,
        "topics": list(note.topics),
        "decisions": list(note.decisions),
        "open_questions": list(note.open_questions),
        "entities": list(note.entities),
        "participants": [{"id": str(p.user_id), "name": p.display_name} for p in note.participants],
        "source_note_ids": list(note.source_note_ids),
        "evidence": [_line(line) for line in lines],
    }


def guild_export(store: ReadOnlyStore, guild_id: int) -> dict[str, Any]:
    """Everything Vivy remembers of the guild, as a JSON-ready document."""
    lines: dict[int, list[EvidenceLine]] = {}
    for line in store.note_lines(guild_id):
        lines.setdefault(line.note_id, []).append(line)
    notes = sorted(store.list_notes(guild_id, limit=None), key=lambda n: n.id)
    members = [
        {
            "id": str(user_id),
            "name": name,
            "facts": [
                _fact(f) for f in store.profile_records(guild_id, user_id, include_invalidated=True)
            ],
        }
        for user_id, name in store.guild_members(guild_id)
    ]
    lore = [
        {
            "id": entry.id,
            "text": entry.text,
            "author_id": str(entry.author_id),
            "created_at": _when(entry.created_at),
            "invalidated_at": _when(entry.invalidated_at),
        }
        for entry in store.all_lore(guild_id)
    ]
    return {
        **_header(store, guild_id),
        "members": members,
        "notes": [_note(note, lines.get(note.id, [])) for note in notes],
        "lore": lore,
    }


def member_export(store: ReadOnlyStore, guild_id: int, user_id: int) -> dict[str, Any]:
    """Everything Vivy keeps of one member of the guild, and nothing of anyone else."""
    facts = store.profile_records(guild_id, user_id, include_invalidated=True)
    messages = [
        {key: value for key, value in _line(line).items() if key != "author_id"}
        | {"note_id": line.note_id}
        for line in store.note_lines(guild_id, author_id=user_id)
    ]
    pending = [
        {
            "message_id": str(m.message_id),
            "channel_id": str(m.channel_id),
            "author_name": m.author_name,
            "text": m.text,
            "at": _when(m.created_at),
        }
        for m in store.pending_messages(guild_id, user_id)
    ]
    member = {
        "id": str(user_id),
        "name": store.member_name(guild_id, user_id),
        "known_names": store.known_names(guild_id, user_id),
        "facts": [_fact(f) for f in facts],
        "messages": messages,
        "pending_messages": pending,
    }
    return {**_header(store, guild_id), "member": member}


def _write(out: Path, document: dict[str, Any]) -> None:
    """Write ``document`` to ``out`` through a temporary file beside it, so a failed write
    leaves no half file."""
    if out.is_dir():
        raise StorageError(f"--out {out} is a folder; name the JSON file to write")
    folder = out.parent if str(out.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{out.name}.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(document, file, ensure_ascii=False, indent=2)
            file.write("\n")
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
