"""The operator commands' read-only view of an existing database, on either engine.

``vivy db check``, ``vivy profile``, ``vivy notes``, ``vivy snapshot`` and the demo run
outside any event loop and must never create, migrate or change a database, so they read
through a :class:`ReadOnlyDatabase` (the port's :data:`~vivy.storage.port.ReadOnlyStore`)
instead of the engine's owner. Its reads are written once for both engines; what only an
engine can answer (its schema version, integrity and foreign-key checks, the vectors' stored
dimension) comes from the engine's :class:`Inspector`.
:func:`vivy.storage.sqlite.readonly.open_sqlite_readonly` opens a SQLite file this way;
:func:`vivy.storage.postgres.readonly.open_postgres_readonly` a PostgreSQL database.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from vivy.memory.database import EmbeddingState, GuildCounts
from vivy.memory.evidence import EvidenceLine, PendingMessage
from vivy.memory.facts import PROFILE_SECTIONS, FactRecord, LoreRecord
from vivy.memory.notes import Note
from vivy.storage import evidence, guilds, meta
from vivy.storage.dialect import Tx
from vivy.storage.maintenance import count_rows
from vivy.storage.notes import get_notes, members_named

__all__ = ["Inspector", "ReadOnlyDatabase"]

_SECTION_ORDER: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}


class Inspector(Protocol):
    """What only the engine can tell of its database."""

    def schema_version(self) -> int:
        """The schema version (0 for a database that is not Vivy's)."""

    def integrity_problems(self) -> list[str]:
        """What the engine's integrity check reports (empty when sound)."""

    def foreign_key_problems(self) -> list[str]:
        """Rows whose foreign key points at a missing row."""

    def index_problems(self) -> list[str]:
        """Keyword index entries that differ from the rows they index (empty when the engine
        keeps them in the rows' own transactions)."""

    def reembed_staged(self) -> bool:
        """Whether an interrupted ``vivy reembed`` left staged vectors."""

    def vector_dimension(self) -> int | None:
        """The dimension of the stored note vectors, or None when there is none."""


class ReadOnlyDatabase:
    """A read-only view of an existing database; a context manager that closes it."""

    def __init__(self, tx: Tx, inspector: Inspector, closer: Callable[[], None]) -> None:
        self._tx = tx
        self._inspector = inspector
        self._closer = closer

    def __enter__(self) -> ReadOnlyDatabase:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._closer()

    def schema_version(self) -> int:
        """The database's schema version (0 for a database that is not a Vivy database)."""
        return self._inspector.schema_version()

    def integrity_problems(self) -> list[str]:
        """What the engine's integrity check reports (empty when sound)."""
        return self._inspector.integrity_problems()

    def foreign_key_problems(self) -> list[str]:
        """Rows whose foreign key points at a missing row."""
        return self._inspector.foreign_key_problems()

    def evidence_problems(self) -> list[str]:
        """Evidence rows that belong to no note, or to a note of another guild, and keyword
        index entries that differ from their rows."""
        return evidence.evidence_problems(self._tx) + self._inspector.index_problems()

    def embedding_state(self) -> EmbeddingState:
        """The recorded embedding model against the stored vectors."""
        tx = self._tx
        return EmbeddingState(
            model=meta.get_meta(tx, "embedding_model"),
            dimension=meta.get_meta(tx, "embedding_dimension"),
            notes=count_rows(tx, "interaction_notes"),
            vectors=count_rows(tx, "vec_notes"),
            vector_dimension=self._inspector.vector_dimension(),
            reembed_staged=self._inspector.reembed_staged(),
        )

    def guild_ids(self) -> list[int]:
        """Every guild with a member, a note or server lore, in id order."""
        rows = self._tx.all(
            "SELECT guild_id FROM guild_members UNION SELECT guild_id FROM interaction_notes"
            " UNION SELECT guild_id FROM server_lore ORDER BY 1"
        )
        return [int(r[0]) for r in rows]

    def guild_counts(self) -> list[GuildCounts]:
        """Every guild with a member, a note, server lore or a buffer, with its counts, in id
        order."""
        rows = self._tx.all(
            "SELECT g.guild_id,"
            " (SELECT COUNT(*) FROM interaction_notes n WHERE n.guild_id = g.guild_id),"
            " (SELECT COUNT(*) FROM guild_members m WHERE m.guild_id = g.guild_id),"
            " (SELECT COALESCE(SUM(n.message_count), 0) FROM interaction_notes n"
            "  WHERE n.guild_id = g.guild_id AND n.note_type = 'conversation')"
            " + (SELECT COUNT(*) FROM buffer_messages b JOIN channel_buffers c"
            "  ON c.id = b.buffer_id WHERE c.guild_id = g.guild_id)"
            " FROM (SELECT guild_id FROM guild_members UNION SELECT guild_id FROM interaction_notes"
            " UNION SELECT guild_id FROM server_lore UNION SELECT guild_id FROM channel_buffers)"
            " AS g ORDER BY g.guild_id"
        )
        return [GuildCounts(int(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]

    def guild_names(self) -> dict[int, str]:
        """Every named guild's name, by id."""
        return guilds.guild_names(self._tx)

    def member_fact_counts(self, guild_id: int) -> dict[int, tuple[int, int]]:
        """Each member's active and retired fact counts, by user id."""
        rows = self._tx.all(
            "SELECT user_id, SUM(CASE WHEN invalidated_at IS NULL THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN invalidated_at IS NULL THEN 0 ELSE 1 END)"
            " FROM profile_facts WHERE guild_id = ? GROUP BY user_id",
            (guild_id,),
        )
        return {int(r[0]): (int(r[1]), int(r[2])) for r in rows}

    def guild_members(self, guild_id: int) -> list[tuple[int, str]]:
        """The guild's members as (user id, display name), by display name (bytewise)."""
        rows = self._tx.all(
            "SELECT user_id, display_name FROM guild_members WHERE guild_id = ?"
            f" ORDER BY display_name{self._tx.dialect.bytewise}",
            (guild_id,),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def member_name(self, guild_id: int, user_id: int) -> str | None:
        """The member's display name in the guild, if Vivy has seen them."""
        row = self._tx.one(
            "SELECT display_name FROM guild_members WHERE guild_id = ? AND user_id = ?",
            (guild_id, user_id),
        )
        return None if row is None else str(row[0])

    def profile_records(
        self, guild_id: int, user_id: int, *, include_invalidated: bool
    ) -> list[FactRecord]:
        """The member's facts with their history, in section order, oldest first."""
        kept = "" if include_invalidated else " AND f.invalidated_at IS NULL"
        rows = self._tx.all(
            "SELECT f.id, f.section, f.text, f.source_kind, f.source_label, f.created_at,"
            " f.invalidated_at, f.invalidation_reason, f.superseded_by, s.text, f.source_note_id"
            " FROM profile_facts f LEFT JOIN profile_facts s ON s.id = f.superseded_by"
            f" WHERE f.guild_id = ? AND f.user_id = ?{kept} ORDER BY f.created_at, f.id",
            (guild_id, user_id),
        )
        records = [FactRecord(*tuple(r)) for r in rows]
        return sorted(records, key=lambda f: _SECTION_ORDER.get(f.section, len(_SECTION_ORDER)))

    def newest_note_date(self, guild_id: int) -> str | None:
        """The UTC date of the guild's newest note, or None."""
        newest = self._tx.scalar(
            "SELECT MAX(note_date) FROM interaction_notes WHERE guild_id = ?", (guild_id,)
        )
        return None if newest is None else str(newest)

    def list_notes(
        self,
        guild_id: int,
        *,
        since: str | None = None,
        note_type: str | None = None,
        limit: int | None = 20,
    ) -> list[Note]:
        """A guild's newest notes (on or after the UTC date ``since``), newest first; all of
        them when ``limit`` is None."""
        query = "SELECT id FROM interaction_notes WHERE guild_id = ?"
        args: list[object] = [guild_id]
        if since is not None:
            query += " AND note_date >= ?"
            args.append(since)
        if note_type is not None:
            query += " AND note_type = ?"
            args.append(note_type)
        query += " ORDER BY note_date DESC, COALESCE(started_at, created_at) DESC, id DESC"
        if limit is not None:
            query += " LIMIT ?"
            args.append(limit)
        ids = [int(r[0]) for r in self._tx.all(query, args)]
        return get_notes(self._tx, ids)

    def note_lines(self, guild_id: int, *, author_id: int | None = None) -> list[EvidenceLine]:
        """Every kept message of the guild's notes (only ``author_id``'s, when given), by
        note then message."""
        query = (
            "SELECT l.message_id, l.note_id, l.author_id, l.author_name, l.text, l.created_at"
            " FROM note_lines AS l JOIN interaction_notes AS n ON n.id = l.note_id"
            " WHERE n.guild_id = ?"
        )
        args: list[object] = [guild_id]
        if author_id is not None:
            query += " AND l.author_id = ?"
            args.append(author_id)
        rows = self._tx.all(query + " ORDER BY l.note_id, l.message_id", args)
        return [
            EvidenceLine(int(r[0]), int(r[1]), int(r[2]), str(r[3]), str(r[4]), float(r[5]))
            for r in rows
        ]

    def pending_messages(self, guild_id: int, author_id: int) -> list[PendingMessage]:
        """The member's messages still in the guild's buffers (not yet written into a note),
        oldest first."""
        rows = self._tx.all(
            "SELECT m.message_id, b.channel_id, m.author_name, m.text, m.created_at"
            " FROM buffer_messages AS m JOIN channel_buffers AS b ON b.id = m.buffer_id"
            " WHERE b.guild_id = ? AND m.author_id = ? ORDER BY m.created_at, m.message_id",
            (guild_id, author_id),
        )
        return [
            PendingMessage(int(r[0]), int(r[1]), str(r[2]), str(r[3]), float(r[4])) for r in rows
        ]

    def known_names(self, guild_id: int, user_id: int) -> list[str]:
        """The names (lower case) Vivy has seen the member go by in the guild."""
        rows = self._tx.all(
            "SELECT name FROM member_names WHERE guild_id = ? AND user_id = ? ORDER BY name",
            (guild_id, user_id),
        )
        return [str(r[0]) for r in rows]

    def members_known_as(self, guild_id: int, name: str) -> list[int]:
        """The members of the guild Vivy has seen go by ``name`` (any case), in id order."""
        return sorted(members_named(self._tx, guild_id, [" ".join(name.lower().split())]))

    def all_lore(self, guild_id: int) -> list[LoreRecord]:
        """The guild's server lore, retired entries too, oldest first."""
        rows = self._tx.all(
            "SELECT id, text, author_id, created_at, invalidated_at FROM server_lore"
            " WHERE guild_id = ? ORDER BY id",
            (guild_id,),
        )
        return [
            LoreRecord(
                int(r[0]), str(r[1]), int(r[2]), float(r[3]), None if r[4] is None else float(r[4])
            )
            for r in rows
        ]

    def active_lore(self, guild_id: int) -> list[str]:
        """The guild's server lore still valid, oldest first."""
        rows = self._tx.all(
            "SELECT text FROM server_lore WHERE guild_id = ? AND invalidated_at IS NULL"
            " ORDER BY id",
            (guild_id,),
        )
        return [str(r[0]) for r in rows]
