"""Note search on PostgreSQL: vector and keyword search over notes and their evidence.

These are the engine-specific reads :class:`~vivy.storage.postgres.stores.PgSearchStore`
runs (:func:`search_notes`); what they found is joined into ranking candidates by the pure
:func:`vivy.storage.search.assemble_candidates`, the same function the SQLite engine calls.
Term plans use the same postings budget and idf (:func:`vivy.storage.search.prune_terms`,
:func:`~vivy.storage.search.term_weight`); the keyword strength is ``ts_rank_cd`` where
SQLite has BM25, so ``bm25`` and ``window_bm25`` differ in scale between the engines while
the candidates found and their other fields mean the same.

Rules, as for SQLite (:mod:`vivy.storage.search`):

* The guild is filtered inside the index scan, never after a top-k cut. pgvector's HNSW scan
  on its own returns ``hnsw.ef_search`` candidates and filters them afterwards, so a guild
  whose notes are not among the nearest of all guilds would get too few; with
  ``hnsw.iterative_scan`` the scan goes on until ``limit`` rows of the guild are found.
* User text never reaches ``to_tsquery`` as syntax: each term is quoted as one lexeme.
* Every read names the guild in its ``WHERE`` clause, before any ``LIMIT``.
* A failing vector query (a question embedded at another dimension) is reported in the
  result, as on SQLite; it runs in a savepoint, so the rest of the read goes on.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence

import psycopg
from psycopg import pq
from psycopg.adapt import Dumper

from vivy.storage.candidates import (
    CandidateDetails,
    KeywordMatch,
    SearchHits,
    VectorMatch,
    assemble_candidates,
    shown_windows,
)
from vivy.storage.evidence import EvidenceLine, WindowMatch
from vivy.storage.notes import Note, note_date
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.notes import get_notes
from vivy.storage.schema import VEC_KINDS
from vivy.storage.search import (
    CONVERSATION,
    EVIDENCE_POSTINGS_BUDGET,
    KEYWORD_POSTINGS_BUDGET,
    TermPlan,
    prune_terms,
    term_weight,
)
from vivy.storage.search_types import NoteSearch, NoteSearchResult

__all__ = [
    "EF_SEARCH",
    "NOTE_WEIGHTS",
    "PgVector",
    "candidate_details",
    "guild_notes",
    "keyword_search",
    "load_hits",
    "members_named",
    "notes_in_range",
    "plan_terms",
    "search_notes",
    "tsquery_of",
    "vector_bytes",
    "vector_param",
    "vector_search",
    "window_keyword_search",
    "window_lines",
    "window_similarities",
]

#: Candidates the HNSW scan keeps per step at least (pgvector's default; a search asking for
#: more raises it to its limit). At 100k synthetic notes, 100 instead found 0.450 rather than
#: 0.437 of an exact scan's top 10 and took 5.9 rather than 4.6 ms (warm; 8.0 / 4.7 cold).
EF_SEARCH = 40

#: Most note postings one keyword search reads (SQLite's budget for now).
NOTE_POSTINGS_BUDGET = KEYWORD_POSTINGS_BUDGET
#: Most evidence-window postings one keyword search reads (SQLite's budget for now).
WINDOW_POSTINGS_BUDGET = EVIDENCE_POSTINGS_BUDGET

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
    conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'strict_order', true),"
        " set_config('hnsw.ef_search', %s, true)",
        (str(max(EF_SEARCH, int(limit))),),
    )
    rows = conn.execute(
        "SELECT note_id, embedding <=> %(v)b::vector FROM vec_notes"
        " WHERE guild_id = %(g)s"
        " AND (%(k)s::text IS NULL OR note_kind = %(k)s)"
        " ORDER BY embedding <=> %(v)b::vector LIMIT %(n)s",
        {
            "v": vector_param(vector),
            "g": guild_id,
            "k": None if note_type is None else VEC_KINDS[note_type],
            "n": limit,
        },
    ).fetchall()
    found = [VectorMatch(int(r[0]), 1.0 - float(r[1])) for r in rows]
    found.sort(key=lambda match: (-match.similarity, match.note_id))
    return found


class PgVector(bytes):
    """A float32 blob (little-endian, SQLite's form) bound as a pgvector ``vector``: psycopg
    sends it in pgvector's binary form (:class:`_VectorDumper`), bound as ``%b::vector``."""


def vector_bytes(blob: bytes) -> bytes:
    """pgvector's binary ``vector`` of a float32 blob: the dimension count, a zero, then the
    floats big-endian (``vector_recv``'s input)."""
    values = array("f", blob)
    values.byteswap()
    return struct.pack(">HH", len(values), 0) + values.tobytes()


class _VectorDumper(Dumper):
    """Dumps a :class:`PgVector` in binary; its type comes from the ``::vector`` cast (oid 0),
    so no connection needs to look the extension's type up first."""

    format = pq.Format.BINARY

    def dump(self, obj: object) -> bytes:
        """``obj``, a :class:`PgVector`, in pgvector's binary form."""
        assert isinstance(obj, bytes)
        return vector_bytes(obj)


psycopg.adapters.register_dumper(PgVector, _VectorDumper)


def vector_param(blob: bytes) -> PgVector:
    """A float32 blob as a query parameter bound as ``%b::vector``: a third of the time of
    psycopg's binary ``float8[]`` of the floats, and no cast on the server."""
    return PgVector(blob)


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


#: The keyword indexes: the table, its ``tsvector`` column and the text search
#: configuration its column was built with (queries must use the same one).
_INDEXES = {
    "notes": ("interaction_notes", "notes_fts", "simple"),
    "evidence": ("evidence_windows", "evidence_fts", "english"),
}


def plan_terms(
    conn: PgConnection,
    terms: Sequence[str],
    *,
    budget: int = KEYWORD_POSTINGS_BUDGET,
    index: str = "notes",
) -> TermPlan:
    """The terms to search and their idf weights, as :func:`vivy.storage.search.plan_terms`
    plans them on SQLite: each term's count (capped at ``budget + 1``), the rarest kept
    within the budget, the total the newest row id; read in one statement.

    Counting a common term in PostgreSQL reads a heap row per match (a GIN index cannot
    answer a count alone), up to 40 ms for a term in every note at 100k notes, so a term
    among the column's most common lexemes, which ``ANALYZE`` samples into ``pg_stats``,
    takes its count from there (its sampled share times the table's rows; a term in 0.5 %
    of 100k notes is counted within about 8 %, which moves its idf by less than 0.1). Only
    the rarer terms, and every term of a table not analysed yet, are counted, cheaply
    since they match few rows. The statistics are read once per statement (``MATERIALIZED``:
    inlined, the view was read again for every term, twice the time).
    """
    queries = {term: query for term in dict.fromkeys(terms) if (query := tsquery_of([term]))}
    if not queries:
        return TermPlan({})
    table, column, config = _INDEXES[index]
    rows = conn.execute(
        (
            "WITH s AS MATERIALIZED (SELECT s0.most_common_elems::text::text[] AS elems,"
            " s0.most_common_elem_freqs AS freqs, c.reltuples FROM pg_class AS c"
            " JOIN pg_stats AS s0 ON s0.schemaname = c.relnamespace::regnamespace::text"
            f" AND s0.tablename = c.relname AND s0.attname = '{column}'"
            f" WHERE c.oid = '{table}'::regclass AND c.reltuples > 0)"
            " SELECT t.term, COALESCE("
            "  (SELECT round(s.freqs[array_position(s.elems,"
            f"   (tsvector_to_array(to_tsvector('{config}', t.term)))[1])] * s.reltuples)"
            "   FROM s),"
            f"  (SELECT COUNT(*) FROM (SELECT 1 FROM {table}"
            f"   WHERE {column} @@ to_tsquery('{config}', t.query) LIMIT %(cap)s) AS found)),"
            f" (SELECT MAX(id) FROM {table})"
            " FROM unnest(%(terms)s::text[], %(queries)s::text[]) AS t(term, query)"
        ).encode(),
        {"cap": budget + 1, "terms": list(queries), "queries": list(queries.values())},
    ).fetchall()
    counts = {str(r[0]): min(budget + 1, int(r[1])) for r in rows}
    total = int(rows[0][2] or 0) if rows else 0
    kept = prune_terms(list(counts), counts, budget)
    return TermPlan({term: term_weight(counts[term], total) for term in kept})


def window_keyword_search(
    conn: PgConnection, guild_id: int, terms: Sequence[str], *, limit: int
) -> list[WindowMatch]:
    """The ``limit`` evidence windows of the guild matching any of ``terms`` best
    (``ts_rank_cd`` over the stemmed ``evidence_fts``); the guild filter applies before the
    ``LIMIT``."""
    query = tsquery_of(terms)
    if query is None:
        return []
    rows = conn.execute(
        "SELECT w.id, w.note_id, ts_rank_cd(w.evidence_fts, q) AS score"
        " FROM evidence_windows w, to_tsquery('english', %(q)s) q"
        " WHERE w.evidence_fts @@ q AND w.guild_id = %(g)s"
        " ORDER BY score DESC, w.id LIMIT %(n)s",
        {"q": query, "g": guild_id, "n": limit},
    ).fetchall()
    return [WindowMatch(int(r[0]), int(r[1]), float(r[2])) for r in rows]


def window_similarities(
    conn: PgConnection, guild_id: int, note_ids: Sequence[int], vector: bytes | None
) -> tuple[list[WindowMatch], dict[int, str]]:
    """The cosine similarity of ``vector`` (a float32 blob; None: no similarities) to every
    embedded window of the guild's notes ``note_ids``, best first (windows embedded at
    another dimension are skipped), and the text of every window of those notes, which
    holds every window a candidate can show; one statement."""
    if not note_ids:
        return [], {}
    rows = conn.execute(
        "SELECT id, note_id, text, CASE WHEN %(v)b::vector IS NOT NULL"
        " AND embedding IS NOT NULL AND vector_dims(embedding) = %(d)s"
        " THEN 1 - (embedding <=> %(v)b::vector) END FROM evidence_windows"
        " WHERE note_id = ANY(%(ids)s) AND guild_id = %(g)s",
        {
            "v": None if vector is None else vector_param(vector),
            "ids": list(note_ids),
            "g": guild_id,
            "d": 0 if vector is None else len(vector) // 4,
        },
    ).fetchall()
    found = [WindowMatch(int(r[0]), int(r[1]), float(r[3])) for r in rows if r[3] is not None]
    found.sort(key=lambda match: (-match.score, match.window_id))
    return found, {int(r[0]): str(r[2]) for r in rows}


def window_lines(conn: PgConnection, window_ids: Sequence[int]) -> dict[int, list[EvidenceLine]]:
    """The kept lines each window spans, oldest first, by window id (one query)."""
    ids = list(dict.fromkeys(window_ids))
    found: dict[int, list[EvidenceLine]] = {window_id: [] for window_id in ids}
    if not ids:
        return found
    rows = conn.execute(
        "SELECT w.id, l.message_id, l.note_id, l.author_id, l.author_name, l.text,"
        " l.created_at FROM evidence_windows AS w JOIN note_lines AS l ON l.note_id = w.note_id"
        " AND l.message_id BETWEEN w.first_message_id AND w.last_message_id"
        " WHERE w.id = ANY(%s) ORDER BY w.id, l.message_id",
        (ids,),
    ).fetchall()
    for r in rows:
        found[int(r[0])].append(
            EvidenceLine(int(r[1]), int(r[2]), int(r[3]), str(r[4]), str(r[5]), float(r[6]))
        )
    return found


def guild_notes(conn: PgConnection, guild_id: int, note_ids: Sequence[int]) -> list[Note]:
    """Notes by id in the order given, keeping only the guild's own."""
    return [note for note in get_notes(conn, note_ids) if note.guild_id == guild_id]


def load_hits(
    conn: PgConnection, guild_id: int, note_ids: Sequence[int], window_ids: Sequence[int]
) -> tuple[list[Note], dict[int, list[EvidenceLine]]]:
    """The guild's notes ``note_ids`` in the order given, and the lines of each window."""
    return guild_notes(conn, guild_id, note_ids), window_lines(conn, window_ids)


def members_named(conn: PgConnection, guild_id: int, names: Sequence[str]) -> frozenset[int]:
    """The members of the guild known by any of ``names`` (lower-case word runs)."""
    if not names:
        return frozenset()
    rows = conn.execute(
        "SELECT DISTINCT user_id FROM member_names WHERE guild_id = %s AND name = ANY(%s)",
        (guild_id, list(names)),
    ).fetchall()
    return frozenset(int(r[0]) for r in rows)


def notes_in_range(
    conn: PgConnection, guild_id: int, start: float, end: float, *, note_type: str, limit: int
) -> list[int]:
    """Ids of the guild's notes of one type that overlap ``[start, end)``, newest first."""
    rows = conn.execute(
        "SELECT id FROM interaction_notes WHERE guild_id = %s AND note_type = %s"
        " AND note_date BETWEEN %s AND %s"
        " AND COALESCE(started_at, created_at) < %s AND COALESCE(ended_at, created_at) >= %s"
        " ORDER BY COALESCE(ended_at, created_at) DESC, id DESC LIMIT %s",
        (guild_id, note_type, note_date(start - 86400.0), note_date(end), end, start, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def candidate_details(
    conn: PgConnection, guild_id: int, note_ids: Sequence[int]
) -> dict[int, CandidateDetails]:
    """Channel, start and end, searchable text and participants of the guild's notes."""
    if not note_ids:
        return {}
    rows = conn.execute(
        "SELECT n.id, n.channel_id, COALESCE(n.started_at, n.created_at),"
        " COALESCE(n.ended_at, n.created_at), n.title || ' ' || n.summary || ' ' || n.topics"
        " || ' ' || n.entities || ' ' || n.decisions,"
        " ARRAY(SELECT p.user_id FROM note_participants AS p WHERE p.note_id = n.id)"
        " FROM interaction_notes AS n WHERE n.id = ANY(%s) AND n.guild_id = %s",
        (list(note_ids), guild_id),
    ).fetchall()
    return {
        int(r[0]): CandidateDetails(
            int(r[1]), float(r[2]), float(r[3]), str(r[4]), frozenset(int(u) for u in r[5])
        )
        for r in rows
    }


def search_notes(conn: PgConnection, search: NoteSearch) -> NoteSearchResult:
    """Run every search of ``search`` and join them into ranking candidates, one per note,
    as :func:`vivy.storage.search.search_notes_sync` does on SQLite (one after the other, on
    the read's one connection and snapshot)."""
    guild_id = search.guild_id
    with_evidence = search.evidence and search.note_type in (None, CONVERSATION)
    vectors: list[VectorMatch] = []
    vector_failed = False
    if search.vector is not None:
        try:
            with conn.transaction():  # a savepoint: a failure leaves the read usable
                vectors = vector_search(
                    conn,
                    guild_id,
                    search.vector,
                    note_type=search.note_type,
                    limit=search.candidates,
                )
        except psycopg.Error:
            vector_failed = True
    keywords: list[KeywordMatch] = []
    note_plan = TermPlan({})
    if search.terms:
        note_plan = plan_terms(conn, search.terms, budget=NOTE_POSTINGS_BUDGET)
        keywords = keyword_search(
            conn,
            guild_id,
            note_plan.terms,
            note_type=search.note_type,
            limit=search.keyword_candidates,
        )
    windows: list[WindowMatch] = []
    window_plan = TermPlan({})
    if search.terms and with_evidence:
        window_plan = plan_terms(
            conn, search.terms, budget=WINDOW_POSTINGS_BUDGET, index="evidence"
        )
        windows = window_keyword_search(
            conn, guild_id, window_plan.terms, limit=search.window_candidates
        )
    in_time: list[int] = []
    if search.time is not None:
        in_time = notes_in_range(
            conn,
            guild_id,
            search.time.start,
            search.time.end,
            note_type=search.note_type or CONVERSATION,
            limit=search.time_candidates,
        )
    hits = SearchHits(
        vectors=tuple(vectors),
        vector_failed=vector_failed,
        keywords=tuple(keywords),
        windows=tuple(windows),
        in_time=tuple(in_time),
        note_weights=note_plan.weights,
        window_weights=window_plan.weights,
    )
    note_ids = hits.note_ids
    similar: list[WindowMatch] = []
    texts: dict[int, str] = {}
    if with_evidence:
        similar, texts = window_similarities(
            conn, guild_id, note_ids, None if vector_failed else search.vector
        )
    details = candidate_details(conn, guild_id, note_ids)
    shown = shown_windows(hits.windows, similar)
    named = members_named(conn, guild_id, list(search.name_grams))
    return assemble_candidates(search, hits, similar, details, shown, texts, named)
