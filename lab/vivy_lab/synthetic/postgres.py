"""The retrieval benchmark's synthetic notes, copied from SQLite into PostgreSQL.

``vivy bench retrieval --db postgresql://…`` measures PostgreSQL on exactly the notes, vectors,
evidence and queries the SQLite run measures: :func:`vivy_lab.synthetic.sqlite.build` makes the
SQLite database, and :func:`copy_synthetic` copies its filled tables into a migrated
PostgreSQL database with binary ``COPY`` (float32 blobs become pgvector values). The tables'
secondary indexes (b-trees) are dropped first and built again from their own
definitions afterwards, as a bulk load does; the keyword postings are made in one pass after
the copy (their triggers off during it), the tables are vacuumed and analysed, and a
checkpoint writes the load out before any search is timed.

:func:`exact_recall` is the PostgreSQL side of :func:`vivy_lab.synthetic.sqlite.quantised_recall`:
the time of the vector search alone (the engine's
:func:`~vivy.storage.postgres.search.vector_search`: the in-memory copy's candidates re-ranked
by pgvector) and the share of an exact scan's top 10 it finds.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg.errors
from psycopg import pq, sql
from psycopg.adapt import Dumper
from psycopg.types import TypeInfo

from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.dialect import vector_text
from vivy.storage.postgres.schema import (
    POSTINGS_BACKFILL,
    POSTINGS_TABLES,
    note_vector_dimension,
    vec_notes_ddl,
)
from vivy.storage.postgres.search import PG_VECTORS, vector_bytes, vector_search
from vivy.storage.sqlite.db import Connection
from vivy.storage.sqlite.db import connect as sqlite_connect
from vivy.storage.vector_index import BinaryIndex
from vivy_lab.synthetic.sqlite import DIMENSION, EXACT_QUERIES, GUILD_ID

__all__ = ["SYNTHETIC_TABLES", "copy_synthetic", "exact_recall"]

#: The tables :func:`vivy_lab.synthetic.sqlite.build` fills, parents first.
SYNTHETIC_TABLES = (
    "interaction_notes",
    "note_participants",
    "vec_notes",
    "note_lines",
    "evidence_windows",
)

#: The tables whose triggers keep the keyword postings.
_TRIGGERED = (sql.Identifier("interaction_notes"), sql.Identifier("evidence_windows"))

#: Memory an index build may use (ample for the postings' b-trees at 100k notes).
BUILD_MEMORY = "1GB"


class _VectorBinaryDumper(Dumper):
    """pgvector's binary input form of a float32 blob (for ``COPY``, which needs the oid)."""

    format = pq.Format.BINARY

    def dump(self, obj: object) -> bytes:
        """``obj`` (little-endian float32 bytes) as pgvector's ``vector_recv`` reads it."""
        assert isinstance(obj, bytes)
        return vector_bytes(obj)


def copy_synthetic(source: Path, conn: PgConnection) -> float:
    """Copy the synthetic tables of the SQLite database at ``source`` into the (migrated,
    empty) PostgreSQL database of ``conn``; returns the seconds taken."""
    started = time.perf_counter()
    info = TypeInfo.fetch(conn, "vector")
    assert info is not None, "the vector extension is created by the first migration"
    dumper = type("VectorDumper", (_VectorBinaryDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(None, dumper)
    lite = sqlite_connect(source)
    try:
        with conn.transaction():
            if note_vector_dimension(conn) != DIMENSION:  # the synthetic vectors' length
                conn.execute("DROP TABLE vec_notes")
                conn.execute(vec_notes_ddl(DIMENSION).encode())
            indexes = _drop_secondary_indexes(conn)
            for triggered in _TRIGGERED:  # postings are made in one pass afterwards
                conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(triggered))
            for table in SYNTHETIC_TABLES:
                _copy_table(lite, conn, table)
            for triggered in _TRIGGERED:
                conn.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(triggered))
            conn.execute(POSTINGS_BACKFILL.encode())
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(BUILD_MEMORY)))
        for definition in indexes:
            conn.execute(definition.encode())
        for table in (*SYNTHETIC_TABLES, *POSTINGS_TABLES):
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
        _checkpoint(conn)
    finally:
        lite.close()
    return time.perf_counter() - started


def _checkpoint(conn: PgConnection) -> None:
    """Write the load's dirty pages out now, so that the server's checkpoint does not do it
    while the searches are timed; a role without the right to (``pg_checkpoint``) skips it."""
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        conn.execute("CHECKPOINT")


def _drop_secondary_indexes(conn: PgConnection) -> list[str]:
    """Drop the synthetic tables' indexes that back no constraint; return their DDL."""
    rows = conn.execute(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i"
        " WHERE i.indrelid = ANY(%s::regclass[]) AND NOT i.indisprimary AND NOT i.indisunique",
        (list(SYNTHETIC_TABLES),),
    ).fetchall()
    for name, _ in rows:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(str(name))))
    return [str(definition) for _, definition in rows]


def _copy_table(lite: Connection, conn: PgConnection, table: str) -> None:
    """Copy the columns ``table`` has on both engines (PostgreSQL's generated ones aside)."""
    columns = conn.execute(
        "SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = %s::regclass"
        " AND attnum > 0 AND NOT attisdropped AND attgenerated = '' AND attidentity <> 'a'"
        " ORDER BY attnum",
        (table,),
    ).fetchall()
    cursor = lite.execute(f"SELECT * FROM {table} LIMIT 0")
    present = {d[0] for d in cursor.description}
    names = [str(name) for name, _ in columns if name in present]
    types = [int(oid) for name, oid in columns if name in present]
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, names))
    )
    rows = lite.execute(f"SELECT {', '.join(names)} FROM {table}")
    with conn.cursor().copy(statement) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def exact_recall(
    conn: PgConnection,
    workload: Sequence[tuple[list[float], str]],
    *,
    limit: int,
    candidates: int,
) -> tuple[float, float]:
    """The median seconds of the vector search alone over ``workload`` (``limit`` nearest
    kept of ``candidates``, as the retriever asks; the guild's copy loaded first, untimed),
    and the mean share of an exact scan's top 10 that its top 10 holds over the first
    :data:`EXACT_QUERIES` queries."""
    index = BinaryIndex(PG_VECTORS)
    timings: list[float] = []
    recalls: list[float] = []
    for number, (vector, _) in enumerate(workload):
        with conn.transaction():
            started = time.perf_counter()
            found = vector_search(
                conn,
                index,
                GUILD_ID,
                vector,
                note_type=None,
                limit=limit,
                candidates=candidates,
            )
            if number:
                timings.append(time.perf_counter() - started)
        if len(recalls) == EXACT_QUERIES:
            continue
        with conn.transaction():
            exact = conn.execute(
                "SELECT note_id FROM vec_notes WHERE guild_id = %s"
                " ORDER BY embedding <=> %s::vector, note_id LIMIT 10",
                (GUILD_ID, vector_text(vector)),
            ).fetchall()
        truth = {int(row[0]) for row in exact}
        top = {match.note_id for match in found[:10]}
        recalls.append(len(truth & top) / max(1, len(truth)))
    return (
        statistics.median(timings) if timings else 0.0,
        statistics.fmean(recalls) if recalls else 0.0,
    )
