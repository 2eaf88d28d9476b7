"""The operator commands' read-only view of an existing PostgreSQL database.

It implements :class:`~vivy.storage.port.ReadOnlyStore` as
:class:`~vivy.storage.readonly.SqliteReadOnlyStore` does for SQLite: a connection whose
transactions are read-only (``default_transaction_read_only``), so it never creates,
migrates or changes a database. PostgreSQL enforces foreign keys as rows are written, but a
bulk copy run with triggers off (``session_replication_role = replica``) does not, so
:meth:`PgReadOnlyStore.foreign_key_problems` looks for orphans itself; the integrity check
reports indexes PostgreSQL marked invalid (a failed concurrent build).
"""

from __future__ import annotations

from types import TracebackType

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from vivy.errors import SchemaTooNew, StorageError
from vivy.memory.database import EmbeddingState
from vivy.memory.facts import PROFILE_SECTIONS, FactRecord
from vivy.memory.notes import Note
from vivy.storage.postgres import evidence, meta, notes
from vivy.storage.postgres.db import PgConnection, schema_version
from vivy.storage.postgres.reembed import note_vector_dimension
from vivy.storage.postgres.schema import PG_SCHEMA_VERSION
from vivy.storage.reembed import REEMBED_STAGING

__all__ = ["PgReadOnlyStore", "connection_error", "shown_url"]

_SECTION_ORDER: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}


def shown_url(uri: str) -> str:
    """``uri`` as a message may name it: ``postgresql://user@host:port/db``, no password."""
    try:
        info = conninfo_to_dict(uri)
    except psycopg.Error:
        return "postgresql://?"
    host = info.get("host") or "localhost"
    port = f":{info['port']}" if info.get("port") else ""
    user = f"{info['user']}@" if info.get("user") else ""
    return f"postgresql://{user}{host}{port}/{info.get('dbname') or ''}"


def connection_error(uri: str, exc: psycopg.Error) -> StorageError:
    """A one-line :class:`StorageError` for a failed connection to ``uri``: the server as
    :func:`shown_url` names it and libpq's first line, with any password in it masked (libpq
    quotes a malformed URL whole)."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "failed")
    for secret in _passwords(uri):
        first = first.replace(secret, "***")
    return StorageError(f"cannot connect to {shown_url(uri)}: {first}")


def _passwords(uri: str) -> list[str]:
    """The password ``uri`` holds, as parsed and as written (percent-encoded or not)."""
    found = []
    try:
        password = conninfo_to_dict(uri).get("password")
    except psycopg.Error:
        password = None
    if password:
        found.append(str(password))
    _, _, rest = uri.partition("://")
    userinfo, at, _ = rest.rpartition("@")
    if at and ":" in userinfo:
        found.append(userinfo.split(":", 1)[1])
    return [secret for secret in found if secret]


class PgReadOnlyStore:
    """A read-only connection to an existing database; a context manager that closes it."""

    def __init__(self, conn: PgConnection) -> None:
        self._conn = conn

    @classmethod
    def open(cls, uri: str, *, require_schema: bool = True) -> PgReadOnlyStore:
        """Connect to ``uri`` for reading; never creates or migrates anything.

        With ``require_schema``, a database that is not a Vivy database of this version is
        refused (:class:`~vivy.errors.StorageError` or :class:`~vivy.errors.SchemaTooNew`).
        """
        try:
            given = str(conninfo_to_dict(uri).get("options") or "")
            options = f"{given} -c default_transaction_read_only=on".strip()
            conn = psycopg.connect(make_conninfo(uri, options=options), autocommit=True)
        except psycopg.Error as exc:
            raise connection_error(uri, exc) from exc
        try:
            if require_schema:
                version = schema_version(conn)
                if version > PG_SCHEMA_VERSION:
                    raise SchemaTooNew(version, PG_SCHEMA_VERSION)
                if version < PG_SCHEMA_VERSION:
                    raise StorageError(
                        f"the database has schema version {version}, not this Vivy's"
                        f" {PG_SCHEMA_VERSION}; start Vivy on it once to migrate it"
                    )
        except BaseException:
            conn.close()
            raise
        return cls(conn)

    def __enter__(self) -> PgReadOnlyStore:
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
        """The database's schema version (0 for a database that is not a Vivy database)."""
        return schema_version(self._conn)

    def integrity_problems(self) -> list[str]:
        """Indexes of Vivy's schema that PostgreSQL marked invalid (empty when sound)."""
        rows = self._conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid"
            " ORDER BY c.relname"
        ).fetchall()
        return [f"index {r[0]} is invalid; rebuild it with REINDEX" for r in rows]

    def foreign_key_problems(self) -> list[str]:
        """Rows whose foreign key points at a missing row, as ``table row -> parent``."""
        # Every foreign key of Vivy's schema has one column.
        keys = self._conn.execute(
            "SELECT t.relname, a.attname, p.relname, pa.attname FROM pg_constraint c"
            " JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class p ON p.oid = c.confrelid"
            " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]"
            " JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = c.confkey[1]"
            " WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
            " ORDER BY 1, 2"
        ).fetchall()
        problems: list[str] = []
        for table, column, parent, parent_column in keys:
            orphans = self._conn.execute(
                sql.SQL(
                    "SELECT DISTINCT t.{col} FROM {table} t WHERE t.{col} IS NOT NULL AND NOT"
                    " EXISTS (SELECT 1 FROM {parent} p WHERE p.{pcol} = t.{col}) ORDER BY 1"
                ).format(
                    table=sql.Identifier(table),
                    col=sql.Identifier(column),
                    parent=sql.Identifier(parent),
                    pcol=sql.Identifier(parent_column),
                )
            ).fetchall()
            problems += [
                f"{table} rows with {column} = {r[0]} reference a missing {parent} row"
                for r in orphans
            ]
        return problems

    def evidence_problems(self) -> list[str]:
        """Evidence rows that belong to no note, or to a note of another guild."""
        return evidence.evidence_problems(self._conn)

    def embedding_state(self) -> EmbeddingState:
        """The recorded embedding model against the stored vectors."""
        conn = self._conn
        row = conn.execute(
            "SELECT (SELECT COUNT(*) FROM interaction_notes), (SELECT COUNT(*) FROM vec_notes),"
            " to_regclass(%s) IS NOT NULL",
            (REEMBED_STAGING,),
        ).fetchone()
        assert row is not None
        return EmbeddingState(
            model=meta.get_meta(conn, "embedding_model"),
            dimension=meta.get_meta(conn, "embedding_dimension"),
            notes=int(row[0]),
            vectors=int(row[1]),
            vector_dimension=note_vector_dimension(conn),
            reembed_staged=bool(row[2]),
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
            "SELECT user_id, display_name FROM guild_members WHERE guild_id = %s"
            ' ORDER BY display_name COLLATE "C"',
            (guild_id,),
        ).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def member_name(self, guild_id: int, user_id: int) -> str | None:
        """The member's display name in the guild, if Vivy has seen them."""
        row = self._conn.execute(
            "SELECT display_name FROM guild_members WHERE guild_id = %s AND user_id = %s",
            (guild_id, user_id),
        ).fetchone()
        return None if row is None else str(row[0])

    def profile_records(
        self, guild_id: int, user_id: int, *, include_invalidated: bool
    ) -> list[FactRecord]:
        """The member's facts with their history, in section order, oldest first."""
        rows = self._conn.execute(
            "SELECT f.id, f.section, f.text, f.source_kind, f.source_label, f.created_at,"
            " f.invalidated_at, f.invalidation_reason, f.superseded_by, s.text"
            " FROM profile_facts f LEFT JOIN profile_facts s ON s.id = f.superseded_by"
            " WHERE f.guild_id = %s AND f.user_id = %s AND (%s OR f.invalidated_at IS NULL)"
            " ORDER BY f.created_at, f.id",
            (guild_id, user_id, include_invalidated),
        ).fetchall()
        records = [FactRecord(*r) for r in rows]
        return sorted(records, key=lambda f: _SECTION_ORDER.get(f.section, len(_SECTION_ORDER)))

    def newest_note_date(self, guild_id: int) -> str | None:
        """The UTC date of the guild's newest note, or None."""
        row = self._conn.execute(
            "SELECT MAX(note_date) FROM interaction_notes WHERE guild_id = %s", (guild_id,)
        ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def list_notes(
        self,
        guild_id: int,
        *,
        since: str | None = None,
        note_type: str | None = None,
        limit: int = 20,
    ) -> list[Note]:
        """A guild's newest notes (on or after the UTC date ``since``), newest first."""
        rows = self._conn.execute(
            "SELECT id FROM interaction_notes WHERE guild_id = %s"
            " AND (%s::text IS NULL OR note_date >= %s)"
            " AND (%s::text IS NULL OR note_type = %s)"
            " ORDER BY note_date DESC, COALESCE(started_at, created_at) DESC, id DESC LIMIT %s",
            (guild_id, since, since, note_type, note_type, limit),
        ).fetchall()
        return notes.get_notes(self._conn, [int(r[0]) for r in rows])

    def active_lore(self, guild_id: int) -> list[str]:
        """The guild's server lore still valid, oldest first."""
        rows = self._conn.execute(
            "SELECT text FROM server_lore WHERE guild_id = %s AND invalidated_at IS NULL"
            " ORDER BY id",
            (guild_id,),
        ).fetchall()
        return [str(r[0]) for r in rows]
