"""PostgreSQL's term plan: counts from ``pg_stats`` for common terms, exact for rare ones."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.pg import embedded_postgres
from tests.storage.test_profiles import new_note
from vivy.state.buffer import CloseReason
from vivy.storage.postgres import buffers, notes
from vivy.storage.postgres.db import PgConnection, PgDatabase
from vivy.storage.postgres.search import plan_terms
from vivy.storage.search import term_weight

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed (the dev extra)"
)

GUILD = 1


@pytest.fixture
def db(pg_uri: str) -> Iterator[PgDatabase]:
    """The PostgreSQL owner over a fresh schema, its calls run on the test's thread."""
    database = PgDatabase.open(pg_uri)
    try:
        yield database
    finally:
        database.close()


def add_notes(conn: PgConnection, count: int, summary: str) -> None:
    """``count`` conversation notes of the guild with this summary."""
    for i in range(count):
        buffer_id = buffers.open_buffer(conn, GUILD, 1, "general", 100.0 + i, 1500.0)
        buffers.close_buffer(conn, buffer_id, 200.0 + i, CloseReason.INACTIVITY)
        note = replace(new_note(7), guild_id=GUILD, title="Weekend", summary=summary)
        notes.commit_conversation_note(conn, buffer_id, note)


def sampled_lexemes(conn: PgConnection) -> set[str]:
    """The most common lexemes of the notes' keyword column that ``ANALYZE`` sampled."""
    row = conn.execute(
        "SELECT most_common_elems::text::text[] FROM pg_stats"
        " WHERE tablename = 'interaction_notes' AND attname = 'notes_fts'"
        " AND schemaname = current_schema()"
    ).fetchone()
    return set(row[0]) if row and row[0] else set()


@pytest.mark.parametrize("analysed", [False, True])
def test_common_terms_go_over_the_budget_and_rare_ones_keep_their_count(
    db: PgDatabase, analysed: bool
) -> None:
    """A term in every note is over a budget of 10 and dropped, and a term in two notes is
    kept with the idf of its exact count, whether the common term's count comes from
    ``pg_stats`` (analysed before the rare term came) or from counting."""
    db.write_sync(add_notes, 60, "chess")
    if analysed:
        db.write_sync(lambda conn: conn.execute("ANALYZE interaction_notes"))
    db.write_sync(add_notes, 2, "chess and bento")
    sampled = db.read_sync(sampled_lexemes)
    assert ("chess" in sampled) is analysed and "bento" not in sampled
    plan = db.read_sync(plan_terms, ["chess", "bento"], budget=10)
    newest = db.read_sync(lambda conn: conn.execute("SELECT MAX(id) FROM interaction_notes"))
    total = int(newest.fetchone()[0])
    assert dict(plan.weights) == {"bento": pytest.approx(term_weight(2, total))}
