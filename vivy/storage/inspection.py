"""What ``vivy inspect`` and ``vivy snapshot`` read: member names, fact histories, notes."""

from __future__ import annotations

from vivy.memory.facts import PROFILE_SECTIONS, FactRecord
from vivy.memory.notes import Note
from vivy.storage.db import Connection
from vivy.storage.notes import get_notes

__all__ = ["list_notes", "member_name", "profile_records"]


def member_name(conn: Connection, guild_id: int, user_id: int) -> str | None:
    """The member's display name in the guild, if Vivy has seen them."""
    row = conn.execute(
        "SELECT display_name FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    ).fetchone()
    return None if row is None else str(row[0])


def profile_records(
    conn: Connection, guild_id: int, user_id: int, *, include_invalidated: bool
) -> list[FactRecord]:
    """The member's facts in section order, oldest first; invalidated ones only on request."""
    query = (
        "SELECT f.id, f.section, f.text, f.source_kind, f.source_label, f.created_at,"
        " f.invalidated_at, f.invalidation_reason, f.superseded_by, s.text"
        " FROM profile_facts f LEFT JOIN profile_facts s ON s.id = f.superseded_by"
        " WHERE f.guild_id = ? AND f.user_id = ?"
    )
    if not include_invalidated:
        query += " AND f.invalidated_at IS NULL"
    rows = conn.execute(query + " ORDER BY f.created_at, f.id", (guild_id, user_id)).fetchall()
    order: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}
    records = [FactRecord(*tuple(r)) for r in rows]
    return sorted(records, key=lambda f: order.get(f.section, len(order)))


def list_notes(
    conn: Connection,
    guild_id: int,
    *,
    since: str | None = None,
    note_type: str | None = None,
    limit: int = 20,
) -> list[Note]:
    """A guild's newest notes (on or after the UTC date ``since``), newest first."""
    query = "SELECT id FROM interaction_notes WHERE guild_id = ?"
    args: list[object] = [guild_id]
    if since is not None:
        query += " AND note_date >= ?"
        args.append(since)
    if note_type is not None:
        query += " AND note_type = ?"
        args.append(note_type)
    query += " ORDER BY note_date DESC, COALESCE(started_at, created_at) DESC, id DESC LIMIT ?"
    args.append(limit)
    ids = [int(r[0]) for r in conn.execute(query, args).fetchall()]
    return get_notes(conn, ids)
