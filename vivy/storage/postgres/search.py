"""The first primitives of note search on PostgreSQL: vector and keyword search over notes.

These are the engine-specific parts the coming ``PgSearchStore`` (the port's
:class:`~vivy.storage.port.SearchStore`, not written yet) will run; the candidate assembly of
:func:`vivy.storage.search.search_notes_sync` is to be shared between the engines, not copied.

Rules, as for SQLite (:mod:`vivy.storage.search`):

* The guild is filtered inside the index scan, never after a top-k cut. pgvector's HNSW scan
  on its own returns ``hnsw.ef_search`` candidates and filters them afterwards, so a guild
  whose notes are not among the nearest of all guilds would get too few; with
  ``hnsw.iterative_scan`` the scan goes on until ``limit`` rows of the guild are found.
* User text never reaches ``to_tsquery`` as syntax: each term is quoted as one lexeme.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.evidence import blob_text
from vivy.storage.schema import VEC_KINDS
from vivy.storage.search import KeywordMatch, VectorMatch

__all__ = ["EF_SEARCH", "NOTE_WEIGHTS", "keyword_search", "tsquery_of", "vector_search"]

#: Candidates the HNSW scan keeps per step (pgvector's default is 40).
EF_SEARCH = 100

#: ``ts_rank_cd`` weights of the lexeme classes D, C, B, A of ``notes_fts``: summary 1,
#: topics and entities 2, title 3 (SQLite's BM25 column weights), scaled to at most 1.
NOTE_WEIGHTS = "{0.333, 0, 0.667, 1}"


def vector_search(
    conn: PgConnection,
    guild_id: int,
    vector: bytes,
    *,
    note_type: str | None,
    limit: int,
) -> list[VectorMatch]:
    """The ``limit`` notes of the guild closest to ``vector`` (a float32 blob) by cosine,
    best first; ``note_type`` None searches both types. Runs inside the caller's transaction
    (its scan settings are local to it)."""
    conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
    conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(limit))}".encode())
    rows = conn.execute(
        "SELECT note_id, embedding <=> %(v)s::vector FROM vec_notes WHERE guild_id = %(g)s"
        " AND (%(k)s::text IS NULL OR note_kind = %(k)s)"
        " ORDER BY embedding <=> %(v)s::vector LIMIT %(n)s",
        {
            "v": blob_text(vector),
            "g": guild_id,
            "k": None if note_type is None else VEC_KINDS[note_type],
            "n": limit,
        },
    ).fetchall()
    found = [VectorMatch(int(r[0]), 1.0 - float(r[1])) for r in rows]
    found.sort(key=lambda match: (-match.similarity, match.note_id))
    return found


def tsquery_of(terms: Sequence[str]) -> str | None:
    """A ``to_tsquery`` expression matching any of ``terms``, each quoted as one lexeme;
    None without terms."""
    quoted = [
        "'" + term.replace("\\", "").replace("'", "''") + "'"
        for term in dict.fromkeys(terms)
        if term.replace("\\", "").replace("'", "").strip()
    ]
    return " | ".join(quoted) if quoted else None


def keyword_search(
    conn: PgConnection,
    guild_id: int,
    terms: Sequence[str],
    *,
    note_type: str | None,
    limit: int,
) -> list[KeywordMatch]:
    """The ``limit`` notes of the guild matching any of ``terms`` best (``ts_rank_cd`` over
    the weighted ``notes_fts``, higher is better); the guild and type filters apply before
    the ``LIMIT``."""
    query = tsquery_of(terms)
    if query is None:
        return []
    rows = conn.execute(
        "SELECT n.id, ts_rank_cd(%(w)s::float4[], n.notes_fts, q) AS score"
        " FROM interaction_notes n, to_tsquery('simple', %(q)s) q"
        " WHERE n.notes_fts @@ q AND n.guild_id = %(g)s"
        " AND (%(t)s::text IS NULL OR n.note_type = %(t)s)"
        " ORDER BY score DESC, n.id LIMIT %(n)s",
        {"w": NOTE_WEIGHTS, "q": query, "g": guild_id, "t": note_type, "n": limit},
    ).fetchall()
    return [KeywordMatch(int(r[0]), float(r[1])) for r in rows]
