"""PostgreSQL's term plan: counts from the postings tables, capped at the budget."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.pg import embedded_postgres
from tests.storage import on_conn
from tests.storage.test_profiles import new_note
from vivy.memory.buffers import CloseReason
from vivy.storage import buffers, notes
from vivy.storage.postgres.db import PgConnection, PgDatabase
from vivy.storage.postgres.keywords import plan_terms
from vivy.storage.search_types import term_weight

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


def test_common_terms_go_over_the_budget_and_rare_ones_keep_their_count(
    db: PgDatabase,
) -> None:
    """A term in every note is over a budget of 10 and dropped, and a term in two notes is
    kept with the idf of its exact count; an evidence stop word has no lexeme and is
    dropped too."""
    db.write_sync(add_notes, 60, "chess")
    db.write_sync(add_notes, 2, "chess and bento")
    plan = db.read_sync(on_conn(plan_terms), ["chess", "bento"], budget=10)
    newest = db.read_sync(lambda conn: conn.execute("SELECT MAX(id) FROM interaction_notes"))
    total = int(newest.fetchone()[0])
    assert dict(plan.weights) == {"bento": pytest.approx(term_weight(2, total))}
    assert plan.lexeme_weights == {"bento": pytest.approx(term_weight(2, total))}
    assert db.read_sync(on_conn(plan_terms), ["the"], index="evidence").weights == {}


def test_a_term_no_row_holds_is_unheld(db: PgDatabase) -> None:
    """A word in no note is listed as unheld (the gate reads it: a name the guild's memory
    never heard of) and not searched; a word in a note is searched and not unheld."""
    db.write_sync(add_notes, 2, "chess and bento")
    plan = db.read_sync(on_conn(plan_terms), ["bento", "melanie"])
    assert plan.unheld == frozenset({"melanie"})
    assert set(plan.weights) == {"bento"}
