"""PostgreSQL's check of its keyword postings against the rows they index (``db check``).

Notes' and evidence windows' keyword indexes are ``tsvector`` columns whose lexemes triggers
copy into postings tables (BM25 reads those); a posting that differs from its row's text
would make a search find or miss the wrong rows. The rest of evidence storage is written once
for both engines (:mod:`vivy.storage.evidence`).
"""

from __future__ import annotations

from vivy.storage.postgres.db import PgConnection

__all__ = ["postings_problems"]


#: Each postings table: what it is of, its rows' id column, its stored columns, and the
#: same columns derived from the rows' ``tsvector`` as the triggers derive them.
_POSTINGS_CHECKS = (
    (
        "note",
        "note_id",
        "SELECT lexeme, guild_id, note_type, note_id, tf, length FROM note_postings",
        "SELECT f.lexeme, n.guild_id, n.note_type, n.id, f.tf, f.length"
        " FROM interaction_notes AS n, vivy_lexeme_frequencies(n.notes_fts) AS f",
    ),
    (
        "evidence window",
        "window_id",
        "SELECT lexeme, guild_id, window_id, note_id, tf, length FROM window_postings",
        "SELECT f.lexeme, w.guild_id, w.id, w.note_id, f.tf, f.length"
        " FROM evidence_windows AS w, vivy_lexeme_frequencies(w.evidence_fts) AS f",
    ),
)


def postings_problems(conn: PgConnection, *, limit: int = 20) -> list[str]:
    """The notes and windows (at most ``limit`` of each) whose keyword postings differ from
    their text: missing, left behind after the row went, or stale after an edit."""
    problems: list[str] = []
    for kind, column, stored, derived in _POSTINGS_CHECKS:
        rows = conn.execute(
            (
                f"SELECT DISTINCT {column} FROM (({stored} EXCEPT ALL {derived})"
                f" UNION ALL ({derived} EXCEPT ALL {stored})) AS differing"
                f" ORDER BY {column} LIMIT %s"
            ).encode(),
            (limit,),
        ).fetchall()
        problems += [f"keyword postings of {kind} {int(r[0])} differ from its text" for r in rows]
    return problems
