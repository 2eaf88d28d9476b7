"""Ranked FTS5 matches of one guild, without joining every match to its table.

The keyword indexes (``notes_fts``, ``evidence_fts``) hold every guild's rows; a search must
drop other guilds' rows before it cuts the ranking at its limit. A join does that, but reads
the table row of every match (up to a postings budget of them, each on a page of its own
where evidence rows hold their embeddings). Reading the ranked matches and checking only
those rows against the guild, reading more when too few are the guild's, gives the same rows
for a fraction of that.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.storage.candidates import WindowMatch
from vivy.storage.sqlite.db import Connection

__all__ = [
    "KEYWORD_INDEXES",
    "MAX_BATCH",
    "MERGE_PAGES",
    "best_of_guild",
    "merge_step",
    "window_keyword_search",
]

#: Most ranked matches checked against the guild in one query.
MAX_BATCH = 1000

#: The keyword indexes by name, each with the table whose rows it indexes and its FTS5
#: table: searched by :mod:`vivy.storage.sqlite.search`, merged by the nightly job.
KEYWORD_INDEXES = {
    "notes": ("interaction_notes", "notes_fts"),
    "evidence": ("evidence_windows", "evidence_fts"),
}

#: Pages of merged index one :func:`merge_step` writes per index (4 MB at SQLite's 4 KiB
#: pages), so that a step holds the database for a fraction of a second.
MERGE_PAGES = 1000


def best_of_guild(
    conn: Connection,
    ranked: str,
    params: Sequence[object],
    owner: str,
    owner_params: Sequence[object],
    limit: int,
) -> list[tuple[int, int, float]]:
    """The first ``limit`` rows of the FTS5 query ``ranked`` (``rowid`` and ``score``, best
    first, its last parameter a ``LIMIT``) whose row belongs to the guild, each as (rowid,
    owner column, score).

    ``owner`` selects the owner column of the ranked row ``ranked.rowid`` when that row is the
    guild's, else nothing (its parameters: ``owner_params``); it runs in the same statement, so
    only the ranked rows' table rows are read, in one round trip. The guild filter applies
    before the cut: when fewer than ``limit`` of the ranked rows are the guild's, the query
    runs again for four times as many (up to :data:`MAX_BATCH` more at a time) until ``limit``
    rows of the guild are found or the matches run out. A ``LIMIT`` keeps SQLite's sort to the
    rows asked for, where sorting every match would cost much of a search's keyword time.
    """
    query = (
        f"SELECT ranked.rowid, ({owner}), ranked.score FROM ({ranked}) AS ranked"
        " ORDER BY ranked.score, ranked.rowid"
    )
    found: list[tuple[int, int, float]] = []
    checked = 0
    size = max(1, limit)
    while len(found) < limit:
        rows = conn.execute(query, (*owner_params, *params, size)).fetchall()
        found += [
            (int(row_id), int(held_by), float(score))
            for row_id, held_by, score in rows[checked:]
            if held_by is not None
        ]
        if len(rows) < size:
            break  # every match is read
        checked = len(rows)
        size += min(3 * size, MAX_BATCH)  # another guild's matches: read on in larger steps
    return found[:limit]


def merge_step(conn: Connection, pages: int = MERGE_PAGES) -> bool:
    """Merge each keyword index's segments by up to ``pages`` pages; True when a merge was
    done, so that another step may find more.

    Notes and windows are indexed one transaction at a time, and each leaves a segment of its
    own; FTS5 merges them only level by level, so a long-running index holds ten or more, and
    every term lookup probes each one. Merged into one segment, the same searches give the
    same results with less work. FTS5's ``merge`` with a negative page count merges
    segments of every level, as ``optimize`` does, but in bounded steps; a step that changes
    fewer than two rows found nothing to merge (FTS5's documented test).
    """
    merged = False
    for _, table in KEYWORD_INDEXES.values():
        before = conn.total_changes
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (-pages,))
        merged = merged or conn.total_changes - before >= 2
    return merged


def window_keyword_search(
    conn: Connection, guild_id: int, match: str, *, limit: int
) -> list[WindowMatch]:
    """The ``limit`` best BM25 windows of the guild for an FTS5 ``match`` expression.

    ``match`` must come from :func:`vivy.storage.sqlite.search.match_expression` (quoted terms).
    The guild filter is in the query, before the ``LIMIT``.
    """
    found = best_of_guild(
        conn,
        "SELECT rowid, bm25(evidence_fts) AS score FROM evidence_fts"
        " WHERE evidence_fts MATCH ? ORDER BY score, rowid LIMIT ?",
        (match,),
        "SELECT note_id FROM evidence_windows WHERE id = ranked.rowid AND +guild_id = ?",
        (guild_id,),
        limit,
    )
    return [
        WindowMatch(window_id, note_id, max(0.0, -score)) for window_id, note_id, score in found
    ]
