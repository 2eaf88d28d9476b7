"""The operator commands' read-only view of an existing PostgreSQL database.

:func:`open_postgres_readonly` opens a :class:`~vivy.storage.readonly.ReadOnlyDatabase` over
a connection whose transactions are read-only (``default_transaction_read_only``), so it
never creates, migrates or changes a database. PostgreSQL enforces foreign keys as rows are
written, but a bulk copy run with triggers off (``session_replication_role = replica``) does
not, so the inspector looks for orphans itself; the integrity check reports indexes
PostgreSQL marked invalid (a failed concurrent build), and the keyword postings are checked
against the rows they index.
"""

from __future__ import annotations

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from vivy.errors import SchemaTooNew, StorageError
from vivy.storage.dialect import REEMBED_STAGING
from vivy.storage.postgres.connect import explained, with_timeouts
from vivy.storage.postgres.db import PgConnection, schema_version
from vivy.storage.postgres.dialect import postgres_tx
from vivy.storage.postgres.evidence import postings_problems
from vivy.storage.postgres.schema import PG_SCHEMA_VERSION, note_vector_dimension
from vivy.storage.readonly import ReadOnlyDatabase

__all__ = ["connection_error", "open_postgres_readonly", "shown_url"]


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
    return StorageError(f"cannot connect to {shown_url(uri)}: {explained(first)}")


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


def open_postgres_readonly(uri: str, *, require_schema: bool = True) -> ReadOnlyDatabase:
    """Connect to ``uri`` for reading; never creates or migrates anything.

    With ``require_schema``, a database that is not a Vivy database of this version is
    refused (:class:`~vivy.errors.StorageError` or :class:`~vivy.errors.SchemaTooNew`).
    """
    try:
        conn = psycopg.connect(with_timeouts(uri, read_only=True), autocommit=True)
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
    return ReadOnlyDatabase(postgres_tx(conn), _PgInspector(conn), conn.close)


class _PgInspector:
    """PostgreSQL's own checks of a database."""

    def __init__(self, conn: PgConnection) -> None:
        self._conn = conn

    def schema_version(self) -> int:
        """The version table's number."""
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

    def index_problems(self) -> list[str]:
        """Keyword postings that differ from the text of their note or window."""
        return postings_problems(self._conn)

    def reembed_staged(self) -> bool:
        """Whether the staging table exists."""
        row = self._conn.execute("SELECT to_regclass(%s) IS NOT NULL", (REEMBED_STAGING,))
        found = row.fetchone()
        return bool(found and found[0])

    def vector_dimension(self) -> int | None:
        """The dimension ``vec_notes`` was created with."""
        return note_vector_dimension(self._conn)
