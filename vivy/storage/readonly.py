"""The operator commands' read-only view of an existing SQLite database, and its online backup.

``vivy db check``, ``vivy inspect``, ``vivy snapshot`` and the demo run outside any event loop
and must never create, migrate or change a database, so they read through
:class:`SqliteReadOnlyStore` (a connection opened with :func:`~vivy.storage.checks.open_readonly`)
instead of the :class:`~vivy.storage.db.Database` owner. It implements
:class:`~vivy.storage.port.ReadOnlyStore`.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

import sqlean

from vivy.errors import StorageError
from vivy.memory.database import EmbeddingState
from vivy.memory.facts import FactRecord
from vivy.memory.notes import Note
from vivy.storage import checks, evidence, inspection, meta
from vivy.storage.db import Connection
from vivy.storage.maintenance import count_rows
from vivy.storage.reembed import REEMBED_STAGING

__all__ = ["SqliteReadOnlyStore", "backup_database"]


class SqliteReadOnlyStore:
    """A read-only connection to an existing database; a context manager that closes it."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @classmethod
    def open(cls, path: str | Path, *, require_schema: bool = True) -> SqliteReadOnlyStore:
        """Open the database at ``path`` for reading; never creates or migrates it.

        With ``require_schema``, a file that is not a Vivy database of this version is refused
        (:class:`~vivy.errors.StorageError` or :class:`~vivy.errors.SchemaTooNew`).
        """
        conn = checks.open_readonly(path)
        try:
            if require_schema:
                checks.require_vivy_schema(conn, path)
        except BaseException:
            conn.close()
            raise
        return cls(conn)

    def __enter__(self) -> SqliteReadOnlyStore:
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
        self._conn.close()

    def schema_version(self) -> int:
        """The database's schema version (0 for a file that is not a Vivy database)."""
        return checks.schema_version(self._conn)

    def integrity_problems(self) -> list[str]:
        """What SQLite's integrity check reports (empty when the file is sound)."""
        return checks.check_integrity(self._conn)

    def foreign_key_problems(self) -> list[str]:
        """Rows whose foreign key points at a missing row."""
        return checks.check_foreign_keys(self._conn)

    def evidence_problems(self) -> list[str]:
        """Evidence rows that belong to no note, or to a note of another guild."""
        return evidence.evidence_problems(self._conn)

    def embedding_state(self) -> EmbeddingState:
        """The recorded embedding model against the stored vectors."""
        conn = self._conn
        staging = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (REEMBED_STAGING,)
        ).fetchone()
        return EmbeddingState(
            model=meta.get_meta(conn, "embedding_model"),
            dimension=meta.get_meta(conn, "embedding_dimension"),
            notes=count_rows(conn, "interaction_notes"),
            vectors=count_rows(conn, "vec_notes"),
            vector_dimension=checks.vec_notes_dimension(conn),
            reembed_staged=staging is not None,
        )

    def guild_ids(self) -> list[int]:
        """Every guild with a member, a note or server lore, in id order."""
        rows = self._conn.execute(
            "SELECT guild_id FROM guild_members UNION SELECT guild_id FROM interaction_notes"
            " UNION SELECT guild_id FROM server_lore ORDER BY 1"
        ).fetchall()
        return [int(r[0]) for r in rows]

    def guild_members(self, guild_id: int) -> list[tuple[int, str]]:
        """The guild's members as (user id, display name), by display name."""
        rows = self._conn.execute(
            "SELECT user_id, display_name FROM guild_members WHERE guild_id = ?"
            " ORDER BY display_name",
            (guild_id,),
        ).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def member_name(self, guild_id: int, user_id: int) -> str | None:
        """The member's display name in the guild, if Vivy has seen them."""
        return inspection.member_name(self._conn, guild_id, user_id)

    def profile_records(
        self, guild_id: int, user_id: int, *, include_invalidated: bool
    ) -> list[FactRecord]:
        """The member's facts with their history, in section order, oldest first."""
        return inspection.profile_records(
            self._conn, guild_id, user_id, include_invalidated=include_invalidated
        )

    def newest_note_date(self, guild_id: int) -> str | None:
        """The UTC date of the guild's newest note, or None."""
        row = self._conn.execute(
            "SELECT MAX(note_date) FROM interaction_notes WHERE guild_id = ?", (guild_id,)
        ).fetchone()
        return None if row[0] is None else str(row[0])

    def list_notes(
        self,
        guild_id: int,
        *,
        since: str | None = None,
        note_type: str | None = None,
        limit: int = 20,
    ) -> list[Note]:
        """A guild's newest notes (on or after the UTC date ``since``), newest first."""
        return inspection.list_notes(
            self._conn, guild_id, since=since, note_type=note_type, limit=limit
        )

    def active_lore(self, guild_id: int) -> list[str]:
        """The guild's server lore still valid, oldest first."""
        rows = self._conn.execute(
            "SELECT text FROM server_lore WHERE guild_id = ? AND invalidated_at IS NULL"
            " ORDER BY id",
            (guild_id,),
        ).fetchall()
        return [str(r[0]) for r in rows]


def backup_database(source: Path, target: Path) -> tuple[int, list[str]]:
    """Copy ``source`` to ``target`` with SQLite's online backup API (safe while Vivy runs).

    The copy is written beside ``target`` and moved into place only once SQLite's integrity
    check passes on it. Returns the copy's page count and the integrity problems (``target``
    is left untouched when there are any).
    """
    conn = checks.open_readonly(source)
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        copy: Connection = sqlean.connect(str(partial), isolation_level=None)
        try:
            conn.backup(copy)
            # A single self-contained file: no -wal beside it to forget when copying it off.
            copy.execute("PRAGMA journal_mode = DELETE")
        finally:
            copy.close()
        check = checks.open_readonly(partial)
        try:
            problems = checks.check_integrity(check)
            pages = int(check.execute("PRAGMA page_count").fetchone()[0])
        finally:
            check.close()
        if not problems:
            os.replace(partial, target)
    except sqlean.Error as exc:
        raise StorageError(f"backup failed: {exc}") from exc
    finally:
        conn.close()
        partial.unlink(missing_ok=True)
    return pages, problems
